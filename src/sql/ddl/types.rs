//! Field-id allocation for new columns (format.md §2.5).
//!
//! One counter per table, depth-first in declaration order: a column takes the next id, then
//! the fields of every ROW inside its type (also ROWs inside ARRAY / MAP / MULTISET elements,
//! as Java's `ReassignFieldId` does), then the next column. Array elements and map keys and
//! values get no id of their own.

use crate::spec::{DataField, DataType, TypeKind};

/// Assigns ids to `fields` and everything nested in them, continuing after `*highest`, and
/// leaves `*highest` at the last id allocated (the schema's `highestFieldId`).
pub(crate) fn assign_field_ids(fields: &mut [DataField], highest: &mut i32) {
    for field in fields {
        *highest += 1;
        field.id = *highest;
        assign_in_type(&mut field.data_type, highest);
    }
}

fn assign_in_type(data_type: &mut DataType, highest: &mut i32) {
    match &mut data_type.kind {
        TypeKind::Row(fields) => assign_field_ids(fields, highest),
        TypeKind::Array(e) | TypeKind::Multiset(e) => assign_in_type(e, highest),
        TypeKind::Map(k, v) => {
            assign_in_type(k, highest);
            assign_in_type(v, highest);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::parser::DdlParser;

    /// Parses `name TYPE, …` column definitions.
    fn columns(sql: &str) -> Vec<DataField> {
        let mut p = DdlParser::new(sql, true).unwrap();
        let mut out = vec![p.column().unwrap().field];
        while p.consume(&datafusion::sql::sqlparser::tokenizer::Token::Comma) {
            out.push(p.column().unwrap().field);
        }
        p.expect_end().unwrap();
        out
    }

    fn type_of(sql: &str) -> String {
        let mut p = DdlParser::new(sql, true).unwrap();
        let t = p.data_type().unwrap();
        p.expect_end().unwrap();
        t.to_string()
    }

    #[test]
    fn maps_sql_types_to_paimon_type_strings() {
        let cases = [
            ("BOOLEAN", "BOOLEAN"),
            ("TINYINT", "TINYINT"),
            ("SMALLINT", "SMALLINT"),
            ("INT", "INT"),
            ("INTEGER NOT NULL", "INT NOT NULL"),
            ("BIGINT NULL", "BIGINT"),
            ("FLOAT", "FLOAT"),
            ("REAL", "FLOAT"),
            ("DOUBLE", "DOUBLE"),
            ("DOUBLE PRECISION", "DOUBLE"),
            ("DECIMAL", "DECIMAL(10, 0)"),
            ("DECIMAL(12)", "DECIMAL(12, 0)"),
            ("NUMERIC(10, 2)", "DECIMAL(10, 2)"),
            ("CHAR", "CHAR(1)"),
            ("CHAR(3)", "CHAR(3)"),
            ("VARCHAR(20)", "VARCHAR(20)"),
            ("VARCHAR(2147483647)", "STRING"),
            ("STRING", "STRING"),
            ("TEXT", "STRING"),
            ("BINARY(4)", "BINARY(4)"),
            ("VARBINARY(8)", "VARBINARY(8)"),
            ("BYTES", "BYTES"),
            ("DATE", "DATE"),
            ("TIME", "TIME(0)"),
            ("TIME(3)", "TIME(3)"),
            ("TIMESTAMP", "TIMESTAMP(6)"),
            ("TIMESTAMP(3)", "TIMESTAMP(3)"),
            ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)"),
            (
                "TIMESTAMP(3) WITH LOCAL TIME ZONE",
                "TIMESTAMP(3) WITH LOCAL TIME ZONE",
            ),
            ("TIMESTAMP_LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
            (
                "TIMESTAMP_LTZ(9) NOT NULL",
                "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL",
            ),
            ("ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"),
            ("INT ARRAY", "ARRAY<INT>"),
            (
                "MAP<STRING NOT NULL, ARRAY<BIGINT>>",
                "MAP<STRING NOT NULL, ARRAY<BIGINT>>",
            ),
            ("ARRAY<ARRAY<INT>> NOT NULL", "ARRAY<ARRAY<INT>> NOT NULL"),
            ("MULTISET<STRING>", "MULTISET<STRING>"),
            (
                "ROW<a INT NOT NULL, b ROW<c STRING>>",
                "ROW<a INT NOT NULL, b ROW<c STRING>>",
            ),
            ("ROW(a INT, b STRING)", "ROW<a INT, b STRING>"),
        ];
        for (sql, expected) in cases {
            assert_eq!(type_of(sql), expected, "{sql}");
        }
    }

    #[test]
    fn rejects_bad_types() {
        for sql in [
            "DECIMAL(39, 0)",
            "DECIMAL(5, 6)",
            "CHAR(0)",
            "TIMESTAMP(10)",
            "TIMESTAMP WITH TIME ZONE",
            "GEOMETRY",
            "MAP<INT>",
            "ARRAY<INT",
        ] {
            let mut p = DdlParser::new(sql, true).unwrap();
            assert!(p.data_type().and_then(|_| p.expect_end()).is_err(), "{sql}");
        }
    }

    #[test]
    fn row_field_comments() {
        let mut p = DdlParser::new("ROW<a INT 'first', b STRING COMMENT 'second'>", true).unwrap();
        let t = p.data_type().unwrap();
        let TypeKind::Row(fields) = t.kind else {
            panic!("not a row")
        };
        assert_eq!(fields[0].description.as_deref(), Some("first"));
        assert_eq!(fields[1].description.as_deref(), Some("second"));
    }

    #[test]
    fn allocates_ids_depth_first() {
        // format.md §2.5: st at 19 -> 19, x 20, y 21, next column 22; here from 0.
        let mut fields = columns(
            "k BIGINT NOT NULL, st ROW<x INT, y ROW<z STRING, w INT>>, arr ARRAY<ROW<e INT>>, \
             mp MAP<STRING, ROW<m INT>>, v STRING",
        );
        let mut highest = -1;
        assign_field_ids(&mut fields, &mut highest);
        assert_eq!(highest, 10);
        let json = serde_json::Value::Array(fields.iter().map(DataField::to_json).collect());
        assert_eq!(
            json,
            serde_json::json!([
                {"id": 0, "name": "k", "type": "BIGINT NOT NULL"},
                {"id": 1, "name": "st", "type": {"type": "ROW", "fields": [
                    {"id": 2, "name": "x", "type": "INT"},
                    {"id": 3, "name": "y", "type": {"type": "ROW", "fields": [
                        {"id": 4, "name": "z", "type": "STRING"},
                        {"id": 5, "name": "w", "type": "INT"}]}}]}},
                {"id": 6, "name": "arr", "type": {"type": "ARRAY", "element": {"type": "ROW", "fields": [
                    {"id": 7, "name": "e", "type": "INT"}]}}},
                {"id": 8, "name": "mp", "type": {"type": "MAP", "key": "STRING", "value": {"type": "ROW", "fields": [
                    {"id": 9, "name": "m", "type": "INT"}]}}},
                {"id": 10, "name": "v", "type": "STRING"}
            ])
        );
        // An added column continues after highestFieldId.
        let mut added = columns("n ROW<p INT>");
        assign_field_ids(&mut added, &mut highest);
        assert_eq!((added[0].id, highest), (11, 12));
    }

    #[test]
    fn identifiers_follow_datafusion_normalization() {
        assert_eq!(columns("MyCol INT")[0].name, "mycol");
        assert_eq!(columns("\"MyCol\" INT")[0].name, "MyCol");
        assert_eq!(columns("`MyCol` INT")[0].name, "MyCol");
        let mut p = DdlParser::new("MyCol INT", false).unwrap();
        assert_eq!(p.column().unwrap().field.name, "MyCol");
    }
}
