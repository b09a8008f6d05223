//! Tests of the `Roaring64Bitmap` codec and union against bytes Java wrote.

use super::*;

use crate::testing::hex_bytes as hex;

fn serialized(values: &[u64]) -> Vec<u8> {
    let mut b = Bitmap64::of(values);
    b.run_optimize();
    b.serialize()
}

#[test]
fn format_vectors() {
    assert_eq!(serialized(&[]), vec![0]);
    // {1,2,3}: one leaf, one array container in a one-slot array.
    let one_two_three = hex("01 0100000000000000 \
         04 0000 00 000000000000 0000000000000000 \
         01000000 FE 01000000 01 02 03000000 0100 0200 0300 \
         0100000000000000 00000000 00000000");
    assert_eq!(serialized(&[1, 2, 3]), one_two_three);
    let b = Bitmap64::deserialize(&one_two_three).unwrap();
    assert_eq!(b.values(), vec![1, 2, 3]);
    assert_eq!(b.serialize(), one_two_three);
    // Two high parts: a Node4 with a 5-byte prefix over two leaves; the container array has
    // grown from 1 to 2 slots.
    let two = hex("01 0200000000000000 \
         00 0200 05 0000000000 00000100 \
         04 0000 00 000000000000 0000000000000000 \
         04 0000 00 000000000001 0100000000000000 \
         01000000 FE 02000000 01 00 04000000 0100 0100 0300 01 02 01000000 0500 \
         0200000000000000 00000000 01000000");
    assert_eq!(serialized(&[1, 2, 3, 4, 65536 + 5]), two);
    assert_eq!(Bitmap64::deserialize(&two).unwrap().serialize(), two);
}

#[test]
fn union_replays_java_inserts() {
    let a = serialized(&[1, 2, 3]);
    let b = serialized(&[4, 65536 + 5]);
    // {1,2,3} ∪ {4} = array of 4 → run; the new key gets slot 1.
    let u = union64(&a, &b).unwrap();
    let expected = serialized(&[1, 2, 3, 4, 65536 + 5]);
    assert_eq!(u, expected);
    assert_eq!(
        Bitmap64::deserialize(&u).unwrap().values(),
        vec![1, 2, 3, 4, 65541]
    );
    // The container slots and leaf indices follow the order of insertion.
    let (x, y) = (serialized(&[65536 + 5]), serialized(&[1]));
    let xy = union64(&x, &y).unwrap();
    let yx = union64(&y, &x).unwrap();
    assert_eq!(Bitmap64::deserialize(&xy).unwrap().values(), vec![1, 65541]);
    assert_eq!(Bitmap64::deserialize(&yx).unwrap().values(), vec![1, 65541]);
    assert_ne!(xy, yx);
    assert_eq!(yx, serialized(&[1, 65536 + 5]));
    assert_eq!(xy, serialized(&[65536 + 5, 1]));
    assert_eq!(union64(&a, &serialized(&[])).unwrap(), a);
    assert_eq!(union64(&serialized(&[]), &a).unwrap(), a);
}

/// Unions computed by Java RoaringBitmap 1.2.1 exactly as Paimon's `FieldRoaringBitmap64Agg`
/// does (deserialize, `or`, `runOptimize`, `serialize(DataOutput)`): `(acc, input, result)`.
#[test]
fn java_generated_unions() {
    let cases = [
        (
            "01010000000000000004000000000000000002000000000000000001000000fe010000000102020000003c003f00\
             01000000000000000000000000000000",
            "0101000000000000000400000000000000012d000000000000000001000000fe01000000010201000000ca6701000000\
             000000000000000000000000",
            "0102000000000000000002000400000000000001000400000000000000000200000000000000000400000000000000\
             012d010000000000000001000000fe020000000102020000003c003f00010201000000ca670200000000000000000000\
             0001000000",
        ),
        (
            "01010000000000000004000000000000000100000000000000000001000000fe01000000010004000000010091d20300\
             01000000000000000000000000000000",
            "01010000000000000004000000000000000001000000000000000001000000fe01000000010202000000360039000100\
             0000000000000000000000000000",
            "0102000000000000000002000400000000000001000400000000000000000101000000000000000400000000000000\
             0100000000000000000001000000fe02000000010004000000010091d2030001020200000036003900020000000000\
             00000000000001000000",
        ),
    ];
    for (acc, input, result) in cases {
        assert_eq!(union64(&hex(acc), &hex(input)).unwrap(), hex(result));
    }
}

#[test]
fn node_growth() {
    // 300 high parts under one byte: Node4 → Node16 → Node48 → Node256, and the containers
    // array grows 1, 2, 3, 4, 6, 9, ...
    let values: Vec<u64> = (0..300u64).map(|i| (i << 16) | 7).collect();
    let mut acc = serialized(&values[..1]);
    for chunk in values[1..].chunks(37) {
        acc = union64(&acc, &serialized(chunk)).unwrap();
    }
    let b = Bitmap64::deserialize(&acc).unwrap();
    assert_eq!(b.values(), values);
    assert_eq!(b.serialize(), acc);
    // Built directly (same insertion order) gives the same structure.
    assert_eq!(serialized(&values), acc);
    // Large values (unsigned order) and prefixes that split.
    let big = [u64::MAX, 1 << 63, (1 << 40) + 3, 12];
    let u = union64(&serialized(&big[..2]), &serialized(&big[2..])).unwrap();
    let mut sorted = big.to_vec();
    sorted.sort_unstable();
    assert_eq!(Bitmap64::deserialize(&u).unwrap().values(), sorted);
}

#[test]
fn run_containers_stay_runs() {
    // A run container {1,2,3} (a tie with the array form) stays a run in Roaring64Bitmap.
    let run = hex("01 0100000000000000 \
         04 0000 00 000000000000 0000000000000000 \
         01000000 FE 01000000 01 00 03000000 0100 0100 0200 \
         0100000000000000 00000000 00000000");
    assert_eq!(union64(&run, &serialized(&[])).unwrap(), run);
    assert_eq!(Bitmap64::deserialize(&run).unwrap().values(), vec![1, 2, 3]);
}

#[test]
fn invalid_input() {
    assert!(Bitmap64::deserialize(&[]).is_err());
    assert!(Bitmap64::deserialize(&[2]).is_err());
    assert!(Bitmap64::deserialize(&hex("01 0100000000000000 09")).is_err());
}
