#!/usr/bin/env bash
# Measured scaling on one machine (issue "Training beyond one machine"): rnnsearch-small's
# training throughput with 1 process × 2 threads against 2 MPI ranks × 1 thread, alternated
# ROUNDS times. Each run does STEPS updates without validation; the figure is the target
# tokens/s of its log lines after the first (warm-up) one. Needs a quiet machine and an nmt
# built with --features mpi.
#
#   scripts/mpi-scaling.sh [ROUNDS=3] [STEPS=300] [NMT_BINARY]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
steps=${2:-300}
nmt=${3:-$root/target/release/nmt}
out=$root/runs/mpi-scaling
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NMT_LOG=warn
args=(train -c "$root/configs/rnnsearch-small.toml" --quiet --set train.max_steps="$steps" --set train.valid_every=1000000
  --set train.log_every=50 --set train.average_last=0)
rate() { # mean tok/s of the log records after the first
  grep -v dev_bleu "$1/train_log.jsonl" | tail -n +2 | grep -o '"tok_per_s":[0-9.]*' | cut -d: -f2 |
    awk '{s+=$1; n++} END {printf "%.0f", s/n}'
}
echo -e "round\t1 rank x 2 threads\t2 ranks x 1 thread\tratio" | tee "$out/results.tsv"
for r in $(seq "$rounds"); do
  rm -rf "$out/one" "$out/two"
  "$nmt" "${args[@]}" -m "$out/one" --threads 2 > "$out/one.log" 2>&1
  mpirun --oversubscribe --bind-to none -np 2 "$nmt" "${args[@]}" -m "$out/two" --threads 1 > "$out/two.log" 2>&1
  a=$(rate "$out/one"); b=$(rate "$out/two")
  echo -e "$r\t$a\t$b\t$(echo "scale=3; $b / $a" | bc)" | tee -a "$out/results.tsv"
done
