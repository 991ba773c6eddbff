// The rounding of f32 operands to bf16 before a product in bf16 (kernels/gpu/bf16.rs runs it
// before Launch::gemm_bf16: cublasGemmEx with bf16 A and B, f32 C and f32 sums on the GPU; the
// emulation widens the same bf16 values back to f32 and runs its f32 GEMM). Compiled twice, as
// recurrence.cu is (its header says how); elementwise, so the host's thread-by-thread emulation
// is exact, and the emulated products read the very bits the GPU's conversion writes.
#include "common.h"

// The bits of x as an unsigned integer.
NMT_INLINE uint32_t nmt_f32_bits(float x) {
#ifdef __CUDACC__
  return __float_as_uint(x);
#else
  union { float f; uint32_t u; } v;
  v.f = x;
  return v.u;
#endif
}

// x rounded to bf16, as its 16 bits: to nearest, ties to even (adding 0x7fff plus the kept
// part's last bit carries into it exactly when the dropped half is above one half, or is one
// half and the kept part is odd), the CPU's rounding (half::bf16::from_f32; vcvtne2ps2bf16 on
// all but subnormals); a NaN stays a NaN with its sign and upper payload and the quiet bit set, as
// half's does (rounding could carry a NaN's payload into infinity). Finite values past bf16's
// largest round to infinity; subnormals are rounded, not flushed to zero (vcvtneps2bf16, the
// CPU's vector rounding, flushes them: the one difference, below 2^-126).
NMT_INLINE uint16_t nmt_bf16_bits(float x) {
  uint32_t u = nmt_f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// dst (rows, cols), contiguous, = src (rows, cols; rows src_ld apart) rounded to bf16: one
// operand of a product as stored, one thread per element.
typedef struct { uint16_t* dst; const float* src; int64_t src_ld; int64_t rows; int64_t cols; } NmtToBf16;
NMT_KERNEL void nmt_to_bf16(const NmtToBf16 a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.cols) return;
  a.dst[i] = nmt_bf16_bits(a.src[(i / a.cols) * a.src_ld + i % a.cols]);
}
