#!/usr/bin/env bash
# Makes the Python virtual environment with Google Tink that the command
# line's Tink interop test (tests/tink.rs) runs: cli/target/tink-venv, from
# the pinned requirements in ../shared/interop (CIPHERIO_INTEROP_DIR to use
# another copy). Does nothing if it is already there and imports Tink.
set -euo pipefail
cd "$(dirname "$0")"
venv="${CARGO_TARGET_DIR:-target}/tink-venv"
req="${CIPHERIO_INTEROP_DIR:-../../shared/interop}/requirements.txt"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import tink' 2>/dev/null; then
    echo "tink venv: $venv (present)"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r "$req"
"$venv/bin/python" -c 'import tink; print("tink venv:", tink.__version__ if hasattr(tink, "__version__") else "ok")'
