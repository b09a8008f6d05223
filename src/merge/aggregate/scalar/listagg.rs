//! `listagg` (Java `FieldListaggAgg`): concatenates the non-blank strings of a group with
//! `fields.<f>.list-agg-delimiter` (default `,`).
//!
//! `agg(acc, in)`: a NULL or blank `in` keeps `acc`; a NULL or blank `acc` becomes `in`;
//! otherwise `acc ‖ delimiter ‖ in`. With `fields.<f>.distinct`, `in` is split at the
//! delimiter (at a space when the delimiter is empty) and only its non-blank tokens not yet in
//! `acc`'s tokens are appended. Blank means Java `StringUtils.isBlank` (only
//! `Character.isWhitespace` characters). No retraction.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::DataType as ArrowType;
use datafusion::common::Result;

use super::super::{FieldAggOptions, FieldAggregator, Groups, Step};
use super::{retract_unsupported, unexpected_array, unsupported_type};
use crate::spec::{DataType, TypeKind};

/// Length of STRING (`VARCHAR(2147483647)`).
const STRING_LENGTH: u32 = i32::MAX as u32;

/// Builds `listagg` for a column of type `data_type`.
pub(super) fn create(
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    // Java FieldListaggAggFactory: VarCharType of MAX_LENGTH only (not CHAR, not VARCHAR(n))
    if data_type.kind != TypeKind::VarChar(STRING_LENGTH) {
        return Err(unsupported_type(
            "listagg",
            field,
            data_type,
            "type STRING (unbounded VARCHAR)",
        ));
    }
    Ok(Box::new(ListAgg {
        field: field.to_string(),
        delimiter: options
            .list_agg_delimiter
            .clone()
            .unwrap_or_else(|| ",".to_string()),
        distinct: options.distinct,
    }))
}

#[derive(Debug)]
struct ListAgg {
    field: String,
    delimiter: String,
    distinct: bool,
}

/// Java `Character.isWhitespace`: Unicode space separators except the no-break ones, line and
/// paragraph separators, and the controls `\t \n \u{b} \u{c} \r \u{1c}..\u{1f}`.
fn java_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{b}'
            | '\u{c}'
            | '\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{1680}'
            | '\u{2000}'..='\u{2006}'
            | '\u{2008}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Java `StringUtils.isBlank` of a present value.
fn blank(s: &str) -> bool {
    s.chars().all(java_whitespace)
}

impl FieldAggregator for ListAgg {
    fn name(&self) -> &'static str {
        "listagg"
    }

    fn supports_retract(&self) -> bool {
        false
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        if input.data_type() != &ArrowType::Utf8 {
            return Err(unexpected_array("listagg", &self.field, input.data_type()));
        }
        let values = input.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(groups.len(), 0);
        for g in 0..groups.len() {
            let mut acc: Option<Cow<'_, str>> = None;
            for (row, step) in groups.members(g) {
                let v = || values.is_valid(row).then(|| Cow::Borrowed(values.value(row)));
                acc = match step {
                    Step::Add => self.agg(acc, v()),
                    Step::AddReversed => self.agg(v(), acc),
                    Step::Retract => return Err(retract_unsupported("listagg", &self.field)),
                    Step::Reset => v(),
                    Step::SetNull => None,
                    Step::Skip => acc,
                };
            }
            out.append_option(acc);
        }
        Ok(Arc::new(out.finish()))
    }
}

impl ListAgg {
    /// Java `agg(accumulator, input)`.
    fn agg<'a>(&self, acc: Option<Cow<'a, str>>, v: Option<Cow<'a, str>>) -> Option<Cow<'a, str>> {
        let v = match v {
            Some(v) if !blank(&v) => v,
            _ => return acc,
        };
        let acc = match acc {
            Some(acc) if !blank(&acc) => acc,
            _ => return Some(v),
        };
        if !self.distinct {
            let mut joined = acc.into_owned();
            joined.reserve(self.delimiter.len() + v.len());
            joined.push_str(&self.delimiter);
            joined.push_str(&v);
            return Some(Cow::Owned(joined));
        }
        // Java splitByWholeSeparatorPreserveAllTokens splits at " " when the delimiter is empty
        let separator = if self.delimiter.is_empty() {
            " "
        } else {
            self.delimiter.as_str()
        };
        let mut appended: Vec<&str> = Vec::new();
        {
            let mut seen: HashSet<&str> = acc.split(separator).collect();
            for token in v.split(separator) {
                if !blank(token) && seen.insert(token) {
                    appended.push(token);
                }
            }
        }
        if appended.is_empty() {
            return Some(acc);
        }
        let mut joined = acc.to_string();
        for token in appended {
            joined.push_str(&self.delimiter);
            joined.push_str(token);
        }
        Some(Cow::Owned(joined))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, StringArray};

    use super::super::test_util::{agg_with, create_error, fold};
    use super::blank;
    use crate::merge::aggregate::FieldAggOptions;
    use crate::merge::aggregate::Step::{self, *};

    fn listagg(
        delimiter: Option<&str>,
        distinct: bool,
        values: Vec<Option<&str>>,
        groups: &[&[Step]],
    ) -> Vec<Option<String>> {
        let options = FieldAggOptions {
            list_agg_delimiter: delimiter.map(str::to_string),
            distinct,
            ..Default::default()
        };
        let a = agg_with("listagg", "STRING", &options);
        let out = fold(a.as_ref(), Arc::new(StringArray::from(values)), groups).unwrap();
        out.as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn accepted_types() {
        agg_with("listagg", "STRING NOT NULL", &FieldAggOptions::default());
        agg_with("listagg", "VARCHAR(2147483647)", &FieldAggOptions::default());
        for t in ["VARCHAR(10)", "CHAR(3)", "INT", "BYTES", "ARRAY<STRING>"] {
            let msg = create_error("listagg", t);
            assert!(
                msg.contains("'listagg' of field 'f'") && msg.contains("STRING"),
                "{msg}"
            );
        }
    }

    #[test]
    fn concatenates_non_blank_values() {
        let values = vec![
            Some("a"),
            None,
            Some("b"),
            Some(" "),
            Some("c"),
            None,
            Some(""),
            Some("x"),
            Some("y"),
        ];
        let groups: &[&[Step]] = &[&[Add, Add, Add, Add, Add], &[Add, Add], &[Add, Add]];
        assert_eq!(
            listagg(None, false, values.clone(), groups),
            vec![s("a,b,c"), None, s("x,y")]
        );
        assert_eq!(
            listagg(Some(" | "), false, values, groups),
            vec![s("a | b | c"), None, s("x | y")]
        );
        // a blank input is dropped even into a NULL accumulator (the engine's single-record
        // pass-through is what keeps a lone '' verbatim, semantics.md §2.0)
        assert_eq!(listagg(None, false, vec![Some(" ")], &[&[Add]]), vec![None]);
        // a blank accumulator (e.g. from Reset) is replaced by the next non-blank input
        let values = vec![Some(" "), Some("q"), Some("\u{2003}"), Some("\u{a0}")];
        assert_eq!(
            listagg(None, false, values, &[&[Reset, Add], &[Reset, Add]]),
            vec![s("q"), s("\u{a0}")]
        );
    }

    #[test]
    fn steps() {
        let values = vec![
            Some("new"),
            Some("old"),
            Some("a"),
            Some("b"),
            Some("c"),
            Some("d"),
            Some("e"),
            Some("f"),
        ];
        let groups: &[&[Step]] = &[&[Add, AddReversed], &[Add, Reset, Add], &[Add, SetNull, Skip]];
        assert_eq!(
            listagg(None, false, values, groups),
            vec![s("old,new"), s("b,c"), None]
        );
        let options = FieldAggOptions::default();
        let err = fold(
            agg_with("listagg", "STRING", &options).as_ref(),
            Arc::new(StringArray::from(vec!["a", "b"])),
            &[&[Add, Retract]],
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("'listagg' of field 'f' does not support retraction"));
    }

    #[test]
    fn distinct_appends_new_tokens_only() {
        let values = vec![
            Some("a,b"),
            Some("b,c,,a, c"),
            Some("a"),
            Some("a"),
            Some("x,x"),
            Some("x,y,y"),
        ];
        let groups: &[&[Step]] = &[&[Add, Add], &[Add, Add], &[Add, Add]];
        // the accumulator's own duplicates stay; input tokens are deduplicated among themselves
        assert_eq!(
            listagg(None, true, values, groups),
            vec![s("a,b,c, c"), s("a"), s("x,x,y")]
        );
        let values = vec![Some("a b"), Some("b  c")];
        assert_eq!(listagg(Some(""), true, values, &[&[Add, Add]]), vec![s("a bc")]);
        let values = vec![Some("a;b"), Some("b;a")];
        assert_eq!(
            listagg(Some(";"), true, values, &[&[Add, AddReversed]]),
            vec![s("b;a")]
        );
    }

    #[test]
    fn java_blank() {
        assert!(blank("") && blank(" \t\n\u{b}\u{c}\r\u{1c}\u{1f}\u{2000}\u{3000}\u{2028}"));
        for c in ['\u{a0}', '\u{2007}', '\u{202f}', '\u{85}', 'x'] {
            assert!(!blank(&c.to_string()), "{c:?}");
        }
    }
}
