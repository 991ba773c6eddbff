#!/usr/bin/env bash
set -u
R=/work/runs75/demo-t1-avx2-2026-11-30
S=/tmp/d3/scripts/recipe-minutes.sh
export NMT=/tmp/d3/nmt
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
echo "t1 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t1-win-1  $R 10 1 $W > $R/t1-win-1.line 2>&1 &
$S t1-base-1 $R 10 1 > $R/t1-base-1.line 2>&1
wait
cat $R/t1-win-1.line $R/t1-base-1.line >> $R/summary.txt
$S t1-win-2  $R 10 1 $W --set train.seed=2 > $R/t1-win-2.line 2>&1 &
$S t1-base-2 $R 10 1 --set train.seed=2 > $R/t1-base-2.line 2>&1
wait
cat $R/t1-win-2.line $R/t1-base-2.line >> $R/summary.txt
echo "t1 end $(date -u +%FT%TZ)" >> $R/summary.txt
