//! Avro name checks without regular expressions.
//!
//! apache-avro validates every schema, namespace and field name it parses with `regex_lite`,
//! and it parses the schema in the header of every manifest and manifest list it reads: about
//! 7% of a small commit's time went to those regexes. [`install`] puts in checks of the same
//! rules (Avro specification, "Names") written by hand. apache-avro keeps one validator per
//! process; if an embedding application installed its own first, that one stays.

use std::sync::Once;

use apache_avro::error::Details;
use apache_avro::schema::Namespace;
use apache_avro::validator::{
    set_enum_symbol_name_validator, set_record_field_name_validator, set_schema_name_validator,
    set_schema_namespace_validator, EnumSymbolNameValidator, RecordFieldNameValidator, SchemaNameValidator,
    SchemaNamespaceValidator,
};
use apache_avro::AvroResult;

/// `[A-Za-z_][A-Za-z0-9_]*`
fn is_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Empty, or names joined by dots.
fn is_namespace(s: &str) -> bool {
    s.is_empty() || s.split('.').all(is_name)
}

const NAME_RULE: &str = "[namespace.]name, each part [A-Za-z_][A-Za-z0-9_]*";
const NAMESPACE_RULE: &str = "empty or dot-separated [A-Za-z_][A-Za-z0-9_]*";

struct Names;

impl SchemaNameValidator for Names {
    fn validate(&self, schema_name: &str) -> AvroResult<(String, Namespace)> {
        // The namespace is what precedes the last dot (possibly empty), as the specification's
        // pattern captures it.
        let (namespace, name) = match schema_name.rsplit_once('.') {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, schema_name),
        };
        if !is_name(name) || !namespace.is_none_or(is_namespace) {
            return Err(Details::InvalidSchemaName(schema_name.to_string(), NAME_RULE).into());
        }
        Ok((name.to_string(), namespace.map(str::to_string)))
    }
}

impl SchemaNamespaceValidator for Names {
    fn validate(&self, namespace: &str) -> AvroResult<()> {
        if is_namespace(namespace) {
            Ok(())
        } else {
            Err(Details::InvalidNamespace(namespace.to_string(), NAMESPACE_RULE).into())
        }
    }
}

impl EnumSymbolNameValidator for Names {
    fn validate(&self, symbol: &str) -> AvroResult<()> {
        if is_name(symbol) {
            Ok(())
        } else {
            Err(Details::EnumSymbolName(symbol.to_string()).into())
        }
    }
}

impl RecordFieldNameValidator for Names {
    fn validate(&self, field_name: &str) -> AvroResult<()> {
        if is_name(field_name) {
            Ok(())
        } else {
            Err(Details::FieldName(field_name.to_string()).into())
        }
    }
}

/// Installs the checks above for this process (once; before any Avro schema is parsed).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err: the application installed its own validator first, which then stays.
        let _ = set_schema_name_validator(Box::new(Names));
        let _ = set_schema_namespace_validator(Box::new(Names));
        let _ = set_enum_symbol_name_validator(Box::new(Names));
        let _ = set_record_field_name_validator(Box::new(Names));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_specification() {
        let v = |s: &str| SchemaNameValidator::validate(&Names, s).ok();
        assert_eq!(v("manifest_entry"), Some(("manifest_entry".into(), None)));
        assert_eq!(
            v("org.apache.paimon.avro.generated.record"),
            Some(("record".into(), Some("org.apache.paimon.avro.generated".into())))
        );
        for bad in ["", "1a", "a-b", "a.", "a..b", "a.1b", "ü"] {
            assert_eq!(v(bad), None, "{bad}");
        }
        assert!(SchemaNamespaceValidator::validate(&Names, "").is_ok());
        assert!(SchemaNamespaceValidator::validate(&Names, "a.b_c.D9").is_ok());
        assert!(SchemaNamespaceValidator::validate(&Names, "a..b").is_err());
        assert!(RecordFieldNameValidator::validate(&Names, "_FILE_NAME").is_ok());
        assert!(RecordFieldNameValidator::validate(&Names, "a b").is_err());
        assert!(EnumSymbolNameValidator::validate(&Names, "A1").is_ok());
        assert!(EnumSymbolNameValidator::validate(&Names, "").is_err());
    }

    #[test]
    fn the_regex_and_the_hand_written_check_agree() {
        // apache-avro's own pattern, with the regex crate DataFusion already depends on.
        let spec = regex_lite::Regex::new(
            r"^((?P<namespace>([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?)\.)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)$",
        )
        .expect("regex");
        let alphabet = ['a', 'Z', '_', '1', '.', '-'];
        let mut cases = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = cases
                .iter()
                .flat_map(|c| alphabet.iter().map(move |a| format!("{c}{a}")))
                .collect();
            cases.extend(longer);
        }
        for case in cases {
            let ours = SchemaNameValidator::validate(&Names, &case).ok();
            let theirs = spec.captures(&case).map(|c| {
                (
                    c["name"].to_string(),
                    c.name("namespace").map(|n| n.as_str().to_string()),
                )
            });
            assert_eq!(ours, theirs, "{case:?}");
        }
    }
}
