#!/usr/bin/env bash
# Training and beam-5 speed of two builds of `nmt`, for refactors that must not slow anything:
# `nmt bench --only train,beam5` (the code `nmt train` and `nmt translate` run, on the
# reference's batch shape: 20 timed updates and 10 timed beam-5 searches of 30 steps after 3
# warm-ups, seeded weights) on each preset, the two binaries alternated inside each round.
#
#   scripts/compare-speed.sh BEFORE AFTER [ROUNDS=3] [THREADS=2] [PRESET…=rnnsearch-small rnnenc-small]
#
# Prints, per preset, each binary's median training target tokens/s and beam-5 sentences/s, and
# the median of the per-round ratios after/before, from each run's median step and from its
# fastest step, with a 95 % bootstrap interval of the first: when that interval is wider than
# the difference to resolve, the host cannot show it (on a quiet 2-core AMD EPYC Zen 3 VM,
# 2026-11-30, runs of one binary spread by 6-9 % and 25 rounds gave intervals 8-12 % wide). Run
# it on a quiet machine.
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
import json, random, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def val(system, side, bench, key, r):
    xs = [v[key] for v in rows if v["system"] == system and v["side"] == side and v["bench"] == bench and v["round"] == r and key in v]
    return xs[0] if xs else None
def ratios(system, bench, key):
    """after/before speed per round from the runs' `key` times (ms)."""
    rs = sorted({v["round"] for v in rows})
    pairs = [(val(system, "before", bench, key, r), val(system, "after", bench, key, r)) for r in rs]
    return [b / a for b, a in pairs if a and b]
def interval(xs, draws=4000):
    """95 % bootstrap interval of the median of `xs` (seeded: the same log, the same line)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws) - 1]
print("| preset | measure | before (median) | after (median) | after/before by median step: median of rounds [95 % interval] (range) | by fastest step |")
print("|---|---|---|---|---|---|")
for s in dict.fromkeys(v["system"] for v in rows):
    for bench, key, label in [("train", "target_tokens_per_s", "training tok/s"), ("beam5", "sentences_per_s", "beam-5 sent/s")]:
        b = [v[key] for v in rows if v["system"] == s and v["side"] == "before" and v["bench"] == bench]
        a = [v[key] for v in rows if v["system"] == s and v["side"] == "after" and v["bench"] == bench]
        med, fast = ratios(s, bench, "ms_median"), ratios(s, bench, "ms_min")
        lo, hi = interval(med)
        print(f"| {s} | {label} | {statistics.median(b):.1f} | {statistics.median(a):.1f} "
              f"| {statistics.median(med):.3f} [{lo:.3f}-{hi:.3f}] ({min(med):.3f}-{max(med):.3f}) "
              f"| {statistics.median(fast):.3f} ({min(fast):.3f}-{max(fast):.3f}) |")
PY
