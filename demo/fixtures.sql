-- A tour of datafusion-paimon over real tables written by pypaimon 2.1.0.
--
--   cargo run --bin paimon-sql -- --warehouse tests/fixtures/pypaimon-2.1.0/warehouse -f demo/demo.sql
--
-- pk.dedup_basic: primary key `id`, deduplicate merge engine, 4 commits (inserts, updates,
-- deletes, then a re-insert and a retract). Every data file is level 0, so each read is a
-- merge-on-read over overlapping sorted runs.

-- 1. The latest state: 18 rows (ids 1, 5, 7, 21 were deleted or retracted).
SELECT * FROM pk.dedup_basic ORDER BY id;

-- 2. Time travel: snapshot 1 held the 20 freshly inserted rows.
SET paimon.scan.snapshot-id = '1';
SELECT count(*) AS rows_at_snapshot_1, min(id) AS min_id, max(id) AS max_id FROM pk.dedup_basic;
RESET paimon.scan.snapshot-id;

-- ... and by tag: `after_updates` was taken after commit 2 (22 rows).
SET paimon.scan.tag-name = 'after_updates';
SELECT count(*) AS rows_at_tag FROM pk.dedup_basic;
RESET paimon.scan.tag-name;

-- 3. System tables: the commit history, the live data files, and the row kinds of the
--    merged rows (`$audit_log` keeps the -D rows a normal read drops).
SELECT snapshot_id, schema_id, commit_kind, total_record_count, delta_record_count
FROM pk.dedup_basic$snapshots
ORDER BY snapshot_id;

SELECT bucket, level, record_count, min_key, max_key, min_sequence_number, max_sequence_number
FROM pk.dedup_basic$files
ORDER BY min_sequence_number;

SELECT rowkind, count(*) AS rows FROM pk.dedup_basic$audit_log GROUP BY rowkind ORDER BY rowkind;

-- 4. An aggregate over a partitioned table: pk.partitioned_b4 is partitioned by dt with 4
--    buckets; its last commit overwrote one partition.
SELECT dt, count(*) AS rows, sum(amount) AS total_amount, max(ts) AS last_ts
FROM pk.partitioned_b4
GROUP BY dt
ORDER BY dt;

-- 5. The plan: partition and key predicates prune splits below the merge; the value
--    predicate (amount) is applied after it.
EXPLAIN SELECT id, v, amount
FROM pk.partitioned_b4
WHERE dt = '2024-01-02' AND id BETWEEN 3 AND 5 AND amount > 0;
