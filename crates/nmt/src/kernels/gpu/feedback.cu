// The gated-feedback stack's per-step kernels for the GPU (Chung et al. 2015, eq. 12-15;
// kernels/gpu/feedback_forward.rs runs them between cuBLAS products). The CPU's twin is
// kernels/cpu/feedback_forward.rs (forward) and kernels/cpu/feedback_backward.rs (backward), whose
// equations these are, for one upper layer at one step:
//   g = s(x W_g + S U_g)                                   (B, L)  the global reset gates
//   V = [g_own rho' (m h) | g_i rho' S_i, i != own]          (B, L n)
//   R = V [U_c; U_other],  h~ = tanh(gi_c + rho (R + b_h,c))
//   GRU: h' = h~ + z (h - h~);  LSTM: c' = f c + i h~,  h' = o tanh(c')
// with rho = r for the reset-after GRU (else 1) and rho' = r for the paper's GRU (else 1).
// Compiled twice, as recurrence.cu is (its header says how); every kernel is one thread per
// output element with no shared memory, so the host's thread-by-thread emulation is exact.
//
// Layout: the sources S (B, L n), rows `L n` apart; own = the layer's own source index
// (k + 1 for upper layer k); V's block 0 is the own source, blocks 1.. the others in layer
// order. `kind`: common.h's cell code (NMT_PAPER, NMT_RESET_AFTER, NMT_LSTM); G = 3n (the LSTM
// 4n). The step's gi and GH rows are common.h's NmtStepRows, the gates' gradients its
// NmtGradRows; the stack has no padding (every row is live), so their `t` and `lens` are unused.
// The masked copies and sums between the kernels are recurrence.cu's nmt_mask_rows and
// nmt_add_rows, the global gates' logistic its nmt_sigmoid_all.
#include "common.h"

// The source index of V's block `blk`.
NMT_INLINE int64_t nmt_fb_source(int64_t blk, int64_t own) { return blk == 0 ? own : (blk - 1 < own ? blk - 1 : blk); }

// What the step kernels share: the step's rows (contiguous) and sizes.
typedef struct {
  NmtStepRows rows; const float* g; const float* hu; const float* s;
  int64_t own; int64_t batch; int64_t layers; int64_t hidden; int64_t kind;
} NmtFbStep;

// rho' of row r, unit j: the paper GRU's reset gate, else 1.
NMT_INLINE float nmt_fb_rho_before(const NmtFbStep* p, int64_t r, int64_t j) {
  const NmtStepRows* s = &p->rows;
  return p->kind == NMT_PAPER ? nmt_sigmoid(s->gi[r * s->gi_ld + j] + s->gh[r * s->gh_ld + j]) : 1.0f;
}

// Source `i`'s value at (r, j): the masked own state for the own source, else S's block.
NMT_INLINE float nmt_fb_src(const NmtFbStep* p, int64_t i, int64_t r, int64_t j) {
  int64_t n = p->hidden;
  return i == p->own ? p->hu[r * n + j] : p->s[r * p->layers * n + i * n + j];
}

// V (B, L n); one thread per (r, blk, j).
typedef struct { NmtFbStep p; float* v; } NmtFbSources;
NMT_KERNEL void nmt_fb_sources(const NmtFbSources a) {
  const NmtFbStep* p = &a.p;
  int64_t n = p->hidden, ln = p->layers * n, idx = nmt_index();
  if (idx >= p->batch * ln) return;
  int64_t r = idx / ln, blk = (idx % ln) / n, j = idx % n, i = nmt_fb_source(blk, p->own);
  a.v[idx] = p->g[r * p->layers + i] * nmt_fb_rho_before(p, r, j) * nmt_fb_src(p, i, r, j);
}

// The cell's step; one thread per (r, j). hprev: the layer's previous output (S's own block);
// c, cprev: the LSTM's cell states (null for the GRU); writes h' into h (S_{t+1}'s block),
// h~ into cand, and the next layer's input h' (+ x with residual connections) into xout,
// which may be x itself.
typedef struct {
  NmtStepRows rows; const float* rsum; const float* bh; const float* hprev; int64_t hprev_ld;
  const float* cprev; float* c; const float* x; int64_t x_ld; int64_t residual; float* h; int64_t h_ld;
  float* xout; int64_t xout_ld; float* cand; int64_t batch; int64_t hidden; int64_t kind;
} NmtFbCellFwd;
NMT_KERNEL void nmt_fb_cell_fwd(const NmtFbCellFwd a) {
  int64_t n = a.hidden, idx = nmt_index();
  if (idx >= a.batch * n) return;
  int64_t r = idx / n, j = idx % n;
  const float* gi = a.rows.gi + r * a.rows.gi_ld;
  const float* gh = a.rows.gh + r * a.rows.gh_ld;
  float rho = a.kind == NMT_RESET_AFTER ? nmt_sigmoid(gi[j] + gh[j]) : 1.0f;
  float cd = tanhf(gi[2 * n + j] + rho * (a.rsum[idx] + a.bh[2 * n + j]));
  float h;
  if (a.kind == NMT_LSTM) {
    float c = nmt_sigmoid(gi[n + j] + gh[n + j]) * a.cprev[idx] + nmt_sigmoid(gi[j] + gh[j]) * cd;
    a.c[idx] = c;
    h = nmt_sigmoid(gi[3 * n + j] + gh[3 * n + j]) * tanhf(c);
  } else {
    float z = nmt_sigmoid(gi[n + j] + gh[n + j]);
    h = cd + z * (a.hprev[r * a.hprev_ld + j] - cd);
  }
  a.cand[idx] = cd;
  float x = a.x[r * a.x_ld + j];
  a.h[r * a.h_ld + j] = h;
  a.xout[r * a.xout_ld + j] = a.residual ? h + x : h;
}

// The cell's step back; one thread per (r, j), from dh (the gradient reaching h') and the
// LSTM's carry dc (turned into the gradient reaching c). Writes the gates' pre-activation
// gradients dg.dgi (all blocks but the GRU's reset gate, which nmt_fb_sources_bwd writes) and
// dg.dgh, the same without the candidate's block (GH feeds every gate but the candidate), the
// gradient reaching R (drs), the reset-after gate's gradient (dr; zero otherwise) and the
// one reaching hprev through the update (dhprev; zero for the LSTM).
typedef struct {
  NmtStepRows rows; const float* cand; const float* rsum; const float* bh; const float* hprev;
  int64_t hprev_ld; const float* cprev; const float* c; const float* dh; float* dc; NmtGradRows dg; float* drs; float* dr;
  float* dhprev; int64_t batch; int64_t hidden; int64_t kind;
} NmtFbCellBwd;
NMT_KERNEL void nmt_fb_cell_bwd(const NmtFbCellBwd a) {
  int64_t n = a.hidden, idx = nmt_index();
  if (idx >= a.batch * n) return;
  int64_t r = idx / n, j = idx % n;
  const float* gi = a.rows.gi + r * a.rows.gi_ld;
  const float* gh = a.rows.gh + r * a.rows.gh_ld;
  float* dgi = a.dg.dgi + r * a.dg.dgi_ld;
  float* dgh = a.dg.dgh + r * a.dg.dgh_ld;
  float cd = a.cand[idx], dh = a.dh[idx], dpre;
  if (a.kind == NMT_LSTM) {
    float ig = nmt_sigmoid(gi[j] + gh[j]), fg = nmt_sigmoid(gi[n + j] + gh[n + j]);
    float og = nmt_sigmoid(gi[3 * n + j] + gh[3 * n + j]), tc = tanhf(a.c[idx]);
    float dct = a.dc[idx] + dh * og * (1.0f - tc * tc);
    a.dc[idx] = dct * fg;
    dgi[j] = dgh[j] = dct * cd * ig * (1.0f - ig);
    dgi[n + j] = dgh[n + j] = dct * a.cprev[idx] * fg * (1.0f - fg);
    dgi[3 * n + j] = dgh[3 * n + j] = dh * tc * og * (1.0f - og);
    dpre = dct * ig * (1.0f - cd * cd);
    a.dhprev[idx] = 0.0f;
  } else {
    float z = nmt_sigmoid(gi[n + j] + gh[n + j]);
    a.dhprev[idx] = dh * z;
    dgi[n + j] = dgh[n + j] = dh * (a.hprev[r * a.hprev_ld + j] - cd) * z * (1.0f - z);
    dpre = dh * (1.0f - z) * (1.0f - cd * cd);
  }
  dgi[2 * n + j] = dpre;
  dgh[2 * n + j] = 0.0f;
  if (a.kind == NMT_RESET_AFTER) {
    a.drs[idx] = dpre * nmt_sigmoid(gi[j] + gh[j]);
    a.dr[idx] = dpre * (a.rsum[idx] + a.bh[2 * n + j]);
  } else {
    a.drs[idx] = dpre;
    a.dr[idx] = 0.0f;
  }
}

// The global gates' pre-activation gradient dgp (B, L) from dV; one thread per (r, i).
typedef struct { NmtFbStep p; const float* dv; float* dgp; } NmtFbGateBwd;
NMT_KERNEL void nmt_fb_gate_bwd(const NmtFbGateBwd a) {
  const NmtFbStep* p = &a.p;
  int64_t n = p->hidden, l = p->layers, idx = nmt_index();
  if (idx >= p->batch * l) return;
  int64_t r = idx / l, i = idx % l;
  int64_t blk = i == p->own ? 0 : (i < p->own ? i + 1 : i);
  const float* dv = a.dv + r * l * n + blk * n;
  float acc = 0.0f;
  for (int64_t j = 0; j < n; j++) acc += dv[j] * nmt_fb_rho_before(p, r, j) * nmt_fb_src(p, i, r, j);
  float gv = p->g[idx];
  a.dgp[idx] = acc * gv * (1.0f - gv);
}

// From dV, one thread per (r, j): the gradient of the masked own state (dhu, written), the
// other sources' (ds += …), and for a GRU the reset gate's pre-activation gradient into dg's
// dgi and dgh (the paper's reset gate reaches V; the reset-after one arrives as dr).
typedef struct { NmtFbStep p; const float* dv; const float* dr; float* dhu; float* ds; NmtGradRows dg; } NmtFbSourcesBwd;
NMT_KERNEL void nmt_fb_sources_bwd(const NmtFbSourcesBwd a) {
  const NmtFbStep* p = &a.p;
  int64_t n = p->hidden, l = p->layers, idx = nmt_index();
  if (idx >= p->batch * n) return;
  int64_t r = idx / n, j = idx % n;
  float rho = nmt_fb_rho_before(p, r, j), dr = a.dr[idx];
  const float* dv = a.dv + r * l * n;
  for (int64_t blk = 0; blk < l; blk++) {
    int64_t i = nmt_fb_source(blk, p->own);
    float gate = p->g[r * l + i], dvj = dv[blk * n + j];
    if (p->kind == NMT_PAPER) dr += dvj * gate * nmt_fb_src(p, i, r, j);
    if (blk == 0) {
      a.dhu[idx] = dvj * gate * rho;
    } else {
      a.ds[r * l * n + i * n + j] += dvj * gate * rho;
    }
  }
  if (p->kind != NMT_LSTM) {
    const NmtStepRows* s = &p->rows;
    float rr = nmt_sigmoid(s->gi[r * s->gi_ld + j] + s->gh[r * s->gh_ld + j]);
    a.dg.dgi[r * a.dg.dgi_ld + j] = a.dg.dgh[r * a.dg.dgh_ld + j] = dr * rr * (1.0f - rr);
  }
}

// ds's own block += dhprev + dhu (times the state mask, where given); one thread per (r, j).
typedef struct { float* ds; const float* dhprev; const float* dhu; const float* mask; int64_t own; int64_t batch; int64_t layers; int64_t hidden; } NmtFbStateBwd;
NMT_KERNEL void nmt_fb_state_bwd(const NmtFbStateBwd a) {
  int64_t n = a.hidden, idx = nmt_index();
  if (idx >= a.batch * n) return;
  int64_t r = idx / n, j = idx % n;
  float du = a.mask ? a.dhu[idx] * a.mask[idx] : a.dhu[idx];
  a.ds[r * a.layers * n + a.own * n + j] += a.dhprev[idx] + du;
}
