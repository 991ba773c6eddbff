#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer; needs a nightly toolchain and
# `cargo install cargo-fuzz`) of every parser that reads user input (issue "Nothing lost"):
# corpus, config, model_file, eval, moses, serve_json (fuzz/fuzz_targets/).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET=600] [TARGET...]
#
# Seeds come from the bundled data and fixtures. Writes runs/fuzz/: TARGET.log and a summary
# (executions and crashes per target); crashing inputs stay in fuzz/artifacts/TARGET/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(corpus config model_file eval moses serve_json)
out=$root/runs/fuzz
mkdir -p "$out"
cd "$root/fuzz"
seed() {
  local dir=corpus/$1; mkdir -p "$dir"
  case $1 in
    corpus|eval) gzip -dc ../data/bible-en-es/dev.en.gz | head -n 20 > "$dir/seed1"; printf 'a b\nc\n\xffA B\nC\n' > "$dir/seed2" ;;
    config) cp ../configs/*.toml "$dir/" ;;
    model_file) find ../runs -name 'model.safetensors' -size -2M 2>/dev/null | head -n 2 | while read -r f; do cp "$f" "$dir/$(basename "$(dirname "$f")").st"; done ;;
    moses) printf 'la casa ||| the house ||| 0.5 0.25 ||| 0-0 1-1 ||| 1 1 1\n0 ||| a b ||| lm= -1 tm= -2 -3 ||| -4.5\n' > "$dir/seed1" ;;
    serve_json) printf '{"text": ["a b"], "beam_size": 5, "n_best": 2, "alignments": true}' > "$dir/seed1"; printf 'q=a+b&source=en&target=es' > "$dir/seed2" ;;
  esac
}
: > "$out/summary.txt"
for t in "${targets[@]}"; do
  seed "$t"
  status=0
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 > "$out/$t.log" 2>&1 || status=$?
  runs=$(grep -o 'Done [0-9]* runs' "$out/$t.log" | tail -n 1 || true)
  crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
  echo "$t: ${runs:-no summary} in ${secs} s; exit $status; crash artifacts: $crashes" | tee -a "$out/summary.txt"
done
