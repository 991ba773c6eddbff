#!/usr/bin/env bash
# Lay the kept logs of scripts/curves-vs-peers.sh (docs/logs/curves-vs-peers-*/) out as its WORK
# directory, so that one arm can be trained again, or a new one added, and the table and picture
# redrawn with every arm, without training the others again. A fresh clone has no runs/: the
# curves' peers take hours each (JoeyNMT at its defaults: about 6 hours to 5 000 updates on one
# thread), so only their logs are kept in the repository.
#
#   scripts/curves-restore.sh LOGDIR [WORK]      (WORK: runs/curves)
#
# What it restores, for each arm found in LOGDIR (an arm already in WORK is left alone):
# - Marian and JoeyNMT arms: ARM-valid/*.hyp -> WORK/ARM/valid/, ARM.train.log -> the log the
#   report reads (Marian: WORK/ARM/train.log; JoeyNMT: WORK/ARM/model/train.log), JoeyNMT's
#   ARM.curve.tsv -> WORK/ARM/curve.tsv;
# - nmt arms: the train_log.jsonl that the table's "given" column names (curves-vs-peers.sh's
#   REUSE_NMT_SMALL / REUSE_NMT_S2S);
# - WORK/ARM.given: the "given" column of LOGDIR/curves.md.
# Then: scripts/curves-vs-peers.sh UPDATES ARM (with the same WORK) trains what is missing and
# redraws everything (it marks nothing done here, so name only the arms to train).
set -euo pipefail
cd "$(dirname "$0")/.."
L=${1:?usage: scripts/curves-restore.sh LOGDIR [WORK]}
W=${2:-runs/curves}
[ -f "$L/curves.md" ] || { echo "curves-restore: $L/curves.md not found" >&2; exit 1; }
mkdir -p "$W"

# The label of each arm in curves.md (as scripts/curves-report.py writes it).
declare -A LABEL=(
  [marian]="Marian s2s" [marian-defaults]="Marian s2s defaults" [joey-defaults]="JoeyNMT defaults"
  [joey-recipe]="JoeyNMT recipe" [nmt-small]="nmt rnnsearch-small" [nmt-s2s]="nmt rnnsearch-s2s"
)
given() {   # the second column of the row whose first column is the arm's label
  awk -F ' \\| ' -v l="| ${LABEL[$1]}" '$1 == l { print $2 }' "$L/curves.md"
}

for a in "${!LABEL[@]}"; do
  [ -e "$W/$a" ] && { echo "curves-restore: $W/$a is there, left alone"; continue; }
  g=$(given "$a")
  case $a in
    marian*|joey*)
      [ -d "$L/$a-valid" ] || continue
      mkdir -p "$W/$a/valid"
      cp "$L/$a-valid/"*.hyp "$W/$a/valid/"
      if [[ $a == marian* ]]; then
        cp "$L/$a.train.log" "$W/$a/train.log"
      else
        mkdir -p "$W/$a/model"
        cp "$L/$a.train.log" "$W/$a/model/train.log"
        cp "$L/$a.curve.tsv" "$W/$a/curve.tsv"
      fi ;;
    nmt*)
      # "configs/X.toml (the log docs/logs/.../train_log.jsonl), ..."
      log=$(sed -n 's/.*(the log \([^)]*\)).*/\1/p' <<< "$g")
      [ -n "$log" ] && [ -f "$log" ] || continue
      mkdir -p "$W/$a"
      cp "$log" "$W/$a/train_log.jsonl" ;;
  esac
  echo "$g" > "$W/$a.given"
  echo "curves-restore: $a restored"
done
