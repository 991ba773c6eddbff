// What recurrence.cu and attention.cu share: the kernel qualifiers on each compiler, the
// thread index, the logistic function. On the host (no __CUDACC__) emulate.h gives the index
// variables that kernels/gpu/emulated.rs sets before each call.
#pragma once
#ifdef __CUDACC__
#include <stdint.h>
#define NMT_KERNEL extern "C" __global__
#define NMT_INLINE __device__ __forceinline__
#else
#include "emulate.h"
#endif

NMT_INLINE float nmt_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

NMT_INLINE int64_t nmt_index(void) { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
