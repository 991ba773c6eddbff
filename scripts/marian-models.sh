#!/usr/bin/env bash
# Marian's models run by nmt: trains Marian models (pymarian 1.12.42 from PyPI) on the bundled
# Bible, converts them (`nmt convert --from marian`), and checks on the test verses that nmt
# translates as Marian does (greedy and beam 5, line for line) and scores as `marian-scorer`
# does (per sentence); then times both decoders alternately, beam 5.
#
# usage: scripts/marian-models.sh [MINUTES=20] [ROUNDS=3] [THREADS=2] [MODELS="s2s s2s-words amun s2s-ln"]
#   NMT=path/to/nmt (default target/release/nmt), WORK=dir (default runs/marian-models),
#   LINES=N: check and time on the first N test verses (default all 2 000); NO_TIMING=1: check only;
#   NMT_BATCHES: the sentences per batch nmt is timed with (default "32 128": its default, and
#   what is fastest on this model; Marian's best is its recommended 32 sentences: 16 is as fast
#   and 128 about 30 % slower, measured 2026-11-26 on 500 verses).
#   MODELS: s2s (SentencePiece vocabularies), s2s-words (Marian's .yml word vocabularies),
#   amun (--type amun: the Nematus architecture, s2s under Nematus' names), s2s-ln (with
#   --layer-normalization: nmt's model.layer_norm).
#   TINY=DIR: instead, a tiny s2s model (emb 16, GRU 16, 500 pieces, MINUTES of training) and
#   its Marian outputs on the first 100 test verses, written into DIR (the CI test's data,
#   crates/nmt-cli/tests/data/marian-tiny).
#
# Equal output needs equal search settings. Marian caps a translation at --max-length-factor ×
# the longest source of its mini-batch (with `</s>`); nmt caps each sentence by its own source,
# so the equality runs give Marian one sentence per mini-batch; the timed runs use Marian's
# recommended batching (32 sentences, a maxi-batch of 100 sorted by length). Both: Marian's
# defaults otherwise (no <unk> in the output, max-length-factor 3), normalisation as stated.
# Stages are skipped when their output exists (delete WORK/NAME/*.done to redo one).
set -euo pipefail
cd "$(dirname "$0")/.."
MIN=${1:-20}
ROUNDS=${2:-3}
THREADS=${3:-2}
MODELS=${4:-s2s s2s-words amun s2s-ln}
NMT=${NMT:-target/release/nmt}
W=${WORK:-runs/marian-models}
LINES=${LINES:-2000}
NMT_BATCHES=${NMT_BATCHES:-32 128}
[ -x "$NMT" ] || { echo "marian-models: $NMT not found: cargo build --release -p nmt-cli" >&2; exit 1; }
mkdir -p "$W"
# shellcheck source=scripts/peers.sh
. scripts/peers.sh
marian_venv "$W/venv"
PM="$W/venv/bin/pymarian"
D="$W/data"
bible_text "$D"
head -n "$LINES" "$D/test.en" > "$D/check.en"
head -n "$LINES" "$D/test.es" > "$D/check.es"

# train NAME MINUTES VOCAB_EXT OPTIONS...: a Marian model in $W/NAME (continued if one is there).
train() {
  local name=$1 min=$2 ext=$3
  shift 3
  local m="$W/$name"
  mkdir -p "$m"
  [ -f "$m/train.done" ] && return 0
  echo "== $name: Marian trains $min minutes"
  timeout -s TERM --kill-after=300 "${min}m" "$PM" "$@" -m "$m/model.npz" \
    --train-sets "$D/train.en" "$D/train.es" --vocabs "$m/vocab.en.$ext" "$m/vocab.es.$ext" \
    --mini-batch-words 2000 --mini-batch 80 --valid-freq 500u --valid-sets "$D/dev300.en" "$D/dev300.es" \
    --cpu-threads "$THREADS" --sigterm save-and-exit --disp-freq 100u --log "$m/train.log" --quiet || true
  [ -f "$m/model.npz" ] || { echo "marian-models: Marian saved no model (see $m/train.log)" >&2; exit 1; }
  touch "$m/train.done"
}

# marian NAME OUT OPTIONS...: Marian's translation of check.en.
marian() {
  local m="$W/$1" out=$2
  shift 2
  "$PM" decode -m "$m/model.npz" -v "$m/vocab.en.$EXT" "$m/vocab.es.$EXT" -i "$D/check.en" -o "$out" \
    --cpu-threads "$THREADS" -w 512 --quiet --quiet-translation "$@"
}
ours() {
  local m="$W/$1" out=$2
  shift 2
  "$NMT" translate -m "$m/nmt.safetensors" -i "$D/check.en" -o "$out" --threads "$THREADS" "$@" 2>/dev/null
}
# same A B: "K/N identical (P %)" for two translations, line by line.
same() { python3 -c '
import sys
a = open(sys.argv[1]).read().splitlines(); b = open(sys.argv[2]).read().splitlines()
k = sum(x == y for x, y in zip(a, b)); print(f"{k}/{len(a)} identical ({100 * k / max(len(a), 1):.2f} %)")
' "$1" "$2"; }

check() {   # check NAME: convert, compare, score
  local name=$1 m="$W/$1"
  echo "== $name: nmt convert"
  if ! "$NMT" convert --from marian "$m/model.npz" --vocabs "$m/vocab.en.$EXT" "$m/vocab.es.$EXT" -o "$m/nmt.safetensors" 2> "$m/convert.log"; then
    echo "!! $name: nmt refuses this model: $(tail -1 "$m/convert.log")"
    return 1
  fi
  for s in "greedy:-b 1:--beam-size 1" "beam5-n0:-b 5 --normalize 0:--beam-size 5 --normalize 0" "beam5-n1:-b 5 --normalize 1:--beam-size 5 --normalize 1"; do
    IFS=: read -r tag ourflags theirflags <<< "$s"
    # shellcheck disable=SC2086
    # A kept output is reused only when whole (a killed run leaves a short file).
    [ -f "$m/marian.$tag" ] && [ "$(wc -l < "$m/marian.$tag")" = "$LINES" ] || marian "$name" "$m/marian.$tag" --mini-batch 1 $theirflags
    # shellcheck disable=SC2086
    ours "$name" "$m/nmt.$tag" $ourflags
    echo "$name $tag: $(same "$m/marian.$tag" "$m/nmt.$tag")"
  done
  [ -f "$m/marian.scores" ] && [ "$(wc -l < "$m/marian.scores")" = "$LINES" ] || "$PM" score -m "$m/model.npz" -v "$m/vocab.en.$EXT" "$m/vocab.es.$EXT" \
    -t "$D/check.en" "$D/check.es" --cpu-threads "$THREADS" -w 512 --quiet > "$m/marian.scores"
  "$NMT" score -m "$m/nmt.safetensors" --src "$D/check.en" --tgt "$D/check.es" --threads "$THREADS" > "$m/nmt.scores"
  paste "$m/marian.scores" "$m/nmt.scores" | awk -v n="$name" '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; if (d > 1e-4) c++}
    END {printf "%s scores: max |marian-scorer - nmt score| = %.2e over %d sentences, %d above 1e-4\n", n, m, NR, c}'
}

if [ -n "${TINY:-}" ]; then
  EXT=spm
  train tiny "$MIN" spm --type s2s --dim-vocabs 500 500 --dim-emb 16 --dim-rnn 16 --tied-embeddings \
    --learn-rate 0.003 --max-length 50 --seed 1 --workspace 512
  head -100 "$D/test.en" > "$D/check.en"
  head -100 "$D/test.es" > "$D/check.es"
  mkdir -p "$TINY"
  cp "$W/tiny/model.npz" "$W/tiny/vocab.en.spm" "$W/tiny/vocab.es.spm" "$TINY/"
  cp "$D/check.en" "$TINY/src.en"
  cp "$D/check.es" "$TINY/ref.es"
  marian tiny "$TINY/greedy.es" --mini-batch 1 --beam-size 1
  marian tiny "$TINY/beam5.es" --mini-batch 1 --beam-size 5 --normalize 1
  "$PM" score -m "$W/tiny/model.npz" -v "$W/tiny/vocab.en.spm" "$W/tiny/vocab.es.spm" -t "$D/check.en" "$D/check.es" \
    --cpu-threads 1 -w 512 --quiet > "$TINY/scores.txt"
  ls -l "$TINY"
  exit 0
fi

for name in $MODELS; do
  case "$name" in
    s2s) EXT=spm; train s2s "$MIN" spm "${MARIAN_S2S[@]}" ;;
    s2s-words) EXT=yml; train s2s-words "$MIN" yml "${MARIAN_S2S[@]}" ;;
    s2s-ln) EXT=spm; train s2s-ln "$MIN" spm "${MARIAN_S2S[@]}" --layer-normalization ;;
    amun) EXT=spm; train amun "$MIN" spm "${MARIAN_S2S[@]/s2s/amun}" ;;
    *) echo "marian-models: unknown model $name" >&2; exit 1 ;;
  esac
  check "$name" || continue
  [ -n "${NO_TIMING:-}" ] && continue
  m="$W/$name"
  echo "== $name: beam 5, normalize 1, $THREADS threads, $LINES verses, $ROUNDS rounds alternating"
  [ -f "$m/lex.s2t" ] || { [ "$EXT" = spm ] && "$W/venv/bin/python" scripts/marian-lex.py "$m/vocab.en.spm" "$m/vocab.es.spm" \
    "$D/train.en" "$D/train.es" "$m/lex.s2t"; } || true
  cp "$m/nmt.safetensors" "$m/nmt-sl.safetensors"
  "$NMT" shortlist -m "$m/nmt-sl.safetensors" --src "$D/train.en" --tgt "$D/train.es" 2>/dev/null
  rm -f "$m/times.txt"
  NMT_SETTINGS=""
  for b in $NMT_BATCHES; do NMT_SETTINGS="$NMT_SETTINGS nmt-f32-b$b nmt-int8-shortlist-b$b"; done
  for r in $(seq 1 "$ROUNDS"); do
    for s in $NMT_SETTINGS marian-f32 marian-packed8 marian-packed8-shortlist marian-packed16-shortlist; do
      t0=$(date +%s.%N)
      # A run that fails (Marian's packed8 once aborted mid-file) is reported and not timed.
      if ! case $s in
        nmt-f32-b*) ours "$name" "$m/$s.out" -b 5 --normalize 1 --batch-size "${s#nmt-f32-b}" ;;
        nmt-int8-shortlist-b*) "$NMT" translate -m "$m/nmt-sl.safetensors" -i "$D/check.en" -o "$m/$s.out" --threads "$THREADS" \
          -b 5 --normalize 1 --int8 --shortlist --batch-size "${s#nmt-int8-shortlist-b}" 2>/dev/null ;;
        marian-f32) marian "$name" "$m/$s.out" --beam-size 5 --normalize 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --gemm-type float32 ;;
        marian-packed8) marian "$name" "$m/$s.out" --beam-size 5 --normalize 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --gemm-type packed8 ;;
        marian-packed8-shortlist) [ -f "$m/lex.s2t" ] || continue
          marian "$name" "$m/$s.out" --beam-size 5 --normalize 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src \
            --gemm-type packed8 --shortlist "$m/lex.s2t" 100 20 ;;
        marian-packed16-shortlist) [ -f "$m/lex.s2t" ] || continue
          marian "$name" "$m/$s.out" --beam-size 5 --normalize 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src \
            --gemm-type packed16 --shortlist "$m/lex.s2t" 100 20 ;;
      esac; then
        echo "!! $name $s failed in round $r: not timed" >&2
        continue
      fi
      t1=$(date +%s.%N)
      echo "$s $(python3 -c "print(f'{$t1 - $t0:.2f}')")" >> "$m/times.txt"
    done
  done
  echo "| $name: setting | median s | sentences/s | BLEU | chrF2 |"
  echo "|---|---|---|---|---|"
  for s in $NMT_SETTINGS marian-f32 marian-packed8 marian-packed8-shortlist marian-packed16-shortlist; do
    grep -q "^$s " "$m/times.txt" || continue
    med=$(grep "^$s " "$m/times.txt" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    bleu=$("$NMT" eval bleu -r "$D/check.es" "$m/$s.out" | awk 'NR == 1 {print $3}')
    chrf=$("$NMT" eval chrf -r "$D/check.es" "$m/$s.out" | awk 'NR == 1 {print $3}')
    echo "| $s | $med | $(python3 -c "print(f'{$LINES / $med:.1f}')") | $bleu | $chrf |"
  done
done
