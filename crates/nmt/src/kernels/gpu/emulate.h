// What nvcc provides and the host's C compiler does not, for running this folder's kernels on
// the host, one thread index after another (kernels/gpu/emulated.rs sets the index through
// nmt_emu_index before each call). Only what elementwise kernels use: no shared memory, no
// __syncthreads, so the emulation is exact.
#pragma once
#include <math.h>
#include <stdint.h>

typedef struct {
  unsigned x, y, z;
} nmt_dim3;
extern _Thread_local nmt_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define NMT_KERNEL
#define NMT_INLINE static inline
