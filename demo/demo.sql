-- paimon-sql demo against the default local warehouse (./warehouse):
--   cargo run --bin paimon-sql -- -f demo/demo.sql
-- Creates a primary-key table, writes, changes and reads it, time-travels and shows metadata.
-- Re-runnable: the demo database is dropped first.

DROP DATABASE IF EXISTS demo CASCADE;
CREATE DATABASE demo;

CREATE TABLE demo.orders (
    order_id BIGINT,
    customer STRING,
    amount   DECIMAL(10, 2),
    dt       STRING,
    PRIMARY KEY (order_id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('bucket' = '2');

-- Snapshot 1: three orders; a repeated key keeps its last version (deduplicate engine).
INSERT INTO demo.orders VALUES
    (1, 'alice', 10.50, '2024-01-01'),
    (2, 'bob',   20.00, '2024-01-01'),
    (3, 'carol', 30.25, '2024-01-02'),
    (1, 'alice', 11.50, '2024-01-01');

-- Snapshots 2-4: an upsert, a row-level update and a delete (each one APPEND snapshot).
INSERT INTO demo.orders VALUES (2, 'bob', 25.00, '2024-01-01');
UPDATE demo.orders SET amount = 99.99 WHERE order_id = 3;
DELETE FROM demo.orders WHERE order_id = 1;

SELECT * FROM demo.orders ORDER BY order_id;

-- Time travel to the first snapshot, then back.
SET paimon.scan.snapshot-id = '1';
SELECT * FROM demo.orders ORDER BY order_id;
RESET paimon.scan.snapshot-id;

-- Metadata: snapshots, files (partition, bucket, level), and the row kinds of the merged view.
SELECT snapshot_id, commit_kind, total_record_count, delta_record_count FROM demo."orders$snapshots";
SELECT partition, bucket, level, record_count, min_key, max_key FROM demo."orders$files" ORDER BY partition, bucket, min_sequence_number;
SELECT * FROM demo."orders$audit_log" ORDER BY order_id;

-- Replace one partition (OVERWRITE snapshot), then the merge-on-read plan.
INSERT OVERWRITE demo.orders PARTITION (dt = '2024-01-02') SELECT 7, 'dave', 70.00;
SELECT dt, count(*) AS orders, sum(amount) AS total FROM demo.orders GROUP BY dt ORDER BY dt;
EXPLAIN SELECT * FROM demo.orders WHERE order_id = 2;

-- Merge engines and a changelog: per-customer totals with the aggregation engine, whose lookup
-- changelog producer turns every commit into +I / -U / +U rows (APPEND, then COMPACT snapshot).
CREATE TABLE demo.totals (
    customer STRING,
    orders   BIGINT,
    spent    DECIMAL(12, 2),
    PRIMARY KEY (customer) NOT ENFORCED
) WITH ('bucket' = '1', 'merge-engine' = 'aggregation', 'changelog-producer' = 'lookup',
        'fields.orders.aggregate-function' = 'sum', 'fields.spent.aggregate-function' = 'sum');

INSERT INTO demo.totals VALUES ('alice', 1, 10.50), ('bob', 1, 20.00);
INSERT INTO demo.totals VALUES ('alice', 2, 40.00);
SELECT * FROM demo.totals ORDER BY customer;
SELECT snapshot_id, commit_kind, changelog_record_count FROM demo."totals$snapshots";
SELECT * FROM paimon_incremental_query('demo.totals$audit_log', 2, 4, 'changelog') ORDER BY customer, rowkind DESC;

-- Partial-update: columns arrive separately and NULLs never overwrite.
CREATE TABLE demo.profiles (id INT, name STRING, email STRING, PRIMARY KEY (id) NOT ENFORCED)
    WITH ('bucket' = '1', 'merge-engine' = 'partial-update');
INSERT INTO demo.profiles VALUES (1, 'alice', NULL);
INSERT INTO demo.profiles VALUES (1, NULL, 'alice@example.com');
SELECT * FROM demo.profiles;

-- Full compaction of a table from SQL (a COMPACT snapshot; files move to the top level).
CALL sys.compact('demo.orders');
SELECT partition, bucket, level, record_count FROM demo."orders$files" ORDER BY partition, bucket;

-- Loading a file: a CSV shipped with the demo becomes a Paimon table (file names work as
-- tables, as in datafusion-cli), then joins the orders.
CREATE TABLE demo.customers (name STRING, city STRING, PRIMARY KEY (name) NOT ENFORCED) WITH ('bucket' = '1');
INSERT INTO demo.customers SELECT name, city FROM 'demo/customers.csv';
SELECT o.order_id, o.customer, c.city
FROM demo.orders o JOIN demo.customers c ON o.customer = c.name
ORDER BY o.order_id;

-- MERGE INTO with Spark's syntax: bob moves, dave arrives, carol leaves (one commit).
MERGE INTO demo.customers t
USING (SELECT * FROM (VALUES ('bob', 'Bergen', 'move'), ('dave', 'Dublin', 'new'), ('carol', NULL, 'leave')) AS x(name, city, op)) s
ON t.name = s.name
WHEN MATCHED AND s.op = 'leave' THEN DELETE
WHEN MATCHED THEN UPDATE SET city = s.city
WHEN NOT MATCHED THEN INSERT (name, city) VALUES (s.name, s.city);
SELECT * FROM demo.customers ORDER BY name;
