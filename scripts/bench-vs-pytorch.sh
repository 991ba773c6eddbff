#!/usr/bin/env bash
# Runs `nmt bench` and the PyTorch reference of bench-rnnsearch back to back, several
# alternations, same threads, same weights and batch; prints every pair, the median ratios and
# the ratio of the fastest steps.
#
#   scripts/bench-vs-pytorch.sh [ROUNDS] [THREADS]        (defaults: 5 rounds, 2 threads)
#
# Needs the reference (bench/pytorch/ in this repository: pytorch_rnnsearch.py, gen_data.py,
# setup.sh; or $BENCH_REF) and its venv ($BENCH_VENV, default ~/.cache/nmt-bench-venv, with torch
# and numpy: made here when missing). A tool, not a test dependency.
#
# INT8=1 compares the searches in int8 on both sides: `nmt bench --int8` (greedy, beam 5) against
# the reference stepped with PyTorch's dynamic int8 products (scripts/pytorch-int8-reference.py).
# TUNED=1 runs the reference under PyTorch's documented CPU speed settings instead
# (scripts/pytorch-tuned-reference.py: torch.compile, fused Adam); BF16=1 with it adds its bf16
# mixed precision (autocast), PyTorch's fastest setting on a CPU with AVX512_BF16 or AMX.
# TUNED=1 INT8=1 times `nmt bench --int8`'s searches against that.
# BF16=1 also times our training step with bf16 products (`nmt bench --precision bf16`,
# train.precision = "bf16", issue 42) in the same rounds, and prints it against PyTorch and
# against our f32 step.
#
# NMT_MAX_CPU_ISA=avx2 runs both sides as on a CPU without AVX-512 (issue 56): nmt's kernels and
# products (crates/nmt/src/kernels/cpu/engine/isa.rs), and PyTorch's through ATEN_CPU_CAPABILITY=avx2 (its
# kernels and TorchInductor's code), ONEDNN_MAX_CPU_ISA=AVX2 and MKL_ENABLE_INSTRUCTIONS=AVX2.
# NMT_MAX_CPU_ISA=avx512 keeps AVX-512 and turns off the bf16 products on both sides;
# avx512_bf16 keeps both off AMX's tiles (oneDNN's AVX512_CORE_BF16; nmt then runs bf16 only on
# AMD, where it is faster than f32: crates/nmt/src/kernels/cpu/engine/products.rs). Each JSON
# line says what its side ran ("cpu"), so the log shows that the cap held.
#
# Which kernels each side ran (issue 70) is printed before the rounds and again in the summary:
# nmt's CPU class and its bf16 decision ("bf16 products: AMX", "…: off, slower than f32 on this
# CPU", from one short `nmt bench --only train`), and the oneDNN implementations behind
# PyTorch's products (e.g. `matmul brg_matmul:avx10_1_512_amx`), from one short run of the
# reference with ONEDNN_VERBOSE=1 (KERNELS=0 skips both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${NMT_MAX_CPU_ISA:-}" in
  "") ;;
  avx2|AVX2) export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 ;;
  avx512|AVX512) export ATEN_CPU_CAPABILITY=avx512 ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI ;;
  avx512_bf16|AVX512_BF16) export ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 ;;
  amx|AMX) ;;
  *) echo "NMT_MAX_CPU_ISA=$NMT_MAX_CPU_ISA: expected avx2, avx512, avx512_bf16 or amx" >&2; exit 2 ;;
esac
rounds=${1:-5}
threads=${2:-2}
ref=${BENCH_REF:-$root/bench/pytorch}
venv=${BENCH_VENV:-$HOME/.cache/nmt-bench-venv}
data=${BENCH_DATA:-$root/target/bench-data}
steps=${STEPS:-20}
[ -f "$ref/pytorch_rnnsearch.py" ] || { echo "no PyTorch reference at $ref (set BENCH_REF)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  if [ -f "$ref/setup.sh" ]; then
    BENCH_VENV="$venv" bash "$ref/setup.sh"
  else
    python3 -m venv "$venv" && "$venv/bin/pip" install -q torch numpy
  fi
fi
[ -f "$data/init.bin" ] || BENCH_DATA="$data" python3 "$ref/gen_data.py"
cargo build --release -q -p nmt-cli
nmt="${CARGO_TARGET_DIR:-$root/target}/release/nmt"
export OMP_WAIT_POLICY=PASSIVE
# The PyTorch side of a round, with STEPS=$1: the reference the switches above choose.
torch_ref() {
  if [ "${TUNED:-0}" = 1 ]; then
    BF16="${BF16:-0}" BENCH_REF="$ref" BENCH_DATA="$data" THREADS="$threads" STEPS="$1" "$venv/bin/python" -W ignore "$root/scripts/pytorch-tuned-reference.py"
  elif [ "${INT8:-0}" = 1 ]; then
    BENCH_REF="$ref" BENCH_DATA="$data" THREADS="$threads" STEPS="$1" "$venv/bin/python" -W ignore "$root/scripts/pytorch-int8-reference.py"
  else
    BENCH_DATA="$data" THREADS="$threads" STEPS="$1" "$venv/bin/python" "$ref/pytorch_rnnsearch.py"
  fi
}
out=$(mktemp)
kernels=$(mktemp)
if [ "${KERNELS:-1}" = 1 ]; then
  echo "which kernels each side runs (one short run each)" >&2
  probe=(--precision f32); [ "${BF16:-0}" = 1 ] && probe=(--precision bf16); [ "${INT8:-0}" = 1 ] && probe+=(--int8)
  # A failed probe leaves its line out; the rounds below still run (and fail loudly if nmt does).
  { "$nmt" bench --data "$data" --threads "$threads" --steps 1 --json --only train,greedy "${probe[@]}" 2>/dev/null || true; } \
    | python3 -c 'import json, sys
for l in sys.stdin:
    j = json.loads(l) if l.startswith("{") else {}
    if j.get("bench") == "train":
        print("nmt: %s CPU kernels; %s (train.precision %s)" % (j.get("cpu"), j.get("bf16_products"), j.get("precision")))
    if j.get("bench") == "greedy" and j.get("int8_kernel"):
        print("nmt: int8 search products on %s" % j["int8_kernel"])' >> "$kernels"
  # oneDNN prints one line per primitive run: "onednn_verbose,[v1,]primitive,exec,cpu,KIND,IMPL,…".
  # (Its lines go to stdout, which is why this run is apart from the timed ones.)
  { ONEDNN_VERBOSE=1 torch_ref 2 2>/dev/null || true; } \
    | awk -F, '/^onednn_verbose/ { for (i = 1; i < NF; i++) if ($i == "exec") { print $(i + 2), $(i + 3); break } }
               /^onednn_verbose.*isa:/ { sub(/.*isa:/, ""); print "isa:", $0 }' \
    | sort | uniq -c | sed 's/^ */pytorch oneDNN: /' >> "$kernels"
  grep -q "pytorch oneDNN" "$kernels" || echo "pytorch oneDNN: no primitive ran through oneDNN (ONEDNN_VERBOSE printed nothing)" >> "$kernels"
  cat "$kernels" >&2
fi
for r in $(seq "$rounds"); do
  echo "round $r/$rounds" >&2
  if [ "${INT8:-0}" = 1 ]; then
    "$nmt" bench --data "$data" --threads "$threads" --steps "$steps" --json --int8 --only greedy,beam5 | sed "s/^/nmt $r /" >> "$out"
  else
    "$nmt" bench --data "$data" --threads "$threads" --steps "$steps" --json --only train,greedy,beam5 | sed "s/^/nmt $r /" >> "$out"
    if [ "${BF16:-0}" = 1 ]; then
      "$nmt" bench --data "$data" --threads "$threads" --steps "$steps" --json --only train --precision bf16 | sed "s/^/nmt-bf16 $r /" >> "$out"
    fi
  fi
  torch_ref "$steps" | sed "s/^/torch $r /" >> "$out"
done
python3 - "$out" "$rounds" "$kernels" <<'PY'
import json, statistics, sys
rows = [l.split(" ", 2) for l in open(sys.argv[1])]
data = {}
for who, r, js in rows:
    j = json.loads(js)
    data[(who, int(r), j["bench"])] = j
rounds = int(sys.argv[2])

def best(a, b, bench):
    # The fastest single step of each side over all rounds: on a shared host whose speed drifts
    # by tens of percent within a minute, the least disturbed step is the steadier comparison.
    fa = [data[(a, r, bench)].get("ms_min") for r in range(1, rounds + 1)]
    fb = [data[(b, r, bench)].get("ms_min") for r in range(1, rounds + 1)]
    if None in fa or None in fb:
        return
    print(f"  fastest step over the rounds: {a} {min(fa):.2f} ms  {b} {min(fb):.2f} ms  ratio {min(fb) / min(fa):5.2f}")
benches = [("greedy", "sentences_per_s"), ("beam5", "sentences_per_s")]
n, t = data[("nmt", 1, "greedy")], data[("torch", 1, "greedy")]
print(f"nmt{' --int8' if n.get('int8') else ''} against {t['impl']}; loss0: nmt {n.get('loss0', '-')}  pytorch {t.get('loss0', '-')}")
print(f"CPU kernels: nmt {n.get('cpu', '-')}; pytorch {t.get('cpu', 'not recorded (only the tuned reference records it)')}")
for line in open(sys.argv[3]):
    print(f"  {line.rstrip()}")
if ("nmt", 1, "train") in data:
    benches.insert(0, ("train", "target_tokens_per_s"))
for bench, key in benches:
    ratios = []
    print(f"{bench} ({key}):")
    for r in range(1, rounds + 1):
        a, b = data[("nmt", r, bench)][key], data[("torch", r, bench)][key]
        ratios.append(a / b)
        print(f"  round {r}: nmt {a:9.1f}  pytorch {b:9.1f}  ratio {a / b:5.2f}")
    print(f"  median ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    best("nmt", "torch", bench)
if ("nmt-bf16", 1, "train") in data:
    key = "target_tokens_per_s"
    for other in ("torch", "nmt"):
        ratios = []
        print(f"train in bf16 ({key}), against {'PyTorch' if other == 'torch' else 'our f32 step'}:")
        for r in range(1, rounds + 1):
            a, b = data[("nmt-bf16", r, "train")][key], data[(other, r, "train")][key]
            ratios.append(a / b)
            print(f"  round {r}: nmt bf16 {a:9.1f}  {other} {b:9.1f}  ratio {a / b:5.2f}")
        print(f"  median ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
        best("nmt-bf16", other, "train")
PY
rm -f "$out" "$kernels"
