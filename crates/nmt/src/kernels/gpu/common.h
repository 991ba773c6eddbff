// What the kernels (recurrence.cu, attention.cu, search.cu, update.cu) share: the kernel qualifiers on each compiler, the
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

#ifdef __CUDACC__
#define NMT_NEG_INF (-__int_as_float(0x7f800000))
#else
#define NMT_NEG_INF (-INFINITY)
#endif

NMT_INLINE float nmt_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

NMT_INLINE int64_t nmt_index(void) { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
