# Starts a local S3-compatible server for tests: moto's server (PyPI `moto[server]`, pinned) in
# a venv, on 127.0.0.1:$S3_PORT (default 5055), with a bucket `paimon-ci`, and exports the
# standard AWS_* variables pointing at it. Stopped when the sourcing shell exits.
#
#   source tests/s3/moto.sh && start_moto
start_moto() {
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
}
