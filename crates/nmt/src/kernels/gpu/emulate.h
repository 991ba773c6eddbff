// What nvcc provides and the host's C++ compiler does not, for running recurrence.cu's kernels
// on the host, one thread index after another (kernels/gpu/emulated.rs sets the index through
// nmt_emu_index before each call). Only what elementwise kernels use: no shared memory, no
// __syncthreads, so the emulation is exact.
#pragma once
#include <math.h>
#include <stdint.h>

struct nmt_dim3 {
  unsigned x, y, z;
};
extern thread_local nmt_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
