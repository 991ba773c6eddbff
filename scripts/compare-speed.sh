#!/usr/bin/env bash
# Training and beam-5 speed of two builds of `nmt`, for refactors that must not slow anything:
# `nmt bench --only train,beam5` (the code `nmt train` and `nmt translate` run, on the
# reference's batch shape: 20 timed updates and 10 timed beam-5 searches of 30 steps after 3
# warm-ups, seeded weights) on each preset, the two binaries alternated inside each round.
#
#   scripts/compare-speed.sh BEFORE AFTER [ROUNDS=3] [THREADS=2] [PRESET…=rnnsearch-small rnnenc-small]
#
# Prints, per preset, each binary's median training target tokens/s and beam-5 sentences/s and
# the median of the per-round ratios after/before. Run it on a quiet machine.
set -euo pipefail
before=$1 after=$2 rounds=${3:-3} threads=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(rnnsearch-small rnnenc-small)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/runs/compare-speed
mkdir -p "$out"
: > "$out/bench.jsonl"
for round in $(seq "$rounds"); do
  for preset in "${presets[@]}"; do
    for side in before after; do
      bin=$before; [ "$side" = after ] && bin=$after
      NMT_LOG=error "$bin" bench --json --threads "$threads" --only train,beam5 --preset "$preset" |
        SIDE=$side ROUND=$round PRESET=$preset python3 -c 'import json, os, sys
for line in sys.stdin:
    v = json.loads(line)
    v.update(side=os.environ["SIDE"], round=int(os.environ["ROUND"]), system=os.environ["PRESET"])
    print(json.dumps(v))' >> "$out/bench.jsonl"
    done
  done
done
python3 - "$out/bench.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def val(system, side, bench, key, r):
    xs = [v[key] for v in rows if v["system"] == system and v["side"] == side and v["bench"] == bench and v["round"] == r and key in v]
    return xs[0] if xs else None
print("| preset | measure | before (median) | after (median) | after/before (median of rounds) |")
print("|---|---|---|---|---|")
for s in dict.fromkeys(v["system"] for v in rows):
    for bench, key, label in [("train", "target_tokens_per_s", "training tok/s"), ("beam5", "sentences_per_s", "beam-5 sent/s")]:
        rs = sorted({v["round"] for v in rows})
        b = [val(s, "before", bench, key, r) for r in rs]
        a = [val(s, "after", bench, key, r) for r in rs]
        ratios = [y / x for x, y in zip(b, a) if x and y]
        print(f"| {s} | {label} | {statistics.median(x for x in b if x):.1f} | {statistics.median(y for y in a if y):.1f} "
              f"| {statistics.median(ratios):.3f} ({', '.join(f'{x:.3f}' for x in ratios)}) |")
PY
