#!/usr/bin/env bash
# Adam's rate 3e-3 and 4e-3 (the recipe's 2e-3) in the demo's 10 minutes, 1 thread, side by
# side (one core each), seed 1: against shipped-t1-s1 of driver.sh. Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
scripts/recipe-minutes.sh lr3e-3-t1-s1 $L 10 1 $W --set train.lr=0.003 --set train.seed=1 >> $L/summary-t1.txt 2>&1 &
scripts/recipe-minutes.sh lr4e-3-t1-s1 $L 10 1 $W --set train.lr=0.004 --set train.seed=1 >> $L/summary-t1.txt 2>&1 &
wait
