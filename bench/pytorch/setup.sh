#!/usr/bin/env bash
# Installs torch + numpy for the PyTorch reference of bench-rnnsearch (pytorch_rnnsearch.py, beside
# this file) into $BENCH_VENV (default ~/.cache/nmt-bench-venv). scripts/bench-vs-pytorch.sh runs it
# when the venv is missing.
# Usage: bench/pytorch/setup.sh   then   ~/.cache/nmt-bench-venv/bin/python bench/pytorch/pytorch_rnnsearch.py
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${BENCH_VENV:-$HOME/.cache/nmt-bench-venv}
if ! "$venv/bin/python" -c 'import torch, numpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q torch numpy
fi
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "ready in", "'"$venv"'")'
