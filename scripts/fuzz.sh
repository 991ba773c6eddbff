#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer; needs a nightly toolchain and
# `cargo install cargo-fuzz`) of every parser that reads user input (issue "Nothing lost"):
# corpus, config, model_file, eval, moses, serve_json (fuzz/fuzz_targets/), and since issue 44
# model_header (header and metadata past the whole-file checksum), manifest (a prepared
# corpus's manifest.json) and serve_form (form and multipart bodies).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET=600] [TARGET...]
#
# (a producer's SIGPIPE under `head` is not an error: pipefail would end the script.)
# Seeds come from the bundled data and fixtures. Writes runs/fuzz/: TARGET.log and a summary
# (executions, crashes and slow units per target, counting only this run's artifacts); crashing
# inputs stay in fuzz/artifacts/TARGET/. A slow unit (`slow-unit-*`: one input ran over 10 s) is
# no failure: re-run it (`fuzz/target/*/release/TARGET FILE` prints its time); on a loaded
# machine it is usually the scheduler, not the input.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(corpus config model_file model_header eval moses serve_json serve_form manifest)
out=$root/runs/fuzz
mkdir -p "$out"
cd "$root/fuzz"
# A real model file small enough to mutate quickly (18 KB): dims 8, 40 dev verses, 2 updates.
tiny_model() {
  [ -f "$out/seed-model/model.safetensors" ] && return 0
  (cd "$root" && cargo build --release -q -p nmt-cli)
  local d=$out/seed-model-data; mkdir -p "$d"
  { gzip -dc "$root/data/bible-en-es/dev.en.gz" || true; } | head -n 40 > "$d/t.en"
  { gzip -dc "$root/data/bible-en-es/dev.es.gz" || true; } | head -n 40 > "$d/t.es"
  local bpe='{kind="bpe",vocab_size=60,min_frequency=1}' s
  set --
  for s in model.emb_dim=8 model.hidden_dim=8 model.att_dim=8 model.maxout_dim=8 "data.train_src=$d/t.en" "data.train_tgt=$d/t.es" \
    "data.dev_src=$d/t.en" "data.dev_tgt=$d/t.es" "data.src_subword=$bpe" "data.tgt_subword=$bpe" train.max_steps=2 train.valid_every=1; do
    set -- "$@" --set "$s"
  done
  "$root/target/release/nmt" train -c "$root/configs/rnnsearch-small.toml" -m "$out/seed-model" --threads 1 --quiet "$@"
}
# A prepared corpus of the same 40 verses, for its manifest.json.
tiny_prepared() {
  [ -f "$out/seed-prepared/manifest.json" ] && return 0
  tiny_model
  local d=$out/seed-model-data bpe='{kind="bpe",vocab_size=60,min_frequency=1}'
  "$root/target/release/nmt" prepare -c "$root/configs/rnnsearch-small.toml" -o "$out/seed-prepared" --threads 1 \
    --set "data.train_src=$d/t.en" --set "data.train_tgt=$d/t.es" --set "data.dev_src=$d/t.en" --set "data.dev_tgt=$d/t.es" \
    --set "data.src_subword=$bpe" --set "data.tgt_subword=$bpe" --set data.shard_pairs=16
}
seed() {
  local dir=corpus/$1; mkdir -p "$dir"
  case $1 in
    corpus|eval) { gzip -dc ../data/bible-en-es/dev.en.gz || true; } | head -n 20 > "$dir/seed1"; printf 'a b\nc\n\xffA B\nC\n' > "$dir/seed2" ;;
    config) cp ../configs/*.toml "$dir/" ;;
    model_file|model_header) tiny_model; cp "$out/seed-model/model.safetensors" "$dir/tiny.st"; cp "$out/seed-model/checkpoint.safetensors" "$dir/tiny-ckpt.st" ;;
    moses) printf 'la casa ||| the house ||| 0.5 0.25 ||| 0-0 1-1 ||| 1 1 1\n0 ||| a b ||| lm= -1 tm= -2 -3 ||| -4.5\n' > "$dir/seed1" ;;
    serve_json) printf '{"text": ["a b"], "beam_size": 5, "n_best": 2, "alignments": true}' > "$dir/seed1"; printf 'q=a+b&source=en&target=es' > "$dir/seed2" ;;
    # The first byte picks the Content-Type (fuzz_targets/serve_form.rs).
    serve_form) printf '\000q=a+b&source=en&target=es&alternatives=2&api_key=k' > "$dir/seed1"
      printf '\001q=a&q=b&source=auto&target=es' > "$dir/seed2"
      printf '\002--x\r\nContent-Disposition: form-data; name="q"\r\n\r\na b\r\n--x--\r\n' > "$dir/seed3" ;;
    manifest) tiny_prepared; cp "$out/seed-prepared/manifest.json" "$dir/seed1" ;;
  esac
}
: > "$out/summary.txt"
for t in "${targets[@]}"; do
  seed "$t"
  status=0
  touch "$out/$t.start"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 > "$out/$t.log" 2>&1 || status=$?
  # libFuzzer's own count and wall time (longer than the limit if the process was stopped a while)
  runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$out/$t.log" | tail -n 1 | sed 's/ second$/ s/' || true)
  crashes=$(find "artifacts/$t" -type f -newer "$out/$t.start" ! -name 'slow-unit-*' 2>/dev/null | wc -l)
  slow=$(find "artifacts/$t" -type f -newer "$out/$t.start" -name 'slow-unit-*' 2>/dev/null | wc -l)
  echo "$t: ${runs:-no summary} (limit ${secs} s); exit $status; crash artifacts: $crashes; slow units: $slow" | tee -a "$out/summary.txt"
done
