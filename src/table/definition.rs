//! The Flink `CREATE TABLE` statement of a table (`SHOW CREATE TABLE`): its columns with
//! comments, primary key, comment, partitioning and options, in the syntax it can be created
//! with again.

use crate::spec::TableSchema;

/// `CREATE TABLE <name> (...) ... WITH (...)` for `schema`.
pub(crate) fn create_table_statement(name: &str, schema: &TableSchema) -> String {
    let quote = |s: &str| s.replace('\'', "''");
    let ident = |s: &str| format!("`{}`", s.replace('`', "``"));
    let mut lines: Vec<String> = schema
        .fields
        .iter()
        .map(|f| {
            let mut line = format!("  {} {}", ident(&f.name), f.data_type);
            if let Some(comment) = &f.description {
                line.push_str(&format!(" COMMENT '{}'", quote(comment)));
            }
            line
        })
        .collect();
    if !schema.primary_keys.is_empty() {
        let keys: Vec<String> = schema.primary_keys.iter().map(|k| ident(k)).collect();
        lines.push(format!("  PRIMARY KEY ({}) NOT ENFORCED", keys.join(", ")));
    }
    let mut sql = format!("CREATE TABLE {name} (\n{}\n)", lines.join(",\n"));
    if let Some(comment) = &schema.comment {
        sql.push_str(&format!("\nCOMMENT '{}'", quote(comment)));
    }
    if !schema.partition_keys.is_empty() {
        let keys: Vec<String> = schema.partition_keys.iter().map(|k| ident(k)).collect();
        sql.push_str(&format!("\nPARTITIONED BY ({})", keys.join(", ")));
    }
    if !schema.options.is_empty() {
        let options: Vec<String> = schema
            .options
            .iter()
            .map(|(k, v)| format!("  '{}' = '{}'", quote(k), quote(v)))
            .collect();
        sql.push_str(&format!("\nWITH (\n{}\n)", options.join(",\n")));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_names_every_part_of_the_schema() {
        let json = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"INT NOT NULL"},{"id":1,"name":"v","type":"STRING","description":"it's v"},{"id":2,"name":"dt","type":"STRING NOT NULL"}],"highestFieldId":2,"partitionKeys":["dt"],"primaryKeys":["k","dt"],"options":{"bucket":"2"},"comment":"orders","timeMillis":0}"#;
        let schema = TableSchema::from_json(json.as_bytes(), "schema-0").unwrap();
        assert_eq!(
            create_table_statement("db.t", &schema),
            "CREATE TABLE db.t (\n  `k` INT NOT NULL,\n  `v` STRING COMMENT 'it''s v',\n  `dt` STRING NOT NULL,\n  PRIMARY KEY (`k`, `dt`) NOT ENFORCED\n)\nCOMMENT 'orders'\nPARTITIONED BY (`dt`)\nWITH (\n  'bucket' = '2'\n)"
        );
    }
}
