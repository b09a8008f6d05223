//! Aggregators: rbm32, rbm64, hll_sketch, theta_sketch.
//!
//! Each folds serialized VARBINARY values with a union (NULLs are ignored: `agg(NULL, x) = x`,
//! `agg(a, NULL) = a`, a lone value is kept byte for byte). The union must produce exactly the
//! bytes Java Paimon would store, so that a Paimon reader (or writer) can continue merging:
//! see [`roaring`] (rbm32) and [`roaring64`] (rbm64).

use crate::bitmap::{roaring, roaring64};
mod theta;

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder};
use datafusion::common::{exec_datafusion_err, plan_datafusion_err, Result};

use super::{FieldAggOptions, FieldAggregator, Groups, Step};
use crate::spec::{DataType, TypeKind};

/// The aggregator `function` if it is one of this module's, else `None`.
pub(super) fn create(
    function: &str,
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Option<Result<Box<dyn FieldAggregator>>> {
    let _ = options;
    let (name, what, union): (&'static str, &str, Union) = match function {
        "rbm32" => ("rbm32", "roaring bitmap", roaring::union32),
        "rbm64" => ("rbm64", "roaring bitmap", roaring64::union64),
        "hll_sketch" => ("hll_sketch", "hll sketch", unsupported_sketch),
        "theta_sketch" => ("theta_sketch", "theta sketch", theta::union),
        _ => return None,
    };
    // Java's factories accept VarBinaryType only (BYTES is VARBINARY(MAX); BINARY(n) is refused).
    if !matches!(data_type.kind, TypeKind::VarBinary(_)) {
        return Some(Err(plan_datafusion_err!(
            "Aggregate function '{name}' of field '{field}' requires a VARBINARY (BYTES) column holding a \
             serialized {what}, but the field is {data_type}"
        )));
    }
    if name == "hll_sketch" {
        return Some(Err(plan_datafusion_err!(
            "Aggregate function '{name}' of field '{field}' is not supported yet: its union must \
             reproduce Apache DataSketches (Java) serialized bytes exactly, which no available \
             implementation is verified to do"
        )));
    }
    Some(Ok(Box::new(BinaryUnion {
        name,
        field: field.to_string(),
        union,
    })))
}

/// `union(acc, input)`: the serialized union, built the way Java does (`acc` is the object
/// deserialized first and merged into).
type Union = fn(&[u8], &[u8]) -> Result<Vec<u8>>;

fn unsupported_sketch(_: &[u8], _: &[u8]) -> Result<Vec<u8>> {
    Err(exec_datafusion_err!("sketch unions are not supported yet"))
}

/// A union-based aggregate over VARBINARY values (Java `FieldRoaringBitmap32Agg` & co.).
struct BinaryUnion {
    name: &'static str,
    field: String,
    union: Union,
}

impl std::fmt::Debug for BinaryUnion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinaryUnion")
            .field("name", &self.name)
            .field("field", &self.field)
            .finish()
    }
}

impl FieldAggregator for BinaryUnion {
    fn name(&self) -> &'static str {
        self.name
    }

    fn supports_retract(&self) -> bool {
        false
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let values = input.as_binary_opt::<i32>().ok_or_else(|| {
            exec_datafusion_err!(
                "Aggregate function '{}' of field '{}' expects a binary column, got {}",
                self.name,
                self.field,
                input.data_type()
            )
        })?;
        let mut out = BinaryBuilder::with_capacity(groups.len(), 0);
        for g in 0..groups.len() {
            let mut acc: Option<Cow<'_, [u8]>> = None;
            for (row, step) in groups.members(g) {
                let value = values.is_valid(row).then(|| values.value(row));
                acc = match step {
                    Step::Skip => acc,
                    Step::SetNull => None,
                    Step::Reset => value.map(Cow::Borrowed),
                    Step::Retract => {
                        return Err(exec_datafusion_err!(
                            "Aggregate function '{}' of field '{}' does not support retraction. If you \
                             allow this function to ignore retraction messages, you can configure \
                             'fields.{}.ignore-retract'='true'.",
                            self.name,
                            self.field,
                            self.field
                        ))
                    }
                    Step::Add | Step::AddReversed => match (acc, value) {
                        (None, v) => v.map(Cow::Borrowed),
                        (a, None) => a,
                        // Java `aggReversed(acc, v)` is `agg(v, acc)`.
                        (Some(a), Some(v)) if step == Step::AddReversed => {
                            Some(Cow::Owned((self.union)(v, &a).map_err(|e| self.context(e))?))
                        }
                        (Some(a), Some(v)) => {
                            Some(Cow::Owned((self.union)(&a, v).map_err(|e| self.context(e))?))
                        }
                    },
                };
            }
            out.append_option(acc);
        }
        Ok(Arc::new(out.finish()))
    }
}

impl BinaryUnion {
    fn context(&self, e: datafusion::common::DataFusionError) -> datafusion::common::DataFusionError {
        exec_datafusion_err!(
            "Aggregate function '{}' of field '{}': {e}",
            self.name,
            self.field
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, AsArray, BinaryArray};

    use crate::bitmap::roaring::union32;
    use crate::bitmap::roaring64::union64;
    use crate::merge::aggregate::{create_aggregator, FieldAggOptions, FieldAggregator, Groups, Step};
    use crate::spec::types::parse_type_string;

    fn agg(function: &str) -> Box<dyn FieldAggregator> {
        create_aggregator(
            function,
            "f",
            &parse_type_string("BYTES").unwrap(),
            &FieldAggOptions::default(),
        )
        .unwrap()
    }

    use crate::testing::hex_bytes as hex;

    fn fold(
        a: &dyn FieldAggregator,
        input: &ArrayRef,
        groups: &[&[(u32, Step)]],
    ) -> datafusion::common::Result<Vec<Option<Vec<u8>>>> {
        let mut order = vec![];
        let mut steps = vec![];
        let mut offsets = vec![0];
        for g in groups {
            for &(row, step) in *g {
                order.push(row);
                steps.push(step);
            }
            offsets.push(order.len());
        }
        let out = a.fold(
            input,
            Groups {
                order: &order,
                offsets: &offsets,
                steps: &steps,
            },
        )?;
        let out = out.as_binary::<i32>();
        Ok((0..out.len())
            .map(|i| out.is_valid(i).then(|| out.value(i).to_vec()))
            .collect())
    }

    #[test]
    fn types_checked() {
        let options = FieldAggOptions::default();
        for f in ["rbm32", "rbm64", "hll_sketch", "theta_sketch"] {
            for t in ["INT", "BINARY(8)", "STRING"] {
                let err = create_aggregator(f, "f", &parse_type_string(t).unwrap(), &options).unwrap_err();
                let err = err.to_string();
                assert!(
                    err.contains(f) && err.contains("'f'") && err.contains("VARBINARY"),
                    "{err}"
                );
            }
        }
        let err =
            create_aggregator("hll_sketch", "f", &parse_type_string("BYTES").unwrap(), &options).unwrap_err();
        assert!(err.to_string().contains("not supported yet"), "{err}");
        assert!(!agg("rbm32").supports_retract());
        assert!(super::create("sum", "f", &parse_type_string("BYTES").unwrap(), &options).is_none());
    }

    #[test]
    fn rbm32_fold() {
        let a = agg("rbm32");
        let one_two_three = hex("3A300000 01000000 0000 0200 10000000 0100 0200 0300");
        let four = hex("3A300000 01000000 0000 0000 10000000 0400");
        let ten = hex("3A300000 01000000 0000 0000 10000000 0A00");
        let input: ArrayRef = Arc::new(BinaryArray::from_opt_vec(vec![
            Some(&one_two_three),
            Some(&four),
            None,
            Some(&ten),
        ]));
        let out = fold(
            &*a,
            &input,
            &[
                &[(0, Step::Add), (2, Step::Add), (1, Step::Add)],
                &[(2, Step::Add), (1, Step::Add)],
                &[(2, Step::Add)],
                &[(0, Step::Add), (3, Step::AddReversed), (1, Step::Skip)],
                &[(0, Step::Add), (1, Step::SetNull), (2, Step::Add)],
                &[(0, Step::Add), (3, Step::Reset)],
            ],
        )
        .unwrap();
        assert_eq!(out[0], Some(hex("3B300000 01 0000 0300 0100 0100 0300"))); // {1,2,3,4} as a run
        assert_eq!(out[1], Some(four.clone())); // a lone value is kept as it is
        assert_eq!(out[2], None);
        assert_eq!(out[3], Some(union32(&ten, &one_two_three).unwrap()));
        assert_eq!(
            out[3],
            Some(hex("3A300000 01000000 0000 0300 10000000 0100 0200 0300 0A00"))
        );
        assert_eq!(out[4], None);
        assert_eq!(out[5], Some(ten.clone()));
        let err = fold(&*a, &input, &[&[(0, Step::Add), (1, Step::Retract)]])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rbm32") && err.contains("fields.f.ignore-retract"),
            "{err}"
        );
        let bad: ArrayRef = Arc::new(BinaryArray::from_vec(vec![b"xx", b"yy"]));
        let err = fold(&*a, &bad, &[&[(0, Step::Add), (1, Step::Add)]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("rbm32") && err.contains("'f'"), "{err}");
    }

    #[test]
    fn rbm64_fold() {
        let a = agg("rbm64");
        let leaf = |idx: &str| format!("04 0000 00 000000000000 {idx}");
        let one_two_three = hex(&format!(
            "01 0100000000000000 {} 01000000 FE 01000000 01 02 03000000 0100 0200 0300 \
             0100000000000000 00000000 00000000",
            leaf("0000000000000000")
        ));
        let four = hex(&format!(
            "01 0100000000000000 {} 01000000 FE 01000000 01 02 01000000 0400 \
             0100000000000000 00000000 00000000",
            leaf("0000000000000000")
        ));
        let input: ArrayRef = Arc::new(BinaryArray::from_opt_vec(vec![
            Some(&one_two_three),
            Some(&four),
            None,
        ]));
        let out = fold(
            &*a,
            &input,
            &[
                &[(0, Step::Add), (2, Step::Add), (1, Step::Add)],
                &[(2, Step::Add)],
            ],
        )
        .unwrap();
        let expected = hex(&format!(
            "01 0100000000000000 {} 01000000 FE 01000000 01 00 04000000 0100 0100 0300 \
             0100000000000000 00000000 00000000",
            leaf("0000000000000000")
        ));
        assert_eq!(out, vec![Some(expected.clone()), None]);
        assert_eq!(union64(&one_two_three, &four).unwrap(), expected);
        let err = fold(&*a, &input, &[&[(0, Step::Add), (1, Step::Retract)]])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rbm64") && err.contains("fields.f.ignore-retract"),
            "{err}"
        );
    }
}
