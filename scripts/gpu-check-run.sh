# The run half of scripts/gpu-check.sh (sourced by it for `run` and `run-cpu`): the preflight, the
# steps and their limits, the deadline and the log; gpu-check.sh's header says what it writes.
#
# Where the limits come from. On an H200 (2026-11-30, docs/logs/gpu-h200-2026-11-30/) the whole
# run took 220 s, 90 s of it training, every other step under 25 s (+15 s of JIT in a machine's
# first GPU process). Each GPU limit is about 3x its step's time there, at least 30 s; the
# deadline rule, not the limits' sum, keeps the run inside its command. The CPU limits (run-cpu)
# are 5x or more the 2-core build machine's rates (docs/PERF.md, PyTorch's settings: batch 32 of
# bench-rnnsearch in 0.2 s a step on 2 threads, beam 5 of it in 0.25 s).
# `timeout -k 10`: SIGTERM at a step's limit (nmt train saves its state), SIGKILL 10 s later.
#
# The step machinery (`step`, `say`, `figure`, the settings and the deadline) is in
# gpu-check-steps.sh, beside this file.

# shellcheck source=scripts/gpu-check-steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-check-steps.sh"

preflight() {
  py=${PYTHON:-python3}
  command -v "$py" > /dev/null || fail_preflight "no $py (the run unpacks the binaries and runs PyTorch with it)"
  timeout -k 1 5 true || fail_preflight "this timeout has no -k"
  # One import of PyTorch: the CUDA 13 libraries its wheels carry for ours, its devices and versions.
  have_torch=0
  local info
  if info=$("$py" - 2> "$run/steps/00-import-torch.txt" <<'PY'
import os, torch, numpy
d = os.path.dirname(os.path.dirname(torch.__file__))
libs = [os.path.join(d, "nvidia", x, "lib") for x in ("cu13", "cublas", "cuda_runtime", "curand", "cuda_nvrtc")]
print(":".join(p for p in libs if os.path.isdir(p)))
print(torch.cuda.device_count() if torch.cuda.is_available() else 0)
print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "numpy", numpy.__version__)
PY
  ); then
    have_torch=1
    local libs
    libs=$(sed -n 1p <<< "$info")
    torch_devices=$(sed -n 2p <<< "$info")
    torch_version=$(sed -n 3p <<< "$info")
    export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  elif [ -z "$rehearsal" ] && [ "$mode" = run ]; then
    fail_preflight "$py: import torch, numpy: $(tail -1 "$run/steps/00-import-torch.txt")"
  fi
  local exe missing
  for exe in nmt cuda_test; do
    [ -x "$exe" ] || "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + ".xz"), open(sys.argv[1], "wb"))' "$exe" ||
      fail_preflight "could not unpack $exe.xz"
    chmod +x "$exe"
  done
  missing=
  for exe in nmt cuda_test; do
    local m
    m=$(ldd "./$exe" 2>&1 | awk '/not found/ {printf "%s ", $1}')
    [ -z "$m" ] || missing+="./$exe: $m(not found); "
  done
  [ -z "$missing" ] || fail_preflight "ldd: ${missing}LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  if [ -n "$rehearsal" ] || [ "$mode" = run-cpu ]; then
    say "preflight: ${rehearsal:+rehearsal, }$mode: no nvidia-smi or CUDA device asked for (PyTorch here: $([ "$have_torch" = 1 ] && echo yes || echo no))"
  else
    command -v nvidia-smi > /dev/null || fail_preflight "no nvidia-smi: no NVIDIA driver on this machine?"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader > "$run/steps/00-nvidia-smi.txt" 2>&1 ||
      fail_preflight "nvidia-smi: $(tail -1 "$run/steps/00-nvidia-smi.txt")"
    [ "${torch_devices:-0}" -gt 0 ] || fail_preflight "PyTorch sees no CUDA device (torch.cuda.is_available() is false)"
    local verdict
    verdict=$(cap_check "$(cat CUDA_CAP 2> /dev/null)" "$(head -1 "$run/steps/00-nvidia-smi.txt" | awk -F', *' '{print $NF}')") ||
      fail_preflight "$verdict"
    say "preflight: $verdict"
  fi
  # The recorded step's settings without --gpu: refused for the device alone (checked last) = accepted.
  graph_sets=(--set train.cuda_graph=true --set train.precision=f32 --set train.candidates=false)
  graph_refusal=$(./nmt train -c configs/rnnsearch-s2s.toml -m "$run/graph-settings" "${graph_sets[@]}" --quiet 2>&1 | tail -1)
  ! grep -q "needs a GPU" <<< "$graph_refusal" || graph_refusal=
  say "preflight: the recorded step's settings (${graph_sets[*]}): ${graph_refusal:-accepted, refused without --gpu for the device alone}"
  say "preflight passed: binaries unpacked, ldd finds every library; GPU: $(cat "$run/steps/00-nvidia-smi.txt" 2> /dev/null || echo none)"
}

# The first GPU process's time to its first result: the JIT of candle's PTX, unless
# CUDA_CACHE_PATH already holds it.
first_result() {
  local at
  at=$(step_figures "$id" | head -1 | "$py" -c 'import json, sys; print(json.loads(sys.stdin.readline())["at"])' 2> /dev/null)
  if [ -n "$at" ]; then
    say "time to first result: $(awk -v a="$started" -v b="$at" 'BEGIN { printf "%.1f", b - a }') s from the start of the first GPU process to its first figure (JIT cache: CUDA_CACHE_PATH=$CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE=$CUDA_CACHE_MAXSIZE, $cache_mb MB held before this run)"
  else
    say "time to first result: none (the first GPU process wrote no figure)"
  fi
}

# The three tests that decide whether the recorded step's capture glue works (issue 69): they
# run right after the headline's first step (issue 74), before PyTorch and the CPU.
capture_tests="gpu_graph_replays_equal_fresh_steps gpu_launch_step_equals_the_cpu_and_replays_as_a_graph gpu_loss_and_gradients_equal_the_cpu_fused_path"

# One GPU test in its own process, and once more with each launch waited for if it failed.
gpu_test() {
  local name=$1
  step text "test-$name" 60 "0.5-22 s each on the H200 2026-11-30 (the ranks test 22 s: four trainings), +15 s of JIT in a machine's first GPU process" "GPU test $name" \
    env NMT_REQUIRE_GPU=1 NMT_REPO_ROOT="$dir" ./cuda_test --exact "$name" --nocapture --test-threads 1
  # An asynchronous fault is reported at a later call: again with each launch waited for.
  if [ "$outcome" = failed ] || [ "$outcome" = timed-out ]; then
    step text "test-$name-blocking" 60 "as above" "GPU test $name again, CUDA_LAUNCH_BLOCKING=1" \
      env CUDA_LAUNCH_BLOCKING=1 NMT_REQUIRE_GPU=1 NMT_REPO_ROOT="$dir" ./cuda_test --exact "$name" --nocapture --test-threads 1
  fi
}

# gpu_tests capture|rest: the capture tests (each, or NOT RUN where the test binary lacks it),
# or every other test the binary lists.
gpu_tests() {
  local names name
  names=$(./cuda_test --list 2> "$run/steps/00-test-list.txt" | sed -n 's/: test$//p')
  [ -n "$names" ] || { not_run "test-list-$1" "the GPU test binary lists no test: $(tail -1 "$run/steps/00-test-list.txt")"; return; }
  if [ "$1" = capture ]; then
    for name in $capture_tests; do
      if grep -qx "$name" <<< "$names"; then gpu_test "$name"; else not_run "test-$name" "not in this test binary"; fi
    done
    return
  fi
  say "the other GPU tests, each its own process: $(grep -vxF "${capture_tests// /$'\n'}" <<< "$names" | tr '\n' ' ')"
  for name in $(grep -vxF "${capture_tests// /$'\n'}" <<< "$names"); do
    gpu_test "$name"
  done
}

compare_outputs() { # SLUG A B
  if [ -f "$2" ] && [ -f "$3" ]; then
    local same=false
    cmp -s "$2" "$3" && same=true
    n=$((n + 1))
    figure "$(printf '%02d-%s' "$n" "$1")" "\"identical\": $same, \"a\": \"$(basename "$2")\", \"b\": \"$(basename "$3")\""
    say "compare $(basename "$2") and $(basename "$3"): $([ $same = true ] && echo byte-identical || echo DIFFER)"
  else
    not_run "$1" "no two outputs to compare"
  fi
}

run_gpu() {
  local g=("${gpu[@]}") b
  local gl=${g[*]:+ ${g[*]}}
  nmt_bench nmt-train-b32 60 "16-17 s on the H200 2026-11-30, 15 of them the JIT of candle's PTX into an empty cache; candle's step, then the recorded step's launches and its CUDA graph, each figure flushed as measured" "nmt bench$gl --only train, batch 32" \
    "${g[@]}" --batch 32 --only train --steps "$steps_n"
  first_result
  gpu_tests capture
  torch_step torch-train 60 "14 s on the H200 2026-11-30, most of it start-up" \
    "PyTorch's CUDA-graph and eager training step, batch 32 and 128" graph,eager ""
  # The headline's step again with cudarc's and candle's defaults (an event per buffer use, the
  # pool released at every synchronise, a driver lookup per launch, cuBLAS's workspace from the
  # pool: kernels/gpu/context.rs), so that the ratios say what those overheads cost (issue 74).
  NMT_CUDA_OVERHEADS=cudarc nmt_bench nmt-train-b32-cudarc 30 "2.2 s on the H200 2026-11-30, the JIT cached by then" \
    "nmt bench$gl --only train, batch 32, NMT_CUDA_OVERHEADS=cudarc" "${g[@]}" --batch 32 --only train --steps "$steps_n"
  step text ratios-train 20 "Python over a few lines" "ratios: nmt's training step over PyTorch's and over cudarc's defaults (loss0 checked)" "$py" gpu-check-ratios.py train "$figs"
  nmt_bench nmt-train-b128 30 "2.7 s on the H200 2026-11-30" "nmt bench$gl --only train, batch 128" "${g[@]}" --batch 128 --only train --steps "$steps_n"
  for b in 32 128; do
    nmt_bench "nmt-search-b$b" 30 "2.7-3.2 s on the H200 2026-11-30" "nmt bench$gl --only greedy,beam5, batch $b" "${g[@]}" --batch "$b" --only greedy,beam5 --steps "$steps_n"
  done
  gpu_tests rest
  say "the headline is done; what follows runs while the deadline allows"
  # The f32 headline's step with bf16 products (docs/GPU.md "bf16 products"; 0.97-1.01x on the H200).
  for b in 32 128; do
    nmt_bench "bf16-train-b$b" 30 "1.1-1.3 s on the H200 2026-11-30" "nmt bench$gl --precision bf16 --only train, batch $b" \
      "${g[@]}" --precision bf16 --batch "$b" --only train --steps "$steps_n"
  done
  for b in 32 128; do
    nmt_bench "composed-train-b$b" 30 "2.1-2.3 s on the H200 2026-11-30" "nmt bench$gl --impl composed --only train, batch $b" "${g[@]}" --impl composed --batch "$b" --only train --steps "$steps_n"
  done
  for b in 32 128; do
    nmt_bench "composed-search-b$b" 30 "2.4-4.7 s on the H200 2026-11-30" "nmt bench$gl --impl composed --only greedy,beam5, batch $b" \
      "${g[@]}" --impl composed --batch "$b" --only greedy,beam5 --steps "$steps_n"
  done
  step text ratios-composed 20 "Python over a few lines" "ratios: the GPU kernels over composed candle ops" "$py" gpu-check-ratios.py composed "$figs"
  torch_step torch-other 60 "17.9 s on the H200 2026-11-30: 3 forms and 2 searches at 2 batches" "PyTorch's bf16 and cuDNN forms and its eager searches" \
    eager-bf16,cudnn-bf16,graph-bf16 greedy,beam5
  step text ratios-train-all 20 "Python over a few lines" "ratios: nmt's training step over every PyTorch form" "$py" gpu-check-ratios.py train "$figs"
  local minutes
  minutes=$(awk -v s="$train_s" 'BEGIN { print s / 60 }')
  step text train-s2s $((train_s + 30)) "$train_s s of training, and 30 s for the vocabularies and saving (5.3 s on the H200 2026-11-30)" \
    "nmt train$gl -c configs/rnnsearch-s2s.toml for $train_s s" \
    ./nmt train "${g[@]}" -c configs/rnnsearch-s2s.toml -m "$models/${run##*/}" --set train.max_minutes="$minutes" --set train.valid_every=500 --quiet
  local m=$models/${run##*/}/model.safetensors
  if [ -f "$m" ]; then
    zcat data/bible-en-es/test.en.gz > "$run/test.en"
    step text translate-gpu 30 "2.0 s on the H200 2026-11-30 (49.8-51.7 s at 28b8633, before the GPU kernels)" "nmt translate$gl -b 5 of the 2 000 test verses" \
      ./nmt translate "${g[@]}" -m "$m" -b 5 --batch-size 256 --stats -i "$run/test.en" -o "$run/test.gpu.es"
    step text translate-cpu 30 "3.5 s on the H200 2026-11-30 machine's 16 threads" "nmt translate -b 5 of the 2 000 test verses, $cores CPU threads" \
      ./nmt translate -m "$m" -b 5 --threads "$cores" --stats -i "$run/test.en" -o "$run/test.cpu.es"
    compare_outputs compare-translations "$run/test.gpu.es" "$run/test.cpu.es"
  else
    not_run translate "the 2 000 verses: no model (nmt train was skipped or failed)"
  fi
  # The recorded step (`train.cuda_graph`, off): 1.08-1.14x candle's step on the H200 (2026-11-30), but
  # in f32 with the full softmax (it refuses bf16 and candidates): against train-s2s, for the default.
  if [ -n "$graph_refusal" ]; then not_run train-s2s-graph "REFUSED ON THE CPU, fix its settings: $graph_refusal"
  elif [ -n "$rehearsal" ]; then not_run train-s2s-graph "train.cuda_graph needs a GPU; its settings passed the preflight"; else
    step text train-s2s-graph $((train_s + 30)) "as train-s2s" "nmt train$gl -c configs/rnnsearch-s2s.toml ${graph_sets[*]} for $train_s s" \
      ./nmt train "${g[@]}" -c configs/rnnsearch-s2s.toml -m "$models/${run##*/}-graph" "${graph_sets[@]}" --set train.max_minutes="$minutes" --set train.valid_every=500 --quiet
  fi
  # The CPU baselines last (issue 74): they need no GPU, and run-cpu measures the CPU at length.
  for b in 32 128; do
    nmt_bench "cpu-beam5-b$b" 30 "1.3-3.0 s on the H200 2026-11-30 machine's 16 threads" "nmt bench --only beam5 on $cores CPU threads, batch $b" \
      --batch "$b" --only beam5 --threads "$cores" --steps "$steps_n"
  done
  step text ratios-search 20 "Python over a few lines" "ratios: nmt's searches over beam 5 on the CPU" "$py" gpu-check-ratios.py search "$figs"
}

run_cpu() {
  local t
  for t in 1 2 4 8 16; do
    [ "$t" -le "$cores" ] || continue
    nmt_bench "cpu-scaling-t$t" 60 "about 5x the 2-core rates, at 1 thread" "CPU scaling: nmt bench --only train,beam5, $t threads" \
      --only train,beam5 --threads "$t" --steps 10
  done
  # 2 threads and all cores, once each (the same on a 2-core machine).
  local pair
  pair=$(printf '%s\n' 2 "$cores" | sort -un)
  # Which batch a user with all these cores should train with: the step at 4x the sentences.
  for t in $pair; do
    nmt_bench "cpu-train-b128-t$t" 60 "over 5x the 2-core rate (4 batches a step)" "CPU: nmt bench --only train, batch 128, $t threads" \
      --only train --batch 128 --threads "$t" --steps 5
  done
  # PyTorch's fastest CPU form, not its eager defaults; the first compilation takes minutes
  # (TorchInductor caches it for the second), hence the longer first limit.
  local limit=180
  for t in $pair; do
    if [ "$have_torch" = 1 ]; then
      step fig "torch-compiled-t$t" "$limit" "a guess; the first compilation takes minutes" "CPU: PyTorch compiled, $t threads" \
        env CUDA_VISIBLE_DEVICES= BENCH_REF=bench BENCH_DATA="$BENCH_DATA" THREADS="$t" STEPS=10 "$py" bench/pytorch-tuned-reference.py
    else
      not_run "torch-compiled-t$t" "no PyTorch here"
    fi
    limit=90
  done
  # The CPU issue's search scaling (its target: all cores >= 7x the 2-thread rate), on 500
  # verses, with the model the last `run` of this pack trained (or GPU_CHECK_MODEL).
  local m=${GPU_CHECK_MODEL:-}
  if [ -z "$m" ]; then
    local f
    for f in "$models"/run-*/model.safetensors; do [ -f "$f" ] && m=$f; done # the last: the newest
  fi
  if [ -f "$m" ]; then
    zcat data/bible-en-es/test.en.gz | head -500 > "$run/test500.en"
    for t in $pair; do
      step text "translate500-t$t" 90 "a guess: 2 000 verses took 15.6 s on 2 threads with rnnsearch-small (docs/PERF.md)" "beam 5 of 500 test verses, $t CPU threads" \
        ./nmt translate -m "$m" -b 5 --threads "$t" --stats -i "$run/test500.en" -o "$run/test500.t$t.es"
    done
    if [ "$cores" -gt 2 ]; then compare_outputs compare-threads "$run/test500.t2.es" "$run/test500.t$cores.es"; fi
  else
    not_run translate500 "no model in $models: run \`run\` from this pack first, or set GPU_CHECK_MODEL"
  fi
}

start_run() {
  mode=$1
  out=$2
  dir=$3
  t0=$(date +%s)
  # The command's own limit, when the call gives it (`run OUT SECONDS`): the deadline leaves 60 s for
  # the last step's kill and the hand-back (a machine's last minutes may give a command less).
  if [ -n "${4:-}" ]; then
    [[ $4 =~ ^[0-9]+$ ]] && (($4 >= 90)) || { echo "gpu-check: SECONDS=$4: the command's limit, a whole number of at least 90" >&2; exit 2; }
    deadline=$(($4 - 60))
  fi
  [[ $deadline =~ ^[0-9]+$ ]] || { echo "GPU_CHECK_DEADLINE=$deadline: a whole number of seconds" >&2; exit 2; }
  [[ $steps_n =~ ^[1-9][0-9]*$ ]] || { echo "GPU_CHECK_STEPS=$steps_n: a positive whole number" >&2; exit 2; }
  [[ $train_s =~ ^[1-9][0-9]*$ ]] || { echo "GPU_CHECK_TRAIN_SECONDS=$train_s: a positive whole number" >&2; exit 2; }
  [[ $rehearsal_limit =~ ^[1-9][0-9]*$ ]] || { echo "GPU_CHECK_REHEARSAL_LIMIT=$rehearsal_limit: a positive whole number" >&2; exit 2; }
  # Absolute, since the run works from the pack's folder: a relative OUT would put the log
  # elsewhere once it has changed folder.
  mkdir -p "$out" && out=$(cd "$out" && pwd) || { echo "gpu-check: cannot write $out" >&2; exit 2; }
  # At most 8 files of OUT come back (issue 74): log.txt, figures.jsonl (tagged by step), steps.txt
  # (outcomes). The run folder (each step's output, data, translations) stays beside the pack.
  local stamp
  stamp=$(date -u +%Y%m%d-%H%M%S)
  run=$dir/runs/$mode-$stamp
  mkdir -p "$run/steps" || { echo "gpu-check: cannot write $run" >&2; exit 2; }
  log=$out/log.txt figs=$out/figures.jsonl outcomes=$out/steps.txt
  if [ -e "$log" ] || [ -e "$figs" ] || [ -e "$outcomes" ]; then
    mkdir -p "$dir/runs/earlier-out-$stamp" && mv -f "$log" "$figs" "$outcomes" "$dir/runs/earlier-out-$stamp/" 2> /dev/null
  fi
  : > "$figs"
  # The trained model (161 MB, 2026-11-28) stays beside the pack, out of OUT: `run-cpu` finds it there.
  models=$dir/models
  n=0
  rehearsal=
  [ -f "$dir/REHEARSAL" ] && rehearsal=$(cat "$dir/REHEARSAL")
  cd "$dir" || exit 2
  say "gpu-check $mode, $(date -u '+%F %T') UTC, deadline $deadline s, $steps_n timed steps; OUT $out; run folder $run"
  sed 's/^/  pack: /' COMMIT | tee -a "$log"
  [ -z "$rehearsal" ] || say "REHEARSAL: $rehearsal"
  preflight
  cores=$(nproc)
  say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $cores cores; flags: $(grep -o -w -e avx512f -e avx512_bf16 -e avx512_vnni -e avx2 /proc/cpuinfo | sort -u | tr '\n' ' ')"
  [ "$have_torch" != 1 ] || say "$torch_version; CUDA devices PyTorch sees: $torch_devices"
  # The JIT cache of candle's PTX, beside the pack for a second run (4 GiB: the driver's largest).
  export CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-$dir/cuda-cache} CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
  cache_mb=$(du -sm "$CUDA_CACHE_PATH" 2> /dev/null | cut -f1)
  say "JIT cache: CUDA_CACHE_PATH=$CUDA_CACHE_PATH (${cache_mb:-0} MB held), CUDA_CACHE_MAXSIZE=$CUDA_CACHE_MAXSIZE; NVIDIA_TF32_OVERRIDE=${NVIDIA_TF32_OVERRIDE:-unset}"
  cache_mb=${cache_mb:-0}
  export BENCH_DATA=$run/bench-data NMT_LOG=warn
  gpu=(--gpu)
  [ -z "$rehearsal" ] || gpu=()
  step text gen-data 30 "pure Python, 5.7 M random draws: 1.4-2.7 s on the H200 2026-11-30 machine" "the reference's weights and batch (bench/gen_data.py)" "$py" bench/gen_data.py
  case $mode in
    run) run_gpu ;;
    run-cpu) run_cpu ;;
  esac
  say "done: $(awk '{print $2}' "$outcomes" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')$(el) s of $deadline"
  say "log: $log"
}
