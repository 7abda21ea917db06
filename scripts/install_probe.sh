#!/usr/bin/env bash
# Install the hidden-state probe extras (torch CPU, transformers, accelerate, gguf) into the venv.
#
# Idempotent: does nothing when torch 2.13.0, transformers, accelerate and gguf already import.
# torch is pinned to 2.13.0 in every pip call: a local CPU build of that version is on disk,
# any other version would download gigabytes.
# Usage: scripts/install_probe.sh      Env: PYTHON (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
TORCH="torch==2.13.0"

check='import torch, transformers, accelerate, gguf
assert torch.__version__.split("+")[0] == "2.13.0", torch.__version__
print(f"torch {torch.__version__}, transformers {transformers.__version__}, accelerate {accelerate.__version__}")'

if out=$("$PYTHON" -c "$check" 2>/dev/null); then
    echo "probe extras already installed: $out"
    exit 0
fi
start=$(date +%s)
"$PYTHON" -m pip install -q "$TORCH"
"$PYTHON" -m pip install -q "$TORCH" "transformers>=4.46" "accelerate>=1.0" "gguf>=0.10"
out=$("$PYTHON" -c "$check")
echo "probe extras installed in $(( $(date +%s) - start )) s: $out"
