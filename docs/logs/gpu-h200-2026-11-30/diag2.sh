#!/usr/bin/env bash
set -u
dir=$PWD/target/gpu-pack
cd "$dir"
libs=$(python3 -c 'import os, torch; d=os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(p for p in [os.path.join(d,"nvidia",x,"lib") for x in ("cu13","cublas","cuda_runtime","curand","cuda_nvrtc")] if os.path.isdir(p)))')
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for exe in cuda_test; do python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1] + ".xz"), open(sys.argv[1], "wb"))' $exe; chmod +x $exe; done
export CUDA_CACHE_PATH=$dir/cuda-cache CUDA_CACHE_MAXSIZE=4294967296
t=gpu_launch_step_equals_the_cpu_and_replays_as_a_graph
for v in "" NMT_DIAG_NODROP NMT_DIAG_FULL NMT_DIAG_NOSMOOTH "NMT_DIAG_NODROP NMT_DIAG_FULL" "NMT_DIAG_NODROP NMT_DIAG_FULL NMT_DIAG_NOSMOOTH" "NMT_DIAG_B=1 NMT_DIAG_NODROP" "NMT_DIAG_B=2 NMT_DIAG_NODROP NMT_DIAG_FULL"; do
  e=(); for x in $v; do case $x in *=*) e+=("$x");; *) e+=("$x=1");; esac; done
  echo "=== variant: ${v:-none}" >> "$OUT/diag.txt"
  env "${e[@]}" NMT_REQUIRE_GPU=1 NMT_REPO_ROOT="$dir" timeout 60 ./cuda_test --exact "$t" --nocapture --test-threads 1 2>&1 | grep -v '^$' | grep 'GPU loss\|of its scale\|test result' >> "$OUT/diag.txt"
done
echo done
