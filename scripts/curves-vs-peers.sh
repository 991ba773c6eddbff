#!/usr/bin/env bash
# Dev-BLEU curves at equal updates: nmt, Marian and JoeyNMT trained for the same number of updates
# on the bundled Bible, the same model size and batches of the same number of target tokens, each
# validation's greedy output scored by one scorer (issue 40, "Curves at equal updates").
#
#   scripts/curves-vs-peers.sh UPDATES [ARM...]
#     ARMs, in this order by default: marian marian-defaults joey-defaults joey-recipe nmt-small nmt-s2s
#   env: VALID_EVERY (250), WORK (runs/curves), NMT (target/release/nmt), THREADS (1 per system),
#        PARALLEL (1: arms one at a time; 2: two at a time), MARIAN_WORDS (1650), JOEY_TOKENS
#        (2900), JOEY_VENV (~/.cache/nmt-joeynmt-venv), IMG (docs/img/curves-vs-peers.svg),
#        PLOT_MINUTES=1 adds a panel against wall minutes (only meaningful for a quiet run),
#        REUSE_NMT_SMALL / REUSE_NMT_S2S = a train_log.jsonl to take instead of training that arm.
#   smoke test: VALID_EVERY=20 WORK=runs/curves-smoke IMG=runs/curves-smoke/curves.svg \
#               scripts/curves-vs-peers.sh 40
#
# A fresh clone has none of the arms (runs/ is not kept; JoeyNMT takes hours per arm): lay the kept
# logs out first with `scripts/curves-restore.sh docs/logs/curves-vs-peers-2026-11-26`, then name
# only the arms to train, and the table and picture are redrawn with every arm.
#
# Each arm is trained in WORK/ARM and marked WORK/ARM.done when it reached UPDATES; run the same
# command again after a kill and each unfinished arm goes on from its last checkpoint (nmt and
# Marian exactly: they restore their corpus position; JoeyNMT restarts the epoch's batch order,
# see scripts/joeynmt/train_updates.py). Delete WORK/ARM.done and WORK/ARM to redo an arm. At the
# end (and after every arm) the table WORK/curves.tsv, WORK/curves.md and the picture IMG are made
# from whatever has been trained so far (scripts/curves-report.py, matplotlib from JoeyNMT's venv:
# `nmt plot curves` draws one nmt log, and the peers' logs are parsed in Python anyway).
#
# What every system gets: the Bible's train split (data/bible-en-es), its own 8 000-piece subword
# model per side (nmt BPE; JoeyNMT sentencepiece BPE, scripts/joeynmt/prep_spm.py; Marian its
# built-in SentencePiece), pairs over 50 subwords skipped, embeddings 256, a bidirectional GRU
# encoder of 256 per direction, a GRU decoder of 256 with attention, Adam at 1e-3 (nmt-s2s: its
# config's 2e-3 after a 500-update warm-up), gradient norm
# clipped at 1, THREADS threads, a validation every VALID_EVERY updates that decodes the first 300
# dev verses greedily (beam 1) and writes the output; that output is scored here by `nmt eval
# bleu` (sacreBLEU-identical: 13a, mixed case), not by the system's own BLEU.
# - nmt-small: configs/rnnsearch-small.toml (Bahdanau decoder, dropout 0.3 on embeddings and
#   maxout, label smoothing 0.1, tied output), nmt-s2s: configs/rnnsearch-s2s.toml (conditional
#   GRU decoder, Glorot, recurrent dropout 0.3, unit-norm updates, Adam 2e-3 with warm-up); both
#   with batches of
#   max_tokens = 2000 (padded to max(source, target) length) and 80 sentences, train.max_steps =
#   UPDATES, no time limit, no patience stop, no averaging or shortlist. dev_bleu in their
#   train_log.jsonl already is this scorer on these 300 verses (valid_bleu_sentences = 300,
#   valid_beam_size = 1, set here too), so their output is not written out.
# - marian: `pymarian --type s2s` with scripts/peers.sh's MARIAN_S2S, bench-vs-marian's recipe
#   (tied embeddings, --dropout-rnn 0.3, label smoothing 0.1, learning rate halved after 3 stalled
#   validations by dev BLEU), --mini-batch-words MARIAN_WORDS and at most 80 sentences, --after
#   UPDATESu; a checkpoint every validation (--save-freq), so a killed run goes on from there.
#   Its greedy dev output: --valid-translation-output WORK/marian/valid/{U}.hyp (Marian fills in
#   the update), detokenised by its SentencePiece.
# - marian-defaults: `pymarian --type s2s` at Marian's own training defaults (scripts/peers.sh's
#   MARIAN_S2S_DEFAULTS): only the model's size, the vocabularies, the length filter and the
#   validation are given; Adam at Marian's default 1e-4, no dropout, no label smoothing, untied
#   embeddings, --clip-norm 1 (its default), no learning-rate decay. Same batches as marian.
# - joey-defaults: scripts/joeynmt/config-defaults.yaml (JoeyNMT 2.3.0 at its defaults: no
#   dropout, no label smoothing, untied output layer, constant learning rate); joey-recipe:
#   scripts/joeynmt/config.yaml (our recipe). Both: JoeyNMT's Bahdanau GRU decoder with input
#   feeding, token batches of JOEY_TOKENS (JoeyNMT counts max(source, target + 1) × sentences,
#   padding included, and batches sentences in random order, no length buckets), the first 300
#   dev verses, its greedy validation output (STEP.hyps) copied by scripts/joeynmt/train_updates.py.
# Batch sizes: the options differ because each system counts its budget differently; MARIAN_WORDS
# and JOEY_TOKENS are set so that the measured average of target tokens per update (</s>
# included, padding not) matches nmt's within a few per cent. The table prints each system's
# measured average: nmt from its log's tokens per second × seconds per log line; Marian from its
# log's count of target labels seen; JoeyNMT from its own count of target tokens seen. Tokens are
# each system's own subwords, so equal counts are nearly, not exactly, the same text. Measured
# (docs/logs/curves-vs-peers-smoke-2026-11-26.txt, first 40 updates): nmt 1 646 and 1 647 (over
# 1 500 updates, docs/logs/ablation-1500: 1 647; not the 1 720 once quoted), Marian 1 631 with
# --mini-batch-words 1650, JoeyNMT 1 662 and 1 667 with 2900 (over a whole epoch of its random
# batches about 1 640, by its sampler's rule applied to its sentencepiece lengths).
# Minutes are wall time on whatever else ran beside: not a speed comparison unless run quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
U=${1:?usage: scripts/curves-vs-peers.sh UPDATES [ARM...]}
shift
V=${VALID_EVERY:-250}
W=${WORK:-runs/curves}
NMT=${NMT:-target/release/nmt}
T=${THREADS:-1}
MARIAN_WORDS=${MARIAN_WORDS:-1650}
JOEY_TOKENS=${JOEY_TOKENS:-2900}
JV=${JOEY_VENV:-$HOME/.cache/nmt-joeynmt-venv}
IMG=${IMG:-docs/img/curves-vs-peers.svg}
ARMS=("$@")
[ ${#ARMS[@]} -gt 0 ] || ARMS=(marian marian-defaults joey-defaults joey-recipe nmt-small nmt-s2s)
[ -x "$NMT" ] || { echo "curves-vs-peers: $NMT not found: cargo build --release -p nmt-cli" >&2; exit 1; }
NMT=$(realpath "$NMT")
root=$(pwd)

# shellcheck source=scripts/peers.sh
. scripts/peers.sh
# shellcheck source=scripts/jobs.sh
. scripts/jobs.sh
bible_text "$W/data"
marian_venv "$W/venv-marian"
joey_venv "$JV"
joey_spm "$W" "$JV/bin/python"
export OMP_NUM_THREADS=$T MKL_NUM_THREADS=$T

nmt_arm() {   # nmt_arm ARM CONFIG REUSE_LOG
  local d=$W/$1 log=50
  echo "$2, max_tokens 2000, 80 sentences" > "$d.given"
  if [ -n "$3" ]; then
    echo "== $1: the log $3, not trained here"
    echo "$2 (the log $3), max_tokens 2000, 80 sentences" > "$d.given"
    mkdir -p "$d"
    cp "$3" "$d/train_log.jsonl"
    return
  fi
  (( V % log == 0 )) || log=$V   # a log line at every validation: tokens seen are summed per line
  echo "== $1: $2, $U updates"
  "$NMT" train -c "$2" -m "$d" --threads "$T" --quiet --set "train.max_steps=$U" --set train.max_minutes=0 \
    --set "train.valid_every=$V" --set "train.log_every=$log" --set train.valid_bleu_sentences=300 \
    --set train.valid_beam_size=1 --set train.patience=0 --set train.average_last=0 --set train.shortlist=false \
    > "$d.out" 2>&1
}

marian_arm() {   # marian_arm ARM WHAT OPTION...
  local a=$1 d=$W/$1
  mkdir -p "$d/valid"
  echo "$2; --mini-batch-words $MARIAN_WORDS, --mini-batch 80" > "$d.given"
  shift 2
  echo "== $a: s2s, $U updates"
  "$W/venv-marian/bin/pymarian" "$@" -m "$d/model.npz" \
    --train-sets "$W/data/train.en" "$W/data/train.es" --vocabs "$d/vocab.en.spm" "$d/vocab.es.spm" \
    --mini-batch-words "$MARIAN_WORDS" --mini-batch 80 --after "${U}u" \
    --valid-freq "${V}u" --save-freq "${V}u" --disp-freq "${V}u" --overwrite \
    --valid-sets "$W/data/dev300.en" "$W/data/dev300.es" --valid-translation-output "$d/valid/{U}.hyp" \
    --quiet-translation --cpu-threads "$T" --sigterm save-and-exit --log "$d/train.log" --quiet > "$d.out" 2>&1
  [ -f "$d/valid/$U.hyp" ] || { echo "curves-vs-peers: Marian has no output at update $U (see $d/train.log)" >&2; return 1; }
}

joey_arm() {   # joey_arm ARM CONFIG WHAT
  echo "$3 ($2); token batches of $JOEY_TOKENS" > "$W/$1.given"
  echo "== $1: $2, $U updates"
  (cd "$W" && "$JV/bin/python" "$root/scripts/joeynmt/train_updates.py" "$root/$2" "$1" "$U" "$V" \
    "$JOEY_TOKENS" data/dev300 > "$1.out" 2>&1)
  [ -f "$W/$1/valid/$U.hyp" ] || { echo "curves-vs-peers: JoeyNMT has no output at update $U (see $W/$1/model/train.log)" >&2; return 1; }
}

arm() {
  [ -f "$W/$1.done" ] && { echo "== $1: done before"; return; }
  case "$1" in
    marian) marian_arm marian "bench-vs-marian's recipe: tied, --dropout-rnn 0.3, label smoothing 0.1, Adam 1e-3, halved after 3 stalled validations" "${MARIAN_S2S[@]}" ;;
    marian-defaults) marian_arm marian-defaults "Marian's training defaults: Adam 1e-4, clip-norm 1, no dropout, no label smoothing, untied" "${MARIAN_S2S_DEFAULTS[@]}" ;;
    joey-defaults) joey_arm "$1" scripts/joeynmt/config-defaults.yaml "JoeyNMT's defaults" ;;
    joey-recipe) joey_arm "$1" scripts/joeynmt/config.yaml "our recipe" ;;
    nmt-small) nmt_arm "$1" configs/rnnsearch-small.toml "${REUSE_NMT_SMALL:-}" ;;
    nmt-s2s) nmt_arm "$1" configs/rnnsearch-s2s.toml "${REUSE_NMT_S2S:-}" ;;
    *) echo "curves-vs-peers: unknown arm $1" >&2; return 1 ;;
  esac
  touch "$W/$1.done"
  report > /dev/null   # the table so far; printed at the end
}

report() {
  "$JV/bin/python" scripts/curves-report.py "$W" "$NMT" "$IMG" ${PLOT_MINUTES:+--minutes}
}

run_parallel "${PARALLEL:-1}" arm "${ARMS[@]}"
report
