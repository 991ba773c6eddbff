// The GRU's per-step kernels for the GPU (kernels/gpu/birnn.rs runs them, with one cuBLAS
// product per step between them; Marian's gGRUFastForward/gGRUFastBackward are the model).
// Compiled twice from this one source:
// - by nvcc to PTX (build.rs, `--features cuda`), which the GPU runs;
// - by the host's C compiler with emulate.h (build.rs, every build), which the CPU tests run
//   over the same grid, thread by thread (kernels/gpu/emulated.rs): every kernel here is
//   elementwise, one thread per (row, unit), with no shared memory and no synchronisation,
//   so running its threads one after another on the host computes what the GPU computes.
//
// Each kernel takes one struct of 8-byte fields (pointers and int64s: no padding, so the
// Rust mirrors in kernels/gpu/args.rs have the same layout). The source is the common subset
// of C and CUDA C++ (typedef'd structs, NMT_KERNEL), so that the host needs only a C compiler,
// which Rust's linking needs anyway. Matrices are row-major with a
// leading dimension `*_ld` in elements; `lens[b]` is sentence b's length and step `t` is live
// for it when t < lens[b]: a padded row carries its state forward and its gradient back.
// The equations are rnn_cell.rs's (Cho et al. 2014, eq. 5-8, both forms):
//   r = s(gi_r + gh_r), z = s(gi_z + gh_z)
//   paper:       n = tanh(gi_n + gh_n), gh_n = (r * hu) U_n + b_n
//   reset-after: n = tanh(gi_n + r * gh_n), gh_n = hu U_n + b_n
//   h' = n + z (h - n)
#include "common.h"

// dst (rows, width), contiguous: row r a copy of src's row r / group (src's rows `src_ld`
// apart). group = rows: every row the one row of src; group = S: one row per sentence.
typedef struct { float* dst; const float* src; int64_t src_ld; int64_t rows; int64_t width; int64_t group; } NmtFillRows;
NMT_KERNEL void nmt_fill_rows(const NmtFillRows a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.width) return;
  a.dst[i] = a.src[(i / a.width / a.group) * a.src_ld + i % a.width];
}

// dst[b][j] = sum over t of src[b][t][j], src (batch, len, width) contiguous, dst rows dst_ld
// apart: each sentence's recurrent term's gradient (rnn_sequence.rs). In step order, as the CPU
// op sums.
typedef struct { float* dst; int64_t dst_ld; const float* src; int64_t batch; int64_t len; int64_t width; } NmtSumSteps;
NMT_KERNEL void nmt_sum_steps(const NmtSumSteps a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.width) return;
  int64_t b = i / a.width, j = i % a.width;
  float acc = 0.0f;
  for (int64_t t = 0; t < a.len; t++) acc += a.src[(b * a.len + t) * a.width + j];
  a.dst[b * a.dst_ld + j] = acc;
}

// dst[r][j] = src[r][j] * mask[r][j] (mask contiguous (rows, width)), or a copy without a mask:
// the states entering U under recurrent dropout.
typedef struct { float* dst; int64_t dst_ld; const float* src; int64_t src_ld; const float* mask; int64_t rows; int64_t width; } NmtMaskRows;
NMT_KERNEL void nmt_mask_rows(const NmtMaskRows a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.width) return;
  int64_t r = i / a.width, j = i % a.width;
  float x = a.src[r * a.src_ld + j];
  a.dst[r * a.dst_ld + j] = a.mask ? x * a.mask[i] : x;
}

// dst[r][j] += src[r][j] (times mask[r][j], contiguous (rows, width), where given): the
// carry's part that skips U under recurrent dropout, the gated-feedback stack's sums.
typedef struct { float* dst; int64_t dst_ld; const float* src; int64_t src_ld; const float* mask; int64_t rows; int64_t width; } NmtAddRows;
NMT_KERNEL void nmt_add_rows(const NmtAddRows a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.width) return;
  int64_t r = i / a.width, j = i % a.width;
  float x = a.src[r * a.src_ld + j];
  a.dst[r * a.dst_ld + j] += a.mask ? x * a.mask[i] : x;
}

// x[i] = s(x[i]), n elements: the gated-feedback stack's global reset gates.
typedef struct { float* x; int64_t n; } NmtSigmoidAll;
NMT_KERNEL void nmt_sigmoid_all(const NmtSigmoidAll a) {
  int64_t i = nmt_index();
  if (i >= a.n) return;
  a.x[i] = nmt_sigmoid(a.x[i]);
}

// H_prev (B, S, H), contiguous: the state each step started from, times the recurrent-dropout
// mask (B, H) if any; before the first step `init` (B, H, rows init_ld apart), or zero where it
// is null. `out`
// holds the states in rows of `out_ld` (B, S, ·); `reverse` runs right to left.
typedef struct { float* dst; const float* out; int64_t out_ld; const float* init; int64_t init_ld; const float* mask; int64_t batch; int64_t len; int64_t hidden; int64_t reverse; } NmtPrevStates;
NMT_KERNEL void nmt_prev_states(const NmtPrevStates a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.len * a.hidden) return;
  int64_t j = i % a.hidden, bt = i / a.hidden, t = bt % a.len, b = bt / a.len;
  int64_t tp = a.reverse ? t + 1 : t - 1;
  float x = 0.0f;
  if (tp >= 0 && tp < a.len) {
    x = a.out[(b * a.len + tp) * a.out_ld + j];
  } else if (a.init) {
    x = a.init[b * a.init_ld + j];
  }
  if (a.mask) x *= a.mask[b * a.hidden + j];
  a.dst[i] = x;
}

// The paper form's reset: q = s(gi_r + gh_r) * hu, for every row (padded rows too, as on the CPU).
typedef struct { const float* gi; int64_t gi_ld; const float* gh; int64_t gh_ld; const float* hu; int64_t hu_ld; float* q; int64_t q_ld; int64_t rows; int64_t hidden; } NmtResetFwd;
NMT_KERNEL void nmt_gru_reset_fwd(const NmtResetFwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden;
  float r = nmt_sigmoid(a.gi[b * a.gi_ld + j] + a.gh[b * a.gh_ld + j]);
  a.q[b * a.q_ld + j] = r * a.hu[b * a.hu_ld + j];
}


// The new states from the pre-activations: gi (rows, 3H) and gh (rows, 3H) as above, the
// previous states hp; a padded row copies hp.
typedef struct {
  int64_t form; NmtStepRows s; const float* hp; int64_t hp_ld;
  float* out; int64_t out_ld; int64_t rows; int64_t hidden;
} NmtGatesFwd;
NMT_KERNEL void nmt_gru_gates_fwd(const NmtGatesFwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden, h = a.hidden;
  float hp = a.hp[b * a.hp_ld + j];
  if (a.s.t >= a.s.lens[b]) {
    a.out[b * a.out_ld + j] = hp;
    return;
  }
  const float* g = a.s.gi + b * a.s.gi_ld;
  const float* hh = a.s.gh + b * a.s.gh_ld;
  float z = nmt_sigmoid(g[h + j] + hh[h + j]);
  float n;
  if (a.form == NMT_PAPER) {
    n = tanhf(g[2 * h + j] + hh[2 * h + j]);
  } else {
    float r = nmt_sigmoid(g[j] + hh[j]);
    n = tanhf(g[2 * h + j] + r * hh[2 * h + j]);
  }
  a.out[b * a.out_ld + j] = n + z * (hp - n);
}

// One step back through the gates (gru_cell.rs's backward_row): the gradient reaching h' is
// dh + carry; writes dgi's and dgh's z and n blocks (reset-after: and r) and carry = (dh +
// carry) * z, the part of h's gradient that skips U. A padded row passes (dh + carry) through
// and zeroes its dgi and dgh rows (the r blocks too: the paper form's reset kernel skips it).
typedef struct {
  int64_t form; NmtStepRows s; const float* hp; int64_t hp_ld;
  const float* dh; int64_t dh_ld; float* carry;
  NmtGradRows dg; int64_t rows; int64_t hidden;
} NmtGatesBwd;
NMT_KERNEL void nmt_gru_gates_bwd(const NmtGatesBwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden, h = a.hidden;
  float d = a.dh[b * a.dh_ld + j] + a.carry[i];
  float* dgi = a.dg.dgi + b * a.dg.dgi_ld;
  float* dgh = a.dg.dgh + b * a.dg.dgh_ld;
  if (a.s.t >= a.s.lens[b]) {
    dgi[j] = dgi[h + j] = dgi[2 * h + j] = 0.0f;
    dgh[j] = dgh[h + j] = dgh[2 * h + j] = 0.0f;
    a.carry[i] = d;
    return;
  }
  const float* g = a.s.gi + b * a.s.gi_ld;
  const float* hh = a.s.gh + b * a.s.gh_ld;
  float hp = a.hp[b * a.hp_ld + j];
  float z = nmt_sigmoid(g[h + j] + hh[h + j]);
  if (a.form == NMT_PAPER) {
    float n = tanhf(g[2 * h + j] + hh[2 * h + j]);
    float dpn = d * (1.0f - z) * (1.0f - n * n);
    float dpz = d * (hp - n) * z * (1.0f - z);
    dgi[h + j] = dgh[h + j] = dpz;
    dgi[2 * h + j] = dgh[2 * h + j] = dpn;
    dgi[j] = dgh[j] = 0.0f;
  } else {
    float r = nmt_sigmoid(g[j] + hh[j]);
    float n = tanhf(g[2 * h + j] + r * hh[2 * h + j]);
    float dpn = d * (1.0f - z) * (1.0f - n * n);
    float dpz = d * (hp - n) * z * (1.0f - z);
    float dpr = dpn * hh[2 * h + j] * r * (1.0f - r);
    dgi[j] = dgh[j] = dpr;
    dgi[h + j] = dgh[h + j] = dpz;
    dgi[2 * h + j] = dpn;
    dgh[2 * h + j] = dpn * r;
  }
  a.carry[i] = d * z;
}

// The paper form's reset, backward: with dq = dGH_n U_n^T (one product before), dr's
// pre-activation dq * hu * r (1 - r) goes to dgi_r and dgh_r, and h gets dq * r (* mask).
// Padded rows are left alone (their dq is zero, their r blocks zeroed by nmt_gru_gates_bwd).
typedef struct {
  NmtStepRows s; const float* hp; int64_t hp_ld;
  const float* mask; const float* dq; float* carry;
  NmtGradRows dg; int64_t rows; int64_t hidden;
} NmtResetBwd;
NMT_KERNEL void nmt_gru_reset_bwd(const NmtResetBwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden;
  if (a.s.t >= a.s.lens[b]) return;
  float m = a.mask ? a.mask[i] : 1.0f;
  float r = nmt_sigmoid(a.s.gi[b * a.s.gi_ld + j] + a.s.gh[b * a.s.gh_ld + j]);
  float hu = a.hp[b * a.hp_ld + j] * m;
  float dpr = a.dq[i] * hu * r * (1.0f - r);
  a.dg.dgi[b * a.dg.dgi_ld + j] = dpr;
  a.dg.dgh[b * a.dg.dgh_ld + j] = dpr;
  a.carry[i] += a.dq[i] * r * m;
}

// The LSTM's gates (lstm_cell.rs; Hochreiter & Schmidhuber 1997 with Gers et al.'s forget
// gate), blocks [i | f | g | o] of 4H: with a = gi + gh (gh = h U + b_h, after the product),
//   i = s(a_i), f = s(a_f), g = tanh(a_g), o = s(a_o), c' = f c + i g, h' = o tanh(c').
// cp holds the previous cell states; c and out receive the new ones. A padded row copies hp
// and cp.
typedef struct {
  NmtStepRows s; const float* hp; int64_t hp_ld;
  const float* cp; int64_t cp_ld; float* c; int64_t c_ld; float* out; int64_t out_ld; int64_t rows; int64_t hidden;
} NmtLstmFwd;
NMT_KERNEL void nmt_lstm_gates_fwd(const NmtLstmFwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden, h = a.hidden;
  float cp = a.cp[b * a.cp_ld + j];
  if (a.s.t >= a.s.lens[b]) {
    a.out[b * a.out_ld + j] = a.hp[b * a.hp_ld + j];
    a.c[b * a.c_ld + j] = cp;
    return;
  }
  const float* g = a.s.gi + b * a.s.gi_ld;
  const float* hh = a.s.gh + b * a.s.gh_ld;
  float ig = nmt_sigmoid(g[j] + hh[j]), fg = nmt_sigmoid(g[h + j] + hh[h + j]);
  float gg = tanhf(g[2 * h + j] + hh[2 * h + j]), og = nmt_sigmoid(g[3 * h + j] + hh[3 * h + j]);
  float c = fg * cp + ig * gg;
  a.c[b * a.c_ld + j] = c;
  a.out[b * a.out_ld + j] = og * tanhf(c);
}

// One LSTM step back (lstm_cell.rs's backward_row): d = dh + carry_h reaches h', carry_c
// reaches c' from later steps. Writes the pre-activations' gradient into dgi and dgh (the same
// four blocks: a = gi + gh), carry_c = dc' f (the gradient of c), and carry_h = 0: h reaches
// the previous step only through U, which the caller's product adds. A padded row zeroes its
// dgi and dgh rows and passes both carries through.
typedef struct {
  NmtStepRows s; const float* cp; int64_t cp_ld;
  const float* dh; int64_t dh_ld; float* carry; float* carry_c;
  NmtGradRows dg; int64_t rows; int64_t hidden;
} NmtLstmBwd;
NMT_KERNEL void nmt_lstm_gates_bwd(const NmtLstmBwd a) {
  int64_t i = nmt_index();
  if (i >= a.rows * a.hidden) return;
  int64_t b = i / a.hidden, j = i % a.hidden, h = a.hidden;
  float d = a.dh[b * a.dh_ld + j] + a.carry[i];
  float* dgi = a.dg.dgi + b * a.dg.dgi_ld;
  float* dgh = a.dg.dgh + b * a.dg.dgh_ld;
  if (a.s.t >= a.s.lens[b]) {
    dgi[j] = dgi[h + j] = dgi[2 * h + j] = dgi[3 * h + j] = 0.0f;
    dgh[j] = dgh[h + j] = dgh[2 * h + j] = dgh[3 * h + j] = 0.0f;
    a.carry[i] = d;
    return;
  }
  const float* g = a.s.gi + b * a.s.gi_ld;
  const float* hh = a.s.gh + b * a.s.gh_ld;
  float cp = a.cp[b * a.cp_ld + j];
  float ig = nmt_sigmoid(g[j] + hh[j]), fg = nmt_sigmoid(g[h + j] + hh[h + j]);
  float gg = tanhf(g[2 * h + j] + hh[2 * h + j]), og = nmt_sigmoid(g[3 * h + j] + hh[3 * h + j]);
  float tc = tanhf(fg * cp + ig * gg);
  float dc = a.carry_c[i] + d * og * (1.0f - tc * tc);
  float da_i = dc * gg * ig * (1.0f - ig), da_f = dc * cp * fg * (1.0f - fg);
  float da_g = dc * ig * (1.0f - gg * gg), da_o = d * tc * og * (1.0f - og);
  dgi[j] = dgh[j] = da_i;
  dgi[h + j] = dgh[h + j] = da_f;
  dgi[2 * h + j] = dgh[2 * h + j] = da_g;
  dgi[3 * h + j] = dgh[3 * h + j] = da_o;
  a.carry_c[i] = dc * fg;
  a.carry[i] = 0.0f;
}

// Layer normalisation of a product's rows (model/layer_norm.rs, Ba et al. 2016; the equations
// and the order of the sums are kernels/cpu/norm_rows.rs's, eps is Marian's 1e-9): one thread per
// row, so that the host emulation stays exact. Marian's gLayerNormalization reduces a row
// across a thread block, which is faster for wide rows; this is the form the emulation can
// check. Forward: y += LN(a) * gamma, y holding the bias (LN's shift) on entry.
NMT_INLINE void nmt_ln_stats(const float* a, int64_t k, float* mu, float* inv) {
  float s = 0.0f, v = 0.0f;
  for (int64_t j = 0; j < k; j++) s += a[j];
  float m = s / (float)k;
  for (int64_t j = 0; j < k; j++) v += (a[j] - m) * (a[j] - m);
  *mu = m;
  *inv = 1.0f / (float)sqrt((double)(v / (float)k) + 1e-9);
}

typedef struct { const float* a; int64_t a_ld; const float* gamma; float* y; int64_t y_ld; int64_t rows; int64_t width; } NmtLnFwd;
NMT_KERNEL void nmt_ln_fwd(const NmtLnFwd p) {
  int64_t r = nmt_index();
  if (r >= p.rows) return;
  const float* a = p.a + r * p.a_ld;
  float* y = p.y + r * p.y_ld;
  float mu, inv;
  nmt_ln_stats(a, p.width, &mu, &inv);
  for (int64_t j = 0; j < p.width; j++) y[j] += (a[j] - mu) * inv * p.gamma[j];
}

// Backward, from dy (the gradient of y): with g = dy * gamma and x^ = (a - mu) / sigma,
// da = (g - mean(g) - x^ mean(g x^)) / sigma, and dyx = dy * x^, which the caller sums over
// all rows into the gain's gradient (the shift's is the sum of dy).
typedef struct {
  const float* a; int64_t a_ld; const float* gamma; const float* dy; int64_t dy_ld;
  float* da; int64_t da_ld; float* dyx; int64_t dyx_ld; int64_t rows; int64_t width;
} NmtLnBwd;
NMT_KERNEL void nmt_ln_bwd(const NmtLnBwd p) {
  int64_t r = nmt_index();
  if (r >= p.rows) return;
  const float* a = p.a + r * p.a_ld;
  const float* dy = p.dy + r * p.dy_ld;
  float* da = p.da + r * p.da_ld;
  float* dyx = p.dyx + r * p.dyx_ld;
  float mu, inv;
  nmt_ln_stats(a, p.width, &mu, &inv);
  float mg = 0.0f, mgx = 0.0f;
  for (int64_t j = 0; j < p.width; j++) {
    float xh = (a[j] - mu) * inv, g = dy[j] * p.gamma[j];
    dyx[j] = dy[j] * xh;
    mg += g;
    mgx += g * xh;
  }
  mg /= (float)p.width;
  mgx /= (float)p.width;
  for (int64_t j = 0; j < p.width; j++) {
    float xh = (a[j] - mu) * inv;
    da[j] = (dy[j] * p.gamma[j] - mg - xh * mgx) * inv;
  }
}
