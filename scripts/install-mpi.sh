#!/usr/bin/env bash
# Open MPI (library, headers, mpirun) and libclang (the `mpi` crate generates its bindings
# with bindgen), for `--features mpi` (docs/DISTRIBUTED.md). Installs through apt when they are
# missing; needs root (or sudo).
set -euo pipefail
# libclang.so itself (libclang-1x.so, libclang.so.1x): Open MPI's packages bring
# libclang-cpp.so, which bindgen cannot load, so a looser `libclang*` pattern matched it and
# skipped the install on a fresh machine.
have_clang() {
  local f
  for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* /usr/lib/*-linux-gnu/libclang.so*; do
    [ -e "$f" ] && return 0
  done
  return 1
}
if command -v mpirun >/dev/null && command -v mpicc >/dev/null && have_clang; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends libopenmpi-dev openmpi-bin libclang-dev clang > /dev/null
command -v mpirun && mpirun --version | head -n 1
