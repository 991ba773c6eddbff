#!/usr/bin/env bash
# The demo at 2 threads, one run at a time, ABBA: the shipped winner against the winner with scale_moments.
set -u
R=/work/runs75/demo-t2-scaled-avx2-2026-11-30
S=/tmp/d4/scripts/recipe-minutes.sh
export NMT=/tmp/d4/nmt
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
M="--set train.candidates.scale_moments=true"
echo "t2 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t2-scaled-1 $R 10 2 $W $M >> $R/summary.txt 2>&1
$S t2-win-1    $R 10 2 $W >> $R/summary.txt 2>&1
$S t2-win-2    $R 10 2 $W --set train.seed=2 >> $R/summary.txt 2>&1
$S t2-scaled-2 $R 10 2 $W $M --set train.seed=2 >> $R/summary.txt 2>&1
echo "t2 end $(date -u +%FT%TZ)" >> $R/summary.txt
