// The embedding lookup's kernels for the GPU (kernels/gpu/lookup.rs runs them): the gather of
// x_r = E[id_r] * m_r and its backward scatter-add dE[id_r] += g_r * m_r, the arithmetic of
// kernels/cpu/lookup.rs in the same order. Compiled twice, as recurrence.cu is (its header says
// how). The ids are int64 on the device; `mask` is NULL when there is no dropout mask.
//
// No atomics in the backward pass: one thread per embedding column walks the N rows in order,
// so a word that occurs twice gets its rows' gradients added in row order, as on the CPU, and
// the result does not depend on the scheduling (deterministic, and exact under emulation).
#include "common.h"

// out (rows, dim) = table[ids[r]] (times mask (rows, dim), contiguous, where given); table
// (vocab, dim) contiguous. One thread per element.
typedef struct { float* out; const float* table; const int64_t* ids; const float* mask; int64_t rows; int64_t dim; } NmtEmbedFwd;
NMT_KERNEL void nmt_embed_fwd(const NmtEmbedFwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.dim) return;
  int64_t r = i / a.dim, j = i % a.dim;
  float x = a.table[a.ids[r] * a.dim + j];
  a.out[i] = a.mask ? x * a.mask[i] : x;
}

// de (vocab, dim), zeroed by the caller: de[ids[r]][j] += g[r][j] (times mask[r][j]) for every
// row r in order. One thread per column j: no two threads touch the same element.
typedef struct { float* de; const float* g; const int64_t* ids; const float* mask; int64_t rows; int64_t dim; } NmtEmbedBwd;
NMT_KERNEL void nmt_embed_bwd(const NmtEmbedBwd a) {
  int64_t j = nmt_index();
  if (j >= a.dim) return;
  for (int64_t r = 0; r < a.rows; r++) {
    int64_t i = r * a.dim + j;
    float x = a.mask ? a.g[i] * a.mask[i] : a.g[i];
    a.de[a.ids[r] * a.dim + j] += x;
  }
}
