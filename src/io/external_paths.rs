//! Where new data files go under `data-file.external-paths` (Paimon's `ExternalPathProvider`):
//! `<root>/<partition>/bucket-<n>/<file>` below one of the listed roots, chosen by
//! `data-file.external-paths.strategy`:
//!
//! * `none` (the default): the table's own directory, whatever roots are listed;
//! * `round-robin`: the roots in turn;
//! * `specific-fs`: the roots of the scheme `data-file.external-paths.specific-fs` names, in turn;
//! * `weight-robin`: the roots in proportion to `data-file.external-paths.weights`;
//! * `entropy-inject`: the roots in turn, below three 4-bit and one 8-bit directory level taken
//!   from the file name's murmur3 hash, so object-store prefixes spread.
//!
//! The file's metadata records the whole URI (`_EXTERNAL_PATH`), which readers follow.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};

/// Turns through the roots across every writer of the process (Java starts each writer at a
/// random root; any root is as good to a reader).
static NEXT: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, Clone, PartialEq)]
enum Strategy {
    RoundRobin,
    Weighted(Vec<usize>),
    EntropyInject,
}

/// The external roots new data files of a table go to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExternalPaths {
    roots: Vec<String>,
    strategy: Strategy,
}

fn invalid(message: String) -> Error {
    Error::Unsupported(message)
}

impl ExternalPaths {
    /// The external paths the table `options` give new files; `None` when files stay in the
    /// table's directory. Bad values fail naming the option.
    pub(crate) fn of(options: &BTreeMap<String, String>) -> Result<Option<Self>> {
        let strategy = options
            .get("data-file.external-paths.strategy")
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "none".into());
        let listed: Vec<String> = options
            .get("data-file.external-paths")
            .map(|p| {
                p.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if strategy == "none" || listed.is_empty() {
            return match strategy.as_str() {
                "none" | "round-robin" | "specific-fs" | "weight-robin" | "entropy-inject" => Ok(None),
                other => Err(invalid(format!(
                    "Option 'data-file.external-paths.strategy' is '{other}': one of none, round-robin, specific-fs, weight-robin, entropy-inject"
                ))),
            };
        }
        let scheme = |root: &str| -> Result<String> {
            url::Url::parse(root)
                .ok()
                .filter(|u| u.scheme().len() > 1)
                .map(|u| u.scheme().to_ascii_lowercase())
                .ok_or_else(|| {
                    invalid(format!(
                        "External path '{root}' of option 'data-file.external-paths' needs a scheme (file://, s3://, oss://, ...)"
                    ))
                })
        };
        for root in &listed {
            scheme(root)?;
        }
        let (roots, strategy) = match strategy.as_str() {
            "round-robin" => (listed, Strategy::RoundRobin),
            "entropy-inject" => (listed, Strategy::EntropyInject),
            "specific-fs" => {
                let fs = options
                    .get("data-file.external-paths.specific-fs")
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        invalid(
                            "Option 'data-file.external-paths.specific-fs' must name a scheme when the strategy is 'specific-fs'"
                                .into(),
                        )
                    })?;
                let roots: Vec<String> = listed
                    .into_iter()
                    .filter(|r| scheme(r).is_ok_and(|s| s == fs))
                    .collect();
                if roots.is_empty() {
                    return Err(invalid(format!(
                        "No path of option 'data-file.external-paths' has the scheme '{fs}' of 'data-file.external-paths.specific-fs'"
                    )));
                }
                (roots, Strategy::RoundRobin)
            }
            "weight-robin" => {
                let weights: Vec<usize> = match options.get("data-file.external-paths.weights") {
                    Some(w) => w
                        .split(',')
                        .map(|x| x.trim().parse::<usize>())
                        .collect::<std::result::Result<_, _>>()
                        .map_err(|_| {
                            invalid(format!(
                                "Option 'data-file.external-paths.weights' is '{w}': a comma-separated list of non-negative integers"
                            ))
                        })?,
                    // (Java falls back to round-robin without weights)
                    None => vec![1; listed.len()],
                };
                if weights.len() != listed.len() || weights.iter().sum::<usize>() == 0 {
                    return Err(invalid(format!(
                        "Option 'data-file.external-paths.weights' must give one weight per external path ({} paths), not all 0",
                        listed.len()
                    )));
                }
                (listed, Strategy::Weighted(weights))
            }
            other => {
                return Err(invalid(format!(
                    "Option 'data-file.external-paths.strategy' is '{other}': one of none, round-robin, specific-fs, weight-robin, entropy-inject"
                )))
            }
        };
        Ok(Some(ExternalPaths { roots, strategy }))
    }

    /// The URI of a new file `name` of the bucket directory `dir` (relative to the table).
    pub(crate) fn next_uri(&self, dir: &str, name: &str) -> String {
        let turn = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = match &self.strategy {
            Strategy::RoundRobin | Strategy::EntropyInject => &self.roots[turn % self.roots.len()],
            Strategy::Weighted(weights) => {
                let total: usize = weights.iter().sum();
                let mut at = turn % total;
                let mut chosen = 0;
                for (i, w) in weights.iter().enumerate() {
                    if at < *w {
                        chosen = i;
                        break;
                    }
                    at -= w;
                }
                &self.roots[chosen]
            }
        };
        let dir = dir.trim_matches('/');
        let mut uri = root.trim_end_matches('/').to_string();
        if !dir.is_empty() {
            uri.push('/');
            uri.push_str(dir);
        }
        if self.strategy == Strategy::EntropyInject {
            uri.push('/');
            uri.push_str(&entropy_dirs(name));
        }
        uri.push('/');
        uri.push_str(name);
        uri
    }
}

/// `0101/1100/0011/01101001`: the low 20 bits of the name's murmur3 hash in binary, as three
/// directories of 4 digits and one of 8.
fn entropy_dirs(name: &str) -> String {
    let bits = format!("{:032b}", murmur3_32(name.as_bytes()) | 0x8000_0000);
    let bits = &bits[12..];
    format!("{}/{}/{}/{}", &bits[0..4], &bits[4..8], &bits[8..12], &bits[12..])
}

/// MurmurHash3 x86 32-bit, seed 0 (Guava's `murmur3_32`).
fn murmur3_32(data: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let k = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k ^= u32::from(*b) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Guava's published values of murmur3_32 (seed 0).
    #[test]
    fn murmur3_known_values() {
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog"),
            0x2e4f_f723
        );
    }

    #[test]
    fn strategies_choose_roots() {
        let none = options(&[("data-file.external-paths", "file:///a")]);
        assert_eq!(ExternalPaths::of(&none).unwrap(), None);
        let rr = ExternalPaths::of(&options(&[
            ("data-file.external-paths", "file:///a/, file:///b"),
            ("data-file.external-paths.strategy", "round-robin"),
        ]))
        .unwrap()
        .unwrap();
        let uris: std::collections::BTreeSet<String> = (0..4)
            .map(|_| rr.next_uri("p=1/bucket-0", "data-x-0.parquet"))
            .collect();
        assert!(
            uris.contains("file:///a/p=1/bucket-0/data-x-0.parquet"),
            "{uris:?}"
        );
        assert!(
            uris.contains("file:///b/p=1/bucket-0/data-x-0.parquet"),
            "{uris:?}"
        );
        let fs = ExternalPaths::of(&options(&[
            ("data-file.external-paths", "s3://x/a,file:///b"),
            ("data-file.external-paths.strategy", "specific-fs"),
            ("data-file.external-paths.specific-fs", "FILE"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(fs.next_uri("bucket-0", "f"), "file:///b/bucket-0/f");
        let entropy = ExternalPaths::of(&options(&[
            ("data-file.external-paths", "file:///a"),
            ("data-file.external-paths.strategy", "entropy-inject"),
        ]))
        .unwrap()
        .unwrap();
        let uri = entropy.next_uri("bucket-0", "data-x-0.parquet");
        let dirs: Vec<&str> = uri
            .trim_start_matches("file:///a/bucket-0/")
            .trim_end_matches("/data-x-0.parquet")
            .split('/')
            .collect();
        assert_eq!(
            dirs.iter().map(|d| d.len()).collect::<Vec<_>>(),
            [4, 4, 4, 8],
            "{uri}"
        );
        let weighted = ExternalPaths::of(&options(&[
            ("data-file.external-paths", "file:///a,file:///b"),
            ("data-file.external-paths.strategy", "weight-robin"),
            ("data-file.external-paths.weights", "0,3"),
        ]))
        .unwrap()
        .unwrap();
        assert!((0..6).all(|_| weighted.next_uri("", "f") == "file:///b/f"));
    }

    #[test]
    fn bad_options_are_named() {
        for (pairs, words) in [
            (
                vec![
                    ("data-file.external-paths", "/no/scheme"),
                    ("data-file.external-paths.strategy", "round-robin"),
                ],
                "needs a scheme",
            ),
            (
                vec![
                    ("data-file.external-paths", "file:///a"),
                    ("data-file.external-paths.strategy", "random"),
                ],
                "'data-file.external-paths.strategy' is 'random'",
            ),
            (
                vec![
                    ("data-file.external-paths", "file:///a"),
                    ("data-file.external-paths.strategy", "specific-fs"),
                ],
                "data-file.external-paths.specific-fs",
            ),
            (
                vec![
                    ("data-file.external-paths", "file:///a"),
                    ("data-file.external-paths.strategy", "weight-robin"),
                    ("data-file.external-paths.weights", "1,2"),
                ],
                "data-file.external-paths.weights",
            ),
        ] {
            let err = ExternalPaths::of(&options(&pairs)).unwrap_err().to_string();
            assert!(err.contains(words), "{err}");
        }
    }
}
