# Sourced by the scripts that train several systems side by side (ablation.sh,
# compare-architectures.sh): runs FUNCTION on each ITEM in the background, PARALLEL at a
# time, and returns when all are done. Under `set -e` the caller stops at the first failed
# job, as each script wants: a table over half-trained systems would mislead.
#
#   run_parallel PARALLEL FUNCTION ITEM...
run_parallel() {
  local parallel=$1 fn=$2 running=0 item
  shift 2
  for item in "$@"; do
    "$fn" "$item" &
    running=$((running + 1))
    if [ "$running" -ge "$parallel" ]; then
      wait -n
      running=$((running - 1))
    fi
  done
  wait
}
