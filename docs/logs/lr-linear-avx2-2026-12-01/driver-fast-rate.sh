#!/usr/bin/env bash
# After shipped-t2-s1 (driver-combo.sh, stopped before its second 2-thread run): combo-t2-s1 at
# 2 threads; then the fast rate by updates, not minutes: today this host's second core added
# little (shipped-t2-s1: 873 updates, 2 539 tokens/s, against 1 382-1 537 and ~4 000 on
# 2026-11-30), so the ~1 450 updates of that day's 2-thread demo are run as a fixed budget,
# `train.max_steps=1450` without a time limit (the cooldown then follows the updates), shipped and
# combo side by side at 1 thread each, seed 1. Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
C="--set train.lr=0.003 --set train.lr_cooldown=0.1"
while pgrep -f 'recipe-minutes.sh shipped-t2-s1' > /dev/null; do sleep 5; done
scripts/recipe-minutes.sh combo-t2-s1 $L 10 2 $W $C --set train.seed=1 >> $L/summary-t2.txt 2>&1
F="--set train.max_minutes=0 --set train.max_steps=1450"
scripts/recipe-minutes.sh shipped-1450-s1 $L 0 1 $W $F --set train.seed=1 >> $L/summary-1450.txt 2>&1 &
scripts/recipe-minutes.sh combo-1450-s1 $L 0 1 $W $C $F --set train.seed=1 >> $L/summary-1450.txt 2>&1 &
wait
