#!/bin/bash
# The shipped recipe (bf16 products, candidates, dropout) for 200 updates with a validation at
# 100 and 200, by two binaries; the logged losses, dev loss and dev BLEU must be equal.
set -euo pipefail
before=$1 after=$2 out=$3 threads=${4:-2}
rm -rf "$out"; mkdir -p "$out"
for side in before after; do
  bin=$before; [ $side = after ] && bin=$after
  NMT_LOG=error $bin train -c /work/main/configs/rnnsearch-s2s.toml -m "$out/$side" --quiet --threads $threads \
    --set train.max_steps=200 --set train.log_every=10 --set train.valid_every=100 --set train.valid_bleu_sentences=100 \
    --set train.max_minutes=0 --set train.shortlist=false --set train.average_last=0 \
    --set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000 > "$out/$side.log" 2>&1
  python3 -c '
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    print({k:v for k,v in r.items() if k not in ("elapsed_s","tok_per_s","valid_s")})' "$out/$side/train_log.jsonl" > "$out/$side.losses"
done
if cmp -s "$out/before.losses" "$out/after.losses"; then echo "same: $(wc -l < $out/before.losses) records"; else echo DIFFERENT; diff "$out/before.losses" "$out/after.losses" | head; fi
grep -h 'bf16\|precision' "$out/before.log" "$out/after.log" | head -4
