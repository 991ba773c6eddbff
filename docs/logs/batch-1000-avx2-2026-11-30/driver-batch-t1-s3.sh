#!/usr/bin/env bash
# The third seed of driver-batch-t1.sh: the two runs side by side, one core each.
set -u
R=/work/runs75/batch-t1-avx2-2026-11-30
S=/work/main/scripts/recipe-minutes.sh
export NMT=/tmp/s5/nmt-head
W="--set train.warmup=100 --set train.candidates.frequent=100 --set train.candidates.sampled=1000"
B="--set train.batch.max_tokens=1000"
echo "t1 seed 3 start $(date -u +%FT%TZ)" >> $R/summary.txt
$S t1-b1000-3 $R 10 1 $W $B --set train.seed=3 > $R/t1-b1000-3.line 2>&1 &
$S t1-win-3   $R 10 1 $W --set train.seed=3 > $R/t1-win-3.line 2>&1
wait
cat $R/t1-b1000-3.line $R/t1-win-3.line >> $R/summary.txt
echo "t1 seed 3 end $(date -u +%FT%TZ)" >> $R/summary.txt
