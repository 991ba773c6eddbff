#!/usr/bin/env bash
# The demo at 1 thread, two runs side by side (one core each): the shipped winner against the winner with scale_moments.
set -u
R=/work/runs75/demo-t1-scaled-avx2-2026-11-30
S=/tmp/d4/scripts/recipe-minutes.sh
export NMT=/tmp/d4/nmt
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
M="--set train.candidates.scale_moments=true"
echo "t1 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t1-scaled-1 $R 10 1 $W $M > $R/t1-scaled-1.line 2>&1 &
$S t1-win-1    $R 10 1 $W > $R/t1-win-1.line 2>&1
wait
cat $R/t1-scaled-1.line $R/t1-win-1.line >> $R/summary.txt
$S t1-win-2    $R 10 1 $W --set train.seed=2 > $R/t1-win-2.line 2>&1 &
$S t1-scaled-2 $R 10 1 $W $M --set train.seed=2 > $R/t1-scaled-2.line 2>&1
wait
cat $R/t1-win-2.line $R/t1-scaled-2.line >> $R/summary.txt
echo "t1 end $(date -u +%FT%TZ)" >> $R/summary.txt
