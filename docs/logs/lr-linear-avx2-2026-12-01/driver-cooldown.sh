#!/usr/bin/env bash
# Cooldowns of the last 20 % and 10 % of the 10 minutes (`train.lr_cooldown`), 1 thread, side
# by side (one core each), seed 1: against shipped-t1-s1 of driver.sh (run side by side with
# linear-t1-s1, the cooldown over the whole run, 04:14-04:25). Run from the repository root.
set -uo pipefail
L=docs/logs/lr-linear-avx2-2026-12-01
export NMT=${NMT:-/tmp/s6/nmt}
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
scripts/recipe-minutes.sh cool20-t1-s1 $L 10 1 $W --set train.lr_cooldown=0.2 --set train.seed=1 >> $L/summary-t1.txt 2>&1 &
scripts/recipe-minutes.sh cool10-t1-s1 $L 10 1 $W --set train.lr_cooldown=0.1 --set train.seed=1 >> $L/summary-t1.txt 2>&1 &
wait
