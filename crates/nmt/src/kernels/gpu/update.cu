// The optimiser's update for the GPU (kernels/gpu/optim_step.rs runs it): one kernel per parameter
// in place of the composed update's 14 candle ops. The arithmetic is kernels/cpu/optim_step.rs's,
// in the same order: Adam (Kingma & Ba 2015) with the bias corrections folded into lr and eps
// by the host, or Adadelta (Zeiler 2012). Compiled twice, as recurrence.cu is (its header says
// how); elementwise, so the host's thread-by-thread emulation is exact.
#include "common.h"

typedef struct {
  float* out; const float* p; const float* g; const float* mv; int64_t n; int64_t adam;
  double scale; double lr; double beta; double beta2; double eps;
} NmtUpdate;
// out (3n) = [p'; m'; v'] from the parameter p (n), its gradient g (n) times `scale` (the
// clipping factor) and its moments mv (2n) = [m; v]. Adam (adam = 1): beta, beta2 are its
// betas, lr and eps the bias-corrected lr_t and eps_t. Adadelta (adam = 0): beta is rho,
// m = E[g^2], v = E[delta^2].
NMT_KERNEL void nmt_update(const NmtUpdate a) {
  int64_t i = nmt_index();
  if (i >= a.n) return;
  float g = a.g[i] * (float)a.scale, m = a.mv[i], v = a.mv[a.n + i], p = a.p[i];
  float lr = (float)a.lr, b = (float)a.beta, eps = (float)a.eps;
  if (a.adam) {
    float b2 = (float)a.beta2;
    float mi = b * m + (1.0f - b) * g;
    float vi = b2 * v + (1.0f - b2) * g * g;
    a.out[i] = p - lr * mi / (sqrtf(vi) + eps);
    a.out[a.n + i] = mi;
    a.out[2 * a.n + i] = vi;
  } else {
    float eg = b * m + (1.0f - b) * g * g;
    float d = sqrtf(v + eps) / sqrtf(eg + eps) * g;
    a.out[i] = p - lr * d;
    a.out[a.n + i] = eg;
    a.out[2 * a.n + i] = b * v + (1.0f - b) * d * d;
  }
}
