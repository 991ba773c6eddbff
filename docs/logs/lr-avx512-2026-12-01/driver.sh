#!/usr/bin/env bash
# The demo's learning rate (Adam 3e-3, cooldown over the last 10 %: `nmt demo` since 8b7a0cb)
# against issue 75's demo (2e-3, no cooldown) on an Intel Xeon Emerald Rapids whose hypervisor
# grants no AMX (products in f32 AVX-512). 2 threads: one run at a time, in the order
# new, old, old, new (seeds 1, 1, 2, 2). 1 thread: new and old side by side (one core each),
# seed 1, then seed 2. Run from the repository root.
set -uo pipefail
L=docs/logs/lr-avx512-2026-12-01
export NMT=${NMT:-/tmp/s7/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
C="--set train.lr=0.003 --set train.lr_cooldown=0.1"
scripts/recipe-minutes.sh demo-t2-s1 $L 10 2 $W $C --set train.seed=1 >> $L/summary-t2.txt 2>&1
scripts/recipe-minutes.sh i75-t2-s1 $L 10 2 $W --set train.seed=1 >> $L/summary-t2.txt 2>&1
scripts/recipe-minutes.sh i75-t2-s2 $L 10 2 $W --set train.seed=2 >> $L/summary-t2.txt 2>&1
scripts/recipe-minutes.sh demo-t2-s2 $L 10 2 $W $C --set train.seed=2 >> $L/summary-t2.txt 2>&1
for seed in 1 2; do
  scripts/recipe-minutes.sh demo-t1-s$seed $L 10 1 $W $C --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  scripts/recipe-minutes.sh i75-t1-s$seed $L 10 1 $W --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  wait
done
