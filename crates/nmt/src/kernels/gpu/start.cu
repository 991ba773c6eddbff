// The decoder's start state for the GPU (kernels/gpu/start_pool.rs runs it): s_0 = tanh(p W_s + b_s)
// with p a summary of the annotations, kernels/cpu/start_pool.rs's arithmetic in its order:
// each row's positions weighted by 1/count and added in position order. Compiled twice, as
// recurrence.cu is (its header says how); one thread per output element, so the host's
// emulation is exact.
#include "common.h"

typedef struct {
  float* p; const float* ann; const int64_t* lens; int64_t batch; int64_t len; int64_t c; int64_t width;
  int64_t col; int64_t mean;
} NmtPool;
// p (batch, width) from ann (batch, len, c): columns [col, col + width) of position 0 (mean = 0:
// the first backward state, col = c - width) or the mean over positions j < lens[b] (mean = 1).
NMT_KERNEL void nmt_pool(const NmtPool a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.width) return;
  int64_t b = i / a.width, k = i % a.width, n = a.mean ? a.lens[b] : 1;
  float w = 1.0f / (float)n, s = 0.0f;
  for (int64_t j = 0; j < n; ++j) s += a.ann[(b * a.len + j) * a.c + a.col + k] * w;
  a.p[i] = s;
}

typedef struct {
  float* dann; const float* dp; const int64_t* lens; int64_t batch; int64_t len; int64_t c; int64_t width;
  int64_t col; int64_t mean;
} NmtPoolBwd;
// dann (batch, len, c) += the gradient of nmt_pool's p: one thread per (b, j, k), each element
// written once (positions beyond the summary's untouched).
NMT_KERNEL void nmt_pool_bwd(const NmtPoolBwd a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.len * a.width) return;
  int64_t k = i % a.width, j = (i / a.width) % a.len, b = i / a.width / a.len;
  int64_t n = a.mean ? a.lens[b] : 1;
  if (j >= n) return;
  a.dann[(b * a.len + j) * a.c + a.col + k] += a.dp[b * a.width + k] * (1.0f / (float)n);
}

typedef struct { float* y; const float* x; int64_t n; } NmtTanh;
// y = tanh(x), elementwise (in place when y == x).
NMT_KERNEL void nmt_tanh(const NmtTanh a) {
  int64_t i = nmt_index();
  if (i < a.n) a.y[i] = tanhf(a.x[i]);
}

typedef struct { float* dx; const float* y; const float* dy; int64_t n; } NmtTanhBwd;
// dx = dy (1 - y^2), y = tanh(x).
NMT_KERNEL void nmt_tanh_bwd(const NmtTanhBwd a) {
  int64_t i = nmt_index();
  if (i < a.n) a.dx[i] = a.dy[i] * (1.0f - a.y[i] * a.y[i]);
}
