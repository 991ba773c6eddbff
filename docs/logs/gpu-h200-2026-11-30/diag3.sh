#!/usr/bin/env bash
set -u
dir=$PWD/target/gpu-pack
cd "$dir"
libs=$(python3 -c 'import os, torch; d=os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(p for p in [os.path.join(d,"nvidia",x,"lib") for x in ("cu13","cublas","cuda_runtime","curand","cuda_nvrtc")] if os.path.isdir(p)))')
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + ".xz"), open(sys.argv[1], "wb"))' cuda_test; chmod +x cuda_test
export CUDA_CACHE_PATH=$dir/cuda-cache CUDA_CACHE_MAXSIZE=4294967296
run() { echo "=== $*" >> "$OUT/diag.txt"; env "$@" NMT_REQUIRE_GPU=1 NMT_REPO_ROOT="$dir" timeout 100 ./cuda_test --exact "$t" --nocapture --test-threads 1 >> "$OUT/diag.txt" 2>&1; echo "=== exit $?" >> "$OUT/diag.txt"; }
t=gpu_launch_step_equals_the_cpu_and_replays_as_a_graph; run X=1
t=two_ranks_sharing_the_gpu_end_with_the_weights_of_one
run NMT_RANKS_SET="train.adam_eps=1e-6"
run NMT_RANKS_SET="train.optimizer=\"adadelta\""
run X=1
grep -n 'panicked\|test result\|against\|worst' "$OUT/diag.txt" | cut -c1-300
