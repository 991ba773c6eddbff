#!/usr/bin/env bash
# Behaviour and speed of two builds of `nmt`, for refactors that must change neither (issue
# "One network, one search"): BEFORE and AFTER are two `nmt` binaries.
#
#   scripts/compare-binaries.sh BEFORE AFTER SEARCH_MODEL ENC_MODEL SECOND_SEARCH_MODEL [ROUNDS=3] [THREADS=2]
#
# 1. Translations of the 2000 bundled test verses, byte for byte: SEARCH_MODEL (RNNsearch) and
#    ENC_MODEL (RNNenc) at beam 1 and 5 (n-best 5 with scores at beam 5), and the ensemble
#    SEARCH_MODEL + SECOND_SEARCH_MODEL at beam 5.
# 2. The training loss of the first 200 updates of configs/rnnsearch-small.toml (f32), line by
#    line from train_log.jsonl (identical, or within 1e-5).
# 3. Search speed: `nmt translate --stats` of the test set at beam 5, ROUNDS rounds, the two
#    binaries alternated inside each round; the medians of sentences/s.
# Exits 1 on any difference. ROUNDS 0 checks behaviour only. Run the speed part on a quiet machine.
set -euo pipefail
before=$1 after=$2 search=$3 enc=$4 second=$5 rounds=${6:-3} threads=${7:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/runs/compare-binaries
rm -rf "$out" && mkdir -p "$out"
zcat "$root/data/bible-en-es/test.en.gz" > "$out/test.en"
fail=0

same() { # name file_a file_b
  if cmp -s "$2" "$3"; then echo "same: $1 ($(wc -l < "$2") lines)"; else echo "DIFFERENT: $1"; diff "$2" "$3" | head -5; fail=1; fi
}

for spec in "search1:-m $search -b 1" "search5:-m $search -b 5 --n-best 5" "enc1:-m $enc -b 1" "enc5:-m $enc -b 5 --n-best 5" "ensemble5:-m $search -m $second -b 5"; do
  name=${spec%%:*}
  read -r -a args <<< "${spec#*:}"
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    NMT_LOG=error "$bin" translate "${args[@]}" -i "$out/test.en" -o "$out/$name.$side" --threads "$threads"
  done
  same "translate $name" "$out/$name.before" "$out/$name.after"
done

for side in before after; do
  bin=$before; [ "$side" = after ] && bin=$after
  NMT_LOG=error "$bin" train -c "$root/configs/rnnsearch-small.toml" -m "$out/train.$side" --quiet --threads "$threads" \
    --set train.max_steps=200 --set train.log_every=10 --set train.valid_every=1000 --set train.max_minutes=0 --set train.shortlist=false > /dev/null 2>&1
done
python3 - "$out/train.before/train_log.jsonl" "$out/train.after/train_log.jsonl" <<'EOF' || fail=1
import json, sys
a, b = ([json.loads(l) for l in open(p) if '"loss"' in l] for p in sys.argv[1:3])
assert len(a) == len(b) == 20, (len(a), len(b))
worst = max(abs(x["loss"] - y["loss"]) for x, y in zip(a, b))
print(f"training loss, 200 updates: {len(a)} log lines, largest difference {worst:.3g}")
sys.exit(0 if worst <= 1e-5 else 1)
EOF

[ "$rounds" -gt 0 ] || exit $fail   # ROUNDS 0: behaviour only
for round in $(seq "$rounds"); do
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    NMT_LOG=error "$bin" translate -m "$search" -b 5 -i "$out/test.en" -o /dev/null --threads "$threads" --stats 2>&1 |
      sed -n 's/.* in \([0-9.]*\) s: \([0-9.]*\) sentences\/s.*/\2/p' >> "$out/speed.$side"
  done
done
python3 - "$out/speed.before" "$out/speed.after" <<'EOF'
import statistics, sys
b, a = ([float(x) for x in open(p)] for p in sys.argv[1:3])
print(f"search speed, beam 5, sentences/s: before {statistics.median(b):.1f} {b}, after {statistics.median(a):.1f} {a}, "
      f"after/before {statistics.median(a) / statistics.median(b):.3f}")
EOF
exit $fail
