#!/usr/bin/env bash
# A killed rank (issue "Training beyond one machine"): trains on 2 MPI ranks, SIGKILLs rank 1
# once a checkpoint exists, and reports how the other rank and mpirun end and how long they
# took; then launches the same command again, which must resume from the last checkpoint.
#
#   scripts/mpi-kill.sh [NMT_BINARY built with --features mpi]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nmt=${1:-$root/target/release/nmt}
out=$root/runs/mpi-kill
rm -rf "$out" && mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NMT_LOG=info
launch() {
  mpirun --oversubscribe --bind-to none -np 2 "$nmt" train -c "$root/configs/rnnsearch-small.toml" -m "$out/model" \
    --threads 1 --quiet --set train.valid_every=20 --set train.valid_bleu_sentences=20 --set train.max_steps="$1"
}
launch 100000 > "$out/run1.log" 2>&1 &
mpirun_pid=$!
until [ -f "$out/model/checkpoint.safetensors" ]; do sleep 1; done
sleep 5
# A rank is an nmt process (mpirun's command line starts otherwise) that knows its rank from its environment.
rank() {
  local p
  for p in $(pgrep -f "^$nmt train"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; fi
  done
}
r0=$(rank 0); r1=$(rank 1)
echo "rank 0: pid $r0, rank 1: pid $r1; killing rank 1 with SIGKILL"
t0=$(date +%s.%N)
kill -9 "$r1"
status=0; wait "$mpirun_pid" || status=$?
t1=$(date +%s.%N)
echo "mpirun exited with status $status $(echo "$t1 - $t0" | bc) s after the kill"
# Rank 0 was blocked in the all-reduce that rank 1 never joined: mpirun ends it.
for _ in $(seq 300); do kill -0 "$r0" 2>/dev/null || break; sleep 0.1; done
t2=$(date +%s.%N)
if kill -0 "$r0" 2>/dev/null; then
  echo "rank 0 STILL RUNNING 30 s after mpirun exited"; kill -9 "$r0"; exit 1
fi
echo "rank 0 had stopped $(echo "$t2 - $t0" | bc) s after the kill (polled every 0.1 s)"
echo "--- mpirun's report:"
grep -v "INFO" "$out/run1.log" | grep -v '^\s*$' | head -n 20
# Checkpoints are written at validations: the last validation record is the update to resume at.
ckpt=$(grep '"dev_bleu"' "$out/model/train_log.jsonl" | tail -n 1 | grep -o '"step":[0-9]*' | cut -d: -f2)
echo "--- relaunch with the same command (last checkpoint: update $ckpt), 20 more updates:"
launch $((ckpt + 20)) > "$out/run2.log" 2>&1
grep -E "resuming from|stopped" "$out/run2.log"
