#!/usr/bin/env bash
# A real Ballista cluster on loopback: `paimon-scheduler` and two `paimon-executor` processes
# built from this crate, a warehouse on a local S3 server (moto, tests/s3/moto.sh), and
# `paimon-sql --ballista` as the client.
#
#   bash tests/cluster/run.sh       # from anywhere; exit 0 = all checks passed
#
# 1. source rows written by a local paimon-sql (tests/cluster/source.sql);
# 2. writes.sql on the cluster; reads.sql on the cluster and in a local session: equal outputs;
#    one snapshot per write statement; CALL sys.compact on the cluster (compact.sql), again equal;
# 3. wall time of a 1M-row INSERT and of an aggregate, cluster against one local process;
# 4. faults ($CLUSTER_FAULT_RUNS, default 10): kill -9 one executor during a 1M-row INSERT, at
#    a random point in odd runs and in the commit task (found in its log) in even runs. Afterwards the table holds every row
#    exactly once, or the statement failed and nothing is committed; every committed file reads;
#    remove_orphan_files leaves the table as it was.
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$SECONDS
target_dir=${CARGO_TARGET_DIR:-target}
bin=$target_dir/debug
# below the ephemeral port range (32768-60999 on Linux): a client connection may hold any port there
base_port=${CLUSTER_PORT:-30250}
fault_runs=${CLUSTER_FAULT_RUNS:-10}
logs=$target_dir/cluster-logs
rm -rf "$logs" && mkdir -p "$logs"
step() { printf '\n== cluster: %s  (t+%ds)\n' "$1" "$((SECONDS - start))"; }

source tests/s3/moto.sh
start_moto
cargo build --bin paimon-sql --bin paimon-scheduler --bin paimon-executor

pids=()
cleanup() {
    for pid in "${pids[@]}" "${executor_pids[@]:-}"; do kill -9 "$pid" 2>/dev/null || true; done
    kill "$moto_pid" 2>/dev/null || true
}
trap cleanup EXIT

scheduler_port=$base_port
step "paimon-scheduler on 127.0.0.1:$scheduler_port"
# A lost executor is noticed in seconds, not Ballista's default 3 minutes.
"$bin/paimon-scheduler" --bind-host 127.0.0.1 --bind-port "$scheduler_port" \
    --executor-timeout-seconds 8 --expire-dead-executor-interval-seconds 2 \
    >"$logs/scheduler.log" 2>&1 &
pids+=($!)

declare -a executor_pids
start_executor() {
    local n=$1
    local port=$((base_port + 10 * n))
    mkdir -p "$logs/work-$n"
    "$bin/paimon-executor" --scheduler-host 127.0.0.1 --scheduler-port "$scheduler_port" \
        --bind-host 127.0.0.1 --bind-port "$port" --bind-grpc-port $((port + 1)) \
        --bind-health-port $((port + 2)) --concurrent-tasks 2 --work-dir "$logs/work-$n" \
        --executor-heartbeat-interval-seconds 1 \
        >>"$logs/executor-$n.log" 2>&1 &
    executor_pids[$n]=$!
}
registered() { grep -c "Received register executor request" "$logs/scheduler.log" || true; }
wait_registered() {
    local want=$1
    for _ in $(seq 1 100); do
        [ "$(registered)" -ge "$want" ] && return 0
        sleep 0.2
    done
    echo "executors did not register (wanted $want registrations)" >&2
    tail -n 20 "$logs"/*.log >&2
    exit 1
}
sleep 0.5
start_executor 1
start_executor 2
wait_registered 2

warehouse=s3://$PAIMON_TEST_S3_BUCKET/cluster-$$-$RANDOM
cluster_url=df://127.0.0.1:$scheduler_port
local_sql() { "$bin/paimon-sql" -w "$warehouse" -q --format csv "$@"; }
cluster_sql() { "$bin/paimon-sql" --ballista "$cluster_url" -w "$warehouse" -q --format csv "$@"; }
millis_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

step "an unreachable cluster is named"
unreachable=$("$bin/paimon-sql" --ballista df://127.0.0.1:$((base_port + 99)) -w "$warehouse" -c "SELECT 1" 2>&1 || true)
echo "$unreachable" | grep -q "Cannot reach the Ballista scheduler at 'df://127.0.0.1:$((base_port + 99))'" ||
    { echo "unexpected: $unreachable" >&2; exit 1; }

step "source rows (local paimon-sql)"
local_sql -f tests/cluster/source.sql >/dev/null

step "writes on the cluster"
cluster_sql -f tests/cluster/writes.sql >/dev/null

step "reads: cluster against a local session"
cluster_sql -f tests/cluster/reads.sql >"$logs/reads-cluster.csv"
local_sql -f tests/cluster/reads.sql >"$logs/reads-local.csv"
diff "$logs/reads-local.csv" "$logs/reads-cluster.csv"
# one snapshot per write statement: 2 INSERTs, the UPDATE, the DELETE and the MERGE
snapshots=$(local_sql -c 'SELECT count(*) FROM "pk$snapshots"' | tail -n 1)
[ "$snapshots" = 5 ] || { echo "pk has $snapshots snapshots, expected 5" >&2; exit 1; }
# what the cluster wrote, against the source: every key once, in one bucket, and the
# changelog of the second INSERT (the writers' level-0 compaction)
same() {
    local got want
    got=$(local_sql -c "$1" | tail -n 1)
    want=$(local_sql -c "$2" | tail -n 1)
    [ "$got" = "$want" ] || { echo "$1: $got, expected $want ($2)" >&2; exit 1; }
}
same "SELECT count(*), sum(k), count(DISTINCT k) FROM dyn" \
    "SELECT count(*), sum(k), count(k) FROM src WHERE k % 2 = 0 OR k % 3 = 0"
same "SELECT count(*), sum(k) FROM dyn WHERE v = 'again'" "SELECT count(*), sum(k) FROM src WHERE k % 3 = 0"
same "SELECT count(DISTINCT bucket) > 4 FROM \"dyn\$files\"" "SELECT true"
same "SELECT count(*), sum(k) FROM paimon_incremental_query('default.dyn\$audit_log', 2, 4) WHERE rowkind = '+U'" \
    "SELECT count(*), sum(k) FROM src WHERE k % 6 = 0"
same "SELECT count(*), sum(k) FROM paimon_incremental_query('default.dyn\$audit_log', 2, 4) WHERE rowkind = '+I'" \
    "SELECT count(*), sum(k) FROM src WHERE k % 3 = 0 AND k % 2 <> 0"
same "SELECT count(*) FROM pk WHERE v = 'merged'" "SELECT count(*) FROM src WHERE k % 10 = 3"
same "SELECT count(*), sum(k) FROM app" "SELECT count(*), sum(k) FROM src WHERE k % 10 = 5"
same "SELECT count(*), sum(k) FROM app WHERE v = 'app-updated'" "SELECT count(*), sum(k) FROM src WHERE k % 30 = 5"
same "SELECT count(*) FROM \"app\$snapshots\"" "SELECT 3"
same "SELECT count(*), sum(k), count(DISTINCT k) FROM xp" "SELECT count(*), sum(k), count(k) FROM src WHERE k % 4 = 0"
same "SELECT count(*), sum(g) FROM xp WHERE v = 'moved'" "SELECT count(*), sum((g + 1) % 7) FROM src WHERE k % 12 = 0"

step "CALL sys.compact on the cluster"
cluster_sql -f tests/cluster/compact.sql >"$logs/compact-cluster.csv"
local_sql -f tests/cluster/reads.sql >"$logs/reads-local-2.csv"
cluster_sql -f tests/cluster/reads.sql >"$logs/reads-cluster-2.csv"
diff "$logs/reads-local-2.csv" "$logs/reads-cluster-2.csv"
grep -q COMPACT "$logs/compact-cluster.csv"

step "wall time: cluster against one local process"
timed() {
    local t0
    t0=$(date +%s%N)
    "$@" >/dev/null
    millis_since "$t0"
}
local_sql -c "CREATE TABLE big_local (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4')" >/dev/null
cluster_sql -c "CREATE TABLE big_cluster (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4')" >/dev/null
insert_local=$(timed local_sql -c "INSERT INTO big_local SELECT * FROM src")
insert_cluster=$(timed cluster_sql -c "INSERT INTO big_cluster SELECT * FROM src")
# where the cluster's INSERT went: the scheduler's planning, then each stage's slowest task
# (1: scan and bucket routing into the shuffle, 2: writers, 3: the commit)
job=$(grep -o "Job \[[0-9A-Z]*\] planning took [0-9.]*ms" "$logs/scheduler.log" | tail -n 1)
breakdown="  $job"
job_id=$(echo "$job" | sed 's/Job \[\(.*\)\].*/\1/')
stages=$(grep -h "Finished task : \[TID $job_id/" "$logs"/executor-*.log |
    sed 's/.*TID [^/]*\/\([0-9]*\)\.[^]]*\] in \(.*\)/\1 \2/' |
    awk '{ t = $2; ms = (t ~ /ms$/) ? t + 0 : (t ~ /µs$/ ? 0 : t * 1000); if (ms > max[$1]) max[$1] = ms }
         END { for (s in max) printf "  stage %s: slowest task %.0f ms\n", s, max[s] }' | sort || true)
aggregate="SELECT g, count(*), sum(k), min(v), max(v) FROM pk GROUP BY g ORDER BY g"
aggregate_local=$(timed local_sql -c "$aggregate")
aggregate_cluster=$(timed cluster_sql -c "$aggregate")
echo "INSERT of 1M rows: cluster ${insert_cluster} ms, local ${insert_local} ms"
echo "$breakdown"
echo "$stages"
echo "aggregate over pk: cluster ${aggregate_cluster} ms, local ${aggregate_local} ms"
[ "$(local_sql -c 'SELECT count(*) FROM big_cluster' | tail -n 1)" = 1000000 ]

step "pypaimon reads what the cluster wrote"
interop_venv=${INTEROP_VENV:-$target_dir/interop-venv}
if [ -x "$interop_venv/bin/python" ]; then
    expect() { echo "$1=$(local_sql -c "SELECT count(*), sum(k) FROM $1" | tail -n 1)"; }
    "$interop_venv/bin/python" tests/cluster/read_with_pypaimon.py "$warehouse" \
        "$(expect pk)" "$(expect big_cluster)"
else
    echo "no pypaimon venv at $interop_venv (tests/interop/run.sh creates it); skipping"
fi

step "faults: kill -9 an executor during a 1M-row INSERT ($fault_runs runs)"
expected_sum=$(local_sql -c 'SELECT sum(k) FROM src' | tail -n 1)
for run in $(seq 1 "$fault_runs"); do
    table=f$run
    local_sql -c "CREATE TABLE $table (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4', 'write-only' = 'true')" >/dev/null
    # (a statement that hangs fails the run)
    timeout 300 "$bin/paimon-sql" --ballista "$cluster_url" -w "$warehouse" -q --format csv \
        -c "INSERT INTO $table SELECT * FROM src" >"$logs/fault-$run.out" 2>&1 &
    client=$!
    if [ $((run % 2)) = 1 ]; then
        # a random point: 0.1 to 4 s into the statement (mostly the scan and the writers)
        delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.1f", 0.1 + (r % 40) / 10 }')
        victim=$((RANDOM % 2 + 1))
        sleep "$delay"
        point="${delay}s"
    else
        # the commit task: the executor logging this statement's commit, 0-100 ms after it
        # starts (before, during or just after the snapshot is written)
        victim=""
        for _ in $(seq 1 6000); do
            for n in 1 2; do
                if grep -q "Paimon commit of [a-z_]*\.$table by .* started" "$logs/executor-$n.log"; then
                    victim=$n
                    break 2
                fi
            done
            sleep 0.01
        done
        [ -n "$victim" ] || { echo "run $run: the commit task never started" >&2; cat "$logs/fault-$run.out" >&2; exit 1; }
        delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", (r % 11) / 100 }')
        sleep "$delay"
        point="the commit task (+${delay}s)"
    fi
    kill -9 "${executor_pids[$victim]}" 2>/dev/null || true
    if wait "$client"; then status=ok; else status=failed; fi
    start_executor "$victim"
    wait_registered $((2 + run))
    rows=$(local_sql -c "SELECT count(*) FROM $table" | tail -n 1)
    commits=$(local_sql -c "SELECT count(*) FROM \"$table\$snapshots\"" | tail -n 1)
    echo "run $run: killed executor $victim at $point; statement $status; $rows rows in $commits snapshot(s)"
    case "$status/$rows/$commits" in
        ok/1000000/1 | failed/0/0 | failed/1000000/1) ;;
        *)
            echo "run $run: a partial or doubled commit" >&2
            cat "$logs/fault-$run.out" >&2
            exit 1
            ;;
    esac
    if [ "$rows" != 0 ]; then
        # every committed file is there and reads
        sum=$(local_sql -c "SELECT sum(k) FROM $table" | tail -n 1)
        [ "$sum" = "$expected_sum" ] || { echo "run $run: sum $sum, expected $expected_sum" >&2; exit 1; }
    fi
    local_sql -c "CALL sys.remove_orphan_files('default.$table', '2999-01-01 00:00:00')" >/dev/null
    [ "$(local_sql -c "SELECT count(*) FROM $table" | tail -n 1)" = "$rows" ]
done

step "done"
