-- Data files at external paths (data-file.external-paths): tests/interop/run.sh replaces
-- EXTERNAL_ROOT with a directory of its own before running this file.
CREATE TABLE interop.external_paths (k INT, p INT, v STRING, PRIMARY KEY (k, p) NOT ENFORCED)
PARTITIONED BY (p)
WITH ('bucket' = '2', 'data-file.external-paths' = 'file://EXTERNAL_ROOT/a,file://EXTERNAL_ROOT/b',
      'data-file.external-paths.strategy' = 'round-robin');

INSERT INTO interop.external_paths VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 1, 'c'), (4, 2, 'd');
INSERT INTO interop.external_paths VALUES (1, 1, 'A'), (5, 1, 'e');
CALL sys.compact('interop.external_paths');
INSERT INTO interop.external_paths VALUES (2, 2, 'B');

CREATE TABLE interop.external_append (id INT, v STRING)
WITH ('data-file.external-paths' = 'file://EXTERNAL_ROOT/c', 'data-file.external-paths.strategy' = 'entropy-inject');

INSERT INTO interop.external_append VALUES (1, 'x'), (2, 'y');
INSERT INTO interop.external_append VALUES (3, 'z');
