#!/usr/bin/env bash
# The GPU check (issues 57 and 69), in two halves, so that whoever has a GPU for a few minutes
# spends them measuring, not preparing; and a rehearsal of the second half without a GPU.
#
#   scripts/gpu-check.sh pack [DIR]      # build machine, no GPU: builds the CUDA binaries and packs
#                                        # DIR (default target/gpu-pack, at most 40 MB)
#   bash DIR/gpu-check.sh run [OUT [SECONDS]]  # GPU machine, one command of at most 10 minutes
#                                        # (SECONDS: its limit; the deadline is 60 s less): no Rust,
#                                        # no network; PyTorch with its CUDA 13 libraries and numpy
#   bash DIR/gpu-check.sh run-cpu [OUT]  # the CPU-only steps (CPU issue 56's many-core figures)
#   scripts/gpu-check.sh rehearse [OUT]  # no GPU: packs the CPU build the same way (pack-cpu) and
#                                        # runs `run` over it, each GPU step in its CPU form
#   scripts/gpu-check.sh pack-cpu [DIR]  # the rehearsal's pack alone (default target/gpu-rehearse)
#
# `run` and `run-cpu` write three files in OUT (default DIR/out), since a GPU machine hands back
# at most 8 files of OUT (issue 74): log.txt, figures.jsonl (each figure one JSON line with its
# step "step": "NN-SLUG" and its Unix time "at", written and flushed the moment it is measured: a
# kill at any second keeps every figure measured before it) and steps.txt (each step's outcome).
# Each step's other output, the bench data and the translations go to the run folder
# DIR/runs/MODE-DATE/ (an earlier run's three files in OUT are moved to DIR/runs/ too); the model
# `run` trains goes to DIR/models (161 MB),
# where `run-cpu` finds it for its 500 verses. They begin with a preflight and stop with one line
# (PREFLIGHT FAILED: ...) if anything the steps need is missing. Then the steps, in order
# (gpu-check-run.sh has the lists, and each step's limit with where it comes from), under a
# global deadline of GPU_CHECK_DEADLINE seconds from the start (default 540, leaving 60 of a
# 600-second command): a step whose limit (plus 10 s for `timeout -k` to kill) would pass the
# deadline is not started and is logged SKIPPED. The GPU steps' limits are about 3x their times
# on an H200 (2026-11-30; the whole run took 220 s there). A failed step does not stop the run.
set -uo pipefail
trap '' PIPE # a closed reader of stdout must not end the run: the log is the file
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}

# Copies the binaries $1 (nmt) and $2 (the test) and everything `run` reads into $3; $4 says
# which build it is (COMMIT's first line is the commit, then `git status --porcelain`).
pack_into() {
  local nmt_exe=$1 test_exe=$2 dir=$3 build=$4 root
  root=$(cd "$here/.." && pwd)
  rm -rf "$dir" && mkdir -p "$dir/configs" "$dir/data/bible-en-es" "$dir/bench"
  # Line tables are for perf on the build machine; the GPU machine needs the code only. The
  # CUDA binaries carry candle's CUDA kernels as PTX text (70 and 59 MB stripped, 2026-11-27):
  # xz makes them 10 and 7 MB, and `run` unpacks them with Python's lzma (no xz needed there).
  strip -o "$dir/nmt" "$nmt_exe" && strip -o "$dir/cuda_test" "$test_exe" || return 1
  xz -9 -T0 "$dir/nmt" "$dir/cuda_test" || return 1
  cp "$root"/configs/*.toml "$dir/configs/"
  cp "$root"/data/bible-en-es/*.gz "$dir/data/bible-en-es/"
  cp "$root"/bench/pytorch/{gen_data.py,pytorch_rnnsearch.py,pytorch_gpu_forms.py} "$root/scripts/pytorch-tuned-reference.py" "$dir/bench/"
  cp "$here/gpu-check.sh" "$here/gpu-check-run.sh" "$here/gpu-check-steps.sh" "$here/gpu-check-ratios.py" "$dir/"
  {
    (cd "$root" && git log -1 --format='%H %cd' --date=iso)
    echo "build: $build"
    echo "git status --porcelain at pack time:"
    (cd "$root" && git status --porcelain) | sed 's/^/  /'
  } > "$dir/COMMIT"
  local mb
  mb=$(du -sm "$dir" | cut -f1)
  echo "gpu-check: packed $dir, $mb MB ($(head -1 "$dir/COMMIT"))"
  [ "$mb" -le 40 ] || { echo "gpu-check: $mb MB is over the 40 MB a GPU session is given" >&2; return 1; }
}

pack() {
  local root dir built nmt_exe test_exe
  root=$(cd "$here/.." && pwd)
  dir=${1:-$root/target/gpu-pack}
  built=$(NMT_CUDA_FROM_PIP=${NMT_CUDA_FROM_PIP:-1} "$root/scripts/build-cuda.sh") || { echo "gpu-check pack: the CUDA build failed" >&2; exit 1; }
  nmt_exe=$(awk '$1 == "nmt:" {print $2}' <<<"$built")
  test_exe=$(awk '$1 == "GPU" && $2 == "test:" {print $3}' <<<"$built")
  pack_into "$nmt_exe" "$test_exe" "$dir" "CUDA (scripts/build-cuda.sh), the GPU test crates/nmt/tests/cuda.rs" || exit 1
  # The PTX target, which the run's preflight compares with the GPU's (build-cuda.sh's default).
  echo "${CUDA_COMPUTE_CAP:-90}" > "$dir/CUDA_CAP"
}

# The rehearsal's pack: the CPU build (no CUDA), with the GPU test's emulated form,
# crates/nmt/tests/gpu_layouts.rs (the GPU kernels run on the host, inside candle's CUDA layout
# check), as its test binary. The workspace's features, as CI's test step builds them (-p alone
# changes features and rebuilds candle: .ci/run).
pack_cpu() {
  local root dir exes nmt_exe test_exe
  root=$(cd "$here/.." && pwd)
  dir=${1:-$root/target/gpu-rehearse}
  local err
  err=$(mktemp)
  if ! exes=$(cd "$root" && cargo test --release --workspace --test gpu_layouts --no-run --message-format=json 2> "$err" |
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["target"]["name"], m["executable"])'); then
    tail -20 "$err" >&2
    echo "gpu-check pack-cpu: the CPU build of the test failed" >&2
    exit 1
  fi
  (cd "$root" && cargo build --release --workspace --bin nmt -q 2> "$err") || { tail -20 "$err" >&2; echo "gpu-check pack-cpu: the CPU build of nmt failed" >&2; exit 1; }
  rm -f "$err"
  test_exe=$(awk '$1 == "gpu_layouts" {print $2}' <<<"$exes")
  nmt_exe=${CARGO_TARGET_DIR:-$root/target}/release/nmt
  [ -x "$nmt_exe" ] && [ -x "$test_exe" ] || { echo "gpu-check pack-cpu: no nmt binary or no gpu_layouts test in cargo's output" >&2; exit 1; }
  pack_into "$nmt_exe" "$test_exe" "$dir" "CPU (rehearsal: no CUDA), the test crates/nmt/tests/gpu_layouts.rs (the GPU form emulated)" || exit 1
  echo "rehearsal: GPU steps run their CPU forms; the test binary is gpu_layouts" > "$dir/REHEARSAL"
}

rehearse() {
  local root dir
  root=$(cd "$here/.." && pwd)
  dir=$root/target/gpu-rehearse
  pack_cpu "$dir"
  # A short deadline and few timed repetitions: the rehearsal proves the paths, the order, the
  # deadline and the log, not speeds.
  GPU_CHECK_DEADLINE=${GPU_CHECK_DEADLINE:-120} GPU_CHECK_STEPS=${GPU_CHECK_STEPS:-2} GPU_CHECK_TRAIN_SECONDS=${GPU_CHECK_TRAIN_SECONDS:-10} \
    bash "$dir/gpu-check.sh" run "${1:-$dir/out}"
}

case "$mode" in
  pack) shift; pack "$@" ;;
  pack-cpu) shift; pack_cpu "$@" ;;
  rehearse) shift; rehearse "$@" ;;
  run | run-cpu)
    shift
    # shellcheck source=scripts/gpu-check-run.sh
    source "$here/gpu-check-run.sh"
    start_run "$mode" "${1:-$here/out}" "$here" "${2:-}"
    ;;
  *) echo "usage: $0 pack [DIR] | pack-cpu [DIR] | rehearse [OUT] | run [OUT [SECONDS]] | run-cpu [OUT [SECONDS]]" >&2; exit 2 ;;
esac
