-- Run in a local paimon-sql (generate_series cannot be sent to a cluster): the source rows
-- the cluster's statements read. Sparse keys in scattered order (not a dense range).
CREATE TABLE src (k BIGINT, g INT, v STRING) WITH ('bucket' = '-1');
INSERT INTO src SELECT (value * 7919) % 10000019, CAST(value % 7 AS INT), concat('v', CAST(value % 1000 AS VARCHAR)) FROM generate_series(1, 1000000);
CREATE TABLE names (g INT, name STRING);
INSERT INTO names VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four'), (5, 'five'), (6, 'six');
