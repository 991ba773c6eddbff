#!/usr/bin/env bash
# Corpora of millions of pairs (issue 24): builds corpora of the given sizes by repeating the
# bundled Bible with a marker per copy ("<k> " before every line of copy k, so lines differ),
# then for each size reports:
#   - `nmt prepare` wall time and peak memory;
#   - `nmt train --data DIR`: seconds from the process's start to its first update (the first
#     line of train_log.jsonl, polled every 0.1 s) and the run's peak memory (N updates);
#   - the prepared directory's size.
# Training runs with train.shortlist=false: the end-of-training shortlist (a sample of at most
# 200 000 pairs, its own time and memory, docs/PERF.md) is not the data pipeline measured here.
# Usage: scripts/scale.sh [THREADS] [UPDATES] [SIZES...]   (default: 2 20 100000 1000000 10000000)
# Needs ~5 GB of disk per 10 M pairs under $SCALE_DIR (default: a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
UPDATES=${2:-20}
shift $(($# < 2 ? $# : 2))
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(100000 1000000 10000000)
CONFIG=configs/rnnsearch-small.toml
cargo build --release -q -p nmt-cli
NMT=$PWD/target/release/nmt
WORK=${SCALE_DIR:-$(mktemp -d)}
mkdir -p "$WORK"
[[ -n ${SCALE_DIR:-} ]] || trap 'rm -rf "$WORK"' EXIT

make_corpus() { # pairs → $WORK/N.en, $WORK/N.es
    local n=$1 side
    for side in en es; do
        [[ -s $WORK/$n.$side ]] && continue
        gzip -dc "data/bible-en-es/train.$side.gz" | awk -v n="$n" '
            { line[NR] = $0 }
            END { for (k = 1; printed < n; k++) for (i = 1; i <= NR && printed < n; i++) { print k " " line[i]; printed++ } }' \
            >"$WORK/$n.$side.tmp"
        mv "$WORK/$n.$side.tmp" "$WORK/$n.$side"
    done
}

peak_mib() { awk '/Maximum resident/ { printf "%.0f", $NF / 1024 }' "$1"; }
wall_s() { awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }' "$1"; }

simd=$(grep -m1 -o -w 'avx512f' /proc/cpuinfo || grep -m1 -o -w 'avx2' /proc/cpuinfo || echo "no AVX2")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($simd); threads $THREADS; $(date -u +%F)"
printf '%-10s | %-12s | %-12s | %-10s | %-16s | %-14s\n' pairs "prepare (s)" "prepare MiB" "data MiB" "train start (s)" "train MiB"
for n in "${SIZES[@]}"; do
    make_corpus "$n"
    sets=(--set "data.train_src=$WORK/$n.en" --set "data.train_tgt=$WORK/$n.es")
    rm -rf "$WORK/prep-$n" "$WORK/model-$n"
    /usr/bin/time -v "$NMT" prepare -c "$CONFIG" "${sets[@]}" -o "$WORK/prep-$n" --threads "$THREADS" \
        2>"$WORK/prepare-$n.log" >/dev/null || { cat "$WORK/prepare-$n.log"; exit 1; }
    log=$WORK/model-$n/train_log.jsonl
    start=$(date +%s.%N)
    /usr/bin/time -v "$NMT" train -c "$CONFIG" --data "$WORK/prep-$n" --model-dir "$WORK/model-$n" --quiet --threads "$THREADS" \
        --set train.max_steps="$UPDATES" --set train.log_every=1 --set train.valid_every=1000000 --set train.valid_bleu_sentences=50 \
        --set train.shortlist=false \
        2>"$WORK/train-$n.log" >/dev/null &
    pid=$!
    first=""
    while kill -0 "$pid" 2>/dev/null; do
        if [[ -z $first && -s $log ]]; then first=$(echo "$(date +%s.%N) - $start" | bc); fi
        sleep 0.1
    done
    wait "$pid" || { cat "$WORK/train-$n.log"; exit 1; }
    [[ -n $first ]] || first=$(echo "$(date +%s.%N) - $start" | bc)
    printf '%-10s | %-12s | %-12s | %-10s | %-16.1f | %-14s\n' "$n" "$(wall_s "$WORK/prepare-$n.log")" "$(peak_mib "$WORK/prepare-$n.log")" \
        "$(du -sm "$WORK/prep-$n" | cut -f1)" "$first" "$(peak_mib "$WORK/train-$n.log")"
done
