#!/usr/bin/env bash
# The 10-minute demo for any config (issue 40): train 10 minutes on all cores, then
# scripts/eval-run.sh (beam 5 on all 2000 test verses of the best and the averaged model, BLEU and
# chrF; `nmt demo` compiles in the shipped recipe, configs/rnnsearch-s2s.toml).
#   scripts/demo-config.sh CONFIG MODEL_DIR
set -euo pipefail
cfg=$1 dir=$2
N=${NMT:-target/release/nmt}
[ ! -e "$dir" ] || { echo "demo-config: $dir exists; give a new directory" >&2; exit 1; }
"$N" train -c "$cfg" -m "$dir" --set train.max_minutes=10 --set train.log_every=10 --quiet 2>&1 | tail -2
NMT=$N "$(dirname "$0")/eval-run.sh" "$dir"
