// Additive attention's per-step kernels for the GPU (Bahdanau et al. 2015, appendix A.1.2;
// kernels/gpu/attention_kernels.rs runs them between cuBLAS products; Marian's gAtt/gAttBack are the
// model). The CPU's twin is kernels/cpu/bahdanau.rs (`attention_weights`, `attend_row`) and
// kernels/cpu/bahdanau_backward.rs (`attend_backward`). Compiled twice, as recurrence.cu is (its
// header says how); every kernel is one thread per output element, reading what the kernels
// before it wrote, so the host's thread-by-thread emulation is exact.
//
// Layout (row-major, `*_ld` leading dimensions in elements):
//   enc (B, S, C + A): each source position's [h_j; U_a h_j] (the keys after the context);
//   ws (B, A) rows of `ws_ld`: the step's query s_{i-1} W_a + b_a;
//   alpha (B, S) rows of `alpha_ld`: the weights, zero at j >= lens[b].
// Forward, per step:   e_j = v · tanh(U_a h_j + ws),  alpha = softmax_j(e),  c = sum_j alpha_j h_j.
// Backward, per step, from dc (B, C) the gradient reaching c:
//   da_j = dc · h_j,  de_j = alpha_j (da_j - sum_k alpha_k da_k),
//   dh_j += alpha_j dc,  d(U_a h_j) += de_j v * (1 - x_j^2),  dws = sum_j de_j v * (1 - x_j^2),
//   dv += sum_j de_j x_j  (per sentence here; summed over sentences by one product after the loop).
#include "common.h"

typedef struct {
  const float* enc; const float* ws; int64_t ws_ld; const float* v; const int64_t* lens;
  float* e; int64_t batch; int64_t src_len; int64_t ctx; int64_t att;
} NmtAttScores;
// e (B, S), contiguous; one thread per (b, j).
NMT_KERNEL void nmt_att_scores(const NmtAttScores a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.src_len) return;
  int64_t b = i / a.src_len, j = i % a.src_len;
  if (j >= a.lens[b]) {
    a.e[i] = 0.0f;
    return;
  }
  const float* key = a.enc + i * (a.ctx + a.att) + a.ctx;
  const float* q = a.ws + b * a.ws_ld;
  float e = 0.0f;
  for (int64_t k = 0; k < a.att; k++) e += a.v[k] * tanhf(key[k] + q[k]);
  a.e[i] = e;
}

typedef struct { const float* e; const int64_t* lens; float* alpha; int64_t alpha_ld; int64_t batch; int64_t src_len; } NmtAttSoftmax;
// alpha from e over each sentence's words; one thread per sentence.
NMT_KERNEL void nmt_att_softmax(const NmtAttSoftmax a) {
  int64_t b = nmt_index();
  if (b >= a.batch) return;
  const float* e = a.e + b * a.src_len;
  float* alpha = a.alpha + b * a.alpha_ld;
  int64_t len = a.lens[b];
  float max = e[0], sum = 0.0f;
  for (int64_t j = 1; j < len; j++) max = e[j] > max ? e[j] : max;
  for (int64_t j = 0; j < len; j++) {
    alpha[j] = expf(e[j] - max);
    sum += alpha[j];
  }
  for (int64_t j = 0; j < a.src_len; j++) alpha[j] = j < len ? alpha[j] / sum : 0.0f;
}

typedef struct {
  const float* alpha; int64_t alpha_ld; const float* enc; const int64_t* lens;
  float* c; int64_t c_ld; int64_t batch; int64_t src_len; int64_t ctx; int64_t att;
} NmtAttContext;
// c (B, C) rows of `c_ld`; one thread per (b, unit).
NMT_KERNEL void nmt_att_context(const NmtAttContext a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.ctx) return;
  int64_t b = i / a.ctx, k = i % a.ctx, ew = a.ctx + a.att;
  const float* alpha = a.alpha + b * a.alpha_ld;
  const float* h = a.enc + b * a.src_len * ew + k;
  float c = 0.0f;
  for (int64_t j = 0; j < a.lens[b]; j++) c += alpha[j] * h[j * ew];
  a.c[b * a.c_ld + k] = c;
}

typedef struct {
  const float* enc; const float* dc; const int64_t* lens; float* de; int64_t batch; int64_t src_len; int64_t ctx; int64_t att;
} NmtAttDalpha;
// de (B, S) holds da_j = dc · h_j (zero past the sentence); one thread per (b, j).
NMT_KERNEL void nmt_att_dalpha(const NmtAttDalpha a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.src_len) return;
  int64_t b = i / a.src_len, j = i % a.src_len;
  float d = 0.0f;
  if (j < a.lens[b]) {
    const float* h = a.enc + i * (a.ctx + a.att);
    const float* dc = a.dc + b * a.ctx;
    for (int64_t k = 0; k < a.ctx; k++) d += dc[k] * h[k];
  }
  a.de[i] = d;
}

typedef struct { const float* alpha; int64_t alpha_ld; const int64_t* lens; float* de; int64_t batch; int64_t src_len; } NmtAttSoftmaxBwd;
// de (B, S) from da, in place, through the softmax; one thread per sentence.
NMT_KERNEL void nmt_att_softmax_bwd(const NmtAttSoftmaxBwd a) {
  int64_t b = nmt_index();
  if (b >= a.batch) return;
  const float* alpha = a.alpha + b * a.alpha_ld;
  float* de = a.de + b * a.src_len;
  float mean = 0.0f;
  for (int64_t j = 0; j < a.lens[b]; j++) mean += alpha[j] * de[j];
  for (int64_t j = 0; j < a.lens[b]; j++) de[j] = alpha[j] * (de[j] - mean);
}

typedef struct {
  const float* alpha; int64_t alpha_ld; const float* enc; const float* ws; int64_t ws_ld; const float* v;
  const float* dc; const float* de; const int64_t* lens; float* denc; int64_t batch; int64_t src_len; int64_t ctx; int64_t att;
} NmtAttEncBwd;
// denc (B, S, C + A) += [alpha_j dc; de_j v * (1 - x_j^2)] at the sentence's words; one thread
// per element.
NMT_KERNEL void nmt_att_enc_bwd(const NmtAttEncBwd a) {
  int64_t ew = a.ctx + a.att;
  int64_t i = nmt_index();
  if (i >= a.batch * a.src_len * ew) return;
  int64_t col = i % ew, bj = i / ew, b = bj / a.src_len, j = bj % a.src_len;
  if (j >= a.lens[b]) return;
  if (col < a.ctx) {
    a.denc[i] += a.alpha[b * a.alpha_ld + j] * a.dc[b * a.ctx + col];
  } else {
    int64_t k = col - a.ctx;
    float x = tanhf(a.enc[i] + a.ws[b * a.ws_ld + k]);
    a.denc[i] += a.de[bj] * a.v[k] * (1.0f - x * x);
  }
}

typedef struct {
  const float* enc; const float* ws; int64_t ws_ld; const float* v; const float* de; const int64_t* lens;
  float* dws; int64_t dws_ld; float* dv; int64_t batch; int64_t src_len; int64_t ctx; int64_t att;
} NmtAttQueryBwd;
// dws (B, A) rows of `dws_ld` = sum_j de_j v * (1 - x_j^2), and dv (B, A), contiguous,
// += sum_j de_j x_j; one thread per (b, k).
NMT_KERNEL void nmt_att_query_bwd(const NmtAttQueryBwd a) {
  int64_t i = nmt_index();
  if (i >= a.batch * a.att) return;
  int64_t b = i / a.att, k = i % a.att, ew = a.ctx + a.att;
  const float* key = a.enc + b * a.src_len * ew + a.ctx + k;
  float q = a.ws[b * a.ws_ld + k], dq = 0.0f, dv = 0.0f;
  for (int64_t j = 0; j < a.lens[b]; j++) {
    float x = tanhf(key[j * ew] + q), de = a.de[b * a.src_len + j];
    dv += de * x;
    dq += de * a.v[k] * (1.0f - x * x);
  }
  a.dws[b * a.dws_ld + k] = dq;
  a.dv[i] += dv;
}
