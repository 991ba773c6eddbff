# The step machinery of scripts/gpu-check-run.sh (sourced by it): the run's settings, the log,
# the figure lines, `step` with its limit and the deadline, and the PTX capability check.
# gpu-check-run.sh's header says where the limits come from.

deadline=${GPU_CHECK_DEADLINE:-540}
steps_n=${GPU_CHECK_STEPS:-20}
train_s=${GPU_CHECK_TRAIN_SECONDS:-90}
rehearsal_limit=${GPU_CHECK_REHEARSAL_LIMIT:-30}
grace=10

el() { echo $(($(date +%s) - t0)); }
epoch() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(epoch)" 'BEGIN { printf "%.1f", b - a }'; }
# One line to the log (written at once, by this shell) and to stdout.
say() {
  local l
  l=$(printf '[%4s s] %s' "$(el)" "$*")
  printf '%s\n' "$l" >> "$log"
  printf '%s\n' "$l"
}
fail_preflight() {
  say "PREFLIGHT FAILED: $*"
  exit 3
}
# A figure line of the script's own (a step's outcome, a comparison), JSON, with "at".
figure() { printf '{"step": "%s", %s, "at": %s}\n' "$1" "$2" "$(epoch)" >> "$figs"; }
# Each JSON line of stdin with "step": ID put first, appended to OUT/figures.jsonl and flushed
# line by line (a kill keeps every line read before it); any other line to the step's text file
# (a line cut by a kill is not a figure, and is dropped).
tag() {
  local line
  # bash reads a pipe without buffering ahead (mawk, Ubuntu's awk, would hold lines back).
  while IFS= read -r line; do
    if [[ $line == '{'* ]]; then printf '{"step": "%s", %s\n' "$1" "${line#\{}"; else printf '%s\n' "$line" >> "$2"; fi
  done
}
# The figure lines of step ID, as written.
step_figures() { grep -F "{\"step\": \"$1\"," "$figs" 2> /dev/null; }

# step KIND SLUG LIMIT BASIS WHAT CMD...: runs CMD under `timeout -k $grace LIMIT`, unless that
# could pass the deadline (then logs SKIPPED). KIND fig: CMD's stdout is figure lines, each
# tagged with the step's id NN-SLUG and appended to OUT/figures.jsonl the moment CMD writes it
# (`tag`), its stderr to the run folder's steps/NN-SLUG.txt. KIND text: CMD's stdout and stderr
# to steps/NN-SLUG.txt, and this script adds one figure line: the exit status and seconds. Sets
# `outcome` (ok, failed, timed-out, skipped), `id` and `started` (the epoch CMD started at).
step() {
  local kind=$1 slug=$2 limit=$3 basis=$4 what=$5
  shift 5
  n=$((n + 1))
  id=$(printf '%02d-%s' "$n" "$slug")
  # The rehearsal runs the CPU forms, whose times are not the GPU's: one short limit for all.
  if [ -n "$rehearsal" ] && ((limit > rehearsal_limit)); then
    basis="the rehearsal's limit; in a real run $limit s: $basis"
    limit=$rehearsal_limit
  fi
  local e
  e=$(el)
  if ((e + limit + grace > deadline)); then
    say "SKIPPED $id: $what: its limit ($limit s, +$grace s to kill) would pass the deadline ($e of $deadline s used)"
    echo "$id skipped" >> "$outcomes"
    outcome=skipped
    return 0
  fi
  say "START $id: $what (limit $limit s: $basis)"
  local txt=$run/steps/$id.txt rc
  started=$(epoch)
  if [ "$kind" = fig ]; then
    timeout -k "$grace" "$limit" "$@" 2>> "$txt" | tag "$id" "$txt" >> "$figs"
    rc=${PIPESTATUS[0]}
  else
    timeout -k "$grace" "$limit" "$@" >> "$txt" 2>&1
    rc=$?
  fi
  local secs
  secs=$(since "$started")
  [ "$kind" = fig ] || figure "$id" "\"exit\": $rc, \"s\": $secs"
  case $rc in
    0) outcome=ok ;;
    124 | 137) outcome=timed-out ;;
    *) outcome=failed ;;
  esac
  say "END $id: $outcome (exit $rc) after $secs s; $(step_figures "$id" | wc -l) figure line(s)"
  # For reading: the figures and the output's end, copied after the fact (the files are whole).
  step_figures "$id" | sed 's/^/    | /' | tee -a "$log"
  if [ -s "$txt" ]; then tail -n 8 "$txt" | sed 's/^/    > /' | tee -a "$log"; fi
  echo "$id $outcome" >> "$outcomes"
}
not_run() {
  n=$((n + 1))
  say "NOT RUN $(printf '%02d-%s' "$n" "$1"): $2"
  echo "$(printf '%02d-%s' "$n" "$1") not-run" >> "$outcomes"
}

# The PyTorch step SLUG (FORMS, SEARCHES: pytorch_gpu_forms.py's forms and searches).
torch_step() {
  local slug=$1 limit=$2 basis=$3 what=$4 forms=$5 searches=$6
  if [ "$have_torch" != 1 ]; then not_run "$slug" "$what: no PyTorch here (rehearsal)"; return; fi
  step fig "$slug" "$limit" "$basis" "$what" env BENCH_DATA="$BENCH_DATA" STEPS="$steps_n" FORMS="$forms" SEARCHES="$searches" "$py" bench/pytorch_gpu_forms.py
}

nmt_bench() { # SLUG LIMIT BASIS WHAT ARGS...
  local slug=$1 limit=$2 basis=$3 what=$4
  shift 4
  step fig "$slug" "$limit" "$basis" "$what" ./nmt bench --data "$BENCH_DATA" --json "$@"
}

# cap_check PACK_CAP GPU_CAP: whether the pack's PTX (compute_PACK_CAP, e.g. 90: build.rs's
# `-arch=compute_$CUDA_COMPUTE_CAP`) loads on a GPU of compute capability GPU_CAP (nvidia-smi's
# "9.0"): the driver JIT-compiles PTX for its own GPU or a newer one, and cannot for an older
# one. Prints the verdict; returns 1 for an older GPU.
cap_check() {
  local want=$1 got=${2//./}
  if ! [[ $want =~ ^[0-9]+$ && $got =~ ^[0-9]+$ ]]; then
    echo "compute capability not compared (pack ${1:-unknown}, GPU ${2:-unknown})"
  elif ((got < want)); then
    echo "the GPU's compute capability $2 is below the pack's PTX target compute_$want: pack again with CUDA_COMPUTE_CAP=$got"
    return 1
  elif ((got > want)); then
    echo "the pack's PTX (compute_$want) is JIT-compiled for this GPU's compute capability $2"
  else
    echo "the GPU's compute capability $2 is the pack's PTX target"
  fi
}
