#!/usr/bin/env bash
# nmt against Marian (pymarian, from PyPI) on one machine: both train rnnsearch-small's model for
# the same minutes on the bundled Bible with the same recipe as far as Marian's options reach,
# then beam-5 translation of the 2 000 test verses alternates between seven settings for ROUNDS
# rounds, and the median sentences/s, BLEU and chrF2 (nmt eval: sacreBLEU's) are printed.
#
# usage: scripts/bench-vs-marian.sh [MINUTES=15] [ROUNDS=3] [THREADS=2]
#   NMT=path/to/nmt (default target/release/nmt), WORK=dir (default runs/vs-marian),
#   MARIAN_MINUTES=M gives Marian its own minutes (default MINUTES): Marian trains several
#   times slower than nmt on a CPU, so at equal minutes its model is too weak for its decoder's
#   speed to mean much. A Marian checkpoint already in WORK/marian is continued (Marian restores
#   its optimizer, schedule and corpus position), so a longer run can start from a copy of an
#   earlier WORK without its marian.done, lex.done and decode.done.
# Each stage is skipped when its output exists (delete WORK/*.done to redo one), so a second run
# only times the decoders again.
#
# What each system is given (docs/PERF.md, "Against Marian"; Marian's options are MARIAN_S2S in
# scripts/peers.sh, with the batch and validation options below):
# - both: emb 256, bidirectional GRU encoder 256 per direction, GRU decoder 256, tied target
#   embeddings, 8 000-token subword vocabularies (ours BPE, Marian its built-in SentencePiece),
#   Adam 1e-3, gradient clipping 1, batches of about 2 000 target words, sentences over 50
#   subwords skipped, label smoothing 0.1, learning rate halved after 3 validations without a
#   better dev BLEU, validation every 250 updates with greedy BLEU on the first 300 dev verses,
#   the best checkpoint by that BLEU, THREADS threads, MINUTES of wall time (Marian's from its
#   start, its SentencePiece training included; ours `train.max_minutes`, from its training loop,
#   after a BPE preparation of a few seconds on the Bible).
# - dropout: ours 0.3 on embeddings and the maxout output; Marian's s2s has no such option, its
#   closest is --dropout-rnn 0.3 (variational dropout in the RNNs).
# - decoding: beam 5, length normalisation 1, 32 sentences a batch; Marian sorts a maxi-batch of
#   100 batches by length (its recommended setting; ours sorts the whole input), output at most
#   2 × the source length (ours 2 × + 10).
# - shortlists: ours from `nmt train` (IBM Model 1, k = 20, 100 frequent); Marian's from the same
#   estimator on its own pieces (scripts/marian-lex.py), used as `--shortlist lex 100 20`.
set -euo pipefail
cd "$(dirname "$0")/.."
MIN=${1:-15}
ROUNDS=${2:-3}
THREADS=${3:-2}
MARIAN_MIN=${MARIAN_MINUTES:-$MIN}
NMT=${NMT:-target/release/nmt}
W=${WORK:-runs/vs-marian}
mkdir -p "$W/data" "$W/marian"
[ -x "$NMT" ] || { echo "bench-vs-marian: $NMT not found: cargo build --release -p nmt-cli" >&2; exit 1; }

# shellcheck source=scripts/peers.sh
. scripts/peers.sh
marian_venv "$W/venv"
PM="$W/venv/bin/pymarian"
D="$W/data"
bible_text "$D"

if [ ! -f "$W/nmt.done" ]; then
  echo "== nmt: training $MIN minutes on $THREADS threads"
  "$NMT" train -c configs/rnnsearch-small.toml -m "$W/nmt" --threads "$THREADS" --quiet --set "train.max_minutes=$MIN" 2>&1 | tail -4
  touch "$W/nmt.done"
fi

if [ ! -f "$W/marian.done" ]; then
  echo "== Marian: training $MARIAN_MIN minutes on $THREADS threads"
  # SIGTERM at the limit: Marian saves and exits (--sigterm save-and-exit).
  timeout -s TERM --kill-after=300 "${MARIAN_MIN}m" "$PM" "${MARIAN_S2S[@]}" -m "$W/marian/model.npz" \
    --train-sets "$D/train.en" "$D/train.es" --vocabs "$W/marian/vocab.en.spm" "$W/marian/vocab.es.spm" \
    --mini-batch-words 2000 --mini-batch 80 --valid-freq 250u --valid-sets "$D/dev300.en" "$D/dev300.es" \
    --cpu-threads "$THREADS" --sigterm save-and-exit --disp-freq 100u \
    --log "$W/marian/train.log" --quiet || true
  [ -f "$W/marian/model.npz.best-bleu-detok.npz" ] || { echo "bench-vs-marian: Marian saved no best model (see $W/marian/train.log)" >&2; exit 1; }
  touch "$W/marian.done"
fi

if [ ! -f "$W/lex.done" ]; then
  echo "== Marian's lexical table (IBM Model 1 on its pieces)"
  "$W/venv/bin/python" scripts/marian-lex.py "$W/marian/vocab.en.spm" "$W/marian/vocab.es.spm" "$D/train.en" "$D/train.es" "$W/marian/lex.s2t"
  touch "$W/lex.done"
fi

MM="$W/marian/model.npz.best-bleu-detok.npz"
ours() { "$NMT" translate -m "$W/nmt/model.safetensors" -i "$D/test.en" -o "$1" --threads "$THREADS" "${@:2}" 2>/dev/null; }
marian() {
  "$PM" decode -m "$MM" -v "$W/marian/vocab.en.spm" "$W/marian/vocab.es.spm" -i "$D/test.en" -o "$1" \
    --cpu-threads "$THREADS" --beam-size 5 --normalize 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src \
    --max-length-factor 2 -w 512 --quiet --quiet-translation "${@:2}"
}
# One setting's translation of the test set into $W/NAME.out.
decode() {
  case "$1" in
    ours-f32) ours "$W/$1.out" ;;
    ours-int8) ours "$W/$1.out" --int8 ;;
    ours-shortlist) ours "$W/$1.out" --shortlist ;;
    ours-int8-shortlist) ours "$W/$1.out" --int8 --shortlist ;;
    marian-f32) marian "$W/$1.out" --gemm-type float32 ;;
    marian-packed8) marian "$W/$1.out" --gemm-type packed8 ;;
    marian-packed8-shortlist) marian "$W/$1.out" --gemm-type packed8 --shortlist "$W/marian/lex.s2t" 100 20 ;;
  esac
}
SETTINGS="ours-f32 ours-int8 ours-shortlist ours-int8-shortlist marian-f32 marian-packed8 marian-packed8-shortlist"
if [ ! -f "$W/decode.done" ]; then
  echo "== decoding the 2 000 test verses, beam 5, $ROUNDS rounds, alternating"
  rm -f "$W/times.txt"
  for r in $(seq 1 "$ROUNDS"); do
    for name in $SETTINGS; do
      t0=$(date +%s.%N)
      decode "$name"
      t1=$(date +%s.%N)
      secs=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
      echo "$name $secs" >> "$W/times.txt"
      echo "round $r: $name $secs s"
    done
  done
  touch "$W/decode.done"
fi
n=$(wc -l < "$D/test.en")
{
  echo "| setting ($THREADS threads, beam 5, $n verses) | median s (of $ROUNDS) | sentences/s | output words | BLEU | chrF2 |"
  echo "|---|---|---|---|---|---|"
  for name in $SETTINGS; do
    med=$(grep "^$name " "$W/times.txt" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    # awk reads to the end: `head -1` would end nmt with SIGPIPE, and pipefail this script.
    bleu=$("$NMT" eval bleu -r "$D/test.es" "$W/$name.out" | awk 'NR == 1 {print $3}')
    chrf=$("$NMT" eval chrf -r "$D/test.es" "$W/$name.out" | awk 'NR == 1 {print $3}')
    words=$(wc -w < "$W/$name.out")
    echo "| $name | $med | $(python3 -c "print(f'{$n / $med:.1f}')") | $words | $bleu | $chrf |"
  done
} | tee "$W/results.md"
