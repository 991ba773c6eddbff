#!/usr/bin/env bash
# The linear learning-rate schedule (to zero at the end of the 10 minutes) against the shipped
# demo, at equal minutes: 1 thread, two runs side by side (one core each), seeds 1-3; then
# 2 threads, one run at a time, alternated, seeds 1-2. Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
S="--set train.lr_schedule=linear"   # as run; the key is now `train.lr_cooldown=1.0`, the same arithmetic
for seed in 1 2 3; do
  scripts/recipe-minutes.sh shipped-t1-s$seed $L 10 1 $W --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  scripts/recipe-minutes.sh linear-t1-s$seed $L 10 1 $W $S --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  wait
done
for seed in 1 2; do
  scripts/recipe-minutes.sh shipped-t2-s$seed $L 10 2 $W --set train.seed=$seed >> $L/summary-t2.txt 2>&1
  scripts/recipe-minutes.sh linear-t2-s$seed $L 10 2 $W $S --set train.seed=$seed >> $L/summary-t2.txt 2>&1
done
