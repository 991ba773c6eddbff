#!/usr/bin/env bash
# The 10-minute demo for any config (issue 40): train 10 minutes on all cores, the best model,
# beam 5 on all 2000 test verses, BLEU and chrF (`nmt demo` compiles in the shipped recipe).
#   scripts/demo-config.sh CONFIG MODEL_DIR
set -euo pipefail
cfg=$1 dir=$2
N=${NMT:-target/release/nmt}
[ ! -e "$dir" ] || { echo "demo-config: $dir exists; give a new directory" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
$N train -c "$cfg" -m "$dir" --set train.max_minutes=10 --set train.log_every=10 --quiet 2>&1 | tail -2
zcat data/bible-en-es/test.en.gz > "$tmp/test.en"; zcat data/bible-en-es/test.es.gz > "$tmp/test.es"
$N translate -m "$dir/model.safetensors" -b 5 < "$tmp/test.en" > "$dir/test.b5.es"
$N eval bleu -r "$tmp/test.es" "$dir/test.b5.es"; $N eval chrf -r "$tmp/test.es" "$dir/test.b5.es"
