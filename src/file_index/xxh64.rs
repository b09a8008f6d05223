//! XXH64, the 64-bit xxHash (the bloom-filter index hashes strings and bytes with it, seed 0).

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

fn round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"))
}

/// XXH64 of `data` with `seed`.
pub(crate) fn hash(data: &[u8], seed: u64) -> u64 {
    let n = data.len();
    let mut at = 0;
    let mut h = if n >= 32 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while at + 32 <= n {
            for (i, lane) in v.iter_mut().enumerate() {
                *lane = round(*lane, u64_at(data, at + 8 * i));
            }
            at += 32;
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            h ^= round(0, lane);
            h = h.wrapping_mul(P1).wrapping_add(P4);
        }
        h
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(n as u64);
    while at + 8 <= n {
        h ^= round(0, u64_at(data, at));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
        at += 8;
    }
    if at + 4 <= n {
        let word = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")) as u64;
        h ^= word.wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        at += 4;
    }
    while at < n {
        h ^= (data[at] as u64).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
        at += 1;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    /// The reference values of xxHash's own test suite.
    #[test]
    fn known_values() {
        assert_eq!(super::hash(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(super::hash(b"abc", 0), 0x44BC_2CF5_AD77_0999);
        let long = b"Nobody inspects the spammish repetition";
        assert_eq!(super::hash(long, 0), 0xFBCE_A83C_8A37_8BF1);
    }
}
