#!/usr/bin/env bash
# Ablation of the small-data training recipe on the dev set: each arm is the shipped
# configs/rnnsearch-small.toml with one part switched off (or one added), trained for the same
# number of updates, PARALLEL arms at a time on $THREADS threads each (default 1). Each arm's
# best checkpoint (by greedy dev BLEU on 300 verses during training) is then scored on all 1000
# dev verses with beam 5: sacreBLEU-identical BLEU and chrF.
#
#   scripts/ablation.sh [UPDATES] [PARALLEL] [ARM...]    (defaults: 11000 updates, 2 at a time, all arms)
#
# The horizon is a number of updates, not minutes, so that an arm's result does not depend on
# what else the machine was doing: 11 000 updates is what the shipped recipe reaches in its
# 60 minutes on 2 threads (docs/RESULTS.md). An arm that was stopped (end of a session, kill)
# resumes from its last checkpoint when the same command runs again, and a finished arm is not
# trained again (its directory holds `done`); training is deterministic, so a resumed arm
# computes what an uninterrupted one would have.
#
# Writes runs/ablation/ARM/ (model dirs and dev translations) and runs/ablation/results.tsv.
set -euo pipefail
# shellcheck source=scripts/jobs.sh
. "$(dirname "$0")/jobs.sh"
root=${NMT_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
updates=${1:-11000}
threads=${THREADS:-1}
parallel=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
cd "$root"
# NMT_BIN: a fixed binary, so that arms trained across sessions run the same code while the
# tree moves on (the arms are only comparable if the training maths is the same).
if [ -n "${NMT_BIN:-}" ]; then
  nmt=$NMT_BIN
else
  cargo build --release -q -p nmt-cli
  nmt=$root/target/release/nmt
fi
out=$root/runs/ablation
mkdir -p "$out"
config=configs/rnnsearch-small.toml

# Marian's s2s against the shipped recipe: the conditional decoder on s_i, Glorot, recurrent
# dropout only; s2s_full adds unit-norm updates and the mean start (configs/rnnsearch-s2s.toml
# with Adam at 1e-3).
s2s="model.decoder=conditional model.output_state=current model.init=glorot model.dropout=0 model.recurrent_dropout=0.3"
s2s_full="$s2s train.normalize_updates=true model.decoder_start=mean"
# name → overrides of the shipped recipe.
declare -A arms=(
  [recipe]=""
  [none]="model.dropout=0 train.src_word_dropout=0 train.tgt_word_dropout=0 train.label_smoothing=0 model.tie_target_embeddings=false"
  [no-unit-dropout]="model.dropout=0"
  [no-word-dropout]="train.src_word_dropout=0 train.tgt_word_dropout=0"
  [no-label-smoothing]="train.label_smoothing=0"
  [untied]="model.tie_target_embeddings=false"
  [recurrent-0.2]="model.recurrent_dropout=0.2"
  [unit-dropout-0.2]="model.dropout=0.2"
  # Issue 40 ("Learn as much from each update"), one part of Marian's s2s at a time, then all:
  #   scripts/ablation.sh 1500 3 recipe glorot rnn-dropout output-current conditional mean-start unit-norm s2s s2s-full
  [glorot]="model.init=glorot"
  [rnn-dropout]="model.dropout=0 model.recurrent_dropout=0.3"
  [output-current]="model.output_state=current"
  [conditional]="model.decoder=conditional model.output_state=current"
  [mean-start]="model.decoder_start=mean"
  [unit-norm]="train.normalize_updates=true"
  [s2s]="$s2s"
  [s2s-full]="$s2s_full"
  # Marian's output layer, and a larger learning rate with warm-up, on top of s2s-full:
  #   scripts/ablation.sh 1500 2 s2s-tanh s2s-lr2e-3
  [s2s-tanh]="$s2s_full model.output_layer=tanh"
  [s2s-lr2e-3]="$s2s_full train.lr=0.002 train.warmup=500"
)
order=(recipe none no-unit-dropout no-word-dropout no-label-smoothing untied recurrent-0.2 unit-dropout-0.2)
[ $# -gt 0 ] && order=("$@")

gzip -dc data/bible-en-es/dev.en.gz > "$out/dev.en"
gzip -dc data/bible-en-es/dev.es.gz > "$out/dev.es"

train_arm() {
  local name=$1 dir=$out/$1 sets=()
  for kv in ${arms[$1]}; do sets+=(--set "$kv"); done
  [ -f "$dir/done" ] && return 0
  "$nmt" train -c "$config" -m "$dir" --threads "$threads" --quiet --set train.max_steps="$updates" \
    --set train.max_minutes=0 --set train.patience=0 "${sets[@]}" >> "$out/$name.log" 2>&1
  "$nmt" translate -m "$dir/model.safetensors" -b 5 --threads "$threads" < "$out/dev.en" > "$dir/dev.b5.es"
  touch "$dir/done"
}

for name in "${order[@]}"; do
  [ -n "${arms[$name]+x}" ] || { echo "unknown arm $name" >&2; exit 2; }
done
run_parallel "$parallel" train_arm "${order[@]}"

printf "arm\tupdates\tbest greedy dev BLEU (300)\tdev BLEU beam 5 (1000)\tdev chrF\toverrides\n" | tee "$out/results.tsv"
for name in "${order[@]}"; do
  dir=$out/$name
  # (A heredoc inside `< <(…)` is parsed wrongly by bash 5 when its code has parentheses:
  # the first run of this table died on it, so the log is read by a one-line program.)
  read -r updates best < <(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; s=[x["step"] for x in r if "step" in x]; b=[x["dev_bleu"] for x in r if x.get("dev_bleu") is not None]; print(max(s) if s else 0, "%.2f" % max(b) if b else "-")' "$dir/train_log.jsonl")
  bleu=$("$nmt" eval bleu -r "$out/dev.es" "$dir/dev.b5.es" | grep -o 'BLEU = [0-9.]*' | cut -d' ' -f3)
  chrf=$("$nmt" eval chrf -r "$out/dev.es" "$dir/dev.b5.es" | grep -o 'chrF2 = [0-9.]*' | cut -d' ' -f3)
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$name" "$updates" "$best" "$bleu" "$chrf" "${arms[$name]:-(shipped)}" | tee -a "$out/results.tsv"
done
