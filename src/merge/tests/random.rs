//! The merge against a naive `BTreeMap` model of deduplicate, over random runs.

use std::collections::BTreeMap;
use std::task::Poll;

use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
use futures::StreamExt;

use super::*;

/// A small deterministic PRNG (splitmix64), so failures reproduce from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The deduplicate semantics, spelled out naively.
fn model(runs: &[Vec<Rec>], keep_retracts: bool) -> Vec<Rec> {
    let mut best: BTreeMap<Key, (i64, usize, Rec)> = BTreeMap::new();
    for (run, recs) in runs.iter().enumerate() {
        for rec in recs {
            let replace = match best.get(&rec.0) {
                None => true,
                Some((seq, r, _)) => (rec.1, run) >= (*seq, *r),
            };
            if replace {
                best.insert(rec.0.clone(), (rec.1, run, rec.clone()));
            }
        }
    }
    best.into_values()
        .map(|(_, _, rec)| rec)
        .filter(|rec| keep_retracts || !is_retract(rec.2))
        .collect()
}

/// How [`random_runs`] turns an integer into a key.
#[derive(Clone, Copy, PartialEq)]
enum KeyStyle {
    Int,
    /// Strings of at most 7 bytes (their rows fit the exact 15-byte sort keys).
    ShortString,
    /// A third of the strings share a 30-byte prefix: their rows tie on the 15-byte sort key
    /// and are ordered by comparing the row bytes.
    LongString,
}

fn random_runs(rng: &mut Rng, style: KeyStyle, seq_by_run: bool) -> Vec<Vec<Rec>> {
    let num_runs = 1 + rng.below(5) as usize;
    let key_space = 1 + rng.below(300) as i32;
    (0..num_runs)
        .map(|run| {
            let density = rng.below(100);
            let mut keys: Vec<i32> = (0..key_space).filter(|_| rng.below(100) < density).collect();
            // occasionally repeat a key within the run
            if !keys.is_empty() && rng.below(4) == 0 {
                let k = keys[rng.below(keys.len() as u64) as usize];
                keys.push(k);
                keys.sort();
            }
            let base = if seq_by_run { run as i64 * 1_000_000 } else { 0 };
            let mut recs: Vec<Rec> = keys
                .into_iter()
                .map(|k| {
                    let kind = [I, I, I, UA, UB, D][rng.below(6) as usize];
                    let seq = base + rng.below(50) as i64;
                    // mixes ASCII and multi-byte characters so byte order matters
                    let short = || format!("{}{}", ["a", "Z", "é", "ß", ""][(k % 5) as usize], k);
                    let key = match style {
                        KeyStyle::Int => Key::Int(k - key_space / 2),
                        KeyStyle::ShortString => Key::Str(short()),
                        KeyStyle::LongString if k % 3 == 0 => {
                            Key::Str(format!("a-shared-prefix-of-thirty-bytes{}", short()))
                        }
                        KeyStyle::LongString => Key::Str(short()),
                    };
                    (key, seq, kind, format!("r{run}k{k}s{seq}"))
                })
                .collect();
            recs.sort_by(|a, b| match (&a.0, &b.0) {
                (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
                (x, y) => x.cmp(y),
            });
            recs
        })
        .collect()
}

#[tokio::test]
async fn randomized_against_model() -> Result<()> {
    for seed in 0..400u64 {
        let mut rng = Rng(seed);
        let style = [KeyStyle::Int, KeyStyle::ShortString, KeyStyle::LongString][(seed % 3) as usize];
        let seq_by_run = seed % 4 != 0;
        let keep_retracts = seed % 5 == 0;
        let runs = random_runs(&mut rng, style, seq_by_run);
        let sizes: Vec<usize> = (0..3).map(|_| rng.below(40) as usize).chain([1]).collect();
        let batch_size = 1 + rng.below(64) as usize;
        let batches = merge(&runs, &sizes, keep_retracts, batch_size).await?;
        let got = check_batches(&batches, batch_size);
        let mut expected = model(&runs, keep_retracts);
        if style != KeyStyle::Int {
            expected.sort_by(|a, b| match (&a.0, &b.0) {
                (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
                _ => unreachable!(),
            });
        }
        assert_eq!(
            got, expected,
            "seed {seed}, sizes {sizes:?}, batch_size {batch_size}"
        );
    }
    Ok(())
}

/// The value-merging path (groups collected by the merge, reduced a batch at a time) must give
/// exactly what the deduplicate engine gives when its reducer is deduplicate: same rows, same
/// batch bounds, across batch boundaries and refills.
#[tokio::test]
async fn reducer_path_matches_model() -> Result<()> {
    for seed in 0..300u64 {
        let mut rng = Rng(seed.wrapping_mul(7919));
        let style = [KeyStyle::Int, KeyStyle::ShortString, KeyStyle::LongString][(seed % 3) as usize];
        let keep_retracts = seed % 4 == 0;
        let mut runs = random_runs(&mut rng, style, true);
        // unique sequence numbers: the reducer breaks exact ties by row kind, the pick engine
        // by run, and both are right only for distinct numbers
        let mut next = 0;
        for run in &mut runs {
            for rec in run.iter_mut() {
                rec.1 = rec.1 * 10_000 + next;
                next += 1;
            }
        }
        let sizes: Vec<usize> = (0..3).map(|_| rng.below(40) as usize).chain([1]).collect();
        let batch_size = 1 + rng.below(64) as usize;
        let (schema, key_columns, streams) = runs_as_streams(&runs, &sizes);
        let seq_column = schema.index_of("_SEQUENCE_NUMBER")?;
        let kind_column = schema.index_of("_VALUE_KIND")?;
        let options = MergeOptions {
            key_columns,
            seq_column,
            kind_column,
            keep_retracts,
            batch_size,
        };
        let reducer = crate::merge::reduce::PickReducer {
            first: false,
            ignore_delete: false,
            seq_column,
            kind_column,
            sequence_fields: None,
        };
        let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
        let stream = merge_sorted_runs_with(
            Arc::clone(&schema),
            streams,
            options,
            metrics,
            crate::merge::Collect::new(keep_retracts),
            Some(Arc::new(reducer)),
        )?;
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        let got = check_batches(&batches, batch_size);
        let mut expected = model(&runs, keep_retracts);
        if style != KeyStyle::Int {
            expected.sort_by(|a, b| match (&a.0, &b.0) {
                (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
                _ => unreachable!(),
            });
        }
        assert_eq!(
            got, expected,
            "seed {seed}, sizes {sizes:?}, batch_size {batch_size}"
        );
    }
    Ok(())
}

/// Options of the merges without key order these tests run (sequence in column 1, kind in 2).
fn unordered_options(key_columns: Vec<usize>, keep_retracts: bool) -> MergeOptions {
    MergeOptions {
        key_columns,
        seq_column: 1,
        kind_column: 2,
        keep_retracts,
        batch_size: 64,
    }
}

/// Records ordered by key (strings by their bytes, as sort keys order them).
fn by_key(a: &Rec, b: &Rec) -> std::cmp::Ordering {
    match (&a.0, &b.0) {
        (Key::Str(x), Key::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (x, y) => x.cmp(y),
    }
}

/// The records of a merge without key order, ordered by key; no batch may be empty.
async fn unordered_output(stream: SendableRecordBatchStream, seed: u64) -> Result<Vec<Rec>> {
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    assert!(
        batches.iter().all(|b| b.num_rows() > 0),
        "seed {seed}: empty batch"
    );
    let mut got: Vec<Rec> = batches.iter().flat_map(from_batch).collect();
    got.sort_by(by_key);
    Ok(got)
}

/// The model's records ordered by key, with zeros for the sequence numbers and kinds when the
/// read is `projected` (only the key and value columns).
fn expected_unordered(runs: &[Vec<Rec>], keep_retracts: bool, projected: bool) -> Vec<Rec> {
    let mut expected = model(runs, keep_retracts);
    if projected {
        for (_, seq, kind, _) in &mut expected {
            (*seq, *kind) = (0, 0);
        }
    }
    expected.sort_by(by_key);
    expected
}

/// The metrics of a merge of `runs` that output `got`.
fn check_metrics(metrics: &MergeMetrics, runs: &[Vec<Rec>], got: &[Rec], seed: u64) {
    let input: usize = runs.iter().map(Vec::len).sum();
    let keys = got.len() + metrics.retracts_dropped.value();
    assert_eq!(metrics.input_rows.value(), input, "seed {seed}");
    assert_eq!(metrics.output_rows.value(), got.len(), "seed {seed}");
    assert_eq!(metrics.rows_merged_away.value(), input - keys, "seed {seed}");
}

/// Deduplicate by run order without key order (`newest_of_ordered_runs`): the same records as
/// the model, in any order, for runs in sequence order with each key at most once per run (a
/// sorted run's invariant). Int keys take the narrow path, short strings the exact sort-key
/// path, long strings the row comparisons. Read with only the key and value columns, the same
/// keys and values come out, with zeros for the sequence numbers and kinds not read.
#[tokio::test]
async fn newest_run_wins_matches_model() -> Result<()> {
    for seed in 0..400u64 {
        let mut rng = Rng(seed.wrapping_mul(104_729));
        let style = [KeyStyle::Int, KeyStyle::ShortString, KeyStyle::LongString][(seed % 3) as usize];
        let keep_retracts = seed % 4 == 0;
        let mut runs = random_runs(&mut rng, style, true);
        for run in &mut runs {
            run.dedup_by(|a, b| a.0 == b.0);
        }
        let sizes: Vec<usize> = (0..3).map(|_| rng.below(40) as usize).chain([1]).collect();
        for read_columns in [None, Some([0, 3])] {
            let (schema, key_columns, streams) = runs_as_streams(&runs, &sizes);
            let options = unordered_options(key_columns, keep_retracts);
            let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
            let read = read_columns.as_ref().map(|c| c.as_slice());
            let stream = newest_of_ordered_runs(schema, streams, options, metrics.clone(), read)?;
            let got = unordered_output(stream, seed).await?;
            let expected = expected_unordered(&runs, keep_retracts, read_columns.is_some());
            assert_eq!(
                got, expected,
                "seed {seed}, sizes {sizes:?}, read {read_columns:?}"
            );
            check_metrics(&metrics, &runs, &got, seed);
        }
    }
    Ok(())
}

/// A batch repeating a key keeps its later record, as the merge does; a newer retraction
/// shadows an older record and is dropped itself.
#[tokio::test]
async fn newest_run_wins_keeps_the_later_of_a_repeated_key() -> Result<()> {
    let older = vec![
        int(1, 0, I, "a"),
        int(1, 1, I, "b"),
        int(2, 2, I, "c"),
        int(3, 3, I, "d"),
    ];
    let newer = vec![int(2, 10, D, "gone"), int(4, 11, UA, "e")];
    let (schema, key_columns) = schema_for(&Key::Int(0));
    let streams = [older, newer]
        .iter()
        .map(|r| run_stream(&schema, r, &[10]))
        .collect();
    let options = unordered_options(key_columns, false);
    let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let stream = newest_of_ordered_runs(schema, streams, options, metrics, None)?;
    let got = unordered_output(stream, 0).await?;
    assert_eq!(
        got,
        vec![int(1, 1, I, "b"), int(3, 3, I, "d"), int(4, 11, UA, "e")]
    );
    Ok(())
}

/// `stream`, pending (and woken at once) before each of its items: a base read on a task of its
/// own, which the piece reading it catches up with.
fn hesitant(stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let mut stream = Some(stream);
    let mut ready = false;
    let hesitating = futures::stream::poll_fn(move |cx| {
        let Some(inner) = stream.as_mut() else {
            return Poll::Ready(None);
        };
        ready = !ready;
        if ready {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let next = inner.poll_next_unpin(cx);
        if let Poll::Ready(None) = next {
            stream = None;
        }
        next
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, hesitating))
}

/// `stream`, counting its batches in `batches`.
fn counted(
    stream: SendableRecordBatchStream,
    batches: Arc<std::sync::atomic::AtomicUsize>,
) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let counting = stream.inspect(move |_| {
        batches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, counting))
}

/// The integer key of a record of the dense-base tests.
fn key_of(rec: &Rec) -> i64 {
    match rec.0 {
        Key::Int(k) => i64::from(k),
        _ => unreachable!("the dense-base tests use INT keys"),
    }
}

/// A dense oldest run (`newest_over_dense_base`): the same records as the model, in any order.
/// The base holds the keys of its span, some missing (as a deletion vector leaves them) and some
/// retracting; the newer runs hold keys inside the span and around it, repeated across runs,
/// and some keys far outside it.
/// Keys are INT (the bitmap takes them widened). A base key outside the given span is an error.
#[tokio::test]
async fn dense_base_matches_model() -> Result<()> {
    for seed in 0..300u64 {
        let mut rng = Rng(seed.wrapping_mul(15_485_863));
        let keep_retracts = seed % 4 == 0;
        let lo = rng.below(50) as i32 - 25;
        let len = 1 + rng.below(300) as i32;
        let gaps = seed % 3 == 0;
        let mut base: Vec<Rec> = Vec::new();
        for k in lo..lo + len {
            if !gaps || rng.below(8) != 0 {
                let kind = [I, I, I, I, UA, D][rng.below(6) as usize];
                base.push(int(k, 0, kind, &format!("base{k}")));
            }
        }
        let mut runs = vec![base];
        for run in 1..=1 + rng.below(4) as i64 {
            let density = rng.below(60);
            let mut recs: Vec<Rec> = Vec::new();
            // keys far outside the span leave the chunks holding them too sparse for a bitmap:
            // their keys are marked one by one
            let far = seed % 5 == 1;
            if far {
                let k = lo - 10_000 - run as i32;
                recs.push(int(k, run * 1000, I, &format!("r{run}k{k}")));
            }
            for k in lo - 20..lo + len + 20 {
                if rng.below(100) < density {
                    let kind = [I, I, UA, UB, D][rng.below(5) as usize];
                    recs.push(int(k, run * 1000, kind, &format!("r{run}k{k}")));
                }
            }
            if far {
                let k = lo + len + 10_000 + run as i32;
                recs.push(int(k, run * 1000, I, &format!("r{run}k{k}")));
            }
            runs.push(recs);
        }
        let sizes: Vec<usize> = (0..3).map(|_| 1 + rng.below(70) as usize).collect();
        let span = i64::from(lo)..=i64::from(lo + len - 1);
        let seqs = || {
            (1..runs.len() as i64)
                .map(|r| r * 1000..=r * 1000)
                .collect::<Vec<_>>()
        };
        let board = || Arc::new(NewerKeys::new(span.clone(), seqs()).unwrap());
        let expected = |projected| expected_unordered(&runs, keep_retracts, projected);
        for read_columns in [None, Some([0, 3])] {
            let (schema, key_columns, mut streams) = runs_as_streams(&runs, &sizes);
            let base = streams.remove(0);
            let options = unordered_options(key_columns, keep_retracts);
            let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
            let read = read_columns.as_ref().map(|c| c.as_slice());
            let whole = NewerRead::Whole(board());
            let stream = newest_over_dense_base(
                schema,
                base,
                span.clone(),
                streams,
                whole,
                options,
                metrics.clone(),
                read,
            )?;
            let got = unordered_output(stream, seed).await?;
            assert_eq!(
                got,
                expected(read.is_some()),
                "seed {seed}, sizes {sizes:?}, read {read_columns:?}"
            );
            check_metrics(&metrics, &runs, &got, seed);
        }
        // Cut at a key: below it a piece reading the newer runs' keys, above it one reading them
        // whole, on one board; run one after the other either way, or together. The union is
        // the merge's output whatever the piece reading the keys finds marked.
        let cut = i64::from(lo) + rng.below(len as u64 + 1) as i64;
        let below =
            |recs: &Vec<Rec>| -> Vec<Rec> { recs.iter().filter(|r| key_of(r) < cut).cloned().collect() };
        let keys_runs: Vec<Vec<Rec>> = runs.iter().map(below).collect();
        let mut whole_runs = runs.clone();
        whole_runs[0].retain(|r| key_of(r) >= cut);
        for order in ["keys first", "whole first", "alternating"] {
            let board = board();
            // batches of the newer runs the piece reading keys decodes itself
            let own_reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            // room to hold back none, some or all of the base batches of the piece reading keys
            let room = [0, 1 + rng.below(20_000) as usize, usize::MAX][rng.below(3) as usize];
            let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(room));
            let piece = |runs: &Vec<Vec<Rec>>, whole: bool| -> Result<SendableRecordBatchStream> {
                let (schema, key_columns, mut streams) = runs_as_streams(runs, &sizes);
                let base = streams.remove(0);
                if !whole {
                    streams = streams
                        .into_iter()
                        .map(|run| counted(run, Arc::clone(&own_reads)))
                        .collect();
                }
                let (base, read) = match whole {
                    true => (base, NewerRead::Whole(Arc::clone(&board))),
                    false => (
                        hesitant(base),
                        NewerRead::KeysOnly {
                            board: Arc::clone(&board),
                            runs: (0..streams.len()).collect(),
                            deferral: MemoryConsumer::new("held back").register(&pool),
                        },
                    ),
                };
                let options = unordered_options(key_columns, keep_retracts);
                let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
                newest_over_dense_base(schema, base, span.clone(), streams, read, options, metrics, None)
            };
            let (keys_piece, whole_piece) = (piece(&keys_runs, false)?, piece(&whole_runs, true)?);
            let mut got = match order {
                "keys first" => {
                    let mut got = unordered_output(keys_piece, seed).await?;
                    got.extend(unordered_output(whole_piece, seed).await?);
                    got
                }
                "whole first" => {
                    let mut got = unordered_output(whole_piece, seed).await?;
                    got.extend(unordered_output(keys_piece, seed).await?);
                    got
                }
                // one poll of one, then one of the other: the piece reading the keys finds the
                // other's progress part of the way, holding its base batches back meanwhile
                _ => {
                    let mut pieces = [whole_piece, keys_piece];
                    let mut done = [false, false];
                    let mut batches = Vec::new();
                    let mut turn = seed as usize % 2;
                    while !done.iter().all(|d| *d) {
                        if !done[turn] {
                            match futures::poll!(pieces[turn].next()) {
                                Poll::Ready(Some(batch)) => batches.push(batch?),
                                Poll::Ready(None) => done[turn] = true,
                                Poll::Pending => {}
                            }
                            assert!(
                                pool.reserved() <= room,
                                "seed {seed}: holds back more than the pool has"
                            );
                        }
                        turn = 1 - turn;
                    }
                    batches.iter().flat_map(from_batch).collect()
                }
            };
            got.sort_by(by_key);
            assert_eq!(
                got,
                expected(false),
                "seed {seed}, cut {cut}, {order}, room {room}"
            );
            assert_eq!(pool.reserved(), 0, "seed {seed}: held-back batches released");
            // the piece reading the newer runs whole marked and published all of their keys
            // first: the other decodes none of them
            if order == "whole first" {
                let own = own_reads.load(std::sync::atomic::Ordering::Relaxed);
                assert_eq!(own, 0, "seed {seed}: newer batches read again");
            }
        }
    }
    // the files' statistics said 0..=2, the run holds 3
    let runs = vec![
        vec![int(0, 0, I, "a"), int(3, 0, I, "b")],
        vec![int(1, 5, I, "c")],
    ];
    let (schema, key_columns, mut streams) = runs_as_streams(&runs, &[10]);
    let base = streams.remove(0);
    let options = unordered_options(key_columns, false);
    let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let board = Arc::new(NewerKeys::new(0..=2, vec![5..=5])?);
    let whole = NewerRead::Whole(board);
    let stream = newest_over_dense_base(schema, base, 0..=2, streams, whole, options, metrics, None)?;
    let err = stream.try_collect::<Vec<_>>().await.unwrap_err().to_string();
    assert!(
        err.contains("holds key 3, outside its files' key range 0..=2"),
        "{err}"
    );
    Ok(())
}
