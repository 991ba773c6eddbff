#!/usr/bin/env bash
# The seeds' use case end to end (issue "Scoring and SMT integration"): a weak system's beam-10
# n-best lists, rescored with a stronger model as one more feature, the weight tuned on dev.
#
#   scripts/rescore-nbest.sh WEAK_MODEL STRONG_MODEL [THREADS=2]
#
# 1. WEAK translates dev (1000 verses) and test (2000) with `--n-best 10 -b 10`; the lists'
#    totals are its length-normalised scores.
# 2. `nmt rescore` adds STRONG's log p(hypothesis | source) (plain, and per token with
#    --normalize) with weights from a grid; each weight's re-ranked 1-best is scored on dev.
# 3. The dev-best (feature, weight) is applied to test. Printed: test BLEU/chrF of WEAK's
#    1-best, of the rescored 1-best, and, for reference, of STRONG's own beam-5 output.
#
# LINES=N uses the first N verses of each set (a quick check). Writes runs/rescore/: {dev,test}.nbest, dev-grid.tsv, results.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
weak=${1:?usage: scripts/rescore-nbest.sh WEAK_MODEL STRONG_MODEL [THREADS]}
strong=${2:?usage: scripts/rescore-nbest.sh WEAK_MODEL STRONG_MODEL [THREADS]}
threads=${3:-2}
cd "$root"
if [ -n "${NMT_BIN:-}" ]; then nmt=$NMT_BIN; else cargo build --release -q -p nmt-cli; nmt=$root/target/release/nmt; fi
out=$root/runs/rescore
mkdir -p "$out"
# The n-best lists are reused only when made by the same weak model from the same verses.
stamp="$weak ${LINES:-all}"
[ "$(cat "$out/nbest.stamp" 2>/dev/null)" = "$stamp" ] || rm -f "$out/dev.nbest" "$out/test.nbest"
for split in dev test; do
  # LINES=N: the first N verses only (a quick check of the script).
  for side in en es; do gzip -dc "data/bible-en-es/$split.$side.gz" | sed -n "1,${LINES:-1000000}p" > "$out/$split.$side"; done
  [ -s "$out/$split.nbest" ] || "$nmt" translate -m "$weak" -b 10 --n-best 10 --threads "$threads" < "$out/$split.en" > "$out/$split.nbest"
done
echo "$stamp" > "$out/nbest.stamp"
bleu() { "$nmt" eval bleu -r "$1" "$2" | sed -nE '1s/^BLEU[^=]*= ([0-9.]+).*/\1/p'; }
printf 'feature\tweight\tdev BLEU\n' > "$out/dev-grid.tsv"
best_score=-1; best_args=""
for feature in plain normalize; do
  flag=(); [ "$feature" = normalize ] && flag=(--normalize)
  for w in 0 0.1 0.25 0.5 1 2 4 8; do
    "$nmt" rescore --nbest "$out/dev.nbest" --src "$out/dev.en" -m "$strong" --threads "$threads" \
      "${flag[@]}" --weight "$w" --best > "$out/dev.best.txt"
    b=$(bleu "$out/dev.es" "$out/dev.best.txt")
    printf '%s\t%s\t%s\n' "$feature" "$w" "$b" >> "$out/dev-grid.tsv"
    if (( $(echo "$b > $best_score" | bc) )); then best_score=$b; best_args="${flag[*]} --weight $w"; fi
  done
done
# shellcheck disable=SC2086
"$nmt" rescore --nbest "$out/test.nbest" --src "$out/test.en" -m "$strong" --threads "$threads" $best_args --best > "$out/test.rescored.es"
"$nmt" rescore --nbest "$out/test.nbest" --src "$out/test.en" -m "$strong" --threads "$threads" --weight 0 --best > "$out/test.weak.es"
"$nmt" translate -m "$strong" -b 5 --threads "$threads" < "$out/test.en" > "$out/test.strong.es"
{
  echo "weak: $weak; strong: $strong; dev-best: $best_args (dev BLEU $best_score)"
  for sys in weak rescored strong; do
    echo "== test, $sys"
    "$nmt" eval bleu -r "$out/test.es" "$out/test.$sys.es"
    "$nmt" eval chrf -r "$out/test.es" "$out/test.$sys.es"
  done
} | tee "$out/results.txt"
