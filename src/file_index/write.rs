//! Building the file indexes of a data file as it is written (`file-index.<type>.columns`), as
//! Java's `DataFileIndexWriter`: a bloom filter (`BloomFilter64`: `items`, default 1,000,000,
//! and `fpp`, default 0.1, per column) and a bitmap index (version 1: every distinct value with
//! the rows holding it) per indexed column, in one container. A container of at most
//! `file-index.in-manifest-threshold` bytes (default 500) is embedded in the manifest entry,
//! a bigger one goes to `<data file>.index` beside the data file.
//!
//! Range-bitmap and BSI indexes are not built (Java's readers do without them: a file without
//! an index is read).

use std::collections::{BTreeMap, HashMap};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType as ArrowType, Float32Type, Float64Type, Int64Type, TimeUnit};

use super::key::{bytes_hash, float_hash, long_hash};
use crate::bitmap::roaring::Bitmap32;
use crate::error::{Error, Result};
use crate::spec::{DataType, TableSchema, TypeKind};

/// Java's default `file-index.in-manifest-threshold`.
const DEFAULT_IN_MANIFEST_THRESHOLD: usize = 500;

/// One value as the bitmap index keys it (floats by their bits, for hashing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Int(i64),
    Float(u32),
    Double(u64),
    Text(Vec<u8>),
    Bool(bool),
}

/// The values of one column batch in index terms.
enum Values {
    Ints(Vec<Option<i64>>),
    Floats(Vec<Option<f32>>),
    Doubles(Vec<Option<f64>>),
    Texts(Vec<Option<Vec<u8>>>),
    Bools(Vec<Option<bool>>),
}

/// The values of `array` (a column of `data_type`) as the indexes key them: integers, dates
/// and times as 64-bit integers, timestamps in milliseconds up to precision 3 and microseconds
/// above, strings by their bytes; `None` for a type no index here keys.
fn values(array: &ArrayRef, data_type: &DataType) -> Result<Option<Values>> {
    let ints = |array: &ArrayRef| -> Result<Vec<Option<i64>>> {
        let cast = arrow::compute::cast(array, &ArrowType::Int64)?;
        Ok(cast.as_primitive::<Int64Type>().iter().collect())
    };
    Ok(Some(match data_type.kind {
        TypeKind::Char(_) | TypeKind::VarChar(_) => {
            let cast = arrow::compute::cast(array, &ArrowType::LargeUtf8)?;
            Values::Texts(
                cast.as_string::<i64>()
                    .iter()
                    .map(|v| v.map(|s| s.as_bytes().to_vec()))
                    .collect(),
            )
        }
        TypeKind::Boolean => Values::Bools(array.as_boolean().iter().collect()),
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int | TypeKind::BigInt => {
            Values::Ints(ints(array)?)
        }
        TypeKind::Date | TypeKind::Time(_) => Values::Ints(ints(array)?),
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => {
            let per_second: i64 = match array.data_type() {
                ArrowType::Timestamp(TimeUnit::Second, _) => 1,
                ArrowType::Timestamp(TimeUnit::Millisecond, _) => 1_000,
                ArrowType::Timestamp(TimeUnit::Microsecond, _) => 1_000_000,
                ArrowType::Timestamp(TimeUnit::Nanosecond, _) => 1_000_000_000,
                _ => return Ok(None),
            };
            let target: i64 = if p <= 3 { 1_000 } else { 1_000_000 };
            let raw = ints(array)?;
            Values::Ints(
                raw.into_iter()
                    .map(|v| {
                        v.map(|v| match per_second.cmp(&target) {
                            std::cmp::Ordering::Less => v.saturating_mul(target / per_second),
                            std::cmp::Ordering::Equal => v,
                            std::cmp::Ordering::Greater => v.div_euclid(per_second / target),
                        })
                    })
                    .collect(),
            )
        }
        TypeKind::Float => Values::Floats(array.as_primitive::<Float32Type>().iter().collect()),
        TypeKind::Double => Values::Doubles(array.as_primitive::<Float64Type>().iter().collect()),
        _ => return Ok(None),
    }))
}

impl Values {
    fn keys(self) -> Vec<Option<Key>> {
        match self {
            Values::Ints(v) => v.into_iter().map(|v| v.map(Key::Int)).collect(),
            Values::Floats(v) => v
                .into_iter()
                .map(|v| v.map(|f| Key::Float(f.to_bits())))
                .collect(),
            Values::Doubles(v) => v
                .into_iter()
                .map(|v| v.map(|f| Key::Double(f.to_bits())))
                .collect(),
            Values::Texts(v) => v.into_iter().map(|v| v.map(Key::Text)).collect(),
            Values::Bools(v) => v.into_iter().map(|v| v.map(Key::Bool)).collect(),
        }
    }
}

/// Java's `FastHash` of a key: Thomas Wang's hash of integers (floats by their bits), XXH64 of
/// bytes; booleans are not hashed.
fn bloom_hash(key: &Key) -> Option<i64> {
    Some(match key {
        Key::Int(v) => long_hash(*v),
        Key::Float(bits) => float_hash(*bits),
        Key::Double(bits) => long_hash(*bits as i64),
        Key::Text(bytes) => bytes_hash(bytes),
        Key::Bool(_) => return None,
    })
}

struct Bloom {
    bits: Vec<u8>,
    functions: i32,
}

impl Bloom {
    /// Java's `BloomFilter64(items, fpp)` sizing.
    fn new(items: u64, fpp: f64) -> Self {
        let ln2 = std::f64::consts::LN_2;
        let nb = (-(items as f64) * fpp.ln() / (ln2 * ln2)) as i64;
        let num_bits = (nb + (8 - nb % 8)).max(8);
        let functions = ((num_bits as f64 / items.max(1) as f64 * ln2).round() as i32).max(1);
        Bloom {
            bits: vec![0; (num_bits / 8) as usize],
            functions,
        }
    }

    fn add(&mut self, hash: i64) {
        for bit in super::indexes::bloom_bits(hash, self.functions, self.bits.len() * 8) {
            self.bits[bit >> 3] |= 1 << (bit & 7);
        }
    }

    fn serialize(&self) -> Vec<u8> {
        let mut out = self.functions.to_be_bytes().to_vec();
        out.extend_from_slice(&self.bits);
        out
    }
}

/// Rows of each distinct value, in order of first appearance, and of NULL.
struct BitmapRows {
    /// Bytes of an integer key (1 for TINYINT, 2 for SMALLINT, 4 for INT, DATE and TIME, 8
    /// for BIGINT and timestamps), as Java writes each type.
    width: usize,
    order: Vec<Key>,
    rows: HashMap<Key, Vec<u32>>,
    nulls: Vec<u32>,
    count: u32,
}

impl BitmapRows {
    /// Version 1: header (values with their bitmap's offset in the body, or `-1 - row` for a
    /// value of one row), then the bitmaps of the other values.
    fn serialize(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let offset_of = |rows: &[u32], body: &mut Vec<u8>| -> i32 {
            if rows.len() == 1 {
                return -1 - rows[0] as i32;
            }
            let offset = body.len() as i32;
            let mut bitmap = Bitmap32::of(rows);
            bitmap.run_optimize();
            body.extend_from_slice(&bitmap.serialize());
            offset
        };
        let mut out = vec![1u8];
        out.extend_from_slice(&(self.count as i32).to_be_bytes());
        out.extend_from_slice(&(self.order.len() as i32).to_be_bytes());
        out.push(u8::from(!self.nulls.is_empty()));
        if !self.nulls.is_empty() {
            let offset = offset_of(&self.nulls, &mut body);
            out.extend_from_slice(&offset.to_be_bytes());
        }
        for key in &self.order {
            match key {
                Key::Int(_) | Key::Float(_) | Key::Double(_) | Key::Bool(_) => {}
                Key::Text(bytes) => out.extend_from_slice(&(bytes.len() as i32).to_be_bytes()),
            }
            out.extend_from_slice(&self.key_bytes(key));
            let offset = offset_of(&self.rows[key], &mut body);
            out.extend_from_slice(&offset.to_be_bytes());
        }
        out.extend_from_slice(&body);
        out
    }

    fn key_bytes(&self, key: &Key) -> Vec<u8> {
        match key {
            Key::Int(v) => match self.width {
                1 => (*v as i8).to_be_bytes().to_vec(),
                2 => (*v as i16).to_be_bytes().to_vec(),
                4 => (*v as i32).to_be_bytes().to_vec(),
                _ => v.to_be_bytes().to_vec(),
            },
            Key::Float(bits) => bits.to_be_bytes().to_vec(),
            Key::Double(bits) => bits.to_be_bytes().to_vec(),
            Key::Text(bytes) => bytes.clone(),
            Key::Bool(b) => vec![u8::from(*b)],
        }
    }
}

fn int_width(kind: &TypeKind) -> usize {
    match kind {
        TypeKind::TinyInt => 1,
        TypeKind::SmallInt => 2,
        TypeKind::Int | TypeKind::Date | TypeKind::Time(_) => 4,
        _ => 8,
    }
}

/// The indexes of one column.
struct ColumnIndexes {
    /// Position among the table's columns.
    position: usize,
    name: String,
    data_type: DataType,
    bloom: Option<Bloom>,
    bitmap: Option<BitmapRows>,
}

/// Where a finished container goes.
pub(crate) enum IndexPlacement {
    /// In the manifest entry (`_EMBEDDED_FILE_INDEX`).
    Embedded(Vec<u8>),
    /// In `<data file>.index` beside the data file (`_EXTRA_FILES`).
    File(Vec<u8>),
}

/// The file indexes of one data file being written.
pub(crate) struct FileIndexBuilder {
    columns: Vec<ColumnIndexes>,
    threshold: usize,
    rows: u32,
}

impl FileIndexBuilder {
    /// The indexes `schema`'s options ask for on its data files, if any.
    pub(crate) fn of(schema: &TableSchema) -> Result<Option<Self>> {
        let options = &schema.options;
        let listed = |kind: &str| -> Vec<String> {
            options
                .get(&format!("file-index.{kind}.columns"))
                .map(|c| {
                    c.split(',')
                        .map(|c| c.trim().to_string())
                        .filter(|c| !c.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let (blooms, bitmaps) = (listed("bloom-filter"), listed("bitmap"));
        if blooms.is_empty() && bitmaps.is_empty() {
            return Ok(None);
        }
        let option = |kind: &str, column: &str, key: &str| -> Option<&String> {
            options
                .get(&format!("file-index.{kind}.{column}.{key}"))
                .or_else(|| options.get(&format!("file-index.{kind}.{key}")))
        };
        let mut columns = Vec::new();
        for (position, field) in schema.fields.iter().enumerate() {
            let (bloom, bitmap) = (blooms.contains(&field.name), bitmaps.contains(&field.name));
            if !bloom && !bitmap {
                continue;
            }
            let bloom = match bloom {
                false => None,
                true => {
                    let bad = |key: &str, v: &str| {
                        Error::Unsupported(format!(
                            "Option 'file-index.bloom-filter.{}.{key}' of table is not valid: '{v}'",
                            field.name
                        ))
                    };
                    let items = match option("bloom-filter", &field.name, "items") {
                        Some(v) => v
                            .trim()
                            .parse::<u64>()
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| bad("items", v))?,
                        None => 1_000_000,
                    };
                    let fpp = match option("bloom-filter", &field.name, "fpp") {
                        Some(v) => v
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|p| *p > 0.0 && *p < 1.0)
                            .ok_or_else(|| bad("fpp", v))?,
                        None => 0.1,
                    };
                    Some(Bloom::new(items, fpp))
                }
            };
            columns.push(ColumnIndexes {
                position,
                name: field.name.clone(),
                data_type: field.data_type.clone(),
                bloom,
                bitmap: bitmap.then(|| BitmapRows {
                    width: int_width(&field.data_type.kind),
                    order: vec![],
                    rows: HashMap::new(),
                    nulls: vec![],
                    count: 0,
                }),
            });
        }
        if columns.is_empty() {
            return Ok(None);
        }
        let threshold = match options.get("file-index.in-manifest-threshold") {
            Some(v) => crate::spec::parse_memory_size(v).ok_or_else(|| {
                Error::Unsupported(format!(
                    "Option 'file-index.in-manifest-threshold' is not a memory size: '{v}'"
                ))
            })?,
            None => DEFAULT_IN_MANIFEST_THRESHOLD,
        };
        Ok(Some(FileIndexBuilder {
            columns,
            threshold,
            rows: 0,
        }))
    }

    /// Adds the rows of `batch` (every table column, in schema order).
    pub(crate) fn update(&mut self, batch: &[ArrayRef]) -> Result<()> {
        let n = batch.first().map_or(0, |c| c.len()) as u32;
        for column in &mut self.columns {
            let Some(values) = values(&batch[column.position], &column.data_type)? else {
                continue;
            };
            let keys = values.keys();
            if let Some(bloom) = &mut column.bloom {
                for key in keys.iter().flatten() {
                    if let Some(hash) = bloom_hash(key) {
                        bloom.add(hash);
                    }
                }
            }
            if let Some(bitmap) = &mut column.bitmap {
                for (i, key) in keys.into_iter().enumerate() {
                    let row = self.rows + i as u32;
                    match key {
                        None => bitmap.nulls.push(row),
                        Some(key) => match bitmap.rows.get_mut(&key) {
                            Some(rows) => rows.push(row),
                            None => {
                                bitmap.order.push(key.clone());
                                bitmap.rows.insert(key, vec![row]);
                            }
                        },
                    }
                }
                bitmap.count = self.rows + n;
            }
        }
        self.rows += n;
        Ok(())
    }

    /// The container of every index built, and where it goes.
    pub(crate) fn finish(self) -> IndexPlacement {
        let mut columns: BTreeMap<usize, super::container::ColumnIndexes<'static>> = BTreeMap::new();
        for column in self.columns {
            let mut indexes = Vec::new();
            if let Some(bloom) = &column.bloom {
                indexes.push(("bloom-filter", bloom.serialize()));
            }
            if let Some(bitmap) = &column.bitmap {
                indexes.push(("bitmap", bitmap.serialize()));
            }
            columns.insert(column.position, (column.name, indexes));
        }
        let bytes = super::container::serialize(columns.into_values().collect());
        if bytes.len() <= self.threshold {
            IndexPlacement::Embedded(bytes)
        } else {
            IndexPlacement::File(bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, StringArray};

    use super::super::indexes::{bitmap_keys, bloom_may_contain};
    use super::super::key::IndexKey;
    use super::*;

    fn schema(options: &[(&str, &str)]) -> TableSchema {
        let json = serde_json::json!({
            "version": 3, "id": 0,
            "fields": [{"id": 0, "name": "name", "type": "STRING"}, {"id": 1, "name": "n", "type": "INT"}],
            "highestFieldId": 1, "partitionKeys": [], "primaryKeys": [],
            "options": options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
            "timeMillis": 0
        });
        TableSchema::from_json(json.to_string().as_bytes(), "schema-0").unwrap()
    }

    fn columns() -> Vec<ArrayRef> {
        vec![
            Arc::new(StringArray::from(vec![
                Some("Alice"),
                Some("Bob"),
                None,
                Some("Alice"),
            ])),
            Arc::new(Int32Array::from(vec![Some(10), None, Some(30), Some(10)])),
        ]
    }

    /// A Java-sized bloom filter (the fixture's: 1,000,000 items at 0.1 is 599,067 bytes and 3
    /// functions) and a version-1 bitmap, read back by the reader of Java's files.
    #[test]
    fn built_indexes_read_back() {
        let schema = schema(&[
            ("file-index.bloom-filter.columns", "name, n"),
            ("file-index.bitmap.columns", "n"),
        ]);
        let mut builder = FileIndexBuilder::of(&schema).unwrap().unwrap();
        let batch = columns();
        builder.update(&batch[..]).unwrap();
        let IndexPlacement::File(bytes) = builder.finish() else {
            panic!("a 600 kB container goes to a file");
        };
        let entries = super::super::container::parse(&bytes).expect("a container");
        let bloom = entries[&("name".to_string(), "bloom-filter".to_string())].unwrap();
        assert_eq!(bloom.len(), 599_071);
        assert_eq!(&bloom[..4], &3i32.to_be_bytes());
        let text = |s: &str| IndexKey::Text(s.as_bytes().to_vec());
        assert!(bloom_may_contain(bloom, &text("Alice")));
        assert!(bloom_may_contain(bloom, &text("Bob")));
        assert!(!bloom_may_contain(bloom, &text("Carl")));
        let n_bloom = entries[&("n".to_string(), "bloom-filter".to_string())].unwrap();
        assert!(bloom_may_contain(n_bloom, &IndexKey::Int(30)));
        assert!(!bloom_may_contain(n_bloom, &IndexKey::Int(20)));
        let bitmap = entries[&("n".to_string(), "bitmap".to_string())].unwrap();
        let field = schema.field("n").unwrap();
        let keys = bitmap_keys(bitmap, &field.data_type).expect("version 1");
        assert!(keys.has_null);
        assert_eq!(keys.keys, vec![IndexKey::Int(10), IndexKey::Int(30)]);
    }

    /// Java's bloom filters of the fixture table `append_with_bloomfilter` (defaults: 1,000,000
    /// items at 0.1), rebuilt from the table's rows: the same bytes.
    #[test]
    fn bloom_filters_equal_javas() {
        use arrow::array::Float64Array;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/java-paimon/warehouses/parquet/append_with_bloomfilter.db/append_with_bloomfilter");
        let table =
            TableSchema::from_json(&std::fs::read(dir.join("schema/schema-0")).unwrap(), "schema-0").unwrap();
        let index = std::fs::read_dir(dir.join("bucket-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".index"))
            .unwrap();
        let java = std::fs::read(index).unwrap();
        let java = super::super::container::parse(&java).unwrap();
        let batch: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![
                "Alice", "Bob", "Emily", "Tony", "Lucy", "Bob", "Tony", "Alice",
            ])),
            Arc::new(Int32Array::from(vec![
                Some(100),
                Some(200),
                Some(300),
                Some(50),
                Some(500),
                Some(100),
                None,
                Some(20),
            ])),
            Arc::new(Int32Array::from(vec![
                Some(-2),
                Some(-3),
                Some(1),
                Some(1),
                Some(-1),
                Some(2),
                Some(-2),
                None,
            ])),
            Arc::new(Float64Array::from(vec![
                11.1, 12.1, 13.1, 14.1, 15.1, 16.1, 17.1, 18.1,
            ])),
        ];
        let mut builder = FileIndexBuilder::of(&table).unwrap().unwrap();
        // (f4, a TIMESTAMP(9), is left out: the rows are f0 to f3)
        builder.columns.retain(|c| c.name != "f4");
        builder.update(&batch).unwrap();
        let (IndexPlacement::Embedded(ours) | IndexPlacement::File(ours)) = builder.finish();
        let ours = super::super::container::parse(&ours).unwrap();
        for column in ["f0", "f1", "f2", "f3"] {
            let key = (column.to_string(), "bloom-filter".to_string());
            assert!(
                ours[&key].unwrap() == java[&key].unwrap(),
                "{column} differs from Java's"
            );
        }
    }

    #[test]
    fn small_containers_are_embedded() {
        let table = schema(&[("file-index.bitmap.columns", "name")]);
        let mut builder = FileIndexBuilder::of(&table).unwrap().unwrap();
        builder.update(&columns()[..]).unwrap();
        let IndexPlacement::Embedded(bytes) = builder.finish() else {
            panic!("a small container is embedded");
        };
        let entries = super::super::container::parse(&bytes).expect("a container");
        let bitmap = entries[&("name".to_string(), "bitmap".to_string())].unwrap();
        let keys = bitmap_keys(bitmap, &table.field("name").unwrap().data_type).unwrap();
        assert_eq!(keys.keys.len(), 2);
        assert!(keys.has_null);
        assert!(FileIndexBuilder::of(&schema(&[])).unwrap().is_none());
    }
}
