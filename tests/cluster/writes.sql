-- Run on the cluster: every statement one snapshot (write-only: no compaction until CALL).
CREATE TABLE pk (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4', 'write-only' = 'true');
INSERT INTO pk SELECT k, g, v FROM src;
INSERT INTO pk SELECT k, g + 1, 'second' FROM src WHERE k % 3 = 0;
UPDATE pk SET v = 'updated' WHERE k % 10 = 7;
DELETE FROM pk WHERE k % 10 = 1;
CREATE TABLE cl (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4', 'changelog-producer' = 'none');
INSERT INTO cl SELECT k, v FROM src WHERE k % 100 < 5;
INSERT INTO cl SELECT k, 'changed' FROM src WHERE k % 100 < 2;
DELETE FROM cl WHERE k % 100 = 4;
MERGE INTO pk USING (SELECT k, g FROM src WHERE k % 10 = 3) s ON pk.k = s.k WHEN MATCHED THEN UPDATE SET v = 'merged';
-- Dynamic buckets without partitions: parallel assigners, writers compacting level 0 for the
-- lookup changelog.
CREATE TABLE dyn (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('dynamic-bucket.target-row-num' = '100000', 'changelog-producer' = 'lookup');
INSERT INTO dyn SELECT k, g, v FROM src WHERE k % 2 = 0;
INSERT INTO dyn SELECT k, g, 'again' FROM src WHERE k % 3 = 0;
-- An append table: DELETE and UPDATE rewrite the files holding matching rows, in parallel.
CREATE TABLE app (k BIGINT, g INT, v STRING) PARTITIONED BY (g);
INSERT INTO app SELECT k, g, v FROM src WHERE k % 5 = 0;
DELETE FROM app WHERE k % 10 = 0;
UPDATE app SET v = 'app-updated' WHERE k % 15 = 5;
-- Cross-partition upserts: keys move to another partition (a delete in the old one).
CREATE TABLE xp (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) PARTITIONED BY (g) WITH ('dynamic-bucket.target-row-num' = '50000');
INSERT INTO xp SELECT k, g, v FROM src WHERE k % 4 = 0;
INSERT INTO xp SELECT k, CAST((g + 1) % 7 AS INT), 'moved' FROM src WHERE k % 12 = 0;
