#!/usr/bin/env bash
# Behaviour of two builds of `nmt` across every architecture, for refactors that must change
# nothing (issue "One wiring per architecture"): BEFORE and AFTER are two `nmt` binaries.
#
#   scripts/compare-wiring.sh BEFORE AFTER [UPDATES=200] [VERSES=300] [THREADS=2]
#   env: OUT (runs/compare-wiring), the folder it writes and empties first;
#        SET, more `--set key=value` for every training (e.g. SET="--set train.precision=bf16")
#
# For each variant (rnnsearch-small, rnnenc-small, lstm-seq2seq-small, grconv-small, rnnsearch
# with the copy mixture, rnnsearch with a 2-layer gated-feedback decoder, rnnsearch with the
# conditional GRU decoder):
# 1. both binaries train UPDATES updates from the same seed; the logged losses must be equal to
#    the last printed digit (train_log.jsonl, every 10 updates);
# 2. BEFORE's model translates the first VERSES test verses with both binaries, beam 1 and beam 5
#    (n-best 5 with scores), byte for byte;
# 3. the ensemble rnnsearch-small + lstm-seq2seq-small (same vocabularies) at beam 5.
# Exits 1 on any difference. Runs at a fixed number of updates, so the machine's load does not
# matter; the speed side is scripts/bench-presets.sh.
set -euo pipefail
before=$1 after=$2 updates=${3:-200} verses=${4:-300} threads=${5:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/runs/compare-wiring}
rm -rf "$out" && mkdir -p "$out"
zcat "$root/data/bible-en-es/test.en.gz" | sed -n "1,${verses}p" > "$out/test.en"
fail=0

same() { # name file_a file_b
  if cmp -s "$2" "$3"; then echo "same: $1 ($(wc -l < "$2") lines)"; else echo "DIFFERENT: $1"; diff "$2" "$3" | head -5 || true; fail=1; fi
}

variants=(
  "rnnsearch:configs/rnnsearch-small.toml"
  "rnnenc:configs/rnnenc-small.toml"
  "lstm:configs/lstm-seq2seq-small.toml"
  "grconv:configs/grconv-small.toml"
  "copy:configs/rnnsearch-small.toml --set model.copy=true"
  "feedback:configs/rnnsearch-small.toml --set model.dec_layers=2 --set model.stack=gated-feedback"
  "cgru:configs/rnnsearch-small.toml --set model.decoder=conditional --set model.gru=reset-after"
)
for v in "${variants[@]}"; do
  name=${v%%:*}
  read -r -a args <<< "${v#*:} ${SET:-}"
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    NMT_LOG=error "$bin" train -c "$root/${args[0]}" "${args[@]:1}" -m "$out/$name.$side" --quiet --threads "$threads" \
      --set train.max_steps="$updates" --set train.log_every=10 --set train.valid_every=100000 --set train.max_minutes=0 \
      --set train.shortlist=false --set train.average_last=0 > "$out/$name.$side.log" 2>&1 || { echo "TRAINING FAILED: $name $side"; tail -3 "$out/$name.$side.log"; fail=1; }
  done
  grep '"loss"' "$out/$name.before/train_log.jsonl" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r["step"], repr(r["loss"]))' > "$out/$name.loss.before"
  grep '"loss"' "$out/$name.after/train_log.jsonl" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r["step"], repr(r["loss"]))' > "$out/$name.loss.after"
  same "training loss $name ($updates updates)" "$out/$name.loss.before" "$out/$name.loss.after"
  model=$out/$name.before/model.safetensors
  for spec in "b1:-b 1" "b5:-b 5 --n-best 5"; do
    sn=${spec%%:*}
    read -r -a targs <<< "${spec#*:}"
    for side in before after; do
      bin=$before; [ "$side" = after ] && bin=$after
      NMT_LOG=error "$bin" translate -m "$model" "${targs[@]}" -i "$out/test.en" -o "$out/$name.$sn.$side" --threads "$threads"
    done
    same "translate $name $sn" "$out/$name.$sn.before" "$out/$name.$sn.after"
  done
done
for side in before after; do
  bin=$before; [ "$side" = after ] && bin=$after
  NMT_LOG=error "$bin" translate -m "$out/rnnsearch.before/model.safetensors" -m "$out/lstm.before/model.safetensors" -b 5 \
    -i "$out/test.en" -o "$out/ensemble.$side" --threads "$threads"
done
same "translate ensemble rnnsearch+lstm b5" "$out/ensemble.before" "$out/ensemble.after"
exit $fail
