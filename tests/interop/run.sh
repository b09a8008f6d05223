#!/usr/bin/env bash
# Interop check: tables written by datafusion-paimon must read the same with pypaimon 2.1.0.
#
#   bash tests/interop/run.sh            # from anywhere; exit 0 = identical, 1 = differences
#
# 1. a Python venv with pypaimon (pinned) in target/interop-venv (or $INTEROP_VENV), created once
#    and reused while it has the pinned versions;
# 2. the paimon-sql CLI (debug build, default features);
# 3. paimon-sql runs tests/interop/write.sql against a fresh temporary warehouse (removed at exit;
#    set INTEROP_KEEP=1 to keep it and the dumps, for debugging), then write_external.sql with
#    its external data paths in the same temporary directory;
# 4. 4 paimon-sql processes commit into one table at once (tests/interop/concurrent_writer.sh);
# 5. tests/interop/read_with_pypaimon.py reads every snapshot of every table, and the system tables
#    $snapshots/$schemas/$options/$files, with pypaimon and with paimon-sql and compares them.
#
# Needs python3 (3.9+) with the venv module and access to PyPI for the first run.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYPAIMON_VERSION=2.1.0
# The pyarrow the fixture corpus (tests/fixtures) was written with.
PYARROW_VERSION=19.0.1

target_dir=${CARGO_TARGET_DIR:-target}
venv=${INTEROP_VENV:-$target_dir/interop-venv}
python=$venv/bin/python
start=$SECONDS

step() {
    printf '\n== interop: %s  (t+%ds)\n' "$1" "$((SECONDS - start))"
}

step "python venv ($venv)"
pinned() {
    "$python" - "$PYPAIMON_VERSION" "$PYARROW_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if (version("pypaimon"), version("pyarrow")) == (sys.argv[1], sys.argv[2]) else 1)
EOF
}
if [ -x "$python" ] && pinned; then
    echo "pypaimon $PYPAIMON_VERSION and pyarrow $PYARROW_VERSION already installed"
else
    python3 -m venv "$venv"
    "$python" -m pip install --quiet --disable-pip-version-check \
        "pypaimon==$PYPAIMON_VERSION" "pyarrow==$PYARROW_VERSION"
    pinned || { echo "cannot install pypaimon==$PYPAIMON_VERSION pyarrow==$PYARROW_VERSION" >&2; exit 1; }
fi

step "cargo build --bin paimon-sql"
cargo build --bin paimon-sql
cli=$target_dir/debug/paimon-sql

work=$(mktemp -d "${TMPDIR:-/tmp}/paimon-interop.XXXXXX")
if [ "${INTEROP_KEEP:-0}" = "1" ]; then
    echo "keeping $work"
else
    trap 'rm -rf "$work"' EXIT
fi
warehouse=$work/warehouse

step "write tables with paimon-sql (tests/interop/write.sql)"
"$cli" --warehouse "$warehouse" --quiet -f tests/interop/write.sql
mkdir -p "$work/external"
sed "s#EXTERNAL_ROOT#$work/external#g" tests/interop/write_external.sql > "$work/write_external.sql"
"$cli" --warehouse "$warehouse" --quiet -f "$work/write_external.sql"
if ! ls -d "$warehouse"/interop.db/*/schema >/dev/null 2>&1; then
    echo "paimon-sql ran tests/interop/write.sql but created no table under $warehouse/interop.db:" >&2
    echo "does the CLI run DDL (CREATE DATABASE/TABLE) through PaimonSession::sql?" >&2
    exit 1
fi

# Separate processes racing for the same snapshot ids, with compaction and expiration on.
writers=4 commits=50
step "$writers concurrent paimon-sql writers x $commits INSERTs (interop.concurrent_writers)"
pids=()
for ((w = 0; w < writers; w++)); do
    bash tests/interop/concurrent_writer.sh "$cli" "$warehouse" "$w" "$commits" &
    pids+=($!)
done
for pid in "${pids[@]}"; do
    wait "$pid" || { echo "a concurrent writer failed (see its error above)" >&2; exit 1; }
done

step "read with pypaimon $PYPAIMON_VERSION and compare"
status=0
"$python" tests/interop/read_with_pypaimon.py --warehouse "$warehouse" --cli "$cli" --work "$work/dumps" \
    --concurrent "interop.concurrent_writers:$writers,$commits" || status=$?

step "done"
exit $status
