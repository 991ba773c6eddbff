# shellcheck shell=bash
# Set-up shared by the scripts that run the peer systems (scripts/bench-vs-marian.sh,
# scripts/bench-vs-joeynmt.sh, scripts/curves-vs-peers.sh); source it, do not run it.
#   bible_text DIR      the bundled Bible as plain text: DIR/{train,dev,test}.{en,es} and the first
#                       300 dev verses, DIR/dev300.{en,es} (what nmt validates on)
#   marian_venv VENV    a venv with pymarian 1.12.42 (Marian from PyPI) and sentencepiece
#   MARIAN_S2S          Marian's s2s model of rnnsearch-small's size with our recipe as far as its
#                       options reach (an array; the batch size and validation frequency are the
#                       caller's); what each option stands for: bench-vs-marian.sh's header
#   MARIAN_S2S_DEFAULTS the same model at Marian's own training defaults
#   joey_venv VENV      a venv with torch and JoeyNMT 2.3.0, patched for current PyTorch
#   joey_spm DIR PY     sentencepiece BPE models of 8 000 pieces per language trained on
#                       DIR/data/train.*, and JoeyNMT's vocabularies, in DIR/spm/
# Each is skipped when its output is already there.

bible_text() {
  local d=$1 root s l
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  mkdir -p "$d"
  for s in train dev test; do
    for l in en es; do
      [ -f "$d/$s.$l" ] || zcat "$root/data/bible-en-es/$s.$l.gz" > "$d/$s.$l"
    done
  done
  for l in en es; do
    [ -f "$d/dev300.$l" ] || head -300 "$d/dev.$l" > "$d/dev300.$l"
  done
}

marian_venv() {
  local v=$1
  [ -f "$v.done" ] && return 0
  python3 -m venv "$v"
  "$v/bin/pip" install -q pymarian==1.12.42 sentencepiece
  touch "$v.done"
}

# shellcheck disable=SC2034  # used by the scripts that source this file
MARIAN_S2S=(
  --type s2s --dim-vocabs 8000 8000 --dim-emb 256 --dim-rnn 256 --enc-type bidirectional --enc-cell gru
  --dec-cell gru --tied-embeddings --dropout-rnn 0.3 --label-smoothing 0.1
  --optimizer adam --learn-rate 0.001 --clip-norm 1 --max-length 50
  --valid-metrics bleu-detok ce-mean-words --valid-mini-batch 32 --beam-size 1 --normalize 1 --valid-max-length 100
  --lr-decay 0.5 --lr-decay-strategy stalled --lr-decay-start 3 --early-stopping 12 --keep-best
  --workspace 2048 --seed 1
)

# Marian's s2s of the same size at Marian's own training defaults (optimizer adam, learn-rate 1e-4,
# clip-norm 1, no dropout, no label smoothing, untied embeddings, no decay): what a Marian user
# gets without a recipe. Validation as MARIAN_S2S, so both are scored alike.
MARIAN_S2S_DEFAULTS=(
  --type s2s --dim-vocabs 8000 8000 --dim-emb 256 --dim-rnn 256 --enc-type bidirectional --enc-cell gru
  --dec-cell gru --max-length 50
  --valid-metrics bleu-detok ce-mean-words --valid-mini-batch 32 --beam-size 1 --normalize 1 --valid-max-length 100
  --workspace 2048 --seed 1
)

joey_venv() {
  local v=$1 builders
  if ! "$v/bin/python" -c "import joeynmt, torch" 2>/dev/null; then
    python3 -m venv "$v"
    "$v/bin/pip" install -q --upgrade pip
    "$v/bin/pip" install -q torch   # the default package index only
    # joeynmt 2.3.0 imports importlib_metadata without requiring it, and calls
    # SentencePieceProcessor.SetVocabulary, which sentencepiece 0.2.3 dropped.
    "$v/bin/pip" install -q joeynmt==2.3.0 importlib_metadata "sentencepiece==0.2.1"
  fi
  # JoeyNMT 2.3.0 builds ReduceLROnPlateau(..., verbose=False); PyTorch 2.4+ removed `verbose`
  # (TypeError at start). Remove that one argument from the installed copy.
  builders=$("$v/bin/python" -c "import joeynmt.builders as b; print(b.__file__)")
  sed -i '/"verbose": False,/d' "$builders"
}

joey_spm() {
  local d=$1 py=$2 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  [ -f "$d/spm/spm.es.model" ] && return 0
  mkdir -p "$d/spm"
  (cd "$d" && OMP_NUM_THREADS=1 "$py" "$here/joeynmt/prep_spm.py" 8000)
}
