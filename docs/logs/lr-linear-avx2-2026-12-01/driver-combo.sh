#!/usr/bin/env bash
# Adam's rate 3e-3 with the cooldown of the last 10 % (`train.lr=0.003 train.lr_cooldown=0.1`):
# 1 thread, seeds 1 and 2 side by side (one core each); then 2 threads against the shipped demo,
# one run at a time, alternated, seeds 1 and 2. Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
C="--set train.lr=0.003 --set train.lr_cooldown=0.1"
scripts/recipe-minutes.sh combo-t1-s1 $L 10 1 $W $C --set train.seed=1 >> $L/summary-t1.txt 2>&1 &
scripts/recipe-minutes.sh combo-t1-s2 $L 10 1 $W $C --set train.seed=2 >> $L/summary-t1.txt 2>&1 &
wait
for seed in 1 2; do
  scripts/recipe-minutes.sh shipped-t2-s$seed $L 10 2 $W --set train.seed=$seed >> $L/summary-t2.txt 2>&1
  scripts/recipe-minutes.sh combo-t2-s$seed $L 10 2 $W $C --set train.seed=$seed >> $L/summary-t2.txt 2>&1
done
