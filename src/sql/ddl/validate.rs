//! Schema rules checked before a schema file is written (CREATE TABLE and every ALTER TABLE),
//! following Java Paimon: the `Schema` constructor (key normalization), the `TableSchema`
//! constructor (trimmed primary key, bucket keys) and `SchemaValidation.validateTableSchema`.
//! References: format.md §2.6 (schema rules), semantics.md §2.5 (engine/option matrix) and
//! §11 (options). Errors name the column or option; nothing is written when one fails.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::common::{config_err, plan_err, DataFusionError, Result};

use super::options::{bool_option, check_values, parse_int};
use crate::spec::{DataType, TableOptions, TableSchema, TypeKind};

/// Column names Paimon reserves for system fields (Java `SpecialFields.SYSTEM_FIELD_NAMES`).
const SYSTEM_FIELD_NAMES: &[&str] = &["_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID"];
/// Prefix of key columns inside data files (format.md §6.2).
const KEY_FIELD_PREFIX: &str = "_KEY_";
/// Aggregate functions known to Java's `FieldAggregatorFactory` (semantics.md §2.4).
const AGGREGATE_FUNCTIONS: &[&str] = &[
    "bool_and",
    "bool_or",
    "collect",
    "first_non_null_value",
    "first_not_null_value",
    "first_value",
    "hll_sketch",
    "last_non_null_value",
    "last_value",
    "listagg",
    "max",
    "merge_map",
    "merge_map_with_keytime",
    "min",
    "nested_partial_update",
    "nested_update",
    "primary-key",
    "product",
    "rbm32",
    "rbm64",
    "sum",
    "theta_sketch",
];
const DEFAULT_AGG_FUNCTION: &str = "default-aggregate-function";
const SEQUENCE_GROUP_SUFFIX: &str = ".sequence-group";

/// Java `Schema` normalization: the `primary-key` / `partition` options become keys, names
/// must be unique and exist, and primary-key columns take the nullability of
/// `primary-key.nullable` (NOT NULL by default, format.md §2.6).
pub(crate) fn normalize_schema(schema: &mut TableSchema, table: &str) -> Result<()> {
    if let Some(pk) = schema.options.remove("primary-key") {
        if !schema.primary_keys.is_empty() {
            return plan_err!(
                "Cannot define the primary key of table {table} both in DDL and in option 'primary-key'"
            );
        }
        schema.primary_keys = split_list(&pk);
    }
    if let Some(partition) = schema.options.remove("partition") {
        if !schema.partition_keys.is_empty() {
            return plan_err!(
                "Cannot define the partition keys of table {table} both in DDL and in option 'partition'"
            );
        }
        schema.partition_keys = split_list(&partition);
    }
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    if let Some(dup) = first_duplicate(&names) {
        return plan_err!("Duplicate column '{dup}' in table {table}");
    }
    check_key_list(&schema.partition_keys, &names, "Partition", table)?;
    check_key_list(&schema.primary_keys, &names, "Primary key", table)?;
    // `blob-field`: binary columns stored as BLOBs (how Flink and Spark DDL, which have no
    // BLOB type, declare them)
    if let Some(list) = schema.options.get("blob-field") {
        for name in split_list(list) {
            let Some(field) = schema.fields.iter_mut().find(|f| f.name == name) else {
                return plan_err!("Column '{name}' of option 'blob-field' is not a column of table {table}");
            };
            match field.data_type.kind {
                TypeKind::Blob => {}
                TypeKind::Binary(_) | TypeKind::VarBinary(_) => field.data_type.kind = TypeKind::Blob,
                _ => {
                    return plan_err!(
                        "Column '{name}' of option 'blob-field' of table {table} has type {}, not BYTES",
                        field.data_type
                    )
                }
            }
        }
    }
    let pk_nullable = bool_option(&schema.options, "primary-key.nullable", false)?;
    for field in &mut schema.fields {
        if schema.primary_keys.contains(&field.name) {
            field.data_type.nullable = pk_nullable;
        }
    }
    Ok(())
}

fn check_key_list(keys: &[String], names: &[&str], what: &str, table: &str) -> Result<()> {
    if let Some(dup) = first_duplicate(keys) {
        return plan_err!("{what} column '{dup}' is listed twice for table {table}");
    }
    match keys.iter().find(|k| !names.contains(&k.as_str())) {
        Some(k) => plan_err!("{what} column '{k}' is not a column of table {table}"),
        None => Ok(()),
    }
}

fn first_duplicate<S: AsRef<str>>(items: &[S]) -> Option<&str> {
    let mut seen = BTreeSet::new();
    items.iter().map(AsRef::as_ref).find(|s| !seen.insert(*s))
}

/// Comma-separated names, trimmed, empty entries dropped (Java splits option lists this way).
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every rule Java checks when it builds and validates a `TableSchema`.
pub(crate) fn validate_schema(schema: &TableSchema, table: &str) -> Result<()> {
    check_values(&schema.options)?;
    let options = TableOptions::parse(&schema.options).map_err(DataFusionError::from)?;
    let ctx = Ctx {
        schema,
        table,
        options: &options,
    };
    ctx.column_names()?;
    ctx.keys()?;
    ctx.bucket()?;
    ctx.fields_prefix()?;
    ctx.sequence_fields()?;
    ctx.merge_engine()?;
    ctx.changelog_and_modes()?;
    ctx.retention()?;
    ctx.blobs()?;
    crate::format::WriteFormat::check_options(&schema.options)?;
    crate::meta::ManifestFormat::of_options(&schema.options)?;
    crate::io::ExternalPaths::of(&schema.options).map_err(DataFusionError::from)?;
    crate::maintenance::auto_tags::AutoTags::parse(table, &schema.options)?;
    crate::compact::check_record_expire_options(schema)?;
    ctx.misc()
}

struct Ctx<'a> {
    schema: &'a TableSchema,
    table: &'a str,
    options: &'a TableOptions,
}

impl Ctx<'_> {
    fn has_pk(&self) -> bool {
        self.schema.has_primary_key()
    }

    fn opt(&self, key: &str) -> Option<&str> {
        self.schema.options.get(key).map(String::as_str)
    }

    fn has_column(&self, name: &str) -> bool {
        self.schema.field(name).is_some()
    }

    /// Java `SchemaValidation`: no system column names.
    fn column_names(&self) -> Result<()> {
        for f in &self.schema.fields {
            if SYSTEM_FIELD_NAMES.contains(&f.name.as_str()) {
                return plan_err!(
                    "Column name '{}' of table {} is reserved for a Paimon system field",
                    f.name,
                    self.table
                );
            }
            if f.name.starts_with(KEY_FIELD_PREFIX) {
                return plan_err!(
                    "Column name '{}' of table {} must not start with '{KEY_FIELD_PREFIX}'",
                    f.name,
                    self.table
                );
            }
        }
        Ok(())
    }

    /// Key columns are atomic; the trimmed primary key is not empty (format.md §2.6).
    fn keys(&self) -> Result<()> {
        for (keys, what) in [
            (&self.schema.primary_keys, "Primary key"),
            (&self.schema.partition_keys, "Partition"),
        ] {
            for k in keys {
                let f = self.schema.field(k).expect("key columns were checked to exist");
                if !is_key_type(&f.data_type) {
                    return plan_err!(
                        "{what} column '{k}' of table {} has type {}, which cannot be a key",
                        self.table,
                        f.data_type
                    );
                }
            }
        }
        if self.has_pk() && self.schema.trimmed_primary_keys().is_empty() {
            return plan_err!(
                "Primary key ({}) of table {} must not be the same as its partition columns ({}): a partition would hold a single row",
                self.schema.primary_keys.join(", "),
                self.table,
                self.schema.partition_keys.join(", ")
            );
        }
        if !self.has_pk() && bool_option(&self.schema.options, "primary-key.nullable", false)? {
            return plan_err!(
                "Option 'primary-key.nullable' of table {} needs a primary key",
                self.table
            );
        }
        Ok(())
    }

    /// Java `validateBucket` and `TableSchema.originalBucketKeys` (semantics.md §11 `bucket`,
    /// `bucket-key`; format.md §1.4).
    fn bucket(&self) -> Result<()> {
        let bucket = self.options.bucket;
        let bucket_key = self.opt("bucket-key").map(split_list).unwrap_or_default();
        if bucket == -1 {
            if self.opt("bucket-key").is_some() {
                return config_err!("Option 'bucket-key' of table {} cannot be set with bucket = -1: set a bucket number or remove it", self.table);
            }
            if !self.has_pk() && self.opt("full-compaction.delta-commits").is_some() {
                return config_err!("Option 'full-compaction.delta-commits' is not supported by append table {} with bucket = -1", self.table);
            }
        } else if bucket == -2 && !self.has_pk() {
            return config_err!(
                "Option 'bucket' = -2 (postpone) of table {} needs a primary key",
                self.table
            );
        } else if bucket == 0 || bucket < -2 {
            return config_err!(
                "Invalid value '{bucket}' for option 'bucket' of table {}: expected a number > 0, -1 or -2",
                self.table
            );
        } else if bucket > 0 && !self.has_pk() && bucket_key.is_empty() {
            return config_err!(
                "Append table {} with bucket = {bucket} needs option 'bucket-key'",
                self.table
            );
        }
        for k in &bucket_key {
            let Some(f) = self.schema.field(k) else {
                return config_err!(
                    "Bucket key column '{k}' (option 'bucket-key') is not a column of table {}",
                    self.table
                );
            };
            if self.schema.partition_keys.contains(k) {
                return config_err!("Bucket key column '{k}' (option 'bucket-key') of table {} must not be a partition column", self.table);
            }
            if self.has_pk() && !self.schema.primary_keys.contains(k) {
                return config_err!(
                    "Bucket key column '{k}' (option 'bucket-key') of table {} must be a primary key column",
                    self.table
                );
            }
            if !is_key_type(&f.data_type) {
                return config_err!(
                    "Bucket key column '{k}' (option 'bucket-key') of table {} has nested type {}",
                    self.table,
                    f.data_type
                );
            }
        }
        Ok(())
    }

    /// Java `validateFieldsPrefix`: `fields.<a,b>.…` options name existing columns.
    fn fields_prefix(&self) -> Result<()> {
        for key in self.schema.options.keys() {
            let Some(rest) = key.strip_prefix("fields.") else {
                continue;
            };
            let names = rest.split('.').next().unwrap_or_default();
            for name in names.split(',') {
                if name != DEFAULT_AGG_FUNCTION && !self.has_column(name) {
                    return config_err!(
                        "Column '{name}' of option '{key}' is not a column of table {}",
                        self.table
                    );
                }
            }
        }
        Ok(())
    }

    /// Java `validateSequenceField` (semantics.md §2.5, §3.2).
    fn sequence_fields(&self) -> Result<()> {
        let fields = &self.options.sequence_fields;
        if fields.is_empty() {
            return Ok(());
        }
        if let Some(dup) = first_duplicate(fields) {
            return config_err!("Sequence field '{dup}' (option 'sequence.field') is listed twice");
        }
        for f in fields {
            if !self.has_column(f) {
                return config_err!(
                    "Sequence field '{f}' (option 'sequence.field') is not a column of table {}",
                    self.table
                );
            }
            if self.opt(&format!("fields.{f}.aggregate-function")).is_some() {
                return config_err!(
                    "Sequence field '{f}' (option 'sequence.field') must not have an aggregate function"
                );
            }
        }
        if self.options.merge_engine.as_str() == "first-row" {
            return config_err!("Option 'sequence.field' is not supported by merge-engine first-row");
        }
        if self.cross_partition_update() {
            return config_err!(
                "Option 'sequence.field' cannot be used when the primary key ({}) of table {} does not contain all partition columns ({})",
                self.schema.primary_keys.join(", "),
                self.table,
                self.schema.partition_keys.join(", ")
            );
        }
        Ok(())
    }

    fn cross_partition_update(&self) -> bool {
        self.has_pk()
            && self
                .schema
                .partition_keys
                .iter()
                .any(|p| !self.schema.primary_keys.contains(p))
    }

    /// Java `validateMergeFunction` / `validateMergeFunctionFactory` (semantics.md §2.3, §2.4,
    /// §2.5): aggregate function names, partial-update sequence groups, delete options.
    fn merge_engine(&self) -> Result<()> {
        if !self.has_pk() {
            // Java ignores merge options on append tables (no merge function is created).
            return Ok(());
        }
        let engine = self.options.merge_engine.as_str();
        if engine != "partial-update" && engine != "aggregation" {
            return Ok(());
        }
        for f in &self.schema.fields {
            if let Some(func) = self.agg_function(&f.name) {
                if !AGGREGATE_FUNCTIONS.contains(&func) {
                    return config_err!(
                        "Unknown aggregate function '{func}' for column '{}' of table {}",
                        f.name,
                        self.table
                    );
                }
            }
        }
        if engine == "partial-update" {
            self.partial_update()
        } else {
            self.aggregation()
        }
    }

    /// `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`.
    fn agg_function(&self, field: &str) -> Option<&str> {
        self.opt(&format!("fields.{field}.aggregate-function"))
            .or_else(|| self.opt("fields.default-aggregate-function"))
    }

    fn partial_update(&self) -> Result<()> {
        let pk = &self.schema.primary_keys;
        let mut ordering: BTreeSet<&str> = BTreeSet::new();
        let mut protected: BTreeMap<&str, &str> = BTreeMap::new();
        for (key, value) in &self.schema.options {
            let Some(names) = key
                .strip_prefix("fields.")
                .and_then(|k| k.strip_suffix(SEQUENCE_GROUP_SUFFIX))
            else {
                continue;
            };
            for name in names.split(',').chain(value.split(',')).map(str::trim) {
                if !self.has_column(name) {
                    return config_err!(
                        "Column '{name}' of option '{key}' is not a column of table {}",
                        self.table
                    );
                }
                if pk.iter().any(|k| k == name) {
                    return config_err!(
                        "Primary key column '{name}' cannot be in a sequence group (option '{key}')"
                    );
                }
            }
            ordering.extend(names.split(',').map(str::trim));
            for name in value.split(',').map(str::trim) {
                if let Some(other) = protected.insert(name, key) {
                    return config_err!(
                        "Column '{name}' is in two sequence groups: options '{other}' and '{key}'"
                    );
                }
            }
        }
        for f in &self.schema.fields {
            let name = f.name.as_str();
            if pk.iter().any(|k| k == name) || ordering.contains(name) {
                continue;
            }
            if let Some(func) = self.agg_function(name) {
                if func != "last_non_null_value" && !protected.contains_key(name) {
                    return config_err!(
                        "Aggregate function '{func}' of column '{name}' needs a sequence group (option 'fields.<seq>.sequence-group') with merge-engine partial-update"
                    );
                }
            }
        }
        // `ignore-delete` with its fallback keys (Java `CoreOptions.IGNORE_DELETE`)
        let ignore_delete = ["ignore-delete", "partial-update.ignore-delete"]
            .iter()
            .find(|k| self.schema.options.contains_key(**k))
            .map_or(Ok(false), |k| bool_option(&self.schema.options, k, false))?;
        let remove_on_delete = bool_option(
            &self.schema.options,
            "partial-update.remove-record-on-delete",
            false,
        )?;
        let remove_on_group = self.opt("partial-update.remove-record-on-sequence-group");
        if ignore_delete && remove_on_delete {
            return config_err!("Options 'ignore-delete' and 'partial-update.remove-record-on-delete' conflict: enable only one");
        }
        if ignore_delete && remove_on_group.is_some() {
            return config_err!("Options 'ignore-delete' and 'partial-update.remove-record-on-sequence-group' conflict: enable only one");
        }
        if remove_on_delete && !protected.is_empty() {
            return config_err!("Option 'partial-update.remove-record-on-delete' conflicts with sequence groups: enable only one");
        }
        if let Some(groups) = remove_on_group {
            if let Some(bad) = groups.split(',').map(str::trim).find(|g| !ordering.contains(g)) {
                return config_err!(
                    "Column '{bad}' of option 'partial-update.remove-record-on-sequence-group' must be the ordering field of a sequence group"
                );
            }
        }
        Ok(())
    }

    fn aggregation(&self) -> Result<()> {
        if !bool_option(&self.schema.options, "aggregation.remove-record-on-delete", false)? {
            return Ok(());
        }
        for f in &self.schema.fields {
            let key = format!("fields.{}.ignore-retract", f.name);
            if bool_option(&self.schema.options, &key, false)? {
                return config_err!(
                    "Options 'aggregation.remove-record-on-delete' and '{key}' conflict: enable only one"
                );
            }
        }
        Ok(())
    }

    /// Changelog producer, deletion vectors and streaming options (semantics.md §2.5, §6, §10).
    fn changelog_and_modes(&self) -> Result<()> {
        let producer = self.options.changelog_producer.as_str();
        if !self.has_pk() && producer != "none" {
            return config_err!(
                "Option 'changelog-producer' = '{producer}' needs a primary key: table {} has none",
                self.table
            );
        }
        let overwrite = bool_option(&self.schema.options, "streaming-read-overwrite", false)?;
        if overwrite && (producer == "lookup" || producer == "full-compaction") {
            return config_err!("Option 'streaming-read-overwrite' cannot be true with changelog-producer '{producer}' (duplicated changes)");
        }
        if overwrite && !self.has_pk() {
            return config_err!(
                "Option 'streaming-read-overwrite' needs a primary key: table {} has none",
                self.table
            );
        }
        if self.opt("full-compaction.delta-commits").is_some() && producer == "lookup" {
            return config_err!(
                "Option 'full-compaction.delta-commits' is incompatible with changelog-producer 'lookup': use changelog-producer 'full-compaction'"
            );
        }
        let engine = self.options.merge_engine.as_str();
        if self.has_pk() && engine == "first-row" && producer != "none" && producer != "lookup" {
            return config_err!("Option 'changelog-producer' = '{producer}' is not supported by merge-engine first-row: use none or lookup");
        }
        if self.options.deletion_vectors {
            if producer == "full-compaction" {
                return config_err!("Option 'deletion-vectors.enabled' is not supported with changelog-producer 'full-compaction'");
            }
            if engine == "first-row" {
                return config_err!("Option 'deletion-vectors.enabled' is not supported by merge-engine first-row (it never deletes old rows)");
            }
        }
        Ok(())
    }

    /// Snapshot and changelog retention bounds (Java `validateTableSchema`).
    fn retention(&self) -> Result<()> {
        let int = |key: &str, default: i64| self.opt(key).map_or(Ok(default), |v| parse_int(key, v));
        let snap_min = int("snapshot.num-retained.min", 10)?;
        let snap_max = int("snapshot.num-retained.max", i32::MAX as i64)?;
        let cl_min = int("changelog.num-retained.min", snap_min)?;
        let cl_max = int("changelog.num-retained.max", snap_max)?;
        for (min, max, what) in [(snap_min, snap_max, "snapshot"), (cl_min, cl_max, "changelog")] {
            if min < 1 {
                return config_err!("Option '{what}.num-retained.min' must be at least 1, got {min}");
            }
            if min > max {
                return config_err!("Option '{what}.num-retained.min' ({min}) must not be larger than '{what}.num-retained.max' ({max})");
            }
        }
        Ok(())
    }

    /// Java `SchemaValidation`: `BLOB` columns live in `.blob` files of a data-evolution table
    /// (which needs row tracking, so no primary key), beside at least one other column.
    fn blobs(&self) -> Result<()> {
        let blobs: Vec<&str> = self
            .schema
            .fields
            .iter()
            .filter(|f| f.data_type.kind == TypeKind::Blob)
            .map(|f| f.name.as_str())
            .collect();
        let Some(first) = blobs.first() else {
            return Ok(());
        };
        let enabled = |key: &str| bool_option(&self.schema.options, key, false);
        if !enabled("data-evolution.enabled")? || !enabled("row-tracking.enabled")? {
            return config_err!(
                "BLOB column '{first}' of table {} needs 'data-evolution.enabled' and 'row-tracking.enabled' = 'true'",
                self.table
            );
        }
        if self.has_pk() {
            return config_err!(
                "Table {} with BLOB column '{first}' cannot have a primary key",
                self.table
            );
        }
        if blobs.len() == self.schema.fields.len() {
            return config_err!(
                "Table {} with BLOB columns must have other columns too",
                self.table
            );
        }
        if let Some(p) = blobs
            .iter()
            .find(|b| self.schema.partition_keys.iter().any(|k| k == *b))
        {
            return config_err!(
                "BLOB column '{p}' of table {} cannot be a partition key",
                self.table
            );
        }
        Ok(())
    }

    fn misc(&self) -> Result<()> {
        if let Some(f) = self.opt("rowkind.field") {
            if !self.has_column(f) {
                return config_err!(
                    "Row kind field '{f}' (option 'rowkind.field') is not a column of table {}",
                    self.table
                );
            }
        }
        if self.opt("partition.expiration-time").is_some() && self.schema.partition_keys.is_empty() {
            return config_err!(
                "Option 'partition.expiration-time' needs a partitioned table: {} is not partitioned",
                self.table
            );
        }
        Ok(())
    }
}

/// Types allowed for primary-key, partition and bucket-key columns (Java
/// `PRIMARY_KEY_UNSUPPORTED_LOGICAL_TYPES`).
fn is_key_type(t: &DataType) -> bool {
    !matches!(
        t.kind,
        TypeKind::Array(_) | TypeKind::Multiset(_) | TypeKind::Map(..) | TypeKind::Row(_) | TypeKind::Variant
    )
}
