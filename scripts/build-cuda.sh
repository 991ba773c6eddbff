#!/usr/bin/env bash
# Builds `nmt` and the GPU test (crates/nmt/tests/cuda.rs) with `--features cuda` into
# target/cuda, for NVIDIA GPUs of compute capability $CUDA_COMPUTE_CAP (default 90: H100/H200).
#
#   scripts/build-cuda.sh            # uses the CUDA toolkit in $CUDA_HOME or on the PATH (nvcc)
#   NMT_CUDA_FROM_PIP=1 scripts/build-cuda.sh
#
# NMT_CUDA_FROM_PIP=1 is for a build machine without a CUDA toolkit or driver (the GPU machine
# may have no Rust): it takes CUDA 13.0's compiler and headers from NVIDIA's wheels on the
# default package index into $NMT_CUDA_DIR (default ~/.cache/nmt-cuda13), and links against stub libraries of the
# driver, cuBLAS, cuRAND and NVRTC made from the function names cudarc binds (what the
# toolkit's lib/stubs are for). The binary then loads the real libraries on the GPU machine:
# libcuda.so.1 from the driver, libcublas.so.13, libcublasLt.so.13, libcurand.so.10 and
# libcudart.so.13 (e.g. PyTorch's nvidia/cu13/lib) through LD_LIBRARY_PATH.
#
# Prints the paths of the binary and of the test executable (run it with --nocapture). Exits 3
# when the wheels cannot be downloaded (CI reports that as not run, not as a build failure).
#
#   scripts/build-cuda.sh --check    # CI: `cargo check` instead of `cargo build`
#
# --check compiles everything a build compiles up to code generation: every crate with the
# `cuda` feature type-checked, and every CUDA kernel through nvcc (candle's in candle-kernels'
# build script, ours in crates/nmt/build.rs); it generates no machine code and links nothing,
# so it builds no binary. CI uses it to stay within its 60 minutes (the full build took 15.5 of
# them on 2 cores); `scripts/gpu-check.sh pack` builds the binaries.
# Measured use and what has run on a GPU: docs/GPU.md. CI runs this script (.ci/run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
export CARGO_TARGET_DIR=$root/target/cuda

if [ "${NMT_CUDA_FROM_PIP:-0}" = 1 ]; then
  cache=${NMT_CUDA_DIR:-$HOME/.cache/nmt-cuda13}
  cu=$cache/nvidia/cu13
  if [ ! -x "$cu/bin/nvcc" ]; then
    mkdir -p "$cache/wheels"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
      -d "$cache/wheels" "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*" \
      "nvidia-nvvm==13.0.*" "nvidia-cuda-cccl==13.0.*" ||
      { echo "could not download NVIDIA's CUDA 13.0 wheels (network? package index?)" >&2; exit 3; }
    for w in "$cache"/wheels/*.whl; do (cd "$cache" && python3 -m zipfile -e "$w" .); done
    chmod +x "$cu"/bin/* "$cu"/nvvm/bin/*
    mkdir -p "$cu/targets" && ln -sfn .. "$cu/targets/x86_64-linux"   # where nvcc.profile looks
    ln -sf libcudart.so.13 "$cu/lib/libcudart.so"
  fi
  # cudarc's bindings name every function it may call; a stub defines each (as an empty
  # function) under the real library's soname, so the link succeeds and the loader later
  # binds the real library.
  (cd "$root" && cargo fetch -q)
  cudarc=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* | tail -1)/src
  mkdir -p "$cu/lib/stubs"
  for spec in cuda:driver:libcuda.so.1 nvrtc:nvrtc:libnvrtc.so.13 curand:curand:libcurand.so.10 \
    cublas:cublas:libcublas.so.13 cublasLt:cublaslt:libcublasLt.so.13; do
    IFS=: read -r lib dir soname <<<"$spec"
    grep -o "^pub unsafe fn [A-Za-z0-9_]*" "$cudarc/$dir/sys/mod.rs" | awk '{print "void " $4 "(void){}"}' | sort -u \
      > "$cu/lib/stubs/$lib.c"
    cc -shared -fPIC -Wl,-soname,"$soname" -o "$cu/lib/stubs/lib$lib.so" "$cu/lib/stubs/$lib.c"
  done
  export PATH=$cu/bin:$cu/nvvm/bin:$PATH CUDA_HOME=$cu CUDA_PATH=$cu CUDA_ROOT=$cu
  export RUSTFLAGS="-L native=$cu/lib/stubs -L native=$cu/lib"
fi

command -v nvcc > /dev/null || { echo "nvcc not found: set CUDA_HOME/PATH, or NMT_CUDA_FROM_PIP=1" >&2; exit 1; }
cd "$root"
if [ "${1:-}" = --check ]; then
  cargo check --release -p nmt-cli -p nmt --features nmt-cli/cuda --bin nmt --test cuda
  echo "checked: the cuda feature's code and every CUDA kernel compiled (no binary: --check)"
  exit 0
fi
# The binary and the GPU test in one cargo invocation: with two (`cargo build -p nmt-cli`, then
# `cargo test -p nmt`), the build scripts' dependencies got two feature sets and nvcc compiled
# candle's kernels twice. json-render-diagnostics: compiler errors go to stderr as text.
exes=$(cargo build --release -p nmt-cli -p nmt --features nmt-cli/cuda --bin nmt --test cuda \
  --message-format=json-render-diagnostics |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["target"]["name"], m["executable"])')
nmt_exe=$(awk '$1 == "nmt" {print $2}' <<<"$exes")
test_exe=$(awk '$1 == "cuda" {print $2}' <<<"$exes")
[ -x "$nmt_exe" ] && [ -x "$test_exe" ] || { echo "build-cuda.sh: no binary or no GPU test in cargo's output" >&2; exit 1; }
echo "nmt:      $nmt_exe"
echo "GPU test: $test_exe"
