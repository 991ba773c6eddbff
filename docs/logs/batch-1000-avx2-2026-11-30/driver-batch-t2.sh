#!/usr/bin/env bash
# The demo at 2 threads, one run at a time: the shipped demo recipe against it with batches of
# 1 000 target tokens instead of 2 000, alternated, two seeds each.
set -u
R=/work/runs75/batch-t2-avx2-2026-11-30
S=/work/main/scripts/recipe-minutes.sh
export NMT=/tmp/s5/nmt-head
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
B="--set train.batch.max_tokens=1000"
echo "t2 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t2-b1000-1 $R 10 2 $W $B >> $R/summary.txt 2>&1
$S t2-win-1   $R 10 2 $W >> $R/summary.txt 2>&1
$S t2-win-2   $R 10 2 $W --set train.seed=2 >> $R/summary.txt 2>&1
$S t2-b1000-2 $R 10 2 $W $B --set train.seed=2 >> $R/summary.txt 2>&1
echo "t2 end $(date -u +%FT%TZ)" >> $R/summary.txt
