#!/usr/bin/env bash
# One of the concurrent writers of interop.concurrent_writers (see tests/interop/write.sql):
#
#   concurrent_writer.sh CLI WAREHOUSE WRITER COMMITS
#
# runs one paimon-sql process that commits, one statement at a time:
# * INSERT c (c = 0..COMMITS-1): the writer's own key WRITER+1 (hot: updated by every statement
#   of this writer, so it must end at commit_no = COMMITS-1) and a new key 1000*(WRITER+1)+c;
# * after INSERT c with c % 10 = 9: a DELETE of the new key of INSERT c-5.
# read_with_pypaimon.py --concurrent W,C checks exactly that end state.
set -euo pipefail
cli=$1 warehouse=$2 writer=$3 commits=$4
script=$(mktemp "${TMPDIR:-/tmp}/paimon-writer-$writer.XXXXXX.sql")
trap 'rm -f "$script"' EXIT
for ((c = 0; c < commits; c++)); do
    echo "INSERT INTO interop.concurrent_writers VALUES ($((writer + 1)), $writer, $c), ($((1000 * (writer + 1) + c)), $writer, $c);"
    if ((c % 10 == 9)); then
        echo "DELETE FROM interop.concurrent_writers WHERE k = $((1000 * (writer + 1) + c - 5));"
    fi
done >"$script"
"$cli" --warehouse "$warehouse" --quiet -f "$script"
