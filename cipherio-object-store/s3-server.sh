#!/usr/bin/env bash
# The S3 server the tests and the benchmark talk to: moto's (a Python
# implementation of the S3 protocol, with S3's 5 MiB smallest part), from a
# virtual environment under target/ (made here if it is missing), started on
# loopback.
#
#   s3-server.sh install   makes the venv only
#   s3-server.sh PORT      runs the server on 127.0.0.1:PORT in the
#                          foreground
#   s3-server.sh PORT PID  the same, until process PID ends (the tests
#                          start it this way, so it ends with them)
set -euo pipefail
cd "$(dirname "$0")"
venv="${CARGO_TARGET_DIR:-target}/moto-venv"
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import moto.server' 2>/dev/null; }; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q 'moto[server]==5.2.5'
fi
case "${1:-install}" in
    install) echo "moto venv: $venv ($("$venv/bin/python" -c 'import moto; print(moto.__version__)'))" ;;
    *)
        if [ -z "${2:-}" ]; then
            exec "$venv/bin/python" -m moto.server -H 127.0.0.1 -p "$1"
        fi
        "$venv/bin/python" -m moto.server -H 127.0.0.1 -p "$1" &
        server=$!
        trap 'kill "$server" 2>/dev/null' EXIT
        while kill -0 "$2" 2>/dev/null && kill -0 "$server" 2>/dev/null; do sleep 0.5; done
        ;;
esac
