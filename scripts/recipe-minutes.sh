#!/usr/bin/env bash
# One recipe trained for a fixed number of minutes (issue 75): the shipped
# configs/rnnsearch-s2s.toml as it was before issue 75 (warm-up 500, the full softmax, pairs up to
# 50 subwords) with the demo's short-run changes (no unit dropout, dev BLEU on 300 verses), plus
# the given overrides, then beam 5 on all 2000 test verses of the best model. With no override it
# is the demo before issue 75; `nmt demo` now adds `--set train.warmup=100
# --set train.candidates.frequent=100 --set train.candidates.sampled=1000`, and the hour's recipe
# is `--set model.dropout=0.3 --set train.valid_bleu_sentences=1000 --set data.max_len=80` with them.
# Prints one line: name, threads, updates, mean of the last three dev BLEUs, test BLEU, chrF2.
#
#   scripts/recipe-minutes.sh NAME OUT_DIR MINUTES THREADS [--set KEY=VALUE ...]
#
# Two runs at --threads 1 may go side by side (one core each, the same conditions for both);
# at --threads 2 run one at a time on a quiet machine. The log of each run is OUT_DIR/NAME/.
# KEEP_AVG=1 keeps model.avg.safetensors (the mean of the last validations' weights, `average_last`)
# for scoring apart; by default it is deleted with the other large files. KEEP_MODEL=1 keeps the
# best model (model.safetensors, 27 MB) and the test translations (test.hyp.es); by default they
# are deleted once scored, so that the folder is a log to commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: recipe-minutes.sh NAME OUT_DIR MINUTES THREADS [--set K=V ...]}
out=${2:?} minutes=${3:?} threads=${4:?}
shift 4
nmt=${NMT:-$root/target/release/nmt}
dir=$out/$name
[ ! -e "$dir" ] || { echo "recipe-minutes: $dir exists; give a new name" >&2; exit 1; }
mkdir -p "$dir"
"$nmt" train -c "$root/configs/rnnsearch-s2s.toml" -m "$dir" --threads "$threads" --quiet \
  --set model.dropout=0.0 --set train.valid_bleu_sentences=300 --set train.log_every=10 \
  --set train.warmup=500 --set train.candidates=false --set data.max_len=50 \
  --set train.max_minutes="$minutes" --set train.shortlist=false "$@" > "$dir/train.txt" 2>&1
data=$root/data/bible-en-es
gzip -dc "$data/test.en.gz" > "$dir/test.en"
gzip -dc "$data/test.es.gz" > "$dir/test.es"
"$nmt" translate -m "$dir/model.safetensors" -b 5 --threads "$threads" < "$dir/test.en" > "$dir/test.hyp.es"
bleu=$("$nmt" eval bleu -r "$dir/test.es" "$dir/test.hyp.es" | tee "$dir/test.bleu.txt" | grep -o 'BLEU = [0-9.]*' | head -1 | cut -d' ' -f3)
chrf=$("$nmt" eval chrf -r "$dir/test.es" "$dir/test.hyp.es" | tee "$dir/test.chrf.txt" | grep -o 'chrF2 = [0-9.]*' | head -1 | cut -d' ' -f3)
rm -f "$dir/test.en" "$dir/test.es" "$dir"/checkpoint.safetensors
[ "${KEEP_AVG:-0}" = 1 ] || rm -f "$dir"/model.avg.safetensors
[ "${KEEP_MODEL:-0}" = 1 ] || rm -f "$dir"/model.safetensors "$dir"/test.hyp.es
rm -rf "$dir/data" "$dir/snapshots"
python3 - "$dir" "$name" "$threads" "$bleu" "$chrf" <<'EOF'
import json, sys
d, name, threads, bleu, chrf = sys.argv[1:]
recs = [json.loads(l) for l in open(f"{d}/train_log.jsonl")]
valid = [r for r in recs if "dev_bleu" in r]
steps = max((r["step"] for r in recs), default=0)
last3 = [r["dev_bleu"] for r in valid[-3:]]
cands = [r["candidates"] for r in recs if r.get("candidates")]
mean_c = f"{sum(cands) / len(cands):.0f}" if cands else "-"
print(f"{name}\tthreads={threads}\tupdates={steps}\tdev_last3={sum(last3) / max(len(last3), 1):.2f}\ttest_bleu={bleu}\tchrf2={chrf}\tmean_candidates={mean_c}")
EOF
