CALL sys.compact('default.pk');
SELECT count(*), sum(k), min(v), max(v) FROM pk;
SELECT snapshot_id, commit_kind FROM "pk$snapshots" ORDER BY snapshot_id;
