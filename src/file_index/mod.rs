//! File indexes (Paimon's `file-index.*` options): per data file, an index of some columns,
//! embedded in the manifest entry (`_EMBEDDED_FILE_INDEX`) or in a `<data file>.index` file
//! beside it (`_EXTRA_FILES`). Reads of append tables skip a file whose indexes show that no row
//! can match an equality, `IN`, `IS NULL` or range conjunct of the query's filter, as Java's
//! `FileIndexEvaluator` does (`file-index.read.enabled`, on by default).
//!
//! ```text
//! filter ──► leaves (column by field id: IN values, IS NULL, range)
//! file ──► container ──► (column, index type) ──► bitmap keys / bloom bits / range bounds
//!   a leaf that no index of its column admits ──► the file is skipped
//! ```
//!
//! An index only ever removes files that cannot match: a column without an index, an index
//! type or version this reader does not know, a retyped column, or a predicate an index cannot
//! answer keeps the file. Rows are still filtered exactly above the scan.

mod container;
mod indexes;
mod key;
mod write;
mod xxh64;

pub(crate) use write::{FileIndexBuilder, IndexPlacement};

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, InListExpr, IsNullExpr, Literal};
use datafusion::physical_expr::utils::split_conjunction;
use datafusion::physical_expr::PhysicalExpr;

use crate::spec::{DataFileMeta, DataType, TableOptions, TableSchema};
use key::IndexKey;

/// The suffix of a data file's separate index file.
const INDEX_FILE_SUFFIX: &str = ".index";

/// What one conjunct asks of a column.
#[derive(Debug, Clone)]
enum Test {
    /// `c = v`, `c IN (v, ...)`.
    In(Vec<ScalarValue>),
    /// `c IS NULL`.
    IsNull,
    /// `c > v`, `c <= v`, ...: bounds with their inclusiveness.
    Range {
        low: Option<(ScalarValue, bool)>,
        high: Option<(ScalarValue, bool)>,
    },
}

#[derive(Debug, Clone)]
struct Leaf {
    field_id: i32,
    data_type: DataType,
    test: Test,
}

/// A conjunct indexes can answer: one test of a column, or a disjunction of such (DataFusion
/// writes a short `IN` list as `c = 1 OR c = 2`).
#[derive(Debug, Clone)]
enum Node {
    Leaf(Leaf),
    Or(Vec<Node>),
}

/// The conjuncts of a read's filter that file indexes can answer.
#[derive(Debug, Clone)]
pub(crate) struct FileIndexFilter {
    conjuncts: Vec<Node>,
}

impl FileIndexFilter {
    /// The filter of an append-table read over `schema`, when the table reads its file indexes
    /// and some conjunct can use one.
    pub(crate) fn new(
        schema: &TableSchema,
        options: &TableOptions,
        predicate: Option<&Arc<dyn PhysicalExpr>>,
    ) -> Option<Self> {
        if !options.file_index_read || schema.has_primary_key() {
            return None;
        }
        let conjuncts: Vec<Node> = split_conjunction(predicate?)
            .into_iter()
            .filter_map(|conjunct| node(schema, conjunct))
            .collect();
        (!conjuncts.is_empty()).then_some(FileIndexFilter { conjuncts })
    }

    /// The name of `file`'s index file, when its index is not embedded.
    pub(crate) fn index_file(file: &DataFileMeta) -> Option<&str> {
        if file.embedded_index.is_some() {
            return None;
        }
        file.extra_files
            .iter()
            .find(|f| f.ends_with(INDEX_FILE_SUFFIX))
            .map(String::as_str)
    }

    /// Whether a file written with `file_schema` whose index container is `index` may hold a
    /// row the filter keeps.
    pub(crate) fn may_match(&self, file_schema: &TableSchema, index: &[u8]) -> bool {
        match container::parse(index) {
            Some(entries) => self.entries_may_match(file_schema, &entries),
            None => true,
        }
    }

    /// [`Self::may_match`] over the indexes `entries` of a file.
    pub(crate) fn entries_may_match(
        &self,
        file_schema: &TableSchema,
        entries: &container::Entries<'_>,
    ) -> bool {
        self.conjuncts
            .iter()
            .all(|node| node_may_match(node, file_schema, entries))
    }

    /// Of a container's `layout`, the indexes this filter may use on a file written with
    /// `file_schema`: those of its columns, of the types it reads. A reader fetches only these.
    pub(crate) fn wanted(
        &self,
        file_schema: &TableSchema,
        layout: &container::Layout,
    ) -> Vec<((String, String), (usize, usize))> {
        let mut columns = Vec::new();
        fn collect<'a>(node: &'a Node, out: &mut Vec<&'a Leaf>) {
            match node {
                Node::Leaf(leaf) => out.push(leaf),
                Node::Or(nodes) => nodes.iter().for_each(|n| collect(n, out)),
            }
        }
        let mut leaves = Vec::new();
        self.conjuncts.iter().for_each(|n| collect(n, &mut leaves));
        for leaf in leaves {
            if let Some(field) = file_schema.field_by_id(leaf.field_id) {
                columns.push(field.name.as_str());
            }
        }
        layout
            .iter()
            .filter(|((column, kind), _)| {
                columns.contains(&column.as_str())
                    && matches!(kind.as_str(), "bitmap" | "bloom-filter" | "range-bitmap")
            })
            .filter_map(|(key, range)| range.map(|r| (key.clone(), r)))
            .collect()
    }
}

pub(crate) use container::{head_length, layout, Entries};

/// Whether the indexes `entries` of a file written with `file_schema` admit a row passing
/// `node`.
fn node_may_match(node: &Node, file_schema: &TableSchema, entries: &container::Entries<'_>) -> bool {
    let leaf = match node {
        Node::Or(nodes) => return nodes.iter().any(|n| node_may_match(n, file_schema, entries)),
        Node::Leaf(leaf) => leaf,
    };
    let Some(field) = file_schema.field_by_id(leaf.field_id) else {
        return true;
    };
    // (an index of a retyped column keys the old type's values)
    if field.data_type.kind != leaf.data_type.kind {
        return true;
    }
    entries
        .iter()
        .filter(|((column, _), _)| *column == field.name)
        .all(|((_, kind), bytes)| match bytes {
            Some(bytes) => admits(kind, bytes, &field.data_type, &leaf.test),
            None => true,
        })
}

/// The node of one conjunct, if indexes can answer it: a leaf, or an `OR` whose every side
/// they can answer.
fn node(schema: &TableSchema, expr: &Arc<dyn PhysicalExpr>) -> Option<Node> {
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        if *b.op() == Operator::Or {
            let mut sides = Vec::new();
            for side in [b.left(), b.right()] {
                match node(schema, side)? {
                    Node::Or(nodes) => sides.extend(nodes),
                    leaf => sides.push(leaf),
                }
            }
            return Some(Node::Or(sides));
        }
    }
    leaf(schema, expr).map(Node::Leaf)
}

/// The leaf of one conjunct on a column of `schema`, if indexes can answer it.
fn leaf(schema: &TableSchema, conjunct: &Arc<dyn PhysicalExpr>) -> Option<Leaf> {
    let column_of = |e: &Arc<dyn PhysicalExpr>| e.downcast_ref::<Column>().map(|c| c.name().to_string());
    let literal_of = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<Literal>()
            .map(|l| l.value().clone())
            .filter(|v| !v.is_null())
    };
    let (name, test) = if let Some(b) = conjunct.downcast_ref::<BinaryExpr>() {
        let (name, value, op) = match (column_of(b.left()), literal_of(b.right())) {
            (Some(c), Some(v)) => (c, v, *b.op()),
            _ => (column_of(b.right())?, literal_of(b.left())?, b.op().swap()?),
        };
        let test = match op {
            Operator::Eq => Test::In(vec![value]),
            Operator::Gt => Test::Range {
                low: Some((value, false)),
                high: None,
            },
            Operator::GtEq => Test::Range {
                low: Some((value, true)),
                high: None,
            },
            Operator::Lt => Test::Range {
                low: None,
                high: Some((value, false)),
            },
            Operator::LtEq => Test::Range {
                low: None,
                high: Some((value, true)),
            },
            _ => return None,
        };
        (name, test)
    } else if let Some(list) = conjunct.downcast_ref::<InListExpr>() {
        if list.negated() {
            return None;
        }
        let values = list.list().iter().map(literal_of).collect::<Option<Vec<_>>>()?;
        (column_of(list.expr())?, Test::In(values))
    } else if let Some(is_null) = conjunct.downcast_ref::<IsNullExpr>() {
        (column_of(is_null.arg())?, Test::IsNull)
    } else {
        return None;
    };
    let field = schema.field(&name)?;
    Some(Leaf {
        field_id: field.id,
        data_type: field.data_type.clone(),
        test,
    })
}

/// Whether an index of type `kind` over a column of `data_type` admits a row passing `test`.
fn admits(kind: &str, bytes: &[u8], data_type: &DataType, test: &Test) -> bool {
    let keys_of = |values: &[ScalarValue]| -> Option<Vec<IndexKey>> {
        values
            .iter()
            .map(|v| IndexKey::of_literal(v, data_type))
            .collect()
    };
    let bound = |b: &Option<(ScalarValue, bool)>| -> Option<Option<(IndexKey, bool)>> {
        match b {
            None => Some(None),
            Some((v, inclusive)) => Some(Some((IndexKey::of_literal(v, data_type)?, *inclusive))),
        }
    };
    match (kind, test) {
        ("bitmap", _) => {
            let Some(index) = indexes::bitmap_keys(bytes, data_type) else {
                return true;
            };
            match test {
                Test::IsNull => index.has_null,
                Test::In(values) => match keys_of(values) {
                    Some(wanted) => wanted.iter().any(|w| index.keys.iter().any(|k| k.same(w))),
                    None => true,
                },
                Test::Range { low, high } => match (bound(low), bound(high)) {
                    (Some(low), Some(high)) => index.keys.iter().any(|k| {
                        indexes::overlaps(
                            k,
                            k,
                            low.as_ref().map(|(v, i)| (v, *i)),
                            high.as_ref().map(|(v, i)| (v, *i)),
                        )
                    }),
                    _ => true,
                },
            }
        }
        ("bloom-filter", Test::In(values)) => match keys_of(values) {
            Some(wanted) => wanted.iter().any(|w| indexes::bloom_may_contain(bytes, w)),
            None => true,
        },
        ("range-bitmap", Test::In(_) | Test::Range { .. }) => {
            let bounds = match indexes::range_bitmap_bounds(bytes, data_type) {
                Ok(bounds) => bounds,
                Err(()) => return true,
            };
            let Some((min, max)) = bounds else {
                return false;
            };
            match test {
                Test::In(values) => match keys_of(values) {
                    Some(wanted) => wanted
                        .iter()
                        .any(|w| indexes::overlaps(&min, &max, Some((w, true)), Some((w, true)))),
                    None => true,
                },
                Test::Range { low, high } => match (bound(low), bound(high)) {
                    (Some(low), Some(high)) => indexes::overlaps(
                        &min,
                        &max,
                        low.as_ref().map(|(v, i)| (v, *i)),
                        high.as_ref().map(|(v, i)| (v, *i)),
                    ),
                    _ => true,
                },
                Test::IsNull => true,
            }
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::indexes::{bitmap_keys, range_bitmap_bounds};
    use super::key::IndexKey;
    use super::*;

    /// A Java-written table of the fixture corpus: its latest schema and its one `.index` file.
    fn java_table(name: &str) -> (TableSchema, Vec<u8>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/java-paimon/warehouses/parquet")
            .join(format!("{name}.db/{name}"));
        let schema_path = dir.join("schema/schema-0");
        let schema = TableSchema::from_json(&std::fs::read(&schema_path).unwrap(), "schema-0").unwrap();
        let index = std::fs::read_dir(dir.join("bucket-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(INDEX_FILE_SUFFIX))
            .unwrap();
        (schema, std::fs::read(index).unwrap())
    }

    fn text(s: &str) -> IndexKey {
        IndexKey::Text(s.as_bytes().to_vec())
    }

    /// The rows are f0 = 17, 3, 5, 7, 9, NULL, NULL, 10 (and f4 the dates of those days of
    /// January 2024), in one chunk and in chunks of 16 bytes.
    #[test]
    fn range_bitmap_bounds_of_java_files() {
        for table in ["append_with_rangebitmap", "append_with_rangebitmap_multi_chunk"] {
            let (schema, index) = java_table(table);
            let entries = container::parse(&index).expect("a container");
            let bounds = |column: &str| {
                let field = schema.field(column).unwrap();
                let bytes = entries[&(column.to_string(), "range-bitmap".to_string())].unwrap();
                range_bitmap_bounds(bytes, &field.data_type).unwrap().unwrap()
            };
            assert_eq!(bounds("f0"), (IndexKey::Int(3), IndexKey::Int(17)), "{table}");
            assert_eq!(bounds("f1"), (IndexKey::Int(100), IndexKey::Int(600)), "{table}");
            assert_eq!(
                bounds("f2"),
                (IndexKey::Float(1.1), IndexKey::Float(6.6)),
                "{table}"
            );
            assert_eq!(
                bounds("f3"),
                (IndexKey::Double(11.11), IndexKey::Double(66.66)),
                "{table}"
            );
            // 2024-01-03 and 2024-01-17 as days since 1970
            assert_eq!(
                bounds("f4"),
                (IndexKey::Int(19725), IndexKey::Int(19739)),
                "{table}"
            );
        }
    }

    #[test]
    fn bitmap_keys_of_a_java_file() {
        let (schema, index) = java_table("append_with_bitmap_no_embedding");
        let entries = container::parse(&index).expect("a container");
        let keys = |column: &str| {
            let field = schema.field(column).unwrap();
            let bytes = entries[&(column.to_string(), "bitmap".to_string())].unwrap();
            bitmap_keys(bytes, &field.data_type).unwrap()
        };
        let f0 = keys("f0");
        let mut names = f0.keys.clone();
        names.sort_by(|a, b| a.cmp(b).unwrap());
        assert_eq!(names, ["Alice", "Bob", "Emily", "Lucy", "Tony"].map(text));
        assert!(!f0.has_null);
        let f2 = keys("f2");
        assert!(f2.has_null);
        assert_eq!(f2.keys.len(), 2);
    }

    /// Every value written is in the bloom filter; of 1000 values not written, few pass (the
    /// filter is sized for a 3% false-positive rate by default).
    #[test]
    fn bloom_filter_of_a_java_file() {
        let (_, index) = java_table("append_with_bsi_bitmap_bloomfilter");
        let entries = container::parse(&index).expect("a container");
        let f0 = entries[&("f0".to_string(), "bloom-filter".to_string())].unwrap();
        for name in ["Alice", "Bob", "Emily", "Tony", "Lucy"] {
            assert!(indexes::bloom_may_contain(f0, &text(name)), "{name}");
        }
        let passing = (0..1000)
            .filter(|i| indexes::bloom_may_contain(f0, &text(&format!("absent-{i}"))))
            .count();
        assert!(passing < 100, "{passing} of 1000 absent values pass");
        // BSI indexes are not read: a filter on a BSI-only column keeps the file
        let f1 = entries.get(&("f1".to_string(), "bsi".to_string()));
        assert!(f1.is_some());
    }
}
