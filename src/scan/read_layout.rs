//! The column layout a scan reads every file into: the table's value columns by field id, the
//! system columns of primary-key files, and the Arrow types they are read as.

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};

use crate::spec::{DataField, SEQUENCE_NUMBER, VALUE_KIND};

/// What to read from every file of a scan: value columns by field id, plus the system columns
/// of primary-key files when `with_system_columns` is set.
#[derive(Debug, Clone)]
pub(crate) struct ReadLayout {
    /// Value columns in output order (fields of the read schema).
    pub(crate) fields: Vec<DataField>,
    /// Append `_SEQUENCE_NUMBER` (Int64) and `_VALUE_KIND` (Int8) after the value columns.
    pub(crate) with_system_columns: bool,
    /// Arrow schema of the produced batches.
    pub(crate) schema: SchemaRef,
}

impl ReadLayout {
    pub(crate) fn new(fields: Vec<DataField>, with_system_columns: bool) -> Self {
        let mut arrow_fields: Vec<Field> = fields
            .iter()
            // Files written by other engines vary in nullability; never reject a batch for it.
            .map(|f| f.to_arrow_field().with_nullable(true))
            .collect();
        if with_system_columns {
            arrow_fields.push(Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false));
            arrow_fields.push(Field::new(VALUE_KIND, ArrowType::Int8, false));
        }
        ReadLayout {
            fields,
            with_system_columns,
            schema: Arc::new(Schema::new(arrow_fields)),
        }
    }

    /// This layout with its string columns as `Utf8View` (Parquet decodes them as views into
    /// its pages, with no copy of each value): for reads whose rows are mostly compared or
    /// dropped rather than output, and whose merge never looks at values (its consumer casts
    /// what it outputs back).
    pub(crate) fn with_string_views(self) -> Self {
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .map(|f| crate::format::string_view_of(f).unwrap_or_else(|| f.as_ref().clone()))
            .collect();
        ReadLayout {
            schema: Arc::new(Schema::new(fields)),
            ..self
        }
    }

    /// Index of the `_SEQUENCE_NUMBER` column.
    pub(crate) fn seq_index(&self) -> usize {
        self.fields.len()
    }

    /// Index of the `_VALUE_KIND` column.
    pub(crate) fn kind_index(&self) -> usize {
        self.fields.len() + 1
    }
}
