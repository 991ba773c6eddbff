//! One decoder step on the host for `R` live rows (`Seq2Seq::decode_step` is the candle twin).
//!
//! RNNsearch (appendix A.2.2), row `r` reading sentence `sent[r]`:
//! ```text
//! c_i  = attention(s_{i-1}, h)                    (R, 2n)   W_a s: one GEMM, the rest per row
//! s_i  = GRU(E y_{i-1} W + b + c_i C, s_{i-1})    (R, n)    two input GEMMs, two in the cell
//! t~_i = s O_h + E y_{i-1} O_y + c_i O_c + b      (R, 2l)   three accumulated GEMMs
//! t_i  = maxout(t~_i)                             (R, l)
//! z    = G t_i + b_G → lse, best tokens per row   (K_y, R)  kernels/projection.rs, never stored
//! ```
//! RNNenc (appendix A) replaces attention by the summary `c` of the row's sentence: its gate
//! term `C c` joins `U' h` before the reset gate, and `O_c c` joins the deep output's bias.
//!
//! With the LSTM (`model.cell`) a state row is `[s; cell]` (`2n`); the products read `s`, the
//! four gates come out of the same GEMMs (`G = 4n` columns instead of `3n`), and the row
//! update is the training kernels' `lstm_cell::update_row`.
use rayon::prelude::*;

use super::dense::{affine, embed};
use super::encode::HostEncoded;
use super::weights::{HostCore, HostModel};
use crate::config::{CellKind, GruForm, OutputState};
use crate::kernels::attn_decoder::{attend_row, AttnScratch};
use crate::kernels::gemm::{matmul, Mat};
use crate::kernels::lstm_cell;
use crate::kernels::profile;
use crate::kernels::projection::RowBest;
use crate::kernels::rnn_cell::{reset_row, update_row};
use crate::model::copy::MixIn;
use crate::simd_dispatch;

/// The live rows of a step: previous states `s (R, w)` (`w = n`, or the LSTM's `2n`),
/// previous words `y (R)`, and each row's sentence in the encoded batch.
pub struct LiveRows<'a> {
    pub s: &'a [f32],
    pub y: &'a [u32],
    pub sent: &'a [usize],
}

pub struct StepOut {
    /// The new states `(R, w)`.
    pub state: Vec<f32>,
    /// Each row's normaliser and best tokens.
    pub best: RowBest,
    /// Attention weights `(R, S)`, zero at padding (RNNsearch, when asked for).
    pub alpha: Option<Vec<f32>>,
}

/// One step for `rows`; `want_alpha` keeps the attention weights.
/// `want[r]` is how many best tokens row `r` needs; tokens in `skip` are never chosen.
pub fn step(
    model: &HostModel,
    enc: &HostEncoded,
    rows: &LiveRows<'_>,
    want: &[usize],
    skip: &[u32],
    want_alpha: bool,
    threads: usize,
) -> StepOut {
    let f = features(model, enc, rows, want_alpha, threads);
    let r_n = rows.y.len();
    let mut best = profile::timed(profile::SEARCH_SCORES, || match &enc.vocab {
        None => model.out.proj.best(&f.t, r_n, want, skip),
        Some(v) => v.best(&f.t, r_n, want, skip),
    });
    if let (Some(copy), Some(al)) = (&model.copy, &f.alpha) {
        let x = MixIn { t: &f.t, s_out: &f.s_out, ctx: &f.ctx, ey: &f.ey, alpha: al, rows: rows.sent, want, skip, src: enc.copy_source() };
        best = copy.mix(&model.out.proj, &best, &x);
    }
    StepOut { state: f.state, best, alpha: f.alpha }
}

/// A step up to the output layer's features: what [`step`] scores, and what an ensemble
/// (`search/ensemble.rs`, through `Scorer::step_full`) turns into full distributions.
pub struct Features {
    /// The new states `(R, w)`.
    pub state: Vec<f32>,
    /// The deep output's maxout features `t (R, l)`.
    pub t: Vec<f32>,
    /// Attention weights `(R, S)` (RNNsearch, when asked for, and always for a copy model).
    pub alpha: Option<Vec<f32>>,
    /// What the copy gate reads (a copy model; empty otherwise): the deep output's state
    /// `(R, n)`, the contexts `(R, 2n)` and the previous words' embeddings `(R, m)`.
    pub s_out: Vec<f32>,
    pub ctx: Vec<f32>,
    pub ey: Vec<f32>,
}

/// The decoder step for `rows` up to the maxout features.
pub fn features(model: &HostModel, enc: &HostEncoded, rows: &LiveRows<'_>, want_alpha: bool, threads: usize) -> Features {
    let cfg = &model.cfg;
    let (r_n, n, m) = (rows.y.len(), cfg.hidden_dim, cfg.emb_dim);
    // Row widths: the whole (stacked) state `sw = L·lw`, one layer's `lw` (`n` or `2n`).
    let (sw, lw, g) = (model.state_width(), model.layer_width(), cfg.cell_kind().gates() * n);
    let stacked = !model.upper.is_empty();
    let l2 = model.out.b.len();
    // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
    let k_y = cfg.tgt_vocab as u32;
    let y: Vec<u32> = rows.y.iter().map(|&w| if w < k_y { w } else { nmt_data::UNK }).collect();
    let ey = embed(&model.tgt_emb, &y, m);
    // The first layer's new states `(R, lw)`.
    let mut state = vec![0f32; r_n * lw];
    // RNNsearch's contexts `(R, 2n)`, kept for the copy gate.
    let mut kept_ctx: Vec<f32> = Vec::new();
    // The previous outputs `s_{i-1} (R, n)`: the states themselves, or the LSTM's `s` parts.
    let s_prev: std::borrow::Cow<[f32]> = if sw == n {
        std::borrow::Cow::Borrowed(rows.s)
    } else {
        std::borrow::Cow::Owned(rows.s.chunks_exact(sw).flat_map(|r| r[..n].iter().copied()).collect())
    };
    // The LSTM's cell states of row `r`: previous and new.
    let cell = |r: usize| &rows.s[r * sw + n..r * sw + lw];
    let mut alpha = None;
    // The deep output's pre-activation `t~ (R, 2l)`.
    let mut pre = Vec::with_capacity(r_n * l2);
    match &model.core {
        HostCore::Search { dec, .. } => {
            let (a, s_len) = (cfg.att_dim, enc.src_len);
            let ew = 2 * n + a;
            // s_{i-1} · [W_a | U_rz | O_h?]: the attention query, the GRU's recurrent gate
            // term, and (deep output on s_{i-1}) the output's state term.
            let t_attn = profile::start();
            let w1 = dec.s_cat_b.len();
            let g1 = affine(&s_prev, r_n, n, &dec.s_cat, &dec.s_cat_b, threads);
            let mut ctx = vec![0f32; r_n * 2 * n];
            // The copy mixture reads the attention weights whether or not they are reported.
            let want_alpha = want_alpha || model.copy.is_some();
            let mut al = vec![0f32; if want_alpha { r_n * s_len } else { 0 }];
            let per_row = |sc: &mut AttnScratch<f32>, r: usize, c: &mut [f32]| {
                let b = rows.sent[r];
                let mem = &enc.mem[b * s_len * ew..(b + 1) * s_len * ew];
                simd_dispatch!(attend_row(mem, &g1[r * w1..r * w1 + a], &dec.v_a, enc.lens[b], sc, c));
            };
            if want_alpha {
                ctx.par_chunks_mut(2 * n).zip(al.par_chunks_mut(s_len.max(1))).enumerate().for_each_init(
                    || AttnScratch::new(s_len, a),
                    |sc, (r, (c, out))| {
                        per_row(sc, r, c);
                        out.copy_from_slice(&sc.alpha[..out.len()]);
                    },
                );
                alpha = Some(al);
            } else {
                ctx.par_chunks_mut(2 * n).enumerate().for_each_init(|| AttnScratch::new(s_len, a), |sc, (r, c)| per_row(sc, r, c));
            }
            profile::stop(profile::SEARCH_ATTN, t_attn);
            // E y · [W | O_y] + c_i · [C | O_c] + [b | b_o]: the cell's input terms and the
            // deep output's word and context terms, in one (R, G + 2l) block.
            let w2 = g + l2;
            let mut g2 = affine(&ey, r_n, m, &dec.y_cat, &dec.yc_cat_b, threads);
            matmul(&mut g2, 0, w2, Mat::new(&ctx, r_n, 2 * n), Mat::new(&dec.c_cat, 2 * n, w2), true, threads);
            kept_ctx = ctx;
            // The cell, with the training kernels' row arithmetic (`kernels::rnn_cell`): the
            // input terms are g2's first 3n columns, the recurrent ones g1's block after W_a.
            let rec = dec.rec;
            let hh_n = match dec.kind {
                CellKind::Gru(GruForm::Paper) => {
                    // q = r ⊙ s_{i-1}, then q U_n.
                    let mut q = vec![0f32; r_n * n];
                    for r in 0..r_n {
                        let (x, h) = (&g2[r * w2..], &g1[r * w1..]);
                        simd_dispatch!(reset_row(&x[..n], &h[a..a + n], &s_prev[r * n..(r + 1) * n], &mut q[r * n..(r + 1) * n]));
                    }
                    let mut hn = vec![0f32; r_n * n];
                    matmul(&mut hn, 0, n, Mat::new(&q, r_n, n), Mat::new(&dec.u, n, n), false, threads);
                    hn
                }
                CellKind::Gru(GruForm::ResetAfter) | CellKind::Lstm => Vec::new(),
            };
            for r in 0..r_n {
                let (x, h) = (&g2[r * w2..(r + 1) * w2], &g1[r * w1..(r + 1) * w1]);
                let (s_new, c_new) = state[r * lw..(r + 1) * lw].split_at_mut(n);
                match dec.kind {
                    CellKind::Gru(form) => {
                        let hn = match form {
                            GruForm::Paper => &hh_n[r * n..(r + 1) * n],
                            GruForm::ResetAfter => &h[a + 2 * n..a + 3 * n],
                        };
                        simd_dispatch!(update_row(form, &x[..g], &h[a..a + 2 * n], hn, &s_prev[r * n..(r + 1) * n], s_new));
                    }
                    CellKind::Lstm => simd_dispatch!(lstm_cell::update_row(&x[..g], &h[a..a + g], cell(r), c_new, s_new)),
                }
                let start = pre.len();
                pre.extend_from_slice(&x[g..]);
                if cfg.output_state == OutputState::Previous && !stacked {
                    for (o, &v) in pre[start..].iter_mut().zip(&h[a + rec..]) {
                        *o += v;
                    }
                }
            }
            if cfg.output_state == OutputState::Current && !stacked {
                matmul(&mut pre, 0, l2, Mat::strided(&state, 0, r_n, n, lw), Mat::new(&model.out.o_h, n, l2), true, threads);
            }
        }
        HostCore::Enc { dec, .. } => {
            let gi = affine(&ey, r_n, m, &dec.w, &dec.b, threads);
            // hc = h U' + C c, then the reset multiplies all of it (model/decoder.rs).
            let mut hc = Vec::with_capacity(r_n * g);
            for &b in rows.sent {
                hc.extend_from_slice(&enc.gate_ctx[b * g..(b + 1) * g]);
            }
            matmul(&mut hc, 0, g, Mat::new(&s_prev, r_n, n), Mat::new(&dec.u, n, g), true, threads);
            // r, z = σ(gi + hc), h~ = tanh(gi_n + r ⊙ hc_n): the reset-after cell of the
            // training kernels, row by row (or the LSTM's gates on gi + hc).
            for r in 0..r_n {
                let (x, c) = (&gi[r * g..(r + 1) * g], &hc[r * g..(r + 1) * g]);
                let (s_new, c_new) = state[r * lw..(r + 1) * lw].split_at_mut(n);
                match dec.kind {
                    CellKind::Gru(_) => {
                        simd_dispatch!(update_row(GruForm::ResetAfter, x, &c[..2 * n], &c[2 * n..], &s_prev[r * n..(r + 1) * n], s_new))
                    }
                    CellKind::Lstm => simd_dispatch!(lstm_cell::update_row(x, c, cell(r), c_new, s_new)),
                }
            }
            for &b in rows.sent {
                let oc = &enc.out_ctx[b * l2..(b + 1) * l2];
                pre.extend(model.out.b.iter().zip(oc).map(|(x, y)| x + y));
            }
            if !stacked {
                let s_out = match cfg.output_state {
                    OutputState::Previous => Mat::new(&s_prev, r_n, n),
                    OutputState::Current => Mat::strided(&state, 0, r_n, n, lw),
                };
                matmul(&mut pre, 0, l2, s_out, Mat::new(&model.out.o_h, n, l2), true, threads);
            }
            matmul(&mut pre, 0, l2, Mat::new(&ey, r_n, m), Mat::new(&model.out.o_y, m, l2), true, threads);
        }
    }
    // The state the deep output read (the copy gate reads it too).
    let s_out: Vec<f32> = if stacked {
        let (full, top) = model.upper.step(rows.s, &state, threads);
        let s_out = match cfg.output_state {
            OutputState::Previous => model.upper.top_output(rows.s),
            OutputState::Current => top,
        };
        matmul(&mut pre, 0, l2, Mat::new(&s_out, r_n, n), Mat::new(&model.out.o_h, n, l2), true, threads);
        state = full;
        s_out
    } else if model.copy.is_some() {
        match cfg.output_state {
            OutputState::Previous => s_prev.to_vec(),
            OutputState::Current => state.chunks_exact(lw).flat_map(|r| r[..n].iter().copied()).collect(),
        }
    } else {
        Vec::new()
    };
    let t: Vec<f32> = pre.chunks_exact(2).map(|p| p[0].max(p[1])).collect();
    Features { state, t, alpha, s_out, ctx: kept_ctx, ey }
}
