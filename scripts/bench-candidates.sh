#!/usr/bin/env bash
# Issue 75's speed check: bench-rnnsearch's training step (`nmt bench --only train`) with the full
# softmax against the candidate softmax, f32 and bf16, every form alternated in each round, then
# the median step of each form and the candidates' ratio to the full softmax. Run on a quiet
# machine; the per-round figures are kept in the output, since this host's rounds spread widely.
#
#   scripts/bench-candidates.sh [ROUNDS] [THREADS]
#
# Environment:
#   BINS   "name=path ..." of the nmt binaries to alternate (default: this checkout's release build);
#          each round runs every binary, so two builds compare under the same conditions
#   CANDS  the candidate flags (default: the shipped list, "--candidates 100 --candidates-sampled 1000")
#   EXTRA  more flags for every run (e.g. "--preset rnnsearch-small --set model.tie_target_embeddings=true")
#   PRECISIONS  default "f32 bf16"
#   SCALED=1  a third form in each round: the candidates with `--candidates-scale-moments`
#          (`train.candidates.scale_moments`, the optimiser's extra work timed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5} threads=${2:-2}
bins=${BINS:-"nmt=$root/target/release/nmt"}
cands=${CANDS:-"--candidates 100 --candidates-sampled 1000"}
precisions=${PRECISIONS:-"f32 bf16"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores;" \
  "$(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "# commit $(git -C "$root" rev-parse --short HEAD); BINS=\"$bins\"; nmt bench --threads $threads --only train" \
  "--steps 10 --json --precision P ${EXTRA:-} [$cands]; $rounds rounds"
for round in $(seq "$rounds"); do
  for b in $bins; do
    name=${b%%=*} bin=${b#*=}
    for p in $precisions; do
      forms=("" "$cands")
      [ "${SCALED:-0}" = 1 ] && forms+=("$cands --candidates-scale-moments")
      for c in "${forms[@]}"; do
        # shellcheck disable=SC2086
        line=$("$bin" bench --threads "$threads" --only train --steps 10 --json --precision "$p" ${EXTRA:-} $c 2>/dev/null |
          grep '"bench":"train"') || { echo "bench failed: $bin $p $c" >&2; exit 1; }
        form=full
        [ -n "$c" ] && form=candidates
        [[ "$c" == *scale-moments* ]] && form=scaled
        echo "round=$round bin=$name precision=$p form=$form $line" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" <<'EOF'
import json, re, statistics, sys
runs, losses = {}, {}
for line in open(sys.argv[1]):
    key = tuple(re.search(f"{k}=(\\S+)", line).group(1) for k in ("bin", "precision", "form"))
    rec = json.loads(line[line.index("{"):])
    runs.setdefault(key, []).append(rec["ms_median"])
    losses.setdefault(key, set()).add(rec["loss_last"])
for (b, p, f), ms in sorted(runs.items()):
    full = statistics.median(runs[(b, p, "full")])
    med = statistics.median(ms)
    print(f"{b:10} {p:5} {f:11} median {med:7.1f} ms  x{med / full:.3f} of full  loss_last {sorted(losses[(b, p, f)])}"
          f"  rounds {' '.join(f'{m:.1f}' for m in ms)}")
EOF
