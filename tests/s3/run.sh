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
#    store without conditional puts) and `paimon-sql -w s3://paimon-ci/...`;
# 4. the object_store bench (requests per statement at 20 ms per request), printed.
set -euo pipefail
cd "$(dirname "$0")/../.."

source tests/s3/moto.sh
start_moto

echo "== s3: cargo test --test integration s3 -- --ignored"
cargo test --test integration s3 -- --ignored

# Requests and wall time per statement on the S3 server with 20 ms added per request, against
# each statement's floor and DataFusion's ListingTable (benches/object_store.rs; printed only).
echo "== s3: cargo test --bench object_store (20 ms per request)"
cargo test --bench object_store
