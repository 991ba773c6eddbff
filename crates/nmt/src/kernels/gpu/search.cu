// The search's kernels for the GPU (kernels/gpu/row_best.rs runs them): each row's best tokens,
// picked on the device so that a step brings (R, 2k) numbers to the host, not the whole
// distribution (R, V). Compiled twice, as recurrence.cu is (its header says how); one thread
// per row, so the host's thread-by-thread emulation is exact.
#include "common.h"

typedef struct { const float* lp; int64_t width; int64_t rows; int64_t k; const int64_t* skip; int64_t n_skip; float* out; } NmtRowTopK;
// out (rows, 2k): per row its k best values of lp (rows, width), best first, equal values in
// column order, then their columns (as floats); columns in `skip` and values at -inf are never
// chosen, and slots left over hold -inf and -1. The same lists as kernels/cpu/row_best.rs's
// Fold::rows: a value enters when it beats the row's threshold, the k-th best so far.
NMT_KERNEL void nmt_row_top_k(const NmtRowTopK a) {
  int64_t r = nmt_index();
  if (r >= a.rows || a.k <= 0) return;
  const float* x = a.lp + r * a.width;
  float* val = a.out + r * 2 * a.k;
  float* col = val + a.k;
  int64_t n = 0;
  float thr = NMT_NEG_INF;
  for (int64_t j = 0; j < a.width; j++) {
    float v = x[j];
    if (!(v > thr)) continue;
    int skipped = 0;
    for (int64_t s = 0; s < a.n_skip; s++) skipped |= a.skip[s] == j;
    if (skipped) continue;
    int64_t at = 0;
    while (at < n && !(v > val[at])) at++;
    int64_t last = n < a.k ? n : a.k - 1;
    for (int64_t e = last; e > at; e--) {
      val[e] = val[e - 1];
      col[e] = col[e - 1];
    }
    val[at] = v;
    col[at] = (float)j;
    if (n < a.k) n++;
    if (n == a.k) thr = val[a.k - 1];
  }
  for (int64_t e = n; e < a.k; e++) {
    val[e] = NMT_NEG_INF;
    col[e] = -1.0f;
  }
}
