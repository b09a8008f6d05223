//! Theta sketch union as Paimon's `ThetaSketch.union` computes it with Apache DataSketches Java
//! 4.2: a default union (nominal entries 4096, default seed) of the two serialized sketches, then
//! `getResult()` (ordered compact sketch) serialized with `toByteArray()`.
//!
//! The union's result does not depend on the internal rebuilds of Java's union gadget: it keeps
//! the `k` smallest distinct hashes below `min(theta of the inputs)`, and lowers theta to the
//! `(k+1)`-th smallest one when there are more than `k`.
//!
//! Serialized sketch (serial version 3, little-endian): byte 0 preamble longs (low 6 bits),
//! 1 serial version, 2 family (1 Alpha, 2 QuickSelect, 3 Compact), 3 lgNomLongs, 4 lgArrLongs,
//! 5 flags, 6-7 seed hash, then with 2+ preamble longs 8-11 retained entries and 12-15 `p`
//! (float), with 3 preamble longs 16-23 theta; then the hashes (a hash table of 2^lgArrLongs
//! slots for update sketches).

use std::collections::BTreeSet;

use datafusion::common::{exec_datafusion_err, Result};

use crate::bitmap::roaring::Reader;

/// `1 << lgNomLongs` of a default union.
const K: usize = 4096;
/// Seed hash of the default update seed (9001).
const DEFAULT_SEED_HASH: u16 = 0x93CC;
const SER_VER: u8 = 3;
const COMPACT_FAMILY: u8 = 3;
const FLAG_READ_ONLY: u8 = 2;
const FLAG_COMPACT: u8 = 8;
const FLAG_ORDERED: u8 = 16;
const FLAG_SINGLE_ITEM: u8 = 32;
/// Java `EmptyCompactSketch.EMPTY_COMPACT_SKETCH_ARR`.
const EMPTY: [u8; 8] = [1, 3, 3, 0, 0, 0x1E, 0, 0];

/// State of Java's `UnionImpl` after the inputs.
struct Union {
    theta: u64,
    empty: bool,
    hashes: BTreeSet<u64>,
}

fn invalid(detail: impl std::fmt::Display) -> datafusion::common::DataFusionError {
    exec_datafusion_err!("Invalid theta sketch: {detail}")
}

impl Union {
    fn new() -> Self {
        Union {
            theta: i64::MAX as u64,
            empty: true,
            hashes: BTreeSet::new(),
        }
    }

    /// Java `UnionImpl.hashUpdate` as far as it matters for the result (negative hashes are
    /// corruption, zero or over-theta hashes are not kept).
    fn hash_update(&mut self, hash: i64) -> Result<()> {
        if hash < 0 {
            return Err(invalid(format!("negative hash {hash}")));
        }
        self.empty = false;
        if hash > 0 {
            self.hashes.insert(hash as u64);
        }
        Ok(())
    }

    /// Java `UnionImpl.union(Memory)`.
    fn union(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() < 16 {
            return Ok(()); // empty or garbage: ignored by Java
        }
        let mut r = Reader::new(bytes, "theta sketch");
        let pre_longs = (r.u8()? & 0x3F) as usize;
        let ser_ver = r.u8()?;
        let family = r.u8()?;
        let _lg_nom = r.u8()?;
        let lg_arr = r.u8()?;
        let flags = r.u8()?;
        let seed_hash = r.u16()?;
        match ser_ver {
            3 => {}
            1 | 2 | 4 => {
                return Err(invalid(format!(
                    "serial version {ser_ver} sketches are not supported yet (only version 3)"
                )))
            }
            v => return Err(invalid(format!("unknown serial version {v}"))),
        }
        if !(1..=3).contains(&family) {
            return Err(invalid(format!(
                "family {family} is not Alpha, QuickSelect or Compact"
            )));
        }
        let long_at = |offset: usize| -> Result<i64> {
            let b = bytes
                .get(offset..offset + 8)
                .ok_or_else(|| invalid(format!("truncated at {offset} ({} bytes)", bytes.len())))?;
            Ok(i64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        if pre_longs == 1 {
            let single = (family == COMPACT_FAMILY && flags & 0x1F == 0x1A) || flags & FLAG_SINGLE_ITEM != 0;
            if single {
                self.hash_update(long_at(8)?)?;
            }
            return Ok(());
        }
        if seed_hash != DEFAULT_SEED_HASH {
            return Err(invalid(format!(
                "incompatible seed hashes, expected {DEFAULT_SEED_HASH}, got {seed_hash}"
            )));
        }
        let count = r.u32()? as i32;
        let theta_in = if pre_longs == 2 {
            if count == 0 {
                return Ok(());
            }
            i64::MAX as u64
        } else {
            long_at(16)? as u64
        };
        self.theta = self.theta.min(theta_in);
        self.empty = false;
        let count = count.max(0) as usize;
        if flags & FLAG_ORDERED != 0 {
            for i in 0..count {
                let hash = long_at((pre_longs + i) << 3)?;
                if hash >= self.theta as i64 {
                    break; // "early stop"
                }
                self.hash_update(hash)?;
            }
        } else {
            let size = if flags & FLAG_COMPACT != 0 {
                count
            } else {
                1usize
                    .checked_shl(u32::from(lg_arr))
                    .filter(|&n| n <= 1 << 26)
                    .ok_or_else(|| invalid("lgArrLongs"))?
            };
            for i in 0..size {
                let hash = long_at((pre_longs + i) << 3)?;
                if hash <= 0 || hash >= self.theta as i64 {
                    continue;
                }
                self.hash_update(hash)?;
            }
        }
        Ok(())
    }

    /// Java `getResult()` (ordered) followed by `toByteArray()`.
    fn result(self) -> Vec<u8> {
        let mut theta = self.theta;
        if let Some(&kth) = self.hashes.iter().nth(K) {
            theta = theta.min(kth);
        }
        let kept: Vec<u64> = self.hashes.range(..theta).copied().collect();
        let max = i64::MAX as u64;
        let empty = self.empty || (kept.is_empty() && theta == max);
        if empty {
            return EMPTY.to_vec();
        }
        let seed = DEFAULT_SEED_HASH.to_le_bytes();
        if kept.len() == 1 && theta == max {
            let mut out = vec![1, SER_VER, COMPACT_FAMILY, 0, 0, 0x3A, seed[0], seed[1]];
            out.extend_from_slice(&kept[0].to_le_bytes());
            return out;
        }
        let pre_longs: u8 = if theta < max {
            3
        } else if kept.len() > 1 {
            2
        } else {
            1
        };
        let flags = FLAG_READ_ONLY | FLAG_COMPACT | FLAG_ORDERED;
        let mut out = vec![pre_longs, SER_VER, COMPACT_FAMILY, 0, 0, flags, seed[0], seed[1]];
        if pre_longs > 1 {
            out.extend_from_slice(&(kept.len() as u32).to_le_bytes());
            out.extend_from_slice(&1.0f32.to_le_bytes());
        }
        if pre_longs > 2 {
            out.extend_from_slice(&theta.to_le_bytes());
        }
        for h in kept {
            out.extend_from_slice(&h.to_le_bytes());
        }
        out
    }
}

/// Paimon `ThetaSketch.union(acc, input)`.
pub(super) fn union(acc: &[u8], input: &[u8]) -> Result<Vec<u8>> {
    let mut u = Union::new();
    u.union(acc)?;
    u.union(input)?;
    Ok(u.result())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::hex_bytes as hex;

    /// Compact ordered sketch (exact mode) of the given hashes.
    fn exact(hashes: &[u64]) -> Vec<u8> {
        let mut out = hex("02030300001acc93");
        out.extend_from_slice(&(hashes.len() as u32).to_le_bytes());
        out.extend_from_slice(&hex("0000803f"));
        hashes
            .iter()
            .for_each(|h| out.extend_from_slice(&h.to_le_bytes()));
        out
    }

    #[test]
    fn format_vectors() {
        // Java: UpdateSketch.builder().build() updated with 1, 2, 3, then compact().toByteArray().
        let one_two_three =
            hex("02030300001acc93 03000000 0000803f 15f97dcbbd86a105 c397fc1281709d1e ba40b3c1da06695d");
        // Union with an empty sketch gives the same sketch back.
        assert_eq!(union(&one_two_three, &EMPTY).unwrap(), one_two_three);
        assert_eq!(union(&EMPTY, &one_two_three).unwrap(), one_two_three);
        assert_eq!(union(&EMPTY, &EMPTY).unwrap(), EMPTY.to_vec());
        // A single hash is written as a 16-byte single-item sketch.
        let single = hex("01030300003acc93 0500000000000000");
        assert_eq!(union(&exact(&[5]), &EMPTY).unwrap(), single);
        assert_eq!(union(&single, &single).unwrap(), single);
        // Union of exact sketches: distinct hashes, sorted.
        assert_eq!(
            union(&exact(&[9, 3]), &exact(&[3, 7])).unwrap(),
            exact(&[3, 7, 9])
        );
    }

    /// Unions computed by DataSketches Java 4.2 exactly as Paimon's `ThetaSketch.union` does:
    /// `(acc, input, result)`. The first input of the first case is an update sketch (hash table
    /// form), the second case unions unordered compact sketches.
    #[test]
    fn java_generated_unions() {
        let cases = [
            (
                "01030300003acc931538932f1dd3ae37",
                "c303020a0500cc93010000000000803fffffffffffffff7f000000000000000000000000000000000000000000000000\
                 234f668009bbd73f00000000000000000000000000000000000000000000000000000000000000000000000000000000\
                 000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
                 000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
                 000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
                 00000000000000000000000000000000000000000000000000000000000000000000000000000000",
                "02030300001acc93020000000000803f1538932f1dd3ae37234f668009bbd73f",
            ),
            (
                "02030300000acc93030000000000803f03a40e92be4098448ffc012b4c49182f33c7384c54970b64",
                "02030300000acc93030000000000803f889bb59eaaadd24522734e642f20f1052aa47539b40f6265",
                "02030300001acc93060000000000803f22734e642f20f1058ffc012b4c49182f03a40e92be409844889bb59eaaadd245\
                 33c7384c54970b642aa47539b40f6265",
            ),
        ];
        for (acc, input, result) in cases {
            assert_eq!(union(&hex(acc), &hex(input)).unwrap(), hex(result));
        }
    }

    #[test]
    fn estimation_mode() {
        // An estimating input (theta 100) cuts the other input's hashes.
        let mut estimating = hex("03030300001acc93 02000000 0000803f");
        estimating.extend_from_slice(&100u64.to_le_bytes());
        estimating.extend_from_slice(&10u64.to_le_bytes());
        estimating.extend_from_slice(&20u64.to_le_bytes());
        let u = union(&exact(&[5, 150, 60]), &estimating).unwrap();
        let mut expected = hex("03030300001acc93 04000000 0000803f");
        for v in [100u64, 5, 10, 20, 60] {
            expected.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(u, expected);
        // More than k hashes: theta becomes the (k+1)-th smallest, k hashes are kept.
        let many: Vec<u64> = (1..=5000u64).map(|i| i * 1000).collect();
        let u = union(&exact(&many[..3000]), &exact(&many[3000..])).unwrap();
        assert_eq!(&u[..8], &hex("03030300001acc93")[..]);
        assert_eq!(u32::from_le_bytes(u[8..12].try_into().unwrap()), 4096);
        assert_eq!(u64::from_le_bytes(u[16..24].try_into().unwrap()), many[4096]);
        assert_eq!(u.len(), 24 + 8 * 4096);
    }

    #[test]
    fn invalid_input() {
        assert!(union(
            &hex("02030300001a0000 01000000 0000803f 0100000000000000"),
            &EMPTY
        )
        .is_err());
        assert!(union(
            &hex("02040300001acc93 01000000 0000803f 0100000000000000"),
            &EMPTY
        )
        .is_err());
        assert!(union(
            &hex("02030700001acc93 01000000 0000803f 0100000000000000"),
            &EMPTY
        )
        .is_err());
        assert!(union(
            &hex("02030300001acc93 05000000 0000803f 0100000000000000"),
            &EMPTY
        )
        .is_err());
    }
}
