#!/usr/bin/env bash
# rnnsearch-small (configs/rnnsearch-small.toml, issue 42's model) trained twice side by side,
# one thread each, the same seed and batches, products in f32 and in bf16, to UPDATES updates;
# then both best models are scored with beam 5 on all dev and test verses.
#
#   scripts/bf16-vs-f32.sh [UPDATES] [WORK]       (defaults: 11000, runs/bf16-vs-f32)
#
# Resumable: `nmt train` continues a run from its last checkpoint, so rerunning the command
# after an interruption finishes both runs. The 3 000-update pair (docs/logs/bf16-3000/) had
# the same settings (UPDATES=3000). With both running on this project's 2-core AMD EPYC Zen 4,
# f32 took about 0.65 s per update and bf16 0.5 s (2026-11-27).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
updates=${1:-11000}
work=${2:-$root/runs/bf16-vs-f32}
nmt=${NMT:-${CARGO_TARGET_DIR:-$root/target}/release/nmt}
[ -x "$nmt" ] || cargo build --release -q -p nmt-cli
mkdir -p "$work"
pids=()
for prec in f32 bf16; do
  "$nmt" train -c "$root/configs/rnnsearch-small.toml" -m "$work/$prec" --threads 1 --quiet \
    --set train.max_steps="$updates" --set train.max_minutes=0 --set train.patience=0 \
    --set train.shortlist=false --set train.average_last=0 --set train.precision="$prec" \
    >> "$work/$prec.train.log" 2>&1 &
  pids+=($!)
done
# Each run waited for by its pid, so that a failed run stops the script (a bare `wait` returns 0).
for pid in "${pids[@]}"; do wait "$pid"; done
data=$root/data/bible-en-es
for set in dev test; do
  gzip -dc "$data/$set.es.gz" > "$work/$set.ref.es"
done
for prec in f32 bf16; do
  for set in dev test; do
    gzip -dc "$data/$set.en.gz" | "$nmt" translate -m "$work/$prec/model.safetensors" -b 5 --threads 2 > "$work/$prec.$set.es"
    echo "$prec $set: $("$nmt" eval bleu --ref "$work/$set.ref.es" "$work/$prec.$set.es"); $("$nmt" eval chrf --ref "$work/$set.ref.es" "$work/$prec.$set.es")"
  done
done | tee "$work/scores.txt"
