#!/usr/bin/env bash
# Second call: the two failing GPU tests' whole output.
set -u
dir=$PWD/target/gpu-pack
cd "$dir"
libs=$(python3 -c 'import os, torch; d=os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(p for p in [os.path.join(d,"nvidia",x,"lib") for x in ("cu13","cublas","cuda_runtime","curand","cuda_nvrtc")] if os.path.isdir(p)))')
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for exe in nmt cuda_test; do python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + ".xz"), open(sys.argv[1], "wb"))' $exe; chmod +x $exe; done
export CUDA_CACHE_PATH=$dir/cuda-cache CUDA_CACHE_MAXSIZE=4294967296
for t in gpu_launch_step_equals_the_cpu_and_replays_as_a_graph two_ranks_sharing_the_gpu_end_with_the_weights_of_one; do
  echo "=== $t" | tee -a "$OUT/tests.txt"
  RUST_BACKTRACE=1 NMT_REQUIRE_GPU=1 NMT_REPO_ROOT="$dir" timeout 150 ./cuda_test --exact "$t" --nocapture --test-threads 1 >> "$OUT/tests.txt" 2>&1
  echo "=== exit $?" | tee -a "$OUT/tests.txt"
done
grep -n 'panicked\|assert\|Error\|error' "$OUT/tests.txt" | head -40
