#!/usr/bin/env bash
# The GPU kernels' host build (crates/nmt/src/kernels/gpu/*.cu through emulate.c) under
# AddressSanitizer, running the emulated GPU tests and the recorded training step (issue 69): a kernel that reads or
# writes outside the buffers its launch names fails here, on any machine, where on a GPU it would
# corrupt memory silently or fault asynchronously.
#
#   scripts/asan-emulated.sh        # exits 0 when the emulated tests pass with no ASan report
#
# Stable Rust has no sanitizer flag (-Zsanitizer is nightly), so the C side is instrumented
# (CFLAGS=-fsanitize=address, read by the cc crate in crates/nmt/build.rs) and the ASan runtime
# linked into the test binary. ASan's malloc then puts red zones
# around every heap buffer, the Rust ones too, and its checks in the kernels catch an access past
# them. `--target` keeps the flags off build scripts and proc macros (which rustc loads, and which
# must not link the runtime). Its own target directory: the flags change every artifact.
# Leak checking is off: the process exits with candle's and rayon's allocations alive by design.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=$(rustc -vV | awk '/^host:/ {print $2}')
export CFLAGS="-fsanitize=address -fno-omit-frame-pointer -O1"
# rustc links with -nodefaultlibs, so the runtime is named (-lasan) and preloaded when the tests
# run (it must come first in the process's library list; the Rust code itself is not instrumented).
export RUSTFLAGS="-C link-arg=-lasan"
asan_rt=$(cc -print-file-name=libasan.so)
[ -e "$asan_rt" ] || { echo "ASAN NOT RUN: the C compiler has no libasan.so ($asan_rt)" >&2; exit 3; }
runner_var="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_RUNNER"
export "$runner_var"="env LD_PRELOAD=$asan_rt"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export CARGO_TARGET_DIR="$root/target/asan"
cargo test --release --target "$target" -p nmt --lib -- kernels::gpu kernels::recurrent_twin_tests kernels::output_twin_tests model::decoder_gpu model::launch_tests model::launch_layer_tests search::candle 2>&1 | tee "$CARGO_TARGET_DIR.log" | tail -25
if grep -q "ERROR: AddressSanitizer" "$CARGO_TARGET_DIR.log"; then
  echo "ASAN: the emulated GPU kernels accessed memory outside their buffers" >&2
  exit 1
fi
echo "ASAN: the emulated GPU tests ran clean under AddressSanitizer"
