//! `sum` and `product` (Java `FieldSumAgg`, `FieldProductAgg`) over TINYINT, SMALLINT, INT,
//! BIGINT, FLOAT, DOUBLE and DECIMAL.
//!
//! NULLs are neutral (`agg(NULL, x) = x`, `agg(a, NULL) = a`). Integer overflow is an error
//! (Java `Math.*Exact`); floats follow IEEE. Decimals keep the column's precision and scale:
//! a result that needs more digits than the precision is an error, products are rounded
//! HALF_UP to the scale, and a retracted product divides exactly (Java `BigDecimal.divide`
//! fails on a non-terminating quotient) before rounding to the scale.
//! Retract: `sum` subtracts (`acc` NULL → `-in`), `product` divides (either NULL → `acc`).

use std::fmt::Display;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveBuilder};
use arrow::datatypes::{i256, DataType as ArrowType, DecimalType, *};
use datafusion::common::{DataFusionError, Result};

use super::super::{FieldAggregator, Groups, Step};
use super::{unexpected_array, unsupported_type};
use crate::spec::{DataType, TypeKind};

/// Builds `sum` or `product` for a column of type `data_type`.
pub(super) fn create(function: &str, field: &str, data_type: &DataType) -> Result<Box<dyn FieldAggregator>> {
    let (name, op) = match function {
        "sum" => ("sum", Op::Sum),
        _ => ("product", Op::Product),
    };
    let numeric = match data_type.kind {
        TypeKind::TinyInt
        | TypeKind::SmallInt
        | TypeKind::Int
        | TypeKind::BigInt
        | TypeKind::Float
        | TypeKind::Double => true,
        TypeKind::Decimal { precision, scale } => (1..=38).contains(&precision) && scale >= 0,
        _ => false,
    };
    if !numeric {
        let expected = "a numeric type (TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE or DECIMAL)";
        return Err(unsupported_type(name, field, data_type, expected));
    }
    Ok(Box::new(ArithAgg {
        name,
        op,
        field: field.to_string(),
    }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Product,
}

#[derive(Debug)]
struct ArithAgg {
    name: &'static str,
    op: Op,
    field: String,
}

impl FieldAggregator for ArithAgg {
    fn name(&self) -> &'static str {
        self.name
    }

    fn supports_retract(&self) -> bool {
        true
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        match input.data_type() {
            ArrowType::Int8 => self.run::<Int8Type>(input, groups, &()),
            ArrowType::Int16 => self.run::<Int16Type>(input, groups, &()),
            ArrowType::Int32 => self.run::<Int32Type>(input, groups, &()),
            ArrowType::Int64 => self.run::<Int64Type>(input, groups, &()),
            ArrowType::Float32 => self.run::<Float32Type>(input, groups, &()),
            ArrowType::Float64 => self.run::<Float64Type>(input, groups, &()),
            ArrowType::Decimal128(precision, scale) if (1..=38).contains(precision) && *scale >= 0 => {
                self.run::<Decimal128Type>(input, groups, &Decimal::new(*precision, *scale))
            }
            other => Err(unexpected_array(self.name, &self.field, other)),
        }
    }
}

impl ArithAgg {
    fn run<T>(&self, input: &ArrayRef, groups: Groups<'_>, ctx: &<T::Native as Num>::Ctx) -> Result<ArrayRef>
    where
        T: ArrowPrimitiveType,
        T::Native: Num,
    {
        let values = input.as_primitive::<T>();
        let mut out =
            PrimitiveBuilder::<T>::with_capacity(groups.len()).with_data_type(input.data_type().clone());
        for g in 0..groups.len() {
            let mut acc: Option<T::Native> = None;
            for (row, step) in groups.members(g) {
                let v = values.is_valid(row).then(|| values.value(row));
                acc = match step {
                    Step::Add => self.agg(acc, v, ctx),
                    Step::AddReversed => self.agg(v, acc, ctx),
                    Step::Retract => self.retract(acc, v, ctx),
                    Step::Reset => Ok(v),
                    Step::SetNull => Ok(None),
                    Step::Skip => Ok(acc),
                }
                .map_err(|msg| {
                    DataFusionError::Execution(format!(
                        "Aggregate function '{}' of field '{}' failed: {msg}",
                        self.name, self.field
                    ))
                })?;
            }
            out.append_option(acc);
        }
        Ok(Arc::new(out.finish()))
    }

    /// Java `agg(accumulator, input)`.
    fn agg<N: Num>(&self, acc: Option<N>, v: Option<N>, ctx: &N::Ctx) -> Result<Option<N>, String> {
        match (acc, v) {
            (Some(a), Some(b)) => match self.op {
                Op::Sum => a.add(b, ctx).map(Some),
                Op::Product => a.mul(b, ctx).map(Some),
            },
            _ => Ok(acc.or(v)),
        }
    }

    /// Java `retract(accumulator, input)`.
    fn retract<N: Num>(&self, acc: Option<N>, v: Option<N>, ctx: &N::Ctx) -> Result<Option<N>, String> {
        match (self.op, acc, v) {
            (Op::Sum, Some(a), Some(b)) => a.sub(b, ctx).map(Some),
            (Op::Sum, None, Some(b)) => b.neg(ctx).map(Some),
            (Op::Product, Some(a), Some(b)) => a.div(b, ctx).map(Some),
            _ => Ok(acc),
        }
    }
}

/// The arithmetic of one native type; errors are the message after "failed: ".
trait Num: Copy + Display {
    /// Type parameters the arithmetic needs (precision and scale of decimals).
    type Ctx;
    fn add(self, other: Self, ctx: &Self::Ctx) -> Result<Self, String>;
    fn sub(self, other: Self, ctx: &Self::Ctx) -> Result<Self, String>;
    fn mul(self, other: Self, ctx: &Self::Ctx) -> Result<Self, String>;
    fn div(self, other: Self, ctx: &Self::Ctx) -> Result<Self, String>;
    fn neg(self, ctx: &Self::Ctx) -> Result<Self, String>;
}

macro_rules! integer_num {
    ($($t:ty => $name:literal),*) => {$(
        impl Num for $t {
            type Ctx = ();
            fn add(self, other: Self, _: &()) -> Result<Self, String> {
                self.checked_add(other).ok_or_else(|| format!("{} overflow: {self} + {other}", $name))
            }
            fn sub(self, other: Self, _: &()) -> Result<Self, String> {
                self.checked_sub(other).ok_or_else(|| format!("{} overflow: {self} - {other}", $name))
            }
            fn mul(self, other: Self, _: &()) -> Result<Self, String> {
                self.checked_mul(other).ok_or_else(|| format!("{} overflow: {self} * {other}", $name))
            }
            fn div(self, other: Self, _: &()) -> Result<Self, String> {
                if other == 0 {
                    return Err(format!("division by zero: {self} / 0"));
                }
                self.checked_div(other).ok_or_else(|| format!("{} overflow: {self} / {other}", $name))
            }
            fn neg(self, _: &()) -> Result<Self, String> {
                self.checked_neg().ok_or_else(|| format!("{} overflow: -({self})", $name))
            }
        }
    )*};
}
integer_num!(i8 => "TINYINT", i16 => "SMALLINT", i32 => "INT", i64 => "BIGINT");

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            type Ctx = ();
            fn add(self, other: Self, _: &()) -> Result<Self, String> {
                Ok(self + other)
            }
            fn sub(self, other: Self, _: &()) -> Result<Self, String> {
                Ok(self - other)
            }
            fn mul(self, other: Self, _: &()) -> Result<Self, String> {
                Ok(self * other)
            }
            fn div(self, other: Self, _: &()) -> Result<Self, String> {
                Ok(self / other)
            }
            fn neg(self, _: &()) -> Result<Self, String> {
                Ok(-self)
            }
        }
    )*};
}
float_num!(f32, f64);

/// Precision and scale of a DECIMAL column (unscaled `i128` values).
struct Decimal {
    precision: u8,
    scale: i8,
    /// `10^precision`: every value's magnitude stays below it.
    bound: u128,
    /// `10^scale`.
    unit: i256,
}

impl Decimal {
    fn new(precision: u8, scale: i8) -> Self {
        Decimal {
            precision,
            scale,
            bound: 10u128.pow(precision as u32),
            unit: i256::from_i128(10i128.pow(scale as u32)),
        }
    }

    fn show(&self, v: i128) -> String {
        Decimal128Type::format_decimal(v, self.precision, self.scale)
    }

    /// `v` if it fits the precision, else the overflow error of `a op b`.
    fn fit(&self, v: Option<i128>, a: i128, op: &str, b: i128) -> Result<i128, String> {
        match v {
            Some(v) if v.unsigned_abs() < self.bound => Ok(v),
            _ => Err(format!(
                "DECIMAL({}, {}) overflow: {} {op} {}",
                self.precision,
                self.scale,
                self.show(a),
                self.show(b)
            )),
        }
    }
}

/// `n / d` rounded HALF_UP (ties away from zero); `d` is not zero.
fn div_half_up(n: i256, d: i256) -> i256 {
    let q = n.wrapping_div(d);
    let r = n.wrapping_rem(d);
    if r.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= d.wrapping_abs() {
        let away = if n.is_negative() != d.is_negative() {
            i256::MINUS_ONE
        } else {
            i256::ONE
        };
        q.wrapping_add(away)
    } else {
        q
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Num for i128 {
    type Ctx = Decimal;

    fn add(self, other: Self, d: &Decimal) -> Result<Self, String> {
        d.fit(self.checked_add(other), self, "+", other)
    }

    fn sub(self, other: Self, d: &Decimal) -> Result<Self, String> {
        d.fit(self.checked_sub(other), self, "-", other)
    }

    fn mul(self, other: Self, d: &Decimal) -> Result<Self, String> {
        // |a|, |b| < 10^38, so the exact product (scale 2s) fits i256
        let product = i256::from_i128(self).wrapping_mul(i256::from_i128(other));
        d.fit(div_half_up(product, d.unit).to_i128(), self, "*", other)
    }

    fn div(self, other: Self, d: &Decimal) -> Result<Self, String> {
        if other == 0 {
            return Err(format!("division by zero: {} / {}", d.show(self), d.show(other)));
        }
        // the exact quotient self / other terminates iff the reduced divisor is 2^i * 5^j
        let mut divisor = other.unsigned_abs() / gcd(self.unsigned_abs(), other.unsigned_abs());
        for p in [2, 5] {
            while divisor.is_multiple_of(p) {
                divisor /= p;
            }
        }
        if divisor != 1 {
            return Err(format!(
                "non-terminating decimal expansion of {} / {}",
                d.show(self),
                d.show(other)
            ));
        }
        let scaled = i256::from_i128(self).wrapping_mul(d.unit);
        d.fit(
            div_half_up(scaled, i256::from_i128(other)).to_i128(),
            self,
            "/",
            other,
        )
    }

    fn neg(self, d: &Decimal) -> Result<Self, String> {
        d.fit(self.checked_neg(), 0, "-", self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::*;

    use super::super::test_util::{agg, create_error, fold};
    use crate::merge::aggregate::Step::{self, *};

    fn run<T: ArrowPrimitiveType>(
        function: &str,
        t: &str,
        input: PrimitiveArray<T>,
        groups: &[&[Step]],
    ) -> datafusion::common::Result<Vec<Option<T::Native>>> {
        let out = fold(agg(function, t).as_ref(), Arc::new(input), groups)?;
        Ok(out.as_primitive::<T>().iter().collect())
    }

    fn longs(function: &str, values: Vec<Option<i64>>, groups: &[&[Step]]) -> Vec<Option<i64>> {
        run(function, "BIGINT", Int64Array::from(values), groups).unwrap()
    }

    fn decimals(
        function: &str,
        t: (u8, i8),
        values: Vec<Option<i128>>,
        groups: &[&[Step]],
    ) -> Vec<Option<i128>> {
        let input = Decimal128Array::from(values)
            .with_precision_and_scale(t.0, t.1)
            .unwrap();
        run(function, &format!("DECIMAL({}, {})", t.0, t.1), input, groups).unwrap()
    }

    fn error<T: ArrowPrimitiveType>(
        function: &str,
        t: &str,
        input: PrimitiveArray<T>,
        groups: &[&[Step]],
    ) -> String {
        run(function, t, input, groups).unwrap_err().to_string()
    }

    #[test]
    fn accepted_types() {
        for f in ["sum", "product"] {
            for t in [
                "TINYINT",
                "SMALLINT",
                "INT",
                "BIGINT NOT NULL",
                "FLOAT",
                "DOUBLE",
                "DECIMAL(38, 10)",
            ] {
                agg(f, t);
            }
            for t in ["STRING", "BOOLEAN", "DATE", "TIMESTAMP(3)", "BYTES", "ARRAY<INT>"] {
                let msg = create_error(f, t);
                assert!(
                    msg.contains(&format!("'{f}' of field 'f'")) && msg.contains("numeric"),
                    "{msg}"
                );
            }
        }
    }

    #[test]
    fn sum_nulls_groups_and_steps() {
        let values = vec![
            None,
            Some(5),
            Some(7),
            None,
            None,
            Some(3),
            Some(4),
            Some(10),
            Some(2),
            Some(1),
            Some(8),
        ];
        let groups: &[&[Step]] = &[
            &[Add, Add, Add],
            &[Add, Add],
            &[Add, AddReversed],
            &[Add, Reset, Skip],
            &[SetNull],
        ];
        assert_eq!(
            longs("sum", values, groups),
            vec![Some(12), None, Some(7), Some(2), None]
        );
    }

    #[test]
    fn sum_retract() {
        let values = vec![
            Some(10),
            Some(3),
            Some(4),
            Some(5),
            None,
            None,
            Some(6),
            Some(8),
            Some(9),
            None,
        ];
        let groups: &[&[Step]] = &[
            &[Add, Retract],
            &[Retract],
            &[Add, Retract],
            &[Retract, Add, Retract, Retract, Retract],
        ];
        // acc NULL → -in; in NULL → acc
        assert_eq!(
            longs("sum", values, groups),
            vec![Some(7), Some(-4), Some(5), Some(-11)]
        );
    }

    #[test]
    fn sum_integer_overflow_names_field() {
        let msg = error("sum", "TINYINT", Int8Array::from(vec![100, 28]), &[&[Add, Add]]);
        assert!(
            msg.contains("'sum' of field 'f'") && msg.contains("TINYINT overflow: 100 + 28"),
            "{msg}"
        );
        assert_eq!(
            run("sum", "TINYINT", Int8Array::from(vec![100, 27]), &[&[Add, Add]]).unwrap(),
            vec![Some(127)]
        );
        let msg = error("sum", "SMALLINT", Int16Array::from(vec![i16::MIN]), &[&[Retract]]);
        assert!(msg.contains("SMALLINT overflow"), "{msg}");
        let msg = error(
            "sum",
            "INT",
            Int32Array::from(vec![i32::MIN, 1]),
            &[&[Add, Retract]],
        );
        assert!(msg.contains("INT overflow: -2147483648 - 1"), "{msg}");
        let msg = error(
            "sum",
            "BIGINT",
            Int64Array::from(vec![i64::MAX, 1]),
            &[&[Add, AddReversed]],
        );
        assert!(msg.contains("BIGINT overflow"), "{msg}");
    }

    #[test]
    fn sum_and_product_floats() {
        let out = run(
            "sum",
            "FLOAT",
            Float32Array::from(vec![0.1, 0.2, 1e30]),
            &[&[Add, Add], &[Retract]],
        )
        .unwrap();
        assert_eq!(out, vec![Some(0.1f32 + 0.2f32), Some(-1e30)]);
        let out = run(
            "product",
            "DOUBLE",
            Float64Array::from(vec![
                Some(1.5),
                None,
                Some(4.0),
                Some(0.0),
                Some(3.0),
                Some(f64::MAX),
            ]),
            &[&[Add, Add, Add, Retract], &[Add, Add]],
        )
        .unwrap();
        assert_eq!(out, vec![Some(f64::INFINITY), Some(f64::INFINITY)]);
    }

    #[test]
    fn product_integers() {
        let values = vec![
            Some(2),
            None,
            Some(5),
            Some(7),
            Some(2),
            Some(-7),
            Some(2),
            None,
            Some(3),
            Some(4),
        ];
        let groups: &[&[Step]] = &[
            &[Add, Add, Add],
            &[Add, Retract],
            &[Add, Retract],
            &[Retract, Add, Skip],
        ];
        // retract divides, truncating; a NULL accumulator stays NULL
        assert_eq!(
            longs("product", values, groups),
            vec![Some(10), Some(3), Some(-3), Some(3)]
        );
        let values = vec![Some(6), Some(4), Some(3), Some(5)];
        let groups: &[&[Step]] = &[&[Add, AddReversed], &[Add, Reset]];
        assert_eq!(longs("product", values, groups), vec![Some(24), Some(5)]);
        let msg = error(
            "product",
            "INT",
            Int32Array::from(vec![65536, 65536]),
            &[&[Add, Add]],
        );
        assert!(
            msg.contains("'product' of field 'f'") && msg.contains("INT overflow: 65536 * 65536"),
            "{msg}"
        );
        let msg = error(
            "product",
            "BIGINT",
            Int64Array::from(vec![5, 0]),
            &[&[Add, Retract]],
        );
        assert!(msg.contains("division by zero"), "{msg}");
        let msg = error(
            "product",
            "TINYINT",
            Int8Array::from(vec![-128, -1]),
            &[&[Add, Retract]],
        );
        assert!(msg.contains("TINYINT overflow: -128 / -1"), "{msg}");
        let out = run(
            "product",
            "SMALLINT",
            Int16Array::from(vec![-300, 200]),
            &[&[Add, Add]],
        );
        assert!(out.unwrap_err().to_string().contains("SMALLINT overflow"));
    }

    #[test]
    fn sum_decimal() {
        let values = vec![
            Some(12345),
            Some(-45),
            None,
            Some(99999),
            Some(1),
            Some(99999),
            None,
            Some(-500),
        ];
        let groups: &[&[Step]] = &[&[Add, Add, Add], &[Add, Retract], &[Add, Skip], &[Retract]];
        assert_eq!(
            decimals("sum", (5, 2), values, groups),
            vec![Some(12300), Some(99998), Some(99999), Some(500)]
        );
        let input = Decimal128Array::from(vec![99999, 1])
            .with_precision_and_scale(5, 2)
            .unwrap();
        let msg = error("sum", "DECIMAL(5, 2)", input, &[&[Add, Add]]);
        assert!(msg.contains("DECIMAL(5, 2) overflow: 999.99 + 0.01"), "{msg}");
        let max = 10i128.pow(38) - 1;
        let input = Decimal128Array::from(vec![max, max])
            .with_precision_and_scale(38, 0)
            .unwrap();
        let msg = error("sum", "DECIMAL(38, 0)", input, &[&[Add, Add]]);
        assert!(msg.contains("DECIMAL(38, 0) overflow"), "{msg}");
        let input = Decimal128Array::from(vec![-max, 1])
            .with_precision_and_scale(38, 0)
            .unwrap();
        let msg = error("sum", "DECIMAL(38, 0)", input, &[&[Add, Retract]]);
        assert!(msg.contains("overflow"), "{msg}");
        let out = decimals("sum", (38, 0), vec![Some(max), Some(-max)], &[&[Add, Add]]);
        assert_eq!(out, vec![Some(0)]);
    }

    #[test]
    fn product_decimal_rounds_half_up() {
        // 1.50 * 2.25 = 3.375 → 3.38; -1.50 * 2.25 → -3.38; 3.00 / 1.60 = 1.875 → 1.88
        let values = vec![
            Some(150),
            Some(225),
            Some(-150),
            Some(225),
            Some(300),
            Some(160),
            Some(7),
            None,
        ];
        let groups: &[&[Step]] = &[&[Add, Add], &[Add, Add], &[Add, Retract], &[Add, Retract]];
        assert_eq!(
            decimals("product", (10, 2), values, groups),
            vec![Some(338), Some(-338), Some(188), Some(7)]
        );
        // an exact product wider than i128 whose rounded result fits: 5.0 * 6.0 at scale 30
        let unit = 10i128.pow(30);
        let out = decimals(
            "product",
            (38, 30),
            vec![Some(5 * unit), Some(6 * unit)],
            &[&[Add, Add]],
        );
        assert_eq!(out, vec![Some(30 * unit)]);
        let out = decimals(
            "product",
            (38, 30),
            vec![Some(30 * unit), Some(6 * unit)],
            &[&[Add, Retract]],
        );
        assert_eq!(out, vec![Some(5 * unit)]);
        let input = Decimal128Array::from(vec![10i128.pow(28), 10i128.pow(28)])
            .with_precision_and_scale(38, 18)
            .unwrap();
        let msg = error("product", "DECIMAL(38, 18)", input, &[&[Add, Add]]);
        assert!(msg.contains("DECIMAL(38, 18) overflow"), "{msg}");
        let input = Decimal128Array::from(vec![100, 300])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let msg = error("product", "DECIMAL(10, 2)", input, &[&[Add, Retract]]);
        assert!(
            msg.contains("non-terminating decimal expansion of 1.00 / 3.00"),
            "{msg}"
        );
        let input = Decimal128Array::from(vec![100, 0])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let msg = error("product", "DECIMAL(10, 2)", input, &[&[Add, Retract]]);
        assert!(msg.contains("division by zero"), "{msg}");
    }
}
