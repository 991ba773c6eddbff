#!/usr/bin/env bash
# Each architecture's training and beam-5 speed (issue "The rest of the seed architectures"):
# `nmt bench` on every preset and on two GRU/LSTM twins at equal sizes, ROUNDS rounds with the
# systems alternated inside each round, THREADS threads. Each bench times the code `nmt train`
# and `nmt translate` run (fused kernels, host search) on the reference's batch shape: 32
# sentences of 30 source and 30 target tokens, seeded weights, 20 timed training updates and 10
# timed beam-5 searches of 30 steps after 3 warm-ups. Run it on a quiet machine.
#
#   scripts/bench-presets.sh [ROUNDS=3] [THREADS=2]
#
# Writes runs/bench-presets/bench.jsonl (every measurement, tagged with its round) and prints
# the medians: training target tokens/s and ms per update, beam-5 sentences/s and output
# tokens/s, peak RSS, and the LSTM/GRU ratio of training time per token of each twin pair
# (the median of the per-round ratios, each from runs next to each other).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
threads=${2:-2}
cd "$root"
if [ -n "${NMT_BIN:-}" ]; then nmt=$NMT_BIN; else cargo build --release -q -p nmt-cli; nmt=$root/target/release/nmt; fi
out=$root/runs/bench-presets
mkdir -p "$out"
: > "$out/bench.jsonl"

# preset and its `--set` overrides; the twins differ from their preset in the cell only.
systems=(
  "rnnsearch-small"
  "rnnsearch-small --set model.cell=lstm"
  "rnnsearch-small --set model.copy=true"
  "rnnenc-small"
  "grconv-small"
  "lstm-seq2seq-small"
  "lstm-seq2seq-small --set model.cell=gru"
)
for round in $(seq "$rounds"); do
  for system in "${systems[@]}"; do
    read -r -a words <<< "$system"
    "$nmt" bench --json --threads "$threads" --only train,beam5 --preset "${words[@]}" |
      ROUND=$round python3 -c 'import json, os, sys
for line in sys.stdin:
    v = json.loads(line); v["round"] = int(os.environ["ROUND"]); print(json.dumps(v))' >> "$out/bench.jsonl"
  done
done

python3 - "$out/bench.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def name(v):
    return " ".join([v.get("preset", "?")] + v.get("set", []))
# A process's memory line follows its measurements: give it the system of the line before.
last = None
for v in rows:
    if v["bench"] == "memory":
        v["system"] = last
    else:
        v["system"] = last = name(v)
systems = list(dict.fromkeys(v["system"] for v in rows))
def med(system, bench, key):
    xs = [v[key] for v in rows if v["system"] == system and v["bench"] == bench and key in v]
    return statistics.median(xs) if xs else float("nan")
print("| system | train tok/s | ms/update | beam-5 sent/s | beam-5 tok/s | peak RSS MiB |")
print("|---|---|---|---|---|---|")
for s in systems:
    b5 = med(s, "beam5", "sentences_per_s")
    print(f"| {s} | {med(s, 'train', 'target_tokens_per_s'):.0f} | {med(s, 'train', 'ms_median'):.1f} "
          f"| {b5:.1f} | {30 * b5:.0f} | {med(s, 'memory', 'peak_rss_mb'):.0f} |")
print()
for gru, lstm in [("rnnsearch-small", "rnnsearch-small model.cell=lstm"),
                  ("lstm-seq2seq-small model.cell=gru", "lstm-seq2seq-small")]:
    per_round = []
    for r in sorted({v["round"] for v in rows}):
        t = {s: [v["ms_median"] for v in rows if v["system"] == s and v["bench"] == "train" and v["round"] == r] for s in (gru, lstm)}
        if t[gru] and t[lstm]:
            per_round.append(t[lstm][0] / t[gru][0])
    if per_round:
        print(f"LSTM/GRU training time per token, {lstm!r} against {gru!r}: "
              f"rounds {', '.join(f'{x:.3f}' for x in per_round)}; median {statistics.median(per_round):.3f}")
PY
