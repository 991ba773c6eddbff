#!/usr/bin/env bash
# usage: lpu5k.sh BIN NAME [--set ...]   (per-update run at 1 thread, stops at 5 250 updates)
set -u
bin=$1 name=$2; shift 2
R=/work/runs75/lpu5k-avx2-2026-11-30
mkdir -p $R/$name
"$bin" train -c /tmp/d3/configs/rnnsearch-s2s.toml -m $R/$name --threads 1 --quiet \
  --set model.dropout=0.0 --set train.valid_bleu_sentences=300 --set train.log_every=10 \
  --set train.warmup=500 --set train.candidates=false --set data.max_len=50 \
  --set train.max_minutes=0 --set train.shortlist=false --set train.max_steps=5250 --set train.warmup=100 "$@" > $R/$name/train.txt 2>&1
rm -rf $R/$name/data $R/$name/snapshots $R/$name/checkpoint.safetensors $R/$name/model.avg.safetensors
echo "$name done $(date -u +%FT%TZ)" >> $R/done.txt
