#!/usr/bin/env bash
# Build llama-cpp-python (no wheel on PyPI for this platform) and fetch the offline local panel.
#
# Idempotent: skips the build when `import llama_cpp` already works, and skips
# every model already cached with the right sha256.
# Usage: scripts/install_local.sh [model ...]   (default: smollm2-135m qwen2.5-coder-0.5b qwen2.5-coder-1.5b)
# Env: PYTHON (default .venv/bin/python), METACOG_MODEL_DIR (default ~/.cache/metacog/models).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"

if "$PYTHON" -c "import llama_cpp" 2>/dev/null; then
    echo "llama-cpp-python already importable: $("$PYTHON" -c 'import llama_cpp; print(llama_cpp.__version__)')"
else
    echo "Building llama-cpp-python from source (portable AVX2 build, ~10-20 minutes on 2 cores)..."
    # The default native build (-march=native) dies with "Illegal instruction" on some hosts:
    # pin the instruction set instead.
    start=$(date +%s)
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        "$PYTHON" -m pip install "llama-cpp-python>=0.3.2"
    echo "llama-cpp-python built in $(( $(date +%s) - start )) s"
fi

if [ "$#" -eq 0 ]; then
    set -- smollm2-135m qwen2.5-coder-0.5b qwen2.5-coder-1.5b
fi
for name in "$@"; do
    "$PYTHON" -m metacog.elicit.panel fetch "$name"
done
