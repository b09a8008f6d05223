#!/usr/bin/env bash
# S3 tests against a real S3-compatible server on localhost: moto's server (PyPI `moto[server]`,
# pinned below) in a venv, started here and stopped at exit.
#
#   bash tests/s3/run.sh                # from anywhere; exit 0 = all S3 tests passed
#
# 1. a venv with moto in target/s3-venv (or $S3_VENV), created once and reused;
# 2. moto_server on 127.0.0.1:$S3_PORT (default 5055) and a bucket `paimon-ci`;
# 3. the `#[ignore]`d S3 cases of the integration binary (`cargo test --test integration s3 --
#    --ignored`), with the endpoint and credentials in the standard AWS_* variables: the library
#    (create, insert, delete, compact, read, time travel, concurrent and racing commits, a
#    store without conditional puts) and `paimon-sql -w s3://paimon-ci/...`.
set -euo pipefail
cd "$(dirname "$0")/../.."

MOTO_VERSION=5.2.5
port=${S3_PORT:-5055}
target_dir=${CARGO_TARGET_DIR:-target}
venv=${S3_VENV:-$target_dir/s3-venv}

if ! "$venv/bin/python" -c "import sys; from importlib.metadata import version; sys.exit(version('moto') != '$MOTO_VERSION')" 2>/dev/null; then
    echo "== s3: installing moto[server]==$MOTO_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
fi

echo "== s3: moto_server on 127.0.0.1:$port"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$target_dir/s3-moto.log" 2>&1 &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null || true' EXIT
ready=false
for _ in $(seq 1 150); do
    if curl -fs "http://127.0.0.1:$port/moto-api/" >/dev/null 2>&1; then
        ready=true
        break
    fi
    kill -0 $moto_pid 2>/dev/null || break
    sleep 0.2
done
if ! $ready; then
    cat "$target_dir/s3-moto.log" >&2
    echo "moto_server did not start on port $port" >&2
    exit 1
fi

export AWS_ACCESS_KEY_ID=paimon-ci AWS_SECRET_ACCESS_KEY=paimon-ci AWS_REGION=us-east-1
export AWS_ENDPOINT=http://127.0.0.1:$port AWS_ALLOW_HTTP=true
export PAIMON_TEST_S3_BUCKET=paimon-ci
# Bucket creation is the one call that needs no client: moto takes an unsigned PUT.
curl -fs -X PUT "$AWS_ENDPOINT/$PAIMON_TEST_S3_BUCKET" >/dev/null

echo "== s3: cargo test --test integration s3 -- --ignored"
cargo test --test integration s3 -- --ignored
