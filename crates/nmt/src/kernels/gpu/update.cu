// The optimiser's update for the GPU (kernels/gpu/optim_step.rs runs it): one kernel per parameter
// (or per arena of parameters) in place of the composed update's 14 candle ops. The arithmetic is
// kernels/cpu/optim_step.rs's, in the same order: Adam (Kingma & Ba 2015) with the bias
// corrections folded into lr and eps, or Adadelta (Zeiler 2012). Compiled twice, as
// recurrence.cu is (its header says how); elementwise, so the host's emulation is exact.
//
// The step-dependent scalars (lr_t, eps_t, the clipping factor) are read from device memory,
// `scal` = [lr_t, eps_t, scale, skip], never from launch arguments: a recorded step replays its
// launch arguments as they were (kernels/gpu/recording.rs). `nmt_step_scalars` computes them on
// the device from the update count and the gradients' squared norm, as train/optim.rs does on
// the host; the candle path writes them from the host.
#include "common.h"

typedef struct {
  float* p_out; float* m_out; float* v_out; const float* p; const float* m; const float* v;
  const float* g; const float* scal; int64_t n; int64_t adam; double beta; double beta2;
} NmtUpdate;
// p' = p - ..., m', v' from the parameter p (n), its gradient g (n) times scal[2] (the
// clipping factor) and its moments m, v (n each). Outputs may alias inputs (in place): each
// thread reads its element before it writes it. Adam (adam = 1): beta, beta2 are its betas,
// scal[0], scal[1] the bias-corrected lr_t and eps_t. Adadelta (adam = 0): beta is rho,
// m = E[g^2], v = E[delta^2], scal[0], scal[1] its lr and eps. scal[3] != 0: skip (a diverged
// update's gradient norm, refused after the step).
NMT_KERNEL void nmt_update(const NmtUpdate a) {
  int64_t i = nmt_index();
  if (i >= a.n || a.scal[3] != 0.0f) return;
  float g = a.g[i] * a.scal[2], m = a.m[i], v = a.v[i], p = a.p[i];
  float lr = a.scal[0], b = (float)a.beta, eps = a.scal[1];
  if (a.adam) {
    float b2 = (float)a.beta2;
    float mi = b * m + (1.0f - b) * g;
    float vi = b2 * v + (1.0f - b2) * g * g;
    a.p_out[i] = p - lr * mi / (sqrtf(vi) + eps);
    a.m_out[i] = mi;
    a.v_out[i] = vi;
  } else {
    float eg = b * m + (1.0f - b) * g * g;
    float d = sqrtf(v + eps) / sqrtf(eg + eps) * g;
    a.p_out[i] = p - lr * d;
    a.m_out[i] = eg;
    a.v_out[i] = b * v + (1.0f - b) * d * d;
  }
}

typedef struct { double* part; const float* g; int64_t n; int64_t chunk; } NmtSqPartial;
// part[k] = sum of g[i]^2 over chunk k (`chunk` values from k * chunk), in double, in order: the
// first level of the gradients' squared norm (deterministic: no atomics).
NMT_KERNEL void nmt_sq_partial(const NmtSqPartial a) {
  int64_t k = nmt_index(), lo = k * a.chunk;
  if (lo >= a.n) return;
  int64_t hi = lo + a.chunk < a.n ? lo + a.chunk : a.n;
  double s = 0.0;
  for (int64_t i = lo; i < hi; ++i) s += (double)a.g[i] * (double)a.g[i];
  a.part[k] = s;
}

// x^n by repeated squaring, as compiler-rt's __powidf2 (Rust's f64::powi) computes it, so that
// the device's bias corrections are the host's to the bit.
NMT_INLINE double nmt_powi(double x, int n) {
  double r = 1.0;
  for (;;) {
    if (n & 1) r *= x;
    n /= 2;
    if (n == 0) break;
    x *= x;
  }
  return r;
}

typedef struct {
  int64_t* state; const double* part; float* scal; int64_t parts; int64_t adam; int64_t warmup;
  int64_t normalize; double beta; double beta2; double eps; double clip;
} NmtStepScalars;
// One thread. state = [k (updates so far), bits of the learning rate lr·lr_scale (written by the
// host when a plateau decays it), bits of this update's gradient norm (read by the host after
// the step)]. Counts the update (k + 1), sums the partial squares (in order), and writes
// scal = [lr_t, eps_t, scale, skip] as train/optim.rs's `clip` and `rule` and
// kernels/cpu/optim_step.rs compute them: warm-up min(1, k / warmup), clipping (or with
// `normalize` rescaling) to `clip`, Adam's bias corrections.
NMT_KERNEL void nmt_step_scalars(const NmtStepScalars a) {
  if (nmt_index() != 0) return;
  int64_t k = a.state[0] + 1;
  a.state[0] = k;
  double sq = 0.0, lr, norm;
  for (int64_t i = 0; i < a.parts; ++i) sq += a.part[i];
  norm = sqrt(sq);
  ((double*)a.state)[2] = norm;
  lr = ((const double*)a.state)[1];
  if (a.warmup > 0) {
    double w = (double)k / (double)a.warmup;
    lr *= w < 1.0 ? w : 1.0;
  }
  int rescale = a.clip > 0.0 && (norm > a.clip || (a.normalize && norm > 0.0));
  a.scal[2] = (float)(rescale ? a.clip / norm : 1.0);
  a.scal[3] = isfinite(norm) ? 0.0f : 1.0f;
  if (a.adam) {
    int t = (int)(k > 1 ? k : 1);
    double bc2 = sqrt(1.0 - nmt_powi(a.beta2, t));
    a.scal[0] = (float)(lr * bc2 / (1.0 - nmt_powi(a.beta, t)));
    a.scal[1] = (float)(a.eps * bc2);
  } else {
    a.scal[0] = (float)lr;
    a.scal[1] = (float)a.eps;
  }
}

typedef struct { float* out; const float* x; const float* w; int64_t n; } NmtWeightedSum;
// One thread: out[0] = sum of x[i] w[i] in order, in double, rounded once. A training step's
// loss, Σ_r nll_r · mask_r / tokens, kept on the device and read after the step.
NMT_KERNEL void nmt_weighted_sum(const NmtWeightedSum a) {
  if (nmt_index() != 0) return;
  double s = 0.0;
  for (int64_t i = 0; i < a.n; ++i) s += (double)a.x[i] * (double)a.w[i];
  a.out[0] = (float)s;
}
