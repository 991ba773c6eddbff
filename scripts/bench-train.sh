#!/usr/bin/env bash
# `nmt train` speed, fused kernels against composed candle ops, alternated: the same config,
# seed and batches, N updates each, ROUNDS times. Prints target tokens/s per run (mean of the
# log windows after the first, which holds the warm-up), the ratio per pair and the median
# ratio, and each run's peak resident memory. Usage:
#   scripts/bench-train.sh [CONFIG] [UPDATES] [ROUNDS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/rnnsearch-small.toml}
UPDATES=${2:-100}
ROUNDS=${3:-3}
THREADS=${4:-2}
cargo build --release -q -p nmt-cli
NMT=target/release/nmt
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
run() { # impl → "tok/s peak_kB"
    local dir="$WORK/$1"
    rm -rf "$dir"
    /usr/bin/env time -f "%M" -o "$WORK/rss" "$NMT" train -c "$CONFIG" --model-dir "$dir" --quiet --threads "$THREADS" --impl "$1" \
        --set train.max_steps="$UPDATES" --set train.valid_every=1000000 --set train.log_every=10 --set train.max_minutes=0 >/dev/null 2>&1
    python3 - "$dir/train_log.jsonl" "$(cat "$WORK/rss")" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"tok_per_s"' in l]
tps = [r["tok_per_s"] for r in rows[1:]] or [rows[0]["tok_per_s"]]
print(f"{sum(tps) / len(tps):.0f} {sys.argv[2]}")
PY
}
echo "config $CONFIG, $UPDATES updates, $THREADS threads, $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
ratios=()
for r in $(seq "$ROUNDS"); do
    read -r f frss < <(run fused)
    read -r o orss < <(run ops)
    ratio=$(python3 -c "print(f'{$f / $o:.2f}')")
    ratios+=("$ratio")
    echo "round $r: fused $f tok/s (peak $((frss / 1024)) MiB), ops $o tok/s (peak $((orss / 1024)) MiB), ratio $ratio"
done
python3 -c "import statistics, sys; print('median ratio', statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}"
