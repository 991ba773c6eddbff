#!/usr/bin/env bash
# The cooldown of the last 10 % (`train.lr_cooldown=0.1`) against the shipped demo, 1 thread,
# side by side (one core each), seed 2 (SEEDS="2 3" for more). Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
for seed in ${SEEDS:-2}; do
  scripts/recipe-minutes.sh shipped-t1-s$seed $L 10 1 $W --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  scripts/recipe-minutes.sh cool10-t1-s$seed $L 10 1 $W --set train.lr_cooldown=0.1 --set train.seed=$seed >> $L/summary-t1.txt 2>&1 &
  wait
done
