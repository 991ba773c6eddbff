#!/usr/bin/env bash
# Throughput and peak memory of `nmt score --phrase-table` (issue "Scoring and SMT
# integration"): the same model over a 100 000- and a 1 000 000-line table; the peak resident
# memory must not grow with the table (it streams in chunks).
#
#   scripts/phrase-table-bench.sh MODEL [THREADS=2]
#
# Writes runs/phrase-table/: pt.{100k,1M}.gz (scripts/make-phrase-table.py), out.*.gz, and
# results.txt (phrase pairs/s and maximum resident set size, from /usr/bin/time -v).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:?usage: scripts/phrase-table-bench.sh MODEL [THREADS]}
threads=${2:-2}
cd "$root"
if [ -n "${NMT_BIN:-}" ]; then nmt=$NMT_BIN; else cargo build --release -q -p nmt-cli; nmt=$root/target/release/nmt; fi
out=$root/runs/phrase-table
mkdir -p "$out"
: > "$out/results.txt"
for size in 100k 1M; do
  n=$([ "$size" = 1M ] && echo 1000000 || echo 100000)
  [ -s "$out/pt.$size.gz" ] || python3 scripts/make-phrase-table.py "$n" "$out/pt.$size.gz"
  /usr/bin/time -v "$nmt" score -m "$model" --phrase-table "$out/pt.$size.gz" -o "$out/out.$size.gz" --threads "$threads" \
    2> "$out/time.$size.txt"
  rate=$(grep -o 'scored.*' "$out/time.$size.txt")
  rss=$(grep 'Maximum resident' "$out/time.$size.txt" | awk '{print $NF}')
  echo "$size lines: $rate; peak RSS $((rss / 1024)) MB" | tee -a "$out/results.txt"
done
