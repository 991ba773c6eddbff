#!/usr/bin/env bash
# The GPU check (issue 57), in two halves, so that whoever has a GPU for a few minutes spends
# them measuring, not preparing.
#
#   scripts/gpu-check.sh pack [DIR]     # build machine, no GPU: builds the CUDA binaries and packs
#                                       # DIR (default target/gpu-pack, at most 40 MB)
#   bash DIR/gpu-check.sh run [OUT]     # GPU machine: no Rust, no network; PyTorch with its CUDA 13
#                                       # libraries; writes OUT/gpu-check-<date>.txt (OUT default DIR/out)
#
# `run` takes about 8 minutes, each step under its own time limit, and goes on past a failed
# step (the log says which failed): the GPU tests of every shipped recipe (crates/nmt/tests/
# cuda.rs); `nmt bench --gpu` at batch 32 and 128 (and again with `--impl composed`, without the
# GPU kernels of crates/nmt/src/kernels/gpu) against PyTorch's forms on the same GPU
# (bench/pytorch/pytorch_gpu_forms.py: eager, cuDNN encoder, whole-step CUDA graph; f32, bf16),
# with the ratios; `nmt train --gpu` of configs/rnnsearch-s2s.toml for 90 s; beam 5 of the 2 000
# test verses with that model on the GPU and on the machine's CPU threads (time, identity), and
# of 500 verses on all cores and on 2 threads; the CPU scaling table (1-16 threads) of `nmt
# bench` and its training step at batch 128 on 2 threads and all cores, with PyTorch at its
# fastest CPU setting (scripts/pytorch-tuned-reference.py: torch.compile, fused Adam) at 2
# threads and at all cores.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}

pack() {
  local root dir
  root=$(cd "$here/.." && pwd)
  dir=${1:-$root/target/gpu-pack}
  local built
  built=$(NMT_CUDA_FROM_PIP=${NMT_CUDA_FROM_PIP:-1} "$root/scripts/build-cuda.sh") || { echo "gpu-check pack: the CUDA build failed" >&2; exit 1; }
  local nmt_exe test_exe
  nmt_exe=$(awk '$1 == "nmt:" {print $2}' <<<"$built")
  test_exe=$(awk '$1 == "GPU" && $2 == "test:" {print $3}' <<<"$built")
  rm -rf "$dir" && mkdir -p "$dir/configs" "$dir/data/bible-en-es" "$dir/bench"
  # Line tables are for perf on the build machine; the GPU machine needs the code only. The
  # binaries carry candle's CUDA kernels as PTX text (70 and 59 MB stripped, 2026-11-27): xz
  # makes them 10 and 7 MB, and `run` unpacks them with Python's lzma (no xz needed there).
  strip -o "$dir/nmt" "$nmt_exe" && strip -o "$dir/cuda_test" "$test_exe"
  xz -9 -T0 "$dir/nmt" "$dir/cuda_test"
  cp "$root"/configs/*.toml "$dir/configs/"
  cp "$root"/data/bible-en-es/*.gz "$dir/data/bible-en-es/"
  cp "$root"/bench/pytorch/{gen_data.py,pytorch_rnnsearch.py,pytorch_gpu_forms.py} "$root/scripts/pytorch-tuned-reference.py" "$dir/bench/"
  cp "$root/scripts/gpu-check.sh" "$dir/"
  (cd "$root" && git log -1 --format='%H %cd' --date=iso) > "$dir/COMMIT"
  local mb
  mb=$(du -sm "$dir" | cut -f1)
  echo "gpu-check pack: $dir, $mb MB ($(cat "$dir/COMMIT"))"
  [ "$mb" -le 40 ] || { echo "gpu-check pack: $mb MB is over the 40 MB a GPU session is given" >&2; exit 1; }
}

# Runs "$@" under a limit of $1 seconds, logging its name, time and status; never stops the run.
step() {
  local limit=$1 name=$2
  shift 2
  echo
  echo "=== $name (limit ${limit} s) ==="
  local t0=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0)) s$([ $rc = 124 ] && echo ', TIMED OUT')"
  return 0
}

run() {
  local dir=$here out=${1:-$here/out}
  mkdir -p "$out"
  local log
  log=$out/gpu-check-$(date -u +%Y-%m-%d-%H%M).txt
  exec > >(tee "$log") 2>&1
  local py=${PYTHON:-python3}
  # The CUDA 13 libraries the binary loads (libcublas.so.13, ...): PyTorch's wheels carry them.
  local libs
  libs=$("$py" -c 'import os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(os.path.join(d, "nvidia", x, "lib") for x in ("cu13", "cublas", "cuda_runtime", "curand", "cuda_nvrtc") if os.path.isdir(os.path.join(d, "nvidia", x, "lib"))))' 2>/dev/null)
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  local cores
  cores=$(nproc)
  echo "gpu-check run, $(date -u '+%F %T') UTC; build: $(cat "$dir/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader || echo "nvidia-smi: none"
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $cores cores; flags: $(grep -m1 -o -w -e avx512f -e avx512_bf16 -e avx512_vnni -e avx2 /proc/cpuinfo | sort -u | tr '\n' ' ')"
  "$py" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)'
  cd "$dir" || exit 1
  for exe in nmt cuda_test; do
    [ -x "$exe" ] || "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + ".xz"), open(sys.argv[1], "wb"))' "$exe"
    chmod +x "$exe"
  done
  export BENCH_DATA=$dir/bench-data NMT_LOG=warn
  "$py" bench/gen_data.py > /dev/null

  step 120 "GPU tests: every shipped recipe, loss and gradients against the CPU; search" ./cuda_test --nocapture --test-threads 1
  for b in 32 128; do
    step 60 "nmt bench --gpu, batch $b" ./nmt bench --gpu --data "$BENCH_DATA" --batch "$b" --only train,greedy,beam5 --steps 20 --json | tee -a "$out/nmt-gpu.jsonl"
    # The same training step and searches on composed candle ops only (no kernels::gpu but the
    # pick): what the GPU kernels are worth.
    step 60 "nmt bench --gpu --impl composed, batch $b" ./nmt bench --gpu --impl composed --data "$BENCH_DATA" --batch "$b" --only train,greedy,beam5 --steps 20 --json
  done
  step 150 "PyTorch's forms on this GPU" "$py" bench/pytorch_gpu_forms.py | tee "$out/pytorch-gpu.jsonl"
  step 10 "ratios: nmt over PyTorch's fastest form" "$py" - "$out/nmt-gpu.jsonl" "$out/pytorch-gpu.jsonl" <<'PY'
import json, sys
rows = lambda f: [json.loads(l) for l in open(f) if l.startswith("{")]
nmt, torch = rows(sys.argv[1]), rows(sys.argv[2])
for b in (32, 128):
    for bench, key in (("train", "target_tokens_per_s"), ("greedy", "sentences_per_s"), ("beam5", "sentences_per_s")):
        ours = [r[key] for r in nmt if r.get("bench") == bench and r.get("batch") == b]
        theirs = [(r[key], r["form"]) for r in torch if r.get("bench") == bench and r.get("batch") == b and key in r]
        if ours and theirs:
            best = max(theirs)
            print(f"batch {b:3} {bench:6}: nmt {ours[0]:10.1f}, PyTorch's fastest ({best[1]}) {best[0]:10.1f}: {ours[0] / best[0]:.2f}x")
PY
  step 150 "nmt train --gpu -c configs/rnnsearch-s2s.toml, 90 s" ./nmt train --gpu -c configs/rnnsearch-s2s.toml -m "$out/s2s" \
    --set train.max_minutes=1.5 --set train.valid_every=500 --quiet
  local m=$out/s2s/model.safetensors
  if [ -f "$m" ]; then
    zcat data/bible-en-es/test.en.gz > "$out/test.en"
    step 90 "beam 5, 2 000 test verses, GPU" bash -c "time ./nmt translate --gpu -m '$m' -b 5 --batch-size 256 -i '$out/test.en' -o '$out/test.gpu.es'"
    step 120 "beam 5, 2 000 test verses, $cores CPU threads" bash -c "time ./nmt translate -m '$m' -b 5 --threads $cores -i '$out/test.en' -o '$out/test.cpu.es'"
    cmp "$out/test.gpu.es" "$out/test.cpu.es" && echo "GPU and CPU translations: byte-identical" || echo "GPU and CPU translations DIFFER"
    # The CPUs issue's search scaling (its target: all cores ≥ 7× the 2-thread rate), on the
    # first 500 verses to save the GPU session's minutes: compare sentences/s of the --stats lines.
    head -500 "$out/test.en" > "$out/test500.en"
    step 90 "beam 5, 500 test verses, $cores CPU threads" ./nmt translate -m "$m" -b 5 --threads "$cores" --stats -i "$out/test500.en" -o "$out/test500.cpu.es"
    step 90 "beam 5, 500 test verses, 2 CPU threads" ./nmt translate -m "$m" -b 5 --threads 2 --stats -i "$out/test500.en" -o "$out/test500.cpu2.es"
    cmp "$out/test500.cpu2.es" "$out/test500.cpu.es" && echo "2 and $cores CPU threads' translations: byte-identical" || echo "2 and $cores CPU threads' translations DIFFER"
  fi
  for t in 1 2 4 8 16; do
    [ "$t" -le "$cores" ] || continue
    step 60 "CPU scaling: nmt bench, $t threads" ./nmt bench --data "$BENCH_DATA" --only train,beam5 --threads "$t" --steps 10 --json
  done
  # Which batch a user with all these cores should train with: the step at 4× the sentences.
  for t in 2 "$cores"; do
    step 60 "CPU scaling: nmt bench, batch 128, $t threads" ./nmt bench --data "$BENCH_DATA" --only train --batch 128 --threads "$t" --steps 5 --json
  done
  # PyTorch's fastest CPU form, not its eager defaults; the first compilation takes minutes
  # (TorchInductor caches it for the second), hence the longer first limit.
  local limit=180
  for t in 2 "$cores"; do
    step "$limit" "CPU: PyTorch compiled, $t threads" env CUDA_VISIBLE_DEVICES= BENCH_REF=bench THREADS="$t" STEPS=10 "$py" bench/pytorch-tuned-reference.py
    limit=90
  done
  echo
  echo "log: $log"
}

case "$mode" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 pack [DIR] | run [OUT]" >&2; exit 2 ;;
esac
