-- Run on the cluster and in a local session: the outputs must be equal (every query orders its rows).
SELECT count(*), sum(k), count(DISTINCT g), min(v), max(v) FROM pk;
SELECT g, v = 'updated' AS updated, count(*), sum(k) FROM pk GROUP BY g, v = 'updated' ORDER BY g, updated;
SELECT n.name, count(*), sum(pk.k) FROM pk JOIN names n ON pk.g = n.g WHERE pk.v <> 'second' GROUP BY n.name ORDER BY n.name;
SELECT k, g, v FROM pk WHERE k IN (7919, 15838, 23757, 9999999) ORDER BY k;
SET paimon.scan.snapshot-id = '2';
SELECT count(*), sum(k), max(v) FROM pk;
RESET paimon.scan.snapshot-id;
SELECT rowkind, count(*), sum(k) FROM "pk$audit_log" GROUP BY rowkind ORDER BY rowkind;
SELECT count(*), sum(k) FROM paimon_incremental_query('default.pk', 1, 3, 'diff');
SELECT rowkind, count(*), sum(k) FROM paimon_incremental_query('default.cl$changelog', 1, 3) GROUP BY rowkind ORDER BY rowkind;
SELECT snapshot_id, commit_kind FROM "pk$snapshots" ORDER BY snapshot_id;
SELECT v = 'merged' AS merged, count(*), sum(k) FROM pk GROUP BY v = 'merged' ORDER BY merged;
SELECT v = 'again' AS again, count(*), sum(k), count(DISTINCT k) FROM dyn GROUP BY v = 'again' ORDER BY again;
SELECT rowkind, count(*), sum(k) FROM "dyn$audit_log" GROUP BY rowkind ORDER BY rowkind;
SELECT rowkind, count(*), sum(k) FROM paimon_incremental_query('default.dyn$audit_log', 2, 4) GROUP BY rowkind ORDER BY rowkind;
SELECT commit_kind, count(*) FROM "dyn$snapshots" GROUP BY commit_kind ORDER BY commit_kind;
SELECT g, v = 'app-updated' AS updated, count(*), sum(k) FROM app GROUP BY g, v = 'app-updated' ORDER BY g, updated;
SELECT commit_kind, count(*) FROM "app$snapshots" GROUP BY commit_kind ORDER BY commit_kind;
