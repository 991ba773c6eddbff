#!/usr/bin/env bash
# Beam-5 (or greedy) translation of the bundled 2000-sentence test set by `nmt translate` and by
# JoeyNMT 2.3.0 with a model of the same size, alternating, same threads; prints every pair and
# the median ratios of sentences/s, output tokens/s and decoder row-steps/s.
#
#   scripts/bench-vs-joeynmt.sh [ROUNDS] [BEAM] [THREADS]     (defaults: 2 rounds, beam 5, 2 threads)
#
# ROUNDS 0: train JoeyNMT (if not yet), translate the test set with it once, and print its test
# BLEU/chrF, updates and training tokens/s (no timing rounds, no nmt model needed).
#
# Our side: runs/rnnsearch-small/model.safetensors (or $NMT_MODEL), batches of 32 sentences.
# JoeyNMT side, built on first use in target/joeynmt (or $JOEY_DIR):
#   - a venv ($JOEY_VENV, default ~/.cache/nmt-joeynmt-venv) with torch and joeynmt 2.3.0;
#   - sentencepiece BPE models of 8000 pieces per language trained on the train split, used as
#     JoeyNMT's tokenizer and vocabularies (scripts/joeynmt/prep_spm.py);
#   - scripts/joeynmt/config.yaml: GRU, bidirectional encoder 256 per direction, embeddings 256,
#     GRU decoder 256 with Bahdanau attention (JoeyNMT's input feeding and bridge are on) — the
#     size of rnnsearch-small — with its recipe (dropout 0.3, label smoothing 0.1, tied softmax,
#     learning rate halved on a dev-BLEU plateau, best checkpoint); batches of 32 sentences for
#     translation; max_output_length JoeyNMT's default;
#     ($JOEY_CONFIG instead: scripts/joeynmt/config-defaults.yaml is JoeyNMT at its defaults,
#     no regularisation, constant learning rate, last checkpoint; give it its own $JOEY_DIR);
#   - trained for $JOEY_TRAIN_MINUTES (default 60) minutes on $JOEY_TRAIN_THREADS (default: the
#     THREADS argument) threads, the budget `nmt train -c configs/rnnsearch-small.toml` gets.
# At the end it prints both systems' test BLEU and chrF (sacreBLEU-identical, `nmt eval`).
# A tool, not a test dependency.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
beam=${2:-5}
threads=${3:-2}
model=${NMT_MODEL:-$root/runs/rnnsearch-small/model.safetensors}
work=${JOEY_DIR:-$root/target/joeynmt}
venv=${JOEY_VENV:-$HOME/.cache/nmt-joeynmt-venv}
minutes=${JOEY_TRAIN_MINUTES:-60}
train_threads=${JOEY_TRAIN_THREADS:-$threads}
here=$root/scripts/joeynmt
config=$(realpath "${JOEY_CONFIG:-$here/config.yaml}")

# shellcheck source=scripts/peers.sh
. "$root/scripts/peers.sh"
joey_venv "$venv"
py="$venv/bin/python"

mkdir -p "$work/data" "$work/spm" "$work/out"
cp "$config" "$work/config.yaml"
sed -i "s/^  beam_size: .*/  beam_size: $beam/" "$work/config.yaml"
cd "$work"
bible_text data
joey_spm . "$py"
if [ ! -f data/dev200.en ]; then   # config-defaults.yaml validates on the first 200 dev verses
  head -200 data/dev.en > data/dev200.en
  head -200 data/dev.es > data/dev200.es
fi
if [ ! -f models/rnn_small/best.ckpt ]; then
  echo "training JoeyNMT for $minutes minutes ($train_threads threads)..." >&2
  OMP_NUM_THREADS=$train_threads MKL_NUM_THREADS=$train_threads "$py" "$here/train_timed.py" "$minutes" config.yaml > out/train.log 2>&1 || true
  [ -f models/rnn_small/best.ckpt ] || { echo "JoeyNMT training left no checkpoint; see $work/out/train.log" >&2; exit 1; }
fi

cargo build --release -q -p nmt-cli --manifest-path "$root/Cargo.toml"
nmt="${CARGO_TARGET_DIR:-$root/target}/release/nmt"
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE
if [ "$rounds" = 0 ]; then
  "$py" "$here/translate_counted.py" config.yaml < data/test.en > out/joey.test.es 2> out/joey.test.log
  # JoeyNMT logs "Epoch N, Step: S, Batch Loss: ..., Batch Acc: ..., Tokens per Sec: T, Lr: ..."
  python3 - out/train.log <<'PY'
import re, sys
rows = [(int(m.group(1)), float(m.group(2))) for m in re.finditer(r"Step:\s*(\d+),.*?Tokens per Sec:\s*([\d.]+)", open(sys.argv[1]).read())]
if rows:
    print(f"JoeyNMT: {rows[-1][0]} updates; mean logged training speed {sum(t for _, t in rows) / len(rows):.0f} tokens/s ({len(rows)} log lines)")
PY
  grep -E "Best validation|Reduce|Interrupt" out/train.log | tail -5 || true
  echo "JoeyNMT test (beam $beam, $(grep -m1 load_model config.yaml | awk '{print $2}')):"
  echo "  $("$nmt" eval bleu -r data/test.es out/joey.test.es | head -1)"
  echo "  $("$nmt" eval chrf -r data/test.es out/joey.test.es | head -1)"
  exit 0
fi
res=out/results.txt
: > "$res"
for r in $(seq "$rounds"); do
  echo "round $r/$rounds" >&2
  "$nmt" translate -m "$model" -i data/test.en -o "out/nmt.$r.es" -b "$beam" --batch-size 32 --threads "$threads" --stats 2> "out/nmt.$r.log"
  # "translated N sentences, T target tokens in S s: ...; decoder row-steps: R (...)"
  sed -n 's/^translated \([0-9]*\) sentences, \([0-9]*\) target tokens in \([0-9.]*\) s.*row-steps: \([0-9]*\).*/nmt '"$r"' \1 \2 \3 \4/p' "out/nmt.$r.log" >> "$res"
  "$py" "$here/translate_counted.py" config.yaml < data/test.en > "out/joey.$r.es" 2> "out/joey.$r.log"
  secs=$(sed -n 's/.*Generation took \([0-9.]*\)\[sec\].*/\1/p' "out/joey.$r.log" | tail -1)
  steps=$(sed -n 's/^decoder row-steps: \([0-9]*\).*/\1/p' "out/joey.$r.log")
  # JoeyNMT's output re-encoded with its own sentencepiece model: its output tokens.
  toks=$("$py" -c "import sentencepiece as s,sys; sp=s.SentencePieceProcessor(model_file='spm/spm.es.model'); print(sum(len(sp.encode(l.rstrip('\n'))) for l in open(sys.argv[1], encoding='utf-8')))" "out/joey.$r.es")
  echo "joeynmt $r $(wc -l < "out/joey.$r.es") $toks $secs $steps" >> "$res"
done
python3 - "$res" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {(w, r): (int(n), int(t), float(s), int(st)) for w, r, n, t, s, st in rows}
rounds = sorted({r for _, r in by})
ratios = {"sentences/s": [], "tokens/s": [], "row-steps/s": []}
for r in rounds:
    for w in ("nmt", "joeynmt"):
        n, t, s, st = by[(w, r)]
        print(f"round {r} {w:8s}: {n} sentences, {t} output tokens ({t / n:.1f}/sentence), {s:.1f} s: "
              f"{n / s:.1f} sentences/s, {t / s:.0f} tokens/s, {st} row-steps ({st / s:.0f}/s)")
    (n1, t1, s1, st1), (n2, t2, s2, st2) = by[("nmt", r)], by[("joeynmt", r)]
    ratios["sentences/s"].append((n1 / s1) / (n2 / s2))
    ratios["tokens/s"].append((t1 / s1) / (t2 / s2))
    ratios["row-steps/s"].append((st1 / s1) / (st2 / s2))
for k, v in ratios.items():
    print(f"nmt / JoeyNMT {k}: " + ", ".join(f"{x:.2f}" for x in v) + f"; median {statistics.median(v):.2f}")
PY
echo "test set quality, round 1 outputs (beam $beam):"
for w in nmt joey; do
  echo "  $w: $("$nmt" eval bleu -r data/test.es out/$w.1.es | head -1)"
  echo "  $w: $("$nmt" eval chrf -r data/test.es out/$w.1.es | head -1)"
done
