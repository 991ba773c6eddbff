// What every kernel source of this folder shares: the kernel qualifiers on each compiler, the
// thread index, the logistic function, the cells' codes and the step's row structs. On the host (no __CUDACC__) emulate.h gives the index
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

// The cells' codes (`kind`, `form` fields; args.rs's PAPER, RESET_AFTER, LSTM): the GRU's two
// forms (Cho et al. 2014's, and reset-after) and the LSTM.
#define NMT_PAPER 0
#define NMT_RESET_AFTER 1
#define NMT_LSTM 2

// What every cell kernel reads of its step: the position t (row b is live when t < lens[b])
// and the rows of gi and gh (`*_ld` apart); and where the backward kernels write the gradients
// of gi's and gh's pre-activations. Nested in the kernels' structs (8-byte fields, no padding:
// args.rs's StepRows and GradRows).
typedef struct { int64_t t; const int64_t* lens; const float* gi; int64_t gi_ld; const float* gh; int64_t gh_ld; } NmtStepRows;
typedef struct { float* dgi; int64_t dgi_ld; float* dgh; int64_t dgh_ld; } NmtGradRows;
