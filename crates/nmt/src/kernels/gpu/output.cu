// The output layers' kernels for the GPU: the deep output's activation and its backward pass
// (kernels/gpu/deep_output.rs; Bahdanau et al. 2014, appendix A.2.2) and the softmax loss's
// row pass and its gradient (kernels/gpu/proj_nll.rs); the products between them are cuBLAS's.
// The arithmetic is the CPU ops' (kernels/cpu/deep_output.rs, kernels/cpu/proj_nll.rs) in the
// same order, down to the 16 lanes of the CPU's row sums. Compiled twice, as recurrence.cu is
// (its header says how): elementwise or one thread per row, so the host's emulation is exact.
// Matrices are row-major and contiguous; `mask` is NULL when there is no dropout mask.
#include "common.h"

// The deep output's activation, one thread per output unit: out (rows, units) = act(pre) (times
// mask (rows, units) where given), pre (rows, w) holding [sc ey] W + b. maxout: w = 2 units,
// out = the larger of each adjacent pair (the first on a tie, as maxout_pairs); pre is kept for
// the backward pass to find the winner again. tanh: w = units, pre is overwritten with
// tanh(pre) before the mask, which the backward pass reads (its derivative is 1 - y^2).
typedef struct { float* pre; float* out; const float* mask; int64_t rows; int64_t units; int64_t maxout; } NmtDeepActFwd;
NMT_KERNEL void nmt_deep_act_fwd(const NmtDeepActFwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.units) return;
  float t;
  if (a.maxout) {
    float p0 = a.pre[2 * i], p1 = a.pre[2 * i + 1];
    t = p1 > p0 ? p1 : p0;
  } else {
    t = tanhf(a.pre[i]);
    a.pre[i] = t;
  }
  a.out[i] = a.mask ? t * a.mask[i] : t;
}

// The gradient of the pre-activation, one thread per element of dpre (rows, w), from dt (rows,
// units) and what nmt_deep_act_fwd left in pre: maxout sends each unit's gradient to its pair's
// winner and a zero to the other; tanh multiplies by 1 - y^2. The mask first, as on the CPU.
typedef struct { float* dpre; const float* pre; const float* dt; const float* mask; int64_t rows; int64_t units; int64_t maxout; } NmtDeepActBwd;
NMT_KERNEL void nmt_deep_act_bwd(const NmtDeepActBwd a) {
  int64_t i = nmt_index();
  int64_t width = a.maxout ? 2 * a.units : a.units;
  if (i >= a.rows * width) return;
  int64_t o = a.maxout ? i / 2 : i;
  float g = a.mask ? a.dt[o] * a.mask[o] : a.dt[o];
  if (a.maxout) {
    int64_t first = 2 * o;
    int64_t second = a.pre[first + 1] > a.pre[first];
    a.dpre[i] = i - first == second ? g : 0.0f;
  } else {
    float y = a.pre[i];
    a.dpre[i] = g * (1.0f - y * y);
  }
}

// The loss's row pass, one thread per row r of z (rows, vocab) = x W: adds the bias b (vocab),
// replaces the row by exp(z - max), and writes nll[r] = lse(z) - (1 - eps) z[target] -
// eps mean(z) (label smoothing eps; eps = 0: the plain NLL) and inv_sum[r] = 1 / sum exp(z - max).
// The running max, sum of z and sum of exp in 16 lanes, folded in lane order: the CPU's
// softmax_row, so that the sums are added in the same order.
typedef struct {
  float* z; const float* b; const int64_t* targets; float* nll; float* inv_sum; int64_t rows; int64_t vocab; double eps;
} NmtNllRows;
NMT_KERNEL void nmt_nll_rows(const NmtNllRows a) {
  int64_t r = nmt_index();
  if (r >= a.rows) return;
  float* z = a.z + r * a.vocab;
  int64_t v = a.vocab, full = v / 16 * 16;
  float eps = (float)a.eps;
  float mx[16], total[16], acc[16];
  for (int k = 0; k < 16; k++) {
    mx[k] = NMT_NEG_INF;
    total[k] = 0.0f;
    acc[k] = 0.0f;
  }
  for (int64_t j = 0; j < full; j += 16) {
    for (int k = 0; k < 16; k++) {
      float x = z[j + k] + a.b[j + k];
      z[j + k] = x;
      mx[k] = fmaxf(mx[k], x);
      total[k] += x;
    }
  }
  for (int64_t j = full; j < v; j++) {
    float x = z[j] + a.b[j];
    z[j] = x;
    mx[0] = fmaxf(mx[0], x);
    total[0] += x;
  }
  float max = NMT_NEG_INF;
  for (int k = 0; k < 16; k++) max = fmaxf(max, mx[k]);
  float zt = z[a.targets[r]];
  float mean = 0.0f;
  if (eps != 0.0f) {
    float t = 0.0f;
    for (int k = 0; k < 16; k++) t += total[k];
    mean = t / (float)v;
  }
  for (int64_t j = 0; j < full; j += 16) {
    for (int k = 0; k < 16; k++) {
      float e = expf(z[j + k] - max);
      z[j + k] = e;
      acc[k] += e;
    }
  }
  float sum = 0.0f;
  for (int k = 0; k < 16; k++) sum += acc[k];
  for (int64_t j = full; j < v; j++) {
    float e = expf(z[j] - max);
    z[j] = e;
    sum += e;
  }
  a.nll[r] = max + logf(sum) - (1.0f - eps) * zt - eps * mean;
  a.inv_sum[r] = 1.0f / sum;
}

// The logits' gradient in place of p (rows, vocab) = exp(z - max) from nmt_nll_rows, one thread
// per element: (softmax - (1 - eps) onehot(target) - eps / vocab) * dnll[r], rounded as the CPU
// rounds it (p * (dnll / sum) - dnll * eps / vocab, then the target's term).
typedef struct { float* p; const float* inv_sum; const float* dnll; const int64_t* targets; int64_t rows; int64_t vocab; double eps; } NmtNllGrad;
NMT_KERNEL void nmt_nll_grad(const NmtNllGrad a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.vocab) return;
  int64_t r = i / a.vocab, j = i % a.vocab;
  float eps = (float)a.eps, g = a.dnll[r];
  float scale = g * a.inv_sum[r], shift = g * (eps / (float)a.vocab);
  float d = a.p[i] * scale - shift;
  if (j == a.targets[r]) d = d - g * (1.0f - eps);
  a.p[i] = d;
}
