-- Tables written by datafusion-paimon (paimon-sql) for the pypaimon interop check.
-- tests/interop/run.sh runs this file against an empty warehouse, then
-- tests/interop/read_with_pypaimon.py reads every table (every snapshot) with pypaimon 2.1.0 and
-- compares with what paimon-sql reads. Every statement commits one snapshot (or none for a
-- DML statement that matches no row), so the tables cover APPEND and OVERWRITE snapshots, -D and
-- +U records, several level-0 runs per bucket and several schema versions.

CREATE DATABASE interop;

----------------------------------------------------------------------------------------------------
-- 1. Deduplicate primary-key table, 4 buckets, 25k keys, 6 commits
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.pk_b4 (
    id BIGINT,
    name STRING,
    score INT,
    amount DOUBLE,
    PRIMARY KEY (id) NOT ENFORCED
) WITH ('bucket' = '4');

INSERT INTO interop.pk_b4
SELECT value AS id, concat('n', CAST(value AS VARCHAR)) AS name, CAST(value % 97 AS INT) AS score,
    CAST(value AS DOUBLE) / 8 AS amount
FROM generate_series(1, 20000);

-- Upsert of an overlapping range: 15001..20000 updated, 20001..25000 new
INSERT INTO interop.pk_b4
SELECT value AS id, concat('u', CAST(value AS VARCHAR)) AS name, CAST(value % 89 AS INT) AS score,
    CAST(value AS DOUBLE) / 4 AS amount
FROM generate_series(15001, 25000);

-- The same key twice in one statement (the last wins), and NULL values
INSERT INTO interop.pk_b4 VALUES (1, 'first', 1, 1.0), (1, 'second', 2, 2.0), (2, NULL, NULL, NULL);

-- -D records for a tenth of the keys
DELETE FROM interop.pk_b4 WHERE id % 10 = 3;

-- +U records with the full new row
UPDATE interop.pk_b4 SET score = score + 1000, name = concat(name, '*') WHERE id % 7 = 0;

-- A deleted key comes back
INSERT INTO interop.pk_b4 VALUES (13, 'reinserted', 13, 13.5), (23, 'reinserted', 23, 23.5);

----------------------------------------------------------------------------------------------------
-- 2. Partitioned primary-key table: two partition columns, 2 buckets, schema change
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.pk_partitioned (
    dt STRING,
    hr INT,
    id INT,
    v STRING,
    amount DECIMAL(10, 2),
    PRIMARY KEY (dt, hr, id) NOT ENFORCED
) PARTITIONED BY (dt, hr) WITH ('bucket' = '2');

INSERT INTO interop.pk_partitioned
SELECT
    CASE value % 3 WHEN 0 THEN '2024-01-01' WHEN 1 THEN '2024-01-02' ELSE '2024-01-03' END AS dt,
    CAST(value % 2 AS INT) AS hr,
    CAST(value AS INT) AS id,
    concat('v', CAST(value AS VARCHAR)) AS v,
    CAST(value AS DECIMAL(10, 2)) / 100 AS amount
FROM generate_series(1, 3000);

-- A new partition, and upserts of existing keys in existing partitions
INSERT INTO interop.pk_partitioned
SELECT '2024-01-04' AS dt, CAST(value % 2 AS INT) AS hr, CAST(value AS INT) AS id, 'new' AS v,
    CAST(value AS DECIMAL(10, 2)) AS amount
FROM generate_series(1, 500);

INSERT INTO interop.pk_partitioned VALUES
    ('2024-01-01', 1, 3, 'upserted', 0.03),
    ('2024-01-02', 1, 1, 'upserted', 0.01),
    ('2024-01-03', 0, 2, 'upserted', -0.02);

DELETE FROM interop.pk_partitioned WHERE dt = '2024-01-02' AND id % 5 = 0;

UPDATE interop.pk_partitioned SET v = upper(v), amount = amount * 2 WHERE hr = 1 AND id < 500;

ALTER TABLE interop.pk_partitioned ADD COLUMN note STRING;

INSERT INTO interop.pk_partitioned VALUES
    ('2024-01-01', 0, 100000, 'after-alter', 1.00, 'noted'),
    ('2024-01-05', 1, 7, 'after-alter', 7.00, NULL),
    ('2024-01-02', 1, 1, 'after-alter', 2.00, 'overrides an old key');

UPDATE interop.pk_partitioned SET note = concat('old row ', v) WHERE dt = '2024-01-03' AND id < 100;

----------------------------------------------------------------------------------------------------
-- 3. Every supported type, in a primary-key table and an append table
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.types_pk (
    id INT,
    c_bool BOOLEAN,
    c_tinyint TINYINT,
    c_smallint SMALLINT,
    c_int INT,
    c_bigint BIGINT,
    c_float FLOAT,
    c_double DOUBLE,
    c_dec10 DECIMAL(10, 2),
    c_dec38 DECIMAL(38, 10),
    c_string STRING,
    c_varchar VARCHAR(20),
    c_char CHAR(3),
    c_bytes BYTES,
    c_binary BINARY(4),
    c_date DATE,
    c_time TIME(3),
    c_ts3 TIMESTAMP(3),
    c_ts6 TIMESTAMP(6),
    c_ltz TIMESTAMP_LTZ(6),
    c_array ARRAY<INT>,
    c_map MAP<STRING, BIGINT>,
    c_row ROW<x INT, y STRING>,
    PRIMARY KEY (id) NOT ENFORCED
) WITH ('bucket' = '2');

INSERT INTO interop.types_pk VALUES
    (1, true, 1, 2, 3, 4, 1.5, 2.25, 12345678.91,
     CAST('1234567890123456789012345678.0123456789' AS DECIMAL(38, 10)),
     'hello', 'varchar', 'abc', X'0001FF', X'DEADBEEF',
     DATE '2024-01-02', TIME '03:04:05.678', TIMESTAMP '2024-01-02 03:04:05.678',
     TIMESTAMP '2024-01-02 03:04:05.678901', TIMESTAMP '2024-01-02 03:04:05.678901',
     [1, 2, NULL], MAP {'a': 1, 'b': NULL}, named_struct('x', 7, 'y', 'seven')),
    -- extremes: min integers, negative decimals, dates before the epoch, empty strings and bytes
    (2, false, -128, -32768, -2147483648, -9223372036854775808, -3.25, -1e300, -99999999.99,
     CAST('-9999999999999999999999999999.9999999999' AS DECIMAL(38, 10)),
     '', '', '', X'', X'00000000',
     DATE '1969-12-31', TIME '00:00:00.000', TIMESTAMP '1969-12-31 23:59:59.999',
     TIMESTAMP '1900-01-01 00:00:00.000001', TIMESTAMP '1970-01-01 00:00:00',
     [], MAP {'': 0}, named_struct('x', CAST(NULL AS INT), 'y', '')),
    -- max integers, non-ASCII and long strings (longer than 7 bytes are not inline in BinaryRow)
    (3, true, 127, 32767, 2147483647, 9223372036854775807, 3.4028235e38, 1.7976931348623157e308, 99999999.99,
     CAST('9999999999999999999999999999.9999999999' AS DECIMAL(38, 10)),
     'héllo wörld ✓ — a longer string', 'ünïcödé', 'xyz', X'00112233445566778899AABBCCDDEEFF', X'FFFFFFFF',
     DATE '9999-12-31', TIME '23:59:59.999', TIMESTAMP '2262-04-11 23:47:16.854',
     TIMESTAMP '2099-12-31 23:59:59.999999', TIMESTAMP '2038-01-19 03:14:08.123456',
     [2147483647, -2147483648], MAP {'k1': 9223372036854775807, 'k2': -1, 'k3': NULL},
     named_struct('x', -1, 'y', 'a string that is long')),
    -- all NULL but the key
    (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

-- Upsert one typed row, delete another
INSERT INTO interop.types_pk (id, c_string, c_double, c_array, c_row)
VALUES (1, 'replaced', 0.1, [5], named_struct('x', 5, 'y', 'five'));

DELETE FROM interop.types_pk WHERE id = 2;

CREATE TABLE interop.types_append (
    id INT,
    c_bool BOOLEAN,
    c_tinyint TINYINT,
    c_smallint SMALLINT,
    c_int INT,
    c_bigint BIGINT,
    c_float FLOAT,
    c_double DOUBLE,
    c_dec10 DECIMAL(10, 2),
    c_dec38 DECIMAL(38, 10),
    c_string STRING,
    c_varchar VARCHAR(20),
    c_char CHAR(3),
    c_bytes BYTES,
    c_binary BINARY(4),
    c_date DATE,
    c_time TIME(3),
    c_ts3 TIMESTAMP(3),
    c_ts6 TIMESTAMP(6),
    c_ltz TIMESTAMP_LTZ(6),
    c_array ARRAY<INT>,
    c_map MAP<STRING, BIGINT>,
    c_row ROW<x INT, y STRING>
);

-- Twice: an append table keeps duplicates
INSERT INTO interop.types_append SELECT * FROM interop.types_pk;
INSERT INTO interop.types_append SELECT * FROM interop.types_pk WHERE id <> 4;

----------------------------------------------------------------------------------------------------
-- 4. Schema evolution: ADD COLUMN twice, writes under each schema
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.evolution (
    id INT,
    a STRING,
    PRIMARY KEY (id) NOT ENFORCED
) WITH ('bucket' = '1');

INSERT INTO interop.evolution VALUES (1, 'a1'), (2, 'a2'), (3, 'a3'), (4, 'a4'), (5, 'a5');

ALTER TABLE interop.evolution ADD COLUMN b BIGINT;

INSERT INTO interop.evolution VALUES (4, 'a4-new', 40), (5, 'a5-new', 50), (6, 'a6', 60);

-- Rows written under schema 0 updated under schema 1
UPDATE interop.evolution SET b = -1 WHERE b IS NULL;

ALTER TABLE interop.evolution ADD COLUMN c DOUBLE;

INSERT INTO interop.evolution VALUES (7, 'a7', 70, 7.5), (1, 'a1-new', 10, 1.5);

DELETE FROM interop.evolution WHERE id = 2;

----------------------------------------------------------------------------------------------------
-- 5. INSERT OVERWRITE and truncate
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.overwrite (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2');

INSERT INTO interop.overwrite SELECT CAST(value AS INT) AS k, concat('first-', CAST(value AS VARCHAR)) AS v FROM generate_series(1, 100);

INSERT OVERWRITE interop.overwrite SELECT CAST(value AS INT) AS k, concat('second-', CAST(value AS VARCHAR)) AS v FROM generate_series(50, 150);

INSERT INTO interop.overwrite SELECT CAST(value AS INT) AS k, concat('third-', CAST(value AS VARCHAR)) AS v FROM generate_series(140, 160);

-- Truncate (an OVERWRITE removing every file), then write again
DELETE FROM interop.overwrite;

INSERT INTO interop.overwrite VALUES (1, 'after truncate'), (2, 'after truncate');

CREATE TABLE interop.append_log (
    id BIGINT,
    msg STRING
);

INSERT INTO interop.append_log SELECT value AS id, concat('m', CAST(value AS VARCHAR)) AS msg FROM generate_series(1, 1000);

INSERT INTO interop.append_log SELECT value AS id, 'duplicate' AS msg FROM generate_series(1, 10);

INSERT OVERWRITE interop.append_log VALUES (1, 'overwritten'), (1, 'overwritten');

INSERT INTO interop.append_log VALUES (2, 'appended');

----------------------------------------------------------------------------------------------------
-- 6. Fixed-bucket append table (bucket-key)
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.append_bucketed (
    id INT,
    part STRING,
    payload STRING
) PARTITIONED BY (part) WITH ('bucket' = '3', 'bucket-key' = 'id');

INSERT INTO interop.append_bucketed
SELECT CAST(value AS INT) AS id, CASE WHEN value % 2 = 0 THEN 'even' ELSE 'odd' END AS part,
    repeat('x', CAST(value % 20 AS INT)) AS payload
FROM generate_series(1, 300);

INSERT INTO interop.append_bucketed VALUES (1, 'odd', 'again'), (2, 'even', 'again');

----------------------------------------------------------------------------------------------------
-- 7. Compaction and changelog producers: levels above 0, upgraded and rewritten files, COMPACT
--    snapshots, changelog manifests (pypaimon reads the data files of every level)
----------------------------------------------------------------------------------------------------
-- Partial-update rather than aggregation: pypaimon merges every level of a lookup table, Java
-- only the newest high-level record (semantics.md §3.4); for partial-update both agree.
CREATE TABLE interop.lookup_partial (
    k INT,
    total BIGINT,
    tags STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2', 'changelog-producer' = 'lookup', 'merge-engine' = 'partial-update');

INSERT INTO interop.lookup_partial SELECT CAST(value AS INT) AS k, value AS total, CAST(NULL AS STRING) AS tags FROM generate_series(1, 200);

INSERT INTO interop.lookup_partial SELECT CAST(value AS INT) AS k, CAST(NULL AS BIGINT) AS total, 'b' AS tags FROM generate_series(100, 300);

CREATE TABLE interop.full_dedup (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '1', 'changelog-producer' = 'full-compaction');

INSERT INTO interop.full_dedup VALUES (1, 'a'), (2, 'b'), (3, 'c');

INSERT INTO interop.full_dedup VALUES (1, 'A');

DELETE FROM interop.full_dedup WHERE k = 3;

CREATE TABLE interop.universal (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '1', 'num-sorted-run.compaction-trigger' = '2');

INSERT INTO interop.universal VALUES (1, 'a'), (2, 'b');

INSERT INTO interop.universal VALUES (2, 'B'), (3, 'c');

INSERT INTO interop.universal VALUES (3, 'C'), (4, 'd');

CALL sys.compact('interop.universal');

----------------------------------------------------------------------------------------------------
-- Dynamic-bucket primary-key table (no 'bucket' option): keys spread over buckets by the HASH
-- index; pypaimon must see each key once, with its newest value
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.pk_dynamic (
    id BIGINT,
    dt STRING,
    v STRING,
    PRIMARY KEY (id, dt) NOT ENFORCED
) PARTITIONED BY (dt) WITH ('dynamic-bucket.target-row-num' = '300');

INSERT INTO interop.pk_dynamic
SELECT value AS id, CASE WHEN value % 2 = 0 THEN 'even' ELSE 'odd' END AS dt, concat('v', CAST(value AS VARCHAR)) AS v
FROM generate_series(1, 1000);

INSERT INTO interop.pk_dynamic
SELECT value AS id, CASE WHEN value % 2 = 0 THEN 'even' ELSE 'odd' END AS dt, concat('w', CAST(value AS VARCHAR)) AS v
FROM generate_series(900, 1400);

DELETE FROM interop.pk_dynamic WHERE id % 50 = 0;

----------------------------------------------------------------------------------------------------
-- Expired history: automatic expiration (at most 3 snapshots kept) across compactions, then the
-- procedure; pypaimon must read every snapshot that is left
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.expiring (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2', 'snapshot.num-retained.min' = '2', 'snapshot.num-retained.max' = '3');

INSERT INTO interop.expiring VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO interop.expiring VALUES (4, 'd'), (5, 'e');
INSERT INTO interop.expiring VALUES (1, 'A');
INSERT INTO interop.expiring VALUES (6, 'f');
INSERT INTO interop.expiring VALUES (2, 'B'), (7, 'g');
INSERT INTO interop.expiring VALUES (3, 'C');
DELETE FROM interop.expiring WHERE k = 4;
CALL sys.expire_snapshots(`table` => 'interop.expiring', retain_max => 2, retain_min => 1);

----------------------------------------------------------------------------------------------------
-- Tags and rollback: a tag of snapshot 2, later snapshots rolled back to it, then a new commit
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.rolled_back (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2');

INSERT INTO interop.rolled_back VALUES (1, 'a'), (2, 'b');
INSERT INTO interop.rolled_back VALUES (3, 'c');
CALL sys.create_tag('interop.rolled_back', 'kept', 2);
INSERT INTO interop.rolled_back VALUES (1, 'A'), (4, 'd');
DELETE FROM interop.rolled_back WHERE k = 2;
CALL sys.rollback_to('interop.rolled_back', 'kept');
INSERT INTO interop.rolled_back VALUES (5, 'e');

----------------------------------------------------------------------------------------------------
-- ORC and Avro data files: pypaimon reads what we write in both formats, merged across commits
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.avro_pk (
    k INT,
    name STRING,
    price DOUBLE,
    d DATE,
    amount DECIMAL(10, 2),
    small TINYINT,
    ts TIMESTAMP(6),
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2', 'file.format' = 'avro');

INSERT INTO interop.avro_pk VALUES (1, 'a', 1.5, DATE '2024-01-01', 1.25, 1, TIMESTAMP '2024-01-01 10:00:00.123456'), (2, 'b', 2.5, DATE '2024-01-02', 2.50, 2, TIMESTAMP '2024-01-02 10:00:00'), (3, 'c', NULL, NULL, NULL, NULL, NULL);
INSERT INTO interop.avro_pk VALUES (2, 'b2', 20.5, DATE '2024-02-02', 20.05, -2, TIMESTAMP '2024-02-02 10:00:00');
DELETE FROM interop.avro_pk WHERE k = 1;

CREATE TABLE interop.orc_pk (
    k INT,
    v STRING,
    n BIGINT,
    f BOOLEAN,
    d DATE,
    ts TIMESTAMP(6),
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2', 'file.format' = 'orc', 'file.compression' = 'zstd');

INSERT INTO interop.orc_pk VALUES (1, 'x', 10, true, DATE '2024-03-01', TIMESTAMP '2024-03-01 08:00:00.5'), (2, 'y', 20, false, NULL, NULL), (3, 'z', NULL, NULL, DATE '2024-03-03', TIMESTAMP '2024-03-03 00:00:00');
INSERT INTO interop.orc_pk VALUES (1, 'x2', 11, false, DATE '2024-03-02', TIMESTAMP '2024-03-02 08:00:00');
CALL sys.compact('interop.orc_pk');

-- Every type in ORC: DECIMAL, TIME, TIMESTAMP_LTZ and the nested types go through our own ORC
-- writer (orc-rust's has no encoders for them). Row 2 of types_pk is deleted above: its
-- TIMESTAMP '1969-12-31 23:59:59.999' is one ORC cannot hold.
CREATE TABLE interop.types_orc (
    id INT,
    c_bool BOOLEAN,
    c_tinyint TINYINT,
    c_smallint SMALLINT,
    c_int INT,
    c_bigint BIGINT,
    c_float FLOAT,
    c_double DOUBLE,
    c_dec10 DECIMAL(10, 2),
    c_dec38 DECIMAL(38, 10),
    c_string STRING,
    c_varchar VARCHAR(20),
    c_char CHAR(3),
    c_bytes BYTES,
    c_binary BINARY(4),
    c_date DATE,
    c_time TIME(3),
    c_ts3 TIMESTAMP(3),
    c_ts6 TIMESTAMP(6),
    c_ltz TIMESTAMP_LTZ(6),
    c_array ARRAY<INT>,
    c_map MAP<STRING, BIGINT>,
    c_row ROW<x INT, y STRING>,
    PRIMARY KEY (id) NOT ENFORCED
) WITH ('bucket' = '2', 'file.format' = 'orc');

INSERT INTO interop.types_orc SELECT * FROM interop.types_pk;
INSERT INTO interop.types_orc (id, c_dec10, c_time, c_map, c_row)
VALUES (3, -0.01, TIME '12:00:00.001', MAP {'new': 1}, named_struct('x', CAST(NULL AS INT), 'y', 'three'));

CREATE TABLE interop.orc_log (id INT, msg STRING) WITH ('file.format' = 'orc', 'file.compression' = 'lz4');
INSERT INTO interop.orc_log VALUES (1, 'one'), (2, 'two');
INSERT INTO interop.orc_log VALUES (3, 'three');

CREATE TABLE interop.avro_log (id INT, msg STRING) WITH ('file.format' = 'avro', 'file.compression' = 'snappy');
INSERT INTO interop.avro_log VALUES (1, 'one'), (2, 'two');

----------------------------------------------------------------------------------------------------
-- Postpone bucket: rows written to bucket-postpone, then assigned to 2 buckets by compaction
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.postponed (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '-2', 'postpone.default-bucket-num' = '2');

INSERT INTO interop.postponed VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
INSERT INTO interop.postponed VALUES (2, 'B');
CALL sys.compact('interop.postponed');
INSERT INTO interop.postponed VALUES (5, 'e');

----------------------------------------------------------------------------------------------------
-- Cross-partition upsert: dynamic bucket, primary key without the partition key; keys move
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.cross_partition (
    id INT,
    dt STRING,
    v STRING,
    PRIMARY KEY (id) NOT ENFORCED
) PARTITIONED BY (dt);

INSERT INTO interop.cross_partition VALUES (1, 'a', 'one'), (2, 'a', 'two'), (3, 'b', 'three');
INSERT INTO interop.cross_partition VALUES (1, 'b', 'one-b'), (4, 'b', 'four');
DELETE FROM interop.cross_partition WHERE id = 2;

----------------------------------------------------------------------------------------------------
-- Long-lived changelog: snapshots expire after 2, changelogs after 4 (changelog/changelog-<id>)
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.long_lived_changelog (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '1', 'changelog-producer' = 'input', 'snapshot.num-retained.min' = '1',
        'snapshot.num-retained.max' = '2', 'changelog.num-retained.max' = '4');

INSERT INTO interop.long_lived_changelog VALUES (1, 'a');
INSERT INTO interop.long_lived_changelog VALUES (2, 'b');
INSERT INTO interop.long_lived_changelog VALUES (1, 'A');
DELETE FROM interop.long_lived_changelog WHERE k = 2;
INSERT INTO interop.long_lived_changelog VALUES (3, 'c');
INSERT INTO interop.long_lived_changelog VALUES (4, 'd');

----------------------------------------------------------------------------------------------------
-- Deletion vectors written by lookup compaction: replaced rows masked in higher levels
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.dv_pk (
    k INT,
    v STRING,
    PRIMARY KEY (k) NOT ENFORCED
) WITH ('bucket' = '2', 'deletion-vectors.enabled' = 'true');

INSERT INTO interop.dv_pk VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e');
INSERT INTO interop.dv_pk VALUES (1, 'A'), (4, 'D');
INSERT INTO interop.dv_pk VALUES (2, 'B'), (6, 'f');
DELETE FROM interop.dv_pk WHERE k = 3;
INSERT INTO interop.dv_pk VALUES (1, 'AA');

----------------------------------------------------------------------------------------------------
-- Row-level DELETE and UPDATE on append tables: deletion vectors, and copy-on-write without them
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.dv_append (k INT, v STRING) WITH ('deletion-vectors.enabled' = 'true');

INSERT INTO interop.dv_append VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO interop.dv_append VALUES (4, 'd'), (5, 'e');
DELETE FROM interop.dv_append WHERE k = 2 OR k = 5;
UPDATE interop.dv_append SET v = 'X' WHERE k >= 3;
DELETE FROM interop.dv_append WHERE k = 4;

CREATE TABLE interop.cow_append (k INT, p STRING, v STRING) PARTITIONED BY (p);

INSERT INTO interop.cow_append VALUES (1, 'x', 'a'), (2, 'x', 'b'), (3, 'y', 'c'), (4, 'y', 'd');
DELETE FROM interop.cow_append WHERE k = 2;
UPDATE interop.cow_append SET v = upper(v) WHERE k >= 3;

----------------------------------------------------------------------------------------------------
-- Layouts Java Paimon writes (issue 42): deletion vectors and dynamic-bucket hashes in the bucket
-- directories (index-file-in-data-file-dir), and an append table with row tracking (row ids
-- assigned at commit; pypaimon reads the same rows).
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.dv_index_in_bucket (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED)
WITH ('deletion-vectors.enabled' = 'true', 'index-file-in-data-file-dir' = 'true');

INSERT INTO interop.dv_index_in_bucket VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO interop.dv_index_in_bucket VALUES (2, 'B'), (4, 'd');
DELETE FROM interop.dv_index_in_bucket WHERE k = 3;

CREATE TABLE interop.row_tracked (id INT, v STRING) WITH ('row-tracking.enabled' = 'true');

INSERT INTO interop.row_tracked VALUES (10, 'a'), (20, 'b'), (30, 'c');
INSERT INTO interop.row_tracked VALUES (40, 'd');

-- MERGE INTO a primary-key table: an update, a delete and an insert in one commit.
CREATE TABLE interop.merged (id INT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2');

INSERT INTO interop.merged VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30);
MERGE INTO interop.merged t USING (SELECT * FROM (VALUES (1, 'A', 1), (3, 'X', 0), (4, 'd', 40)) AS x(id, v, n)) s
ON t.id = s.id
WHEN MATCHED AND s.n = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n
WHEN NOT MATCHED THEN INSERT *;

-- MERGE INTO append tables: copy-on-write replaces only the file holding id 3; with deletion
-- vectors ids 1 and 3 are marked deleted and id 1's new version goes to a new file.
CREATE TABLE interop.merged_append (id INT, v STRING, p STRING) PARTITIONED BY (p);

INSERT INTO interop.merged_append VALUES (1, 'a', 'x'), (2, 'b', 'y');
INSERT INTO interop.merged_append VALUES (3, 'c', 'y');
MERGE INTO interop.merged_append t USING (SELECT * FROM (VALUES (3, 'C'), (9, 'new')) AS x(id, v)) s
ON t.id = s.id
WHEN MATCHED THEN UPDATE SET v = s.v
WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'z');

CREATE TABLE interop.merged_append_dv (id INT, v STRING) WITH ('deletion-vectors.enabled' = 'true', 'bucket' = '2', 'bucket-key' = 'id');

INSERT INTO interop.merged_append_dv VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
MERGE INTO interop.merged_append_dv t USING (VALUES (1, 'A'), (3, 'DEL')) AS s(id, v)
ON t.id = s.id
WHEN MATCHED AND s.v = 'DEL' THEN DELETE
WHEN MATCHED THEN UPDATE SET v = s.v;

-- File indexes: a bitmap small enough for the manifest, a bloom filter in a .index file.
CREATE TABLE interop.file_indexed (id INT, name STRING, n INT)
WITH ('file-index.bitmap.columns' = 'n', 'file-index.bloom-filter.columns' = 'name');

INSERT INTO interop.file_indexed VALUES (1, 'a', 10), (2, 'b', 20), (3, NULL, NULL);
INSERT INTO interop.file_indexed VALUES (4, 'c', 10);

-- Branches: one created empty and written to, one from a tag and written to after the main
-- branch moved on.
CREATE TABLE interop.branched (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2');

INSERT INTO interop.branched VALUES (1, 'a'), (2, 'b');
CALL sys.create_tag('interop.branched', 't1');
INSERT INTO interop.branched VALUES (2, 'B'), (3, 'c');
CALL sys.create_branch('interop.branched', 'from_tag', 't1');
INSERT INTO interop."branched$branch_from_tag" VALUES (1, 'branch-a'), (9, 'branch-z');
CALL sys.create_branch('interop.branched', 'empty');
INSERT INTO interop."branched$branch_empty" (k, v) VALUES (5, 'e');

-- BLOB columns (Paimon 1.4): the bytes in .blob files beside the data file, two rows per file.
CREATE TABLE interop.blobs (id INT, name STRING, pic BLOB)
WITH ('row-tracking.enabled' = 'true', 'data-evolution.enabled' = 'true', 'blob.target-file-size' = '40 b');

INSERT INTO interop.blobs VALUES (1, 'one', X'0102030405'), (2, 'two', X'FF'), (3, 'three', X'00112233445566778899');
INSERT INTO interop.blobs VALUES (4, 'four', X'CAFE');

----------------------------------------------------------------------------------------------------
-- Concurrent writers: tests/interop/run.sh starts 4 paimon-sql processes at once, each committing
-- 50 INSERTs and 5 DELETEs into this table (tests/interop/concurrent_writer.sh). Compaction
-- triggers after 3 sorted runs and snapshots expire beyond 10, while the others commit.
-- read_with_pypaimon.py --concurrent checks the end state row by row.
----------------------------------------------------------------------------------------------------
CREATE TABLE interop.concurrent_writers (
    k BIGINT,
    writer INT,
    commit_no INT,
    PRIMARY KEY (k) NOT ENFORCED
) WITH (
    'bucket' = '2',
    'num-sorted-run.compaction-trigger' = '3',
    'snapshot.num-retained.min' = '5',
    'snapshot.num-retained.max' = '10'
);
