#!/usr/bin/env python3
"""Reads a warehouse written by datafusion-paimon with pypaimon and compares with paimon-sql.

Usage (tests/interop/run.sh does all of this):

    read_with_pypaimon.py --warehouse DIR --cli target/debug/paimon-sql [--work DIR]

For every table of every database of the warehouse:

* data: every snapshot (pypaimon `scan.snapshot-id` = paimon-sql `SET paimon.scan.snapshot-id`)
  and the latest state, and the latest state of each branch (`t$branch_<name>`), `SELECT *` on both sides, compared as multisets of rows after value
  normalisation, with the column names and (normalised) Arrow types;
* metadata: the system tables `$snapshots`, `$schemas`, `$options` and `$files`, compared on the
  columns both sides have (snapshot ids, kinds and record counts included).

paimon-sql writes its results as Parquet files (`COPY (...) TO '<file>' STORED AS PARQUET`, one
CLI run for everything), so values keep their exact types. Exits 1 and prints the differences
when anything differs, 0 otherwise.
"""

import argparse
import base64
import collections
import datetime
import decimal
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon import CatalogFactory

# System tables compared, and columns left out of the comparison (with the reason).
SYSTEM_TABLES = {
    "snapshots": {},
    "schemas": {},
    "options": {},
    "files": {},
}
MAX_DIFF_ROWS = 10


def sql_string(s):
    return "'" + s.replace("'", "''") + "'"


def quoted(name):
    return '"' + name.replace('"', '""') + '"'


def discover_tables(warehouse):
    """(db, table) of every table: `<db>.db/<table>/schema/` exists."""
    tables = []
    for entry in sorted(os.listdir(warehouse)):
        if not entry.endswith(".db"):
            continue
        db = entry[: -len(".db")]
        for table in sorted(os.listdir(os.path.join(warehouse, entry))):
            if os.path.isdir(os.path.join(warehouse, entry, table, "schema")):
                tables.append((db, table))
    return tables


# ------------------------------------------------------------------------------------------------
# Value normalisation: both sides become JSON-able Python values that compare equal iff the
# values are the same.
# ------------------------------------------------------------------------------------------------


def canonical_type(t):
    """An Arrow type as text, ignoring representation-only differences (large/view variants,
    field names of lists and maps, nullability, time-zone spelling)."""
    if pa.types.is_large_string(t) or pa.types.is_string(t) or t == pa.string_view():
        return "string"
    if pa.types.is_large_binary(t) or pa.types.is_binary(t) or t == pa.binary_view():
        return "binary"
    if pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        tz = t.tz
        if tz in ("UTC", "+00:00", "Z", "Etc/UTC"):
            tz = "UTC"
        return f"timestamp[{t.unit}{', tz=' + tz if tz else ''}]"
    if pa.types.is_map(t):
        return f"map<{canonical_type(t.key_type)}, {canonical_type(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return f"list<{canonical_type(t.value_type)}>"
    if pa.types.is_struct(t):
        fields = ", ".join(f"{t.field(i).name}: {canonical_type(t.field(i).type)}" for i in range(t.num_fields))
        return f"struct<{fields}>"
    if pa.types.is_dictionary(t):
        return canonical_type(t.value_type)
    return str(t)


def norm(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)  # exact: both sides hold the same binary value
    if isinstance(v, int):
        return v
    if isinstance(v, decimal.Decimal):
        return "dec:" + str(v)
    if isinstance(v, (bytes, bytearray)):
        return "hex:" + bytes(v).hex()
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return "tsz:" + v.isoformat()
        return "ts:" + v.isoformat()
    if isinstance(v, datetime.date):
        return "date:" + v.isoformat()
    if isinstance(v, datetime.time):
        return "time:" + v.isoformat()
    if isinstance(v, datetime.timedelta):
        return "dur:" + str(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        # A map arrives as a list of (key, value) tuples: order is not significant.
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            pairs = [[norm(k), norm(x)] for k, x in v]
            return {"map": sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))}
        return [norm(x) for x in v]
    if isinstance(v, tuple):
        return [norm(x) for x in v]
    return "repr:" + repr(v)


def rows_of(table, columns):
    """Rows of an Arrow table (columns in the given order) as canonical JSON strings."""
    out = []
    pyrows = table.select(columns).to_pylist()
    for r in pyrows:
        out.append(json.dumps([norm(r[c]) for c in columns], sort_keys=True, ensure_ascii=False))
    return out


def diff_multisets(ours, theirs):
    """(only in ours, only in pypaimon) as sorted lists with repetitions."""
    a, b = collections.Counter(ours), collections.Counter(theirs)
    only_ours = sorted((a - b).elements())
    only_theirs = sorted((b - a).elements())
    return only_ours, only_theirs


# ------------------------------------------------------------------------------------------------
# The two readers
# ------------------------------------------------------------------------------------------------


class Pypaimon:
    def __init__(self, warehouse):
        self.catalog = CatalogFactory.create({"warehouse": "file://" + os.path.abspath(warehouse)})

    def read(self, identifier, options=None):
        table = self.catalog.get_table(identifier)
        if options:
            table = table.copy(options)
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        return builder.new_read().to_arrow(splits)


class Job:
    """One query for paimon-sql, with the Parquet file it writes."""

    def __init__(self, label, select, out, snapshot_id=None):
        self.label, self.select, self.out, self.snapshot_id = label, select, out, snapshot_id


def run_cli(cli, warehouse, work, jobs):
    """Runs every job in one paimon-sql process; returns stderr of a failure or None."""
    lines = []
    for job in jobs:
        if job.snapshot_id is not None:
            lines.append(f"SET paimon.scan.snapshot-id = '{job.snapshot_id}';")
        lines.append(f"COPY ({job.select}) TO {sql_string(job.out)} STORED AS PARQUET;")
        if job.snapshot_id is not None:
            lines.append("RESET paimon.scan.snapshot-id;")
    script = os.path.join(work, "dump.sql")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    proc = subprocess.run(
        [cli, "--warehouse", warehouse, "--quiet", "-f", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        return f"paimon-sql failed (exit {proc.returncode}) running {script}:\n{proc.stderr}"
    return None


# ------------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------------


class Report:
    def __init__(self):
        self.failures = []
        self.checks = 0

    def fail(self, label, message):
        self.failures.append(f"[{label}] {message}")
        print(f"FAIL {label}\n{message}\n", flush=True)

    def ok(self, label, detail=""):
        self.checks += 1
        print(f"ok   {label}{'  ' + detail if detail else ''}", flush=True)


def compare_data(report, label, ours, theirs, system=False):
    our_cols, their_cols = ours.schema.names, theirs.schema.names
    if system:
        columns = [c for c in their_cols if c in our_cols]
        missing = [c for c in their_cols if c not in our_cols]
        if missing:
            report.fail(label, f"columns pypaimon has and we do not: {missing}")
            return
    else:
        if our_cols != their_cols:
            report.fail(label, f"column names differ:\n  ours:     {our_cols}\n  pypaimon: {their_cols}")
            return
        columns = our_cols
        type_diffs = []
        for c in columns:
            ot = canonical_type(ours.schema.field(c).type)
            tt = canonical_type(theirs.schema.field(c).type)
            if ot != tt:
                type_diffs.append(f"  {c}: ours {ot}, pypaimon {tt}")
        if type_diffs:
            report.fail(label, "column types differ:\n" + "\n".join(type_diffs))
            return
    our_rows = rows_of(ours, columns)
    their_rows = rows_of(theirs, columns)
    only_ours, only_theirs = diff_multisets(our_rows, their_rows)
    if only_ours or only_theirs:
        lines = [
            f"rows differ: ours {len(our_rows)} rows, pypaimon {len(their_rows)} rows; columns {columns}",
            f"  only in ours ({len(only_ours)}):",
        ]
        lines += [f"    {r}" for r in only_ours[:MAX_DIFF_ROWS]]
        if len(only_ours) > MAX_DIFF_ROWS:
            lines.append(f"    ... {len(only_ours) - MAX_DIFF_ROWS} more")
        lines.append(f"  only in pypaimon ({len(only_theirs)}):")
        lines += [f"    {r}" for r in only_theirs[:MAX_DIFF_ROWS]]
        if len(only_theirs) > MAX_DIFF_ROWS:
            lines.append(f"    ... {len(only_theirs) - MAX_DIFF_ROWS} more")
        report.fail(label, "\n".join(lines))
        return
    report.ok(label, f"{len(our_rows)} rows")


def strip_nullable(value):
    """Drops the `"nullable"` keys pypaimon adds to nested type objects (format.md §2.4: readers
    ignore them; nullability is the ` NOT NULL` suffix of `"type"`)."""
    if isinstance(value, dict):
        return {k: strip_nullable(v) for k, v in value.items() if k != "nullable"}
    if isinstance(value, list):
        return [strip_nullable(v) for v in value]
    return value


def normalise_system_table(name, table):
    """Run-independent spelling of system-table cells that legitimately differ in form only."""
    if name == "files" and "file_path" in table.schema.names:
        paths = [None if p is None else os.path.basename(p) for p in table.column("file_path").to_pylist()]
        idx = table.schema.get_field_index("file_path")
        table = table.set_column(idx, "file_path", pa.array(paths, pa.string()))
    if name == "files" and "file_format" in table.schema.names and "file_path" in table.schema.names:
        # pypaimon 2.1 names the table's file.format for a .blob file too; Java (and we) name the
        # file's own format, from its extension.
        formats = [
            "blob" if (p or "").endswith(".blob") else f
            for p, f in zip(table.column("file_path").to_pylist(), table.column("file_format").to_pylist())
        ]
        idx = table.schema.get_field_index("file_format")
        table = table.set_column(idx, "file_format", pa.array(formats, pa.string()))
    if name == "files" and "creation_time" in table.schema.names:
        # pypaimon shows the file creation time to the second, we show milliseconds.
        times = [
            None if t is None else t.replace(microsecond=0).isoformat()
            for t in table.column("creation_time").to_pylist()
        ]
        idx = table.schema.get_field_index("creation_time")
        table = table.set_column(idx, "creation_time", pa.array(times, pa.string()))
    if name == "schemas":
        # JSON text: compare the parsed values, not the spelling.
        for col in ("fields", "partition_keys", "primary_keys", "options"):
            if col in table.schema.names:
                values = [
                    None if v is None else json.dumps(strip_nullable(json.loads(v)), sort_keys=True)
                    for v in table.column(col).to_pylist()
                ]
                idx = table.schema.get_field_index(col)
                table = table.set_column(idx, col, pa.array(values, pa.string()))
    return table


def check_concurrent_writers(report, py, spec):
    """The end state of concurrent_writer.sh's statements, independent of how the commits of the
    writers interleaved: no row lost, none duplicated, and each writer's hot key at its last
    statement (its own statements commit in order)."""
    ident, counts = spec.split(":")
    writers, commits = (int(x) for x in counts.split(","))
    expected = []
    for w in range(writers):
        expected.append((w + 1, w, commits - 1))
        deleted = {c - 5 for c in range(commits) if c % 10 == 9}
        expected += [(1000 * (w + 1) + c, w, c) for c in range(commits) if c not in deleted]
    label = f"{ident} (end state of {writers} concurrent writers)"
    try:
        table = py.read(ident)
        snaps = py.read(ident + "$snapshots").to_pylist()
    except Exception as e:  # noqa: BLE001
        report.fail(label, f"pypaimon cannot read it: {e!r}")
        return
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("k", "writer", "commit_no"))))
    if got != sorted(expected):
        only_got = sorted(set(got) - set(expected))[:MAX_DIFF_ROWS]
        missing = sorted(set(expected) - set(got))[:MAX_DIFF_ROWS]
        report.fail(label, f"{len(got)} rows, expected {len(expected)}; unexpected {only_got}, missing {missing}")
        return
    statements = writers * (commits + sum(1 for c in range(commits) if c % 10 == 9))
    latest = max(s["snapshot_id"] for s in snaps)
    compactions = sum(1 for s in snaps if s["commit_kind"] == "COMPACT")
    if latest < statements:
        report.fail(label, f"latest snapshot {latest}, but {statements} statements committed")
        return
    report.ok(label, f"{len(got)} rows; snapshots up to {latest} ({len(snaps)} kept, {compactions} COMPACT)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--cli", required=True, help="the paimon-sql binary")
    parser.add_argument("--work", help="scratch directory (default: a temporary one, removed)")
    parser.add_argument(
        "--concurrent",
        metavar="DB.TABLE:WRITERS,COMMITS",
        help="the table tests/interop/concurrent_writer.sh wrote: check its end state exactly",
    )
    args = parser.parse_args()

    warehouse = os.path.abspath(args.warehouse)
    work = args.work or tempfile.mkdtemp(prefix="paimon-interop-")
    os.makedirs(work, exist_ok=True)
    report = Report()
    py = Pypaimon(warehouse)
    tables = discover_tables(warehouse)
    if not tables:
        print(f"no table found in {warehouse}", file=sys.stderr)
        return 1

    # What pypaimon sees, and the matching paimon-sql jobs.
    expected = []  # (label, job, pypaimon Arrow table or exception, system table name or None)
    jobs = []
    for db, table in tables:
        ident = f"{db}.{table}"
        try:
            snaps = py.read(ident + "$snapshots").to_pylist()
        except Exception as e:  # noqa: BLE001 - any pypaimon failure is a finding
            report.fail(ident, f"pypaimon cannot read $snapshots: {e!r}")
            continue
        ids = sorted(s["snapshot_id"] for s in snaps)
        kinds = collections.Counter(s["commit_kind"] for s in snaps)
        print(f"     {ident}: snapshots {ids[0] if ids else '-'}..{ids[-1] if ids else '-'} {dict(kinds)}")
        # Expiration removes the oldest snapshots: the ids left must be consecutive.
        if ids and ids != list(range(ids[0], ids[0] + len(ids))):
            report.fail(ident, f"snapshot ids are not consecutive: {ids}")
        reads = [(f"{ident}@{sid}", {"scan.snapshot-id": str(sid)}, sid, table) for sid in ids]
        reads.append((f"{ident}@latest", None, None, table))
        # branches (branch/branch-<name>/ with a schema): their latest state, as `t$branch_<name>`
        branch_root = os.path.join(warehouse, f"{db}.db", table, "branch")
        if os.path.isdir(branch_root):
            for entry in sorted(os.listdir(branch_root)):
                if entry.startswith("branch-") and os.path.isdir(os.path.join(branch_root, entry, "schema")):
                    name = f"{table}$branch_{entry[len('branch-'):]}"
                    reads.append((f"{db}.{name}@latest", None, None, name))
        for label, options, sid, name in reads:
            out = os.path.join(work, label.replace("$", "_") + ".parquet")
            job = Job(label, f"SELECT * FROM {db}.{quoted(name)}", out, sid)
            try:
                theirs = py.read(f"{db}.{name}", options)
            except Exception as e:  # noqa: BLE001
                theirs = e
            expected.append((label, job, theirs, None))
            jobs.append(job)
        for sys_name in SYSTEM_TABLES:
            label = f"{ident}${sys_name}"
            out = os.path.join(work, label.replace("$", "_") + ".parquet")
            job = Job(label, f"SELECT * FROM {db}.{quoted(table + '$' + sys_name)}", out)
            try:
                theirs = normalise_system_table(sys_name, py.read(f"{ident}${sys_name}"))
            except Exception as e:  # noqa: BLE001
                theirs = e
            expected.append((label, job, theirs, sys_name))
            jobs.append(job)

    if args.concurrent:
        check_concurrent_writers(report, py, args.concurrent)

    error = run_cli(args.cli, warehouse, work, jobs)
    if error:
        report.fail("paimon-sql", error)
    else:
        for label, job, theirs, sys_name in expected:
            if isinstance(theirs, Exception):
                report.fail(label, f"pypaimon cannot read it: {theirs!r}")
                continue
            ours = pq.read_table(job.out)
            if sys_name:
                ours = normalise_system_table(sys_name, ours)
            compare_data(report, label, ours, theirs, system=sys_name is not None)

    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print()
    if report.failures:
        print(f"INTEROP FAILED: {len(report.failures)} difference(s), {report.checks} check(s) passed")
        for f in report.failures:
            print("  " + f.splitlines()[0])
        return 1
    print(f"INTEROP OK: {report.checks} checks, {len(tables)} tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
