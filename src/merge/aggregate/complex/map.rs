//! `merge_map` (Java `FieldMergeMapAgg`) and `merge_map_with_keytime`
//! (`FieldMergeMapWithKeyTimeAgg`).
//!
//! Java collects entries in a `HashMap`, so its entry order is unspecified; we keep the order in
//! which keys were first inserted (a key that is removed and inserted again moves to the end).

use std::cmp::Ordering;
use std::collections::HashSet;

use arrow::array::{Array, ArrayRef, AsArray, MapArray, StringArray, StructArray};
use arrow::compute::cast;
use arrow::datatypes::DataType as ArrowType;
use arrow::row::{Row, Rows};
use datafusion::common::{plan_datafusion_err, Result};

use super::{
    as_map, build_map, check_comparable, encode_rows, fold_groups, raw_elements, retract_unsupported,
    type_error, Acc, KeyedSlots,
};
use crate::merge::aggregate::{FieldAggOptions, FieldAggregator, Groups, Step};
use crate::spec::{DataType, TypeKind};

const MERGE_MAP: &str = "merge_map";
const KEYTIME: &str = "merge_map_with_keytime";

pub(super) fn create_merge_map(field: &str, data_type: &DataType) -> Result<Box<dyn FieldAggregator>> {
    let TypeKind::Map(key, _) = &data_type.kind else {
        return Err(type_error(MERGE_MAP, field, "a MAP type", data_type));
    };
    check_comparable(MERGE_MAP, field, "map keys", &key.to_arrow())?;
    Ok(Box::new(MergeMap {
        field: field.to_string(),
    }))
}

pub(super) fn create_keytime(
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    let expected = "a MAP<K, ROW<...>> type whose ROW has at least 2 fields";
    let TypeKind::Map(key, value) = &data_type.kind else {
        return Err(type_error(KEYTIME, field, expected, data_type));
    };
    let TypeKind::Row(fields) = &value.kind else {
        return Err(type_error(KEYTIME, field, expected, data_type));
    };
    if fields.len() < 2 {
        return Err(type_error(KEYTIME, field, expected, data_type));
    }
    let ts_index = match &options.ts_field {
        None => fields.len() - 1,
        Some(name) => fields.iter().position(|f| &f.name == name).ok_or_else(|| {
            let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            plan_datafusion_err!(
                "Timestamp field '{name}' not found in ROW type for field '{field}'. Available \
                 fields: {names:?}"
            )
        })?,
    };
    // Java reads the timestamp with `getString` and compares the strings.
    let ts_type = &fields[ts_index].data_type;
    if !matches!(ts_type.kind, TypeKind::Char(_) | TypeKind::VarChar(_)) {
        return Err(plan_datafusion_err!(
            "Aggregate function '{KEYTIME}' of field '{field}' compares the timestamp field '{}' as \
             a string, so it must be CHAR/VARCHAR/STRING, but it is {ts_type}",
            fields[ts_index].name
        ));
    }
    check_comparable(KEYTIME, field, "map keys", &key.to_arrow())?;
    Ok(Box::new(MergeMapWithKeyTime {
        field: field.to_string(),
        ts_index,
    }))
}

/// Map entries (indices of the input's entries array) by key.
struct EntryMap<'a> {
    rows: &'a Rows,
    slots: KeyedSlots<'a, u32>,
}

impl<'a> EntryMap<'a> {
    fn new(rows: &'a Rows) -> Self {
        Self {
            rows,
            slots: KeyedSlots::new(),
        }
    }

    fn get(&self, entry: u32) -> Option<u32> {
        self.slots.get(&self.rows.row(entry as usize)).copied()
    }

    /// Puts `entry` under its key (replacing the value of an existing key in place).
    fn put(&mut self, entry: u32) {
        self.slots.put(self.rows.row(entry as usize), entry);
    }

    fn remove(&mut self, entry: u32) {
        self.slots.remove(&self.rows.row(entry as usize));
    }

    fn into_entries(self) -> Vec<u32> {
        self.slots.into_values()
    }
}

/// The key rows of the map's entries.
fn key_rows(map: &MapArray) -> Result<Rows> {
    encode_rows(&[map.keys().clone()])
}

#[derive(Debug)]
struct MergeMap {
    field: String,
}

impl MergeMap {
    /// Java `agg`: key union, the later map wins on a collision.
    fn agg(rows: &Rows, acc: Acc<u32>, input: Acc<u32>) -> Acc<u32> {
        let (acc, input) = match (acc, input) {
            (Some(a), Some(i)) => (a, i),
            (a, i) => return a.or(i),
        };
        let mut map = EntryMap::new(rows);
        acc.into_iter().chain(input).for_each(|e| map.put(e));
        Some(map.into_entries())
    }

    /// Java `retract`: removes the retracted keys.
    fn retract(rows: &Rows, acc: Acc<u32>, input: Acc<u32>) -> Acc<u32> {
        let acc = acc?;
        let input = match input {
            Some(i) if !i.is_empty() => i,
            _ => return Some(acc),
        };
        let removed: HashSet<Row<'_>> = input.iter().map(|&e| rows.row(e as usize)).collect();
        let mut map = EntryMap::new(rows);
        acc.into_iter()
            .filter(|&e| !removed.contains(&rows.row(e as usize)))
            .for_each(|e| map.put(e));
        Some(map.into_entries())
    }
}

impl FieldAggregator for MergeMap {
    fn name(&self) -> &'static str {
        MERGE_MAP
    }

    fn supports_retract(&self) -> bool {
        true
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let map = as_map(input, MERGE_MAP, &self.field)?;
        let rows = key_rows(map)?;
        let (offsets, nulls) = (map.value_offsets(), map.nulls());
        let results = fold_groups(
            groups,
            |row| raw_elements(nulls, offsets, row),
            |step, acc, row| {
                let value = raw_elements(nulls, offsets, row);
                Ok(match step {
                    Step::Retract => Self::retract(&rows, acc, value),
                    Step::AddReversed => Self::agg(&rows, value, acc),
                    _ => Self::agg(&rows, acc, value),
                })
            },
        )?;
        build_map(map, &results)
    }
}

#[derive(Debug)]
struct MergeMapWithKeyTime {
    field: String,
    /// Index of the timestamp field in the value ROW.
    ts_index: usize,
}

/// Java `String.compareTo` (UTF-16 code units).
fn java_string_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

impl MergeMapWithKeyTime {
    /// Java `agg`: per key keep the entry with the greater timestamp; a NULL value removes the
    /// key, a NULL timestamp is skipped.
    fn agg(rows: &Rows, values: &StructArray, ts: &StringArray, acc: Acc<u32>, input: Acc<u32>) -> Acc<u32> {
        let (acc, input) = match (acc, input) {
            (Some(a), Some(i)) => (a, i),
            (a, i) => return a.or(i),
        };
        let mut map = EntryMap::new(rows);
        acc.into_iter().for_each(|e| map.put(e));
        for e in input {
            if values.is_null(e as usize) {
                map.remove(e);
                continue;
            }
            if ts.is_null(e as usize) {
                continue;
            }
            let replace = match map.get(e) {
                None => true,
                Some(old) if values.is_null(old as usize) || ts.is_null(old as usize) => true,
                Some(old) => {
                    java_string_cmp(ts.value(e as usize), ts.value(old as usize)) == Ordering::Greater
                }
            };
            if replace {
                map.put(e);
            }
        }
        Some(map.into_entries())
    }
}

impl FieldAggregator for MergeMapWithKeyTime {
    fn name(&self) -> &'static str {
        KEYTIME
    }

    fn supports_retract(&self) -> bool {
        false
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let map = as_map(input, KEYTIME, &self.field)?;
        let rows = key_rows(map)?;
        let values = map.values().as_struct_opt().ok_or_else(|| {
            type_error(
                KEYTIME,
                &self.field,
                "ROW map values",
                &DataType {
                    kind: TypeKind::Boolean,
                    nullable: true,
                },
            )
        })?;
        let ts = values.column(self.ts_index);
        let ts = match ts.data_type() {
            ArrowType::Utf8 => ts.clone(),
            _ => cast(ts, &ArrowType::Utf8)?,
        };
        let ts = ts.as_string::<i32>();
        let (offsets, nulls) = (map.value_offsets(), map.nulls());
        let results = fold_groups(
            groups,
            |row| raw_elements(nulls, offsets, row),
            |step, acc, row| {
                let value = raw_elements(nulls, offsets, row);
                match step {
                    Step::Retract => Err(retract_unsupported(KEYTIME, &self.field)),
                    Step::AddReversed => Ok(Self::agg(&rows, values, ts, value, acc)),
                    _ => Ok(Self::agg(&rows, values, ts, acc, value)),
                }
            },
        )?;
        build_map(map, &results)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        Array, ArrayRef, AsArray, Int32Array, Int32Builder, MapBuilder, MapFieldNames, StringBuilder,
        StructBuilder,
    };
    use arrow::datatypes::{DataType as ArrowType, Field, Fields};

    use super::super::test_util::{adds, agg, array_of, atomic, create_err, fold, map_of};
    use super::java_string_cmp;
    use crate::merge::aggregate::{FieldAggOptions, Step};
    use crate::spec::{DataField, DataType, TypeKind};

    type Entries = Vec<(i32, Option<i32>)>;

    fn names() -> MapFieldNames {
        MapFieldNames {
            entry: "entries".into(),
            key: "key".into(),
            value: "value".into(),
        }
    }

    /// MAP<INT, INT> values.
    fn int_maps(values: &[Option<Entries>]) -> ArrayRef {
        let mut b = MapBuilder::new(Some(names()), Int32Builder::new(), Int32Builder::new());
        for v in values {
            match v {
                None => b.append(false).unwrap(),
                Some(entries) => {
                    for (k, v) in entries {
                        b.keys().append_value(*k);
                        b.values().append_option(*v);
                    }
                    b.append(true).unwrap();
                }
            }
        }
        Arc::new(b.finish())
    }

    fn read_int_maps(a: &ArrayRef) -> Vec<Option<Entries>> {
        let map = a.as_map();
        (0..map.len())
            .map(|i| {
                map.is_valid(i).then(|| {
                    let e = map.value(i);
                    let k = e.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                    let v = e.column(1).as_any().downcast_ref::<Int32Array>().unwrap();
                    k.iter().zip(v.iter()).map(|(k, v)| (k.unwrap(), v)).collect()
                })
            })
            .collect()
    }

    fn map_int_int() -> DataType {
        map_of(atomic("INT NOT NULL"), atomic("INT"))
    }

    #[test]
    fn merge_map_types() {
        let none = FieldAggOptions::default();
        let err = create_err("merge_map", &array_of(atomic("INT")), &none);
        assert!(
            err.contains("'merge_map'") && err.contains("'f'") && err.contains("MAP"),
            "{err}"
        );
        let a = agg("merge_map", &map_int_int(), &none);
        assert!(a.supports_retract());
        assert_eq!(a.name(), "merge_map");
    }

    #[test]
    fn merge_map_union_input_wins() {
        let a = agg("merge_map", &map_int_int(), &FieldAggOptions::default());
        let input = int_maps(&[
            Some(vec![(1, Some(10)), (2, Some(20))]),
            Some(vec![(2, None), (3, Some(30))]),
            None,
            Some(vec![]),
        ]);
        let out = fold(
            &*a,
            &input,
            &[
                &adds(&[0, 1]),
                &adds(&[2, 0, 2]),
                &adds(&[2]),
                &adds(&[3, 2]),
                &[(0, Step::Add), (1, Step::AddReversed)],
            ],
        )
        .unwrap();
        assert_eq!(out.data_type(), input.data_type());
        assert_eq!(
            read_int_maps(&out),
            vec![
                Some(vec![(1, Some(10)), (2, None), (3, Some(30))]),
                Some(vec![(1, Some(10)), (2, Some(20))]),
                None,
                Some(vec![]),
                // reversed: the older input loses the collision
                Some(vec![(2, Some(20)), (3, Some(30)), (1, Some(10))]),
            ]
        );
    }

    #[test]
    fn merge_map_retract_removes_keys() {
        let a = agg("merge_map", &map_int_int(), &FieldAggOptions::default());
        let input = int_maps(&[
            Some(vec![(1, Some(10)), (2, Some(20)), (3, Some(30))]),
            Some(vec![(2, Some(99)), (4, Some(1))]),
            None,
        ]);
        let out = fold(
            &*a,
            &input,
            &[
                &[(0, Step::Add), (1, Step::Retract)],
                &[(1, Step::Retract), (0, Step::Add)],
                &[(0, Step::Add), (2, Step::Retract)],
                &[(0, Step::Add), (0, Step::Retract)],
                &[(0, Step::Add), (1, Step::SetNull), (1, Step::Reset)],
            ],
        )
        .unwrap();
        assert_eq!(
            read_int_maps(&out),
            vec![
                Some(vec![(1, Some(10)), (3, Some(30))]),
                Some(vec![(1, Some(10)), (2, Some(20)), (3, Some(30))]),
                Some(vec![(1, Some(10)), (2, Some(20)), (3, Some(30))]),
                Some(vec![]),
                Some(vec![(2, Some(99)), (4, Some(1))]),
            ]
        );
    }

    fn keytime_type(ts: &str) -> DataType {
        let row = DataType {
            kind: TypeKind::Row(vec![
                DataField {
                    id: 0,
                    name: "v".into(),
                    data_type: atomic("INT"),
                    description: None,
                },
                DataField {
                    id: 1,
                    name: "ts".into(),
                    data_type: atomic(ts),
                    description: None,
                },
            ]),
            nullable: true,
        };
        map_of(atomic("STRING NOT NULL"), row)
    }

    type KtEntry = (&'static str, Option<(Option<i32>, Option<&'static str>)>);

    fn keytime_maps(t: &DataType, values: &[Option<Vec<KtEntry>>]) -> ArrayRef {
        let ArrowType::Map(entries, _) = t.to_arrow() else {
            unreachable!()
        };
        let ArrowType::Struct(kv) = entries.data_type() else {
            unreachable!()
        };
        let ArrowType::Struct(row_fields) = kv[1].data_type() else {
            unreachable!()
        };
        let row_fields: Fields = row_fields.clone();
        let mut b = MapBuilder::new(
            Some(names()),
            StringBuilder::new(),
            StructBuilder::from_fields(row_fields, 0),
        )
        .with_keys_field(Arc::new(Field::new("key", ArrowType::Utf8, false)))
        .with_values_field(kv[1].clone());
        for v in values {
            match v {
                None => b.append(false).unwrap(),
                Some(entries) => {
                    for (k, v) in entries {
                        b.keys().append_value(k);
                        let s = b.values();
                        match v {
                            None => {
                                s.field_builder::<Int32Builder>(0).unwrap().append_null();
                                s.field_builder::<StringBuilder>(1).unwrap().append_null();
                                s.append(false);
                            }
                            Some((x, ts)) => {
                                s.field_builder::<Int32Builder>(0).unwrap().append_option(*x);
                                s.field_builder::<StringBuilder>(1).unwrap().append_option(*ts);
                                s.append(true);
                            }
                        }
                    }
                    b.append(true).unwrap();
                }
            }
        }
        let out: ArrayRef = Arc::new(b.finish());
        assert_eq!(out.data_type(), &t.to_arrow());
        out
    }

    type KtOut = Vec<(String, Option<(Option<i32>, Option<String>)>)>;

    fn read_keytime(a: &ArrayRef) -> Vec<Option<KtOut>> {
        let map = a.as_map();
        (0..map.len())
            .map(|i| {
                map.is_valid(i).then(|| {
                    let e = map.value(i);
                    let k = e.column(0).as_string::<i32>();
                    let v = e.column(1).as_struct();
                    let x = v.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                    let ts = v.column(1).as_string::<i32>();
                    (0..e.len())
                        .map(|j| {
                            let value = v.is_valid(j).then(|| {
                                (
                                    x.is_valid(j).then(|| x.value(j)),
                                    ts.is_valid(j).then(|| ts.value(j).into()),
                                )
                            });
                            (k.value(j).to_string(), value)
                        })
                        .collect()
                })
            })
            .collect()
    }

    #[test]
    fn keytime_types_and_options() {
        let none = FieldAggOptions::default();
        let err = create_err("merge_map_with_keytime", &map_int_int(), &none);
        assert!(
            err.contains("'merge_map_with_keytime'") && err.contains("'f'") && err.contains("ROW"),
            "{err}"
        );
        let err = create_err("merge_map_with_keytime", &keytime_type("BIGINT"), &none);
        assert!(err.contains("'ts'") && err.contains("string"), "{err}");
        let missing = FieldAggOptions {
            ts_field: Some("nope".into()),
            ..Default::default()
        };
        let err = create_err("merge_map_with_keytime", &keytime_type("STRING"), &missing);
        assert!(err.contains("'nope'") && err.contains("not found"), "{err}");
        let a = agg("merge_map_with_keytime", &keytime_type("STRING"), &none);
        assert!(!a.supports_retract());
    }

    #[test]
    fn keytime_keeps_newest_entries() {
        let t = keytime_type("STRING");
        let a = agg("merge_map_with_keytime", &t, &FieldAggOptions::default());
        let input = keytime_maps(
            &t,
            &[
                Some(vec![
                    ("a", Some((Some(1), Some("2024-01-02")))),
                    ("b", Some((Some(2), Some("2024-01-01")))),
                    ("c", Some((Some(3), Some("2024-01-01")))),
                ]),
                Some(vec![
                    ("a", Some((Some(10), Some("2024-01-01")))), // older: ignored
                    ("b", Some((Some(20), Some("2024-01-05")))), // newer: wins
                    ("c", None),                                 // NULL value: removes c
                    ("d", Some((Some(40), None))),               // NULL ts: skipped
                    ("e", Some((None, Some("2024-01-01")))),     // new key
                ]),
                None,
            ],
        );
        let out = fold(&*a, &input, &[&adds(&[0, 1]), &adds(&[2, 1]), &adds(&[0, 2])]).unwrap();
        assert_eq!(out.data_type(), input.data_type());
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            read_keytime(&out),
            vec![
                Some(vec![
                    ("a".into(), Some((Some(1), s("2024-01-02")))),
                    ("b".into(), Some((Some(20), s("2024-01-05")))),
                    ("e".into(), Some((None, s("2024-01-01")))),
                ]),
                // first non-NULL value is taken as it is (NULL value and NULL ts included)
                Some(vec![
                    ("a".into(), Some((Some(10), s("2024-01-01")))),
                    ("b".into(), Some((Some(20), s("2024-01-05")))),
                    ("c".into(), None),
                    ("d".into(), Some((Some(40), None))),
                    ("e".into(), Some((None, s("2024-01-01")))),
                ]),
                Some(vec![
                    ("a".into(), Some((Some(1), s("2024-01-02")))),
                    ("b".into(), Some((Some(2), s("2024-01-01")))),
                    ("c".into(), Some((Some(3), s("2024-01-01")))),
                ]),
            ]
        );
        // A NULL-valued or NULL-ts accumulated entry is replaced by any timestamped input.
        let out = fold(&*a, &input, &[&adds(&[1, 0])]).unwrap();
        let got = read_keytime(&out).remove(0).unwrap();
        assert_eq!(
            got,
            vec![
                ("a".into(), Some((Some(1), s("2024-01-02")))),
                ("b".into(), Some((Some(20), s("2024-01-05")))),
                ("c".into(), Some((Some(3), s("2024-01-01")))),
                ("d".into(), Some((Some(40), None))),
                ("e".into(), Some((None, s("2024-01-01")))),
            ]
        );
        let err = fold(&*a, &input, &[&[(0, Step::Add), (1, Step::Retract)]])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fields.f.ignore-retract") && err.contains("merge_map_with_keytime"),
            "{err}"
        );
    }

    #[test]
    fn keytime_ts_field_option_and_reversed() {
        let t = keytime_type("STRING");
        let input = keytime_maps(
            &t,
            &[
                Some(vec![("a", Some((Some(1), Some("2"))))]),
                Some(vec![("a", Some((Some(2), Some("1"))))]),
            ],
        );
        let a = agg("merge_map_with_keytime", &t, &FieldAggOptions::default());
        // Reversed: the older record is folded into the newer value, the greater ts still wins.
        let out = fold(&*a, &input, &[&[(1, Step::Add), (0, Step::AddReversed)]]).unwrap();
        assert_eq!(
            read_keytime(&out)[0].as_ref().unwrap()[0].1,
            Some((Some(1), Some("2".into())))
        );
        let explicit = FieldAggOptions {
            ts_field: Some("ts".into()),
            ..Default::default()
        };
        let a = agg("merge_map_with_keytime", &t, &explicit);
        let out = fold(&*a, &input, &[&adds(&[0, 1])]).unwrap();
        assert_eq!(
            read_keytime(&out)[0].as_ref().unwrap()[0].1,
            Some((Some(1), Some("2".into())))
        );
    }

    #[test]
    fn java_string_order() {
        use std::cmp::Ordering::*;
        assert_eq!(java_string_cmp("a", "b"), Less);
        assert_eq!(java_string_cmp("b", "ab"), Greater);
        // U+FFFD sorts after a surrogate pair in UTF-16 but before it in UTF-8.
        assert_eq!(java_string_cmp("\u{FFFD}", "\u{1F600}"), Greater);
    }
}
