#!/usr/bin/env bash
# Scores a trained model directory on the bundled test set (all 2000 verses): beam-5
# translations of model.safetensors (the best by dev BLEU) and, when training wrote it,
# model.avg.safetensors (the snapshot average); sacreBLEU-identical BLEU and chrF, BLEU by
# source length (table + picture) and the training curves.
#
#   scripts/eval-run.sh MODEL_DIR [THREADS]        (default 2 threads)
#
# Writes MODEL_DIR/eval/: test.{best,avg}.es, by-length.txt, by-length.png, curves.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: scripts/eval-run.sh MODEL_DIR [THREADS]}
threads=${2:-2}
data=$root/data/bible-en-es
nmt=${NMT:-${CARGO_TARGET_DIR:-$root/target}/release/nmt}
[ -x "$nmt" ] || cargo build --release -q -p nmt-cli
out=$dir/eval
mkdir -p "$out"
src=$out/test.en
ref=$out/test.es
gzip -dc "$data/test.en.gz" > "$src"
gzip -dc "$data/test.es.gz" > "$ref"
systems=()
for name in best avg; do
  model=$dir/model.safetensors
  [ "$name" = avg ] && model=$dir/model.avg.safetensors
  [ -f "$model" ] || continue
  start=$(date +%s.%N)
  "$nmt" translate -m "$model" -b 5 --threads "$threads" < "$src" > "$out/test.$name.es"
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  echo "== $name ($model), beam 5, $secs s"
  "$nmt" eval bleu -r "$ref" "$out/test.$name.es"
  "$nmt" eval chrf -r "$ref" "$out/test.$name.es"
  systems+=("$out/test.$name.es")
done
"$nmt" eval by-length --src "$src" -r "$ref" --plot "$out/by-length.png" "${systems[@]}" | tee "$out/by-length.txt"
"$nmt" plot curves -o "$out/curves.png" "$dir/train_log.jsonl"
echo "wrote $out"
