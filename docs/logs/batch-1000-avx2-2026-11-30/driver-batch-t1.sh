#!/usr/bin/env bash
# The demo at 1 thread, two runs side by side (one core each): the shipped demo recipe against it with
# batches of 1 000 target tokens instead of 2 000 (twice the updates a slow CPU makes in 10 minutes?).
set -u
R=/work/runs75/batch-t1-avx2-2026-11-30
S=/work/main/scripts/recipe-minutes.sh
export NMT=/tmp/s5/nmt-head
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
B="--set train.batch.max_tokens=1000"
echo "t1 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t1-b1000-1 $R 10 1 $W $B > $R/t1-b1000-1.line 2>&1 &
$S t1-win-1   $R 10 1 $W > $R/t1-win-1.line 2>&1
wait
cat $R/t1-b1000-1.line $R/t1-win-1.line >> $R/summary.txt
$S t1-win-2   $R 10 1 $W --set train.seed=2 > $R/t1-win-2.line 2>&1 &
$S t1-b1000-2 $R 10 1 $W $B --set train.seed=2 > $R/t1-b1000-2.line 2>&1
wait
cat $R/t1-win-2.line $R/t1-b1000-2.line >> $R/summary.txt
echo "t1 end $(date -u +%FT%TZ)" >> $R/summary.txt
