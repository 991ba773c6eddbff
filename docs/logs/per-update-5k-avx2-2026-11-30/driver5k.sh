#!/usr/bin/env bash
# waits for the 1-thread demo pairs, then the two 5 250-update runs side by side
while pgrep -f driver-t1.sh > /dev/null; do sleep 20; done
echo "start $(date -u +%FT%TZ)" >> /work/runs75/lpu5k-avx2-2026-11-30/done.txt
bash /tmp/d3/lpu5k.sh /tmp/d3/nmt full-s1 &
bash /tmp/d3/lpu5k.sh /tmp/d3/nmt scaled-s1 --set train.candidates.frequent=100 --set train.candidates.sampled=1000 --set train.candidates.scale_moments=true
wait
