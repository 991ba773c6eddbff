//! The conditional GRU decoder (Sennrich et al. 2017, "Nematus", §2.3; Marian's `s2s`), the
//! `model.decoder = "conditional"` choice of RNNsearch, in its three forms. At step `i`:
//!
//! ```text
//! s'_i = GRU₁(E y_{i-1}, s_{i-1})          (B, n)   the word just emitted, before attending
//! c_i  = attention(s'_i, h)                (B, 2n)  `attention.rs`, queried by s'_i
//! s_i  = GRU₂(c_i, s'_i)                   (B, n)   GRU₂'s input projection reads c_i alone
//! ```
//! from `s_0 = tanh(←h_1 W_s + b_s)` (`attention_memory.rs`); the deep output reads
//! `s_i`, `E y_{i-1}` and `c_i` as for Bahdanau's decoder. Bahdanau's attention at step `i`
//! is queried by `s_{i-1}`, which has not read `y_{i-1}`: here the query has. Both cells are
//! GRUs in the `model.gru` form (`model.cell = "lstm"` is refused by `ModelConfig::validate`).
//! Recurrent dropout masks `s_{i-1}` where it enters `U₁`.
//!
//! - [`ConditionalDecoder::step`]: the composed candle step (the candle search, the GPU);
//! - [`ConditionalDecoder::forward`]: teacher forcing, in one kernel (`kernels::cgru_decoder`
//!   through `kernels::attn_op`) or step by step on composed ops (the reference twin);
//! - [`HostConditional::step`]: one search step for `R` rows on host slices.
use candle_core::Tensor;

use super::attention::Attention;
use super::attention_memory::{attention_memory, forced_steps, AttnForced, DecoderStart, ForcedDecoder, ForcedIn, HostStart};
use super::decoder::{shift_outputs, AttentionMemory, DecoderDims, HostAttnMemory, HostMemory, HostStepIn, HostStepOut, StepOut};
use super::encoder::Source;
use super::output::HostOutput;
use super::params::ParamBuilder;
use super::precomputed::{ContextTerms, WordTerms};
use super::regularizer::state_tensor;
use super::rnn::Rnn;
use crate::config::{CellKind, GruForm, OutputState, StartState};
use crate::error::{Error, Result};
use crate::kernels::attn_decoder::AttnDims;
use crate::kernels::dense::{hcat, host, Dense};
use crate::kernels::gemm::fill_rows;
use crate::kernels::norm_rows::NormedBlock;
use crate::kernels::{attn_op, linear, norm_rows};

/// The conditional GRU decoder: `decoder.gru.*` (GRU₁, input `E y`), `decoder.gru2.*` (GRU₂,
/// input `c`), `decoder.attention.*`, `decoder.w_s`, `decoder.b_s`.
#[derive(Clone, Debug)]
pub struct ConditionalDecoder {
    pub(crate) rnn1: Rnn,
    pub(crate) rnn2: Rnn,
    pub(crate) start: DecoderStart,
    pub(crate) att: Attention,
}

impl ConditionalDecoder {
    /// `norm`: with layer normalisation in every layer (Marian's `s2s`, `layer_norm.rs`).
    pub fn new(dims: DecoderDims, att: usize, start: StartState, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        let DecoderDims { emb, enc, hidden, kind } = dims;
        if kind == CellKind::Lstm {
            return Err(Error::Config("model.decoder = \"conditional\" is the conditional GRU: it needs model.cell = \"gru\"".into()));
        }
        Ok(ConditionalDecoder {
            rnn1: Rnn::new(emb, hidden, kind, norm, &pb.pp("gru"))?,
            rnn2: Rnn::new(2 * enc, hidden, kind, norm, &pb.pp("gru2"))?,
            start: DecoderStart::new(enc, hidden, start, norm, pb)?,
            att: Attention::new(hidden, 2 * enc, att, norm, &pb.pp("attention"))?,
        })
    }

    /// `s_0 (B, n)`, the start state (a GRU's state is its output).
    pub fn init_state(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        self.start.output(ann, src)
    }

    pub fn memory(&self, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
        attention_memory(&self.att, ann, src_mask)
    }

    /// `gi = E y_{i-1} W₁ + b₁` `(B, T, G)` from `ey (B, T, m)`.
    pub fn project(&self, ey: &Tensor) -> Result<Tensor> {
        self.rnn1.project(ey)
    }

    /// One step from `gi (batch, G)` and `s_{i-1} (batch, n)`: `s_i`, `c_i`, `α_i`.
    pub fn step(&self, mem: &AttentionMemory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let s1 = self.rnn1.step(gi, s, state_mask)?;
        let (ctx, alpha) = self.att.attend(&s1, &mem.annotations, &mem.uh, &mem.mask_bias)?;
        let gi2 = self.rnn2.project(&ctx.unsqueeze(1)?)?.squeeze(1)?;
        let state = self.rnn2.step(&gi2, &s1, None)?;
        Ok(StepOut { state, ctx: Some(ctx), alpha: Some(alpha) })
    }
}

impl ForcedDecoder for ConditionalDecoder {
    fn hidden(&self) -> usize {
        self.rnn1.hidden()
    }

    fn forward_composed(&self, x: &ForcedIn, mask: Option<&Tensor>) -> Result<AttnForced> {
        let mem = self.memory(x.ann, x.src.mask)?;
        let s0 = self.start.output(x.ann, x.src)?;
        let gi = self.project(x.ey)?;
        forced_steps(x, s0.clone(), s0, |i, s| self.step(&mem, &gi.narrow(1, i, 1)?.squeeze(1)?, s, mask), |s| Ok(s.clone()))
    }

    /// The fused form: `s_0`, `U_a h_j` and all steps in one op (`kernels::cgru_decoder`).
    /// The copy mixture's `α` is recomputed on composed ops: `s'_i` from the op's `s_{i-1}`
    /// rows in one batched GRU₁ step, then the weights.
    fn forward_fused(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>) -> Result<AttnForced> {
        let (b, t, m) = x.ey.dims3()?;
        let (s, n) = (x.ann.dim(1)?, self.rnn1.hidden());
        let dims = AttnDims {
            batch: b,
            tgt_len: t,
            src_len: s,
            hidden: n,
            ctx: 2 * n,
            att: self.att.u_a.dim(1)?,
            lens: x.src.lens.to_vec(),
            kind: self.rnn1.kind(),
            output: x.output,
            state_mask: state_mask.clone(),
            conditional: true,
            start: self.start.kind,
            norm: self.start.norm.is_some(),
        };
        let (w1, b1) = self.rnn1.input_weights();
        // `E y W₁` over the whole sequence: with layer normalisation `LN(E y W₁)·γ + b₁`, composed.
        let ey = x.ey.reshape((b * t, m))?;
        let gie = match self.rnn1.norm() {
            None => linear::linear(&ey, w1, b1)?,
            Some(g) => norm_rows::layer_norm_op(&ey.matmul(w1)?, &g.x)?.broadcast_add(b1)?,
        };
        let (att, (w2, b2)) = (&self.att, self.rnn2.input_weights());
        let (u2, bh2, u1, bh1) = (self.rnn2.u_cat()?, self.rnn2.bias_h()?, self.rnn1.u_cat()?, self.rnn1.bias_h()?);
        let mut parts = vec![&att.w_a, &att.b_a, &att.v_a, w2, &u2, &bh2, &u1, &bh1, b2];
        // The gains, where `AttnDims::woff` places them.
        let gains = match (self.rnn1.norm(), self.rnn2.norm(), &att.norm, &self.start.norm) {
            (Some(g1), Some(g2), Some(ga), Some(gs)) => Some(([&g1.h, &g2.x, &g2.h, &ga.w], [&ga.u, gs])),
            (None, None, None, None) => None,
            _ => return Err(Error::Config("layer normalisation in some of the conditional decoder's layers only".into())),
        };
        parts.extend(gains.iter().flat_map(|g| g.0));
        parts.extend([&att.u_a, &self.start.w_s, &self.start.b_s]);
        parts.extend(gains.iter().flat_map(|g| g.1));
        let packed = parts.iter().map(|p| p.flatten_all()).collect::<candle_core::Result<Vec<_>>>()?;
        let state_ctx = attn_op::attention_decoder(&gie, x.ann, &Tensor::cat(&packed, 0)?, dims)?;
        let s0 = self.start.output(x.ann, x.src)?;
        let alpha = match x.want_alpha {
            false => None,
            true => {
                let s_out = state_ctx.narrow(1, 0, n)?.reshape((b, t, n))?;
                let prev = match x.output {
                    OutputState::Previous => s_out,
                    OutputState::Current => shift_outputs(&s_out, &s0, OutputState::Previous)?,
                };
                // The mask of each sentence at each of its steps.
                let mask_rows =
                    state_mask.map(|m| m.chunks(n).flat_map(|row| std::iter::repeat_n(row, t).flatten().copied()).collect::<Vec<_>>());
                let mask = state_tensor(mask_rows.as_deref(), b * t, n, x.ey)?;
                let s1 = self.rnn1.step(&gie, &prev.reshape((b * t, n))?, mask.as_ref())?;
                let mem = self.memory(x.ann, x.src.mask)?;
                Some(self.att.weights_all(&s1.reshape((b, t, n))?, &mem.uh, &mem.mask_bias)?.reshape((b * t, s))?)
            }
        };
        Ok(AttnForced { state_ctx, alpha, start: s0 })
    }
}

/// A GRU's weights as the host step multiplies them: `U_rec (n, rec)` (the paper form's
/// `U_rz`, `rec = 2n`; the reset-after form's whole `U`, `rec = 3n`), its bias (`b_h`, or
/// zeros), and the paper form's candidate `U_n (n, n)` (empty otherwise).
struct HostCell {
    form: GruForm,
    u_rec: Vec<f32>,
    b_rec: Vec<f32>,
    u_n: Dense,
}

impl HostCell {
    fn new(rnn: &Rnn) -> Result<Self> {
        let Rnn::Gru(gru) = rnn else {
            return Err(Error::Config("the conditional decoder's cells are GRUs".into()));
        };
        let n = gru.hidden;
        let (u_rec, u_n) = match gru.form {
            GruForm::Paper => (host(&gru.u_rz)?, host(&gru.u)?),
            GruForm::ResetAfter => (host(&gru.u_cat()?)?, Vec::new()),
        };
        let rec = u_rec.len() / n;
        Ok(HostCell { form: gru.form, u_rec, b_rec: host(&gru.bias_h()?)?.into_iter().take(rec).collect(), u_n: Dense::new(u_n, n) })
    }

    /// The new states `(R, n)` from the input terms (row `r` of `gi` at `gi.0[r · gi.1 ..]`,
    /// `3n` wide), the recurrent terms `h U_rec + b` (row `r` of `gh` at `gh.0[r · gh.1 + gh.2 ..]`)
    /// and the previous states `h (R, n)`; the training kernels' row arithmetic
    /// (`kernels::rnn_cell`).
    fn step(&self, gi: (&[f32], usize), gh: (&[f32], usize, usize), h: &[f32], threads: usize) -> Vec<f32> {
        use crate::kernels::gemm::Mat;
        use crate::kernels::gru_cell::{reset_row, update_row};
        use crate::kernels::math::simd_dispatch;
        let n = self.b_rec.len() / if self.form == GruForm::Paper { 2 } else { 3 };
        let r_n = h.len() / n;
        let (x, h_rec) = (|r: usize| &gi.0[r * gi.1..][..3 * n], |r: usize| &gh.0[r * gh.1 + gh.2..][..self.b_rec.len()]);
        let hn = match self.form {
            GruForm::Paper => {
                // q = r ⊙ h, then q U_n.
                let mut q = vec![0f32; r_n * n];
                for r in 0..r_n {
                    simd_dispatch!(reset_row(&x(r)[..n], &h_rec(r)[..n], &h[r * n..(r + 1) * n], &mut q[r * n..(r + 1) * n]));
                }
                let mut hn = vec![0f32; r_n * n];
                self.u_n.mul_add(&mut hn, 0, n, Mat::new(&q, r_n, n), threads);
                hn
            }
            GruForm::ResetAfter => Vec::new(),
        };
        let mut out = vec![0f32; r_n * n];
        for r in 0..r_n {
            let hn_r = match self.form {
                GruForm::Paper => &hn[r * n..(r + 1) * n],
                GruForm::ResetAfter => &h_rec(r)[2 * n..3 * n],
            };
            simd_dispatch!(update_row(self.form, x(r), &h_rec(r)[..2 * n], hn_r, &h[r * n..(r + 1) * n], &mut out[r * n..(r + 1) * n]));
        }
        out
    }
}

/// The host form of [`ConditionalDecoder`]: the products that share a left operand side by
/// side, one GEMM each (as `HostAttention`). With layer normalisation each normalised block's
/// bias is left out of its GEMM and given to its [`NormedBlock`] as `β` (`layer_norm.rs`).
pub struct HostConditional {
    /// `E y · [W₁ | O_y]` `(m, G + 2l)`, bias `[b₁ | b_o]` (a table, `precomputed.rs`).
    pub(crate) words: WordTerms,
    /// `s_{i-1} · [U₁_rec | O_h?]` (`O_h` when the deep output reads `s_{i-1}`), bias `[b_h1 | 0]`.
    s_cat: Dense,
    s_cat_b: Vec<f32>,
    /// `s' · [W_a | U₂_rec]`, bias `[b_a | b_h2]`.
    sp_cat: Dense,
    sp_cat_b: Vec<f32>,
    /// `c · [W₂ | O_c]` `(2n, G + 2l)` (per source position, `precomputed.rs`), bias `[b₂ | 0]`.
    context: ContextTerms,
    c_cat_b: Vec<f32>,
    cell1: HostCell,
    cell2: HostCell,
    keys: HostStart,
    /// The normalised blocks of `y_cat`, `s_cat`, `sp_cat`, `c_cat` and of `O_h s` (empty
    /// without layer normalisation).
    norm: [Vec<NormedBlock>; 5],
}

/// The blocks of [`HostConditional`]'s products that layer normalisation normalises, and the
/// products' biases with those blocks' zeroed: `(y, s, sp, c, O_h s)`.
fn normed_blocks(dec: &ConditionalDecoder, out: &HostOutput, prev: bool, biases: [&mut Vec<f32>; 4]) -> Result<[Vec<NormedBlock>; 5]> {
    let (Some(g1), Some(g2), Some(ga), Some(go)) = (dec.rnn1.norm(), dec.rnn2.norm(), &dec.att.norm, &out.norm) else {
        return Ok(Default::default());
    };
    let (g, a) = (g1.x.dim(0)?, ga.w.dim(0)?);
    let [y_b, s_b, sp_b, c_b] = biases;
    // (off, γ): β is the bias the GEMM would have added there (none for `s W_a`, whose `b_a`
    // shifts the keys, and for `O_h s`, `O_c c`, whose shared `b` shifts `O_y E y`).
    let block = |bias: &mut Vec<f32>, off: usize, gamma: Vec<f32>, shifted: bool| {
        let range = off..off + gamma.len();
        let beta = shifted.then(|| bias[range.clone()].to_vec());
        bias[range].fill(0.0);
        NormedBlock { off, gamma, beta }
    };
    let y = vec![block(y_b, 0, host(&g1.x)?, true), block(y_b, g, go[1].clone(), true)];
    let mut s = vec![block(s_b, 0, host(&g1.h)?, true)];
    if prev {
        s.push(block(s_b, g, go[0].clone(), false));
    }
    let sp = vec![block(sp_b, 0, host(&ga.w)?, false), block(sp_b, a, host(&g2.h)?, true)];
    let c = vec![block(c_b, 0, host(&g2.x)?, true), block(c_b, g, go[2].clone(), false)];
    let oh = if prev { Vec::new() } else { vec![NormedBlock { off: 0, gamma: go[0].clone(), beta: None }] };
    Ok([y, s, sp, c, oh])
}

impl HostConditional {
    pub fn new(dec: &ConditionalDecoder, cfg: &crate::config::ModelConfig, out: &HostOutput) -> Result<Self> {
        let (n, m, a, l2) = (cfg.hidden_dim, cfg.emb_dim, dec.att.b_a.dim(0)?, out.b.len());
        let g = 3 * n;
        let (cell1, cell2) = (HostCell::new(&dec.rnn1)?, HostCell::new(&dec.rnn2)?);
        let (rec1, rec2) = (cell1.b_rec.len(), cell2.b_rec.len());
        let prev = cfg.output_state == OutputState::Previous && cfg.dec_layers == 1;
        let (w1, b1) = (host(dec.rnn1.input_weights().0)?, host(dec.rnn1.input_weights().1)?);
        let (w2, b2) = (host(dec.rnn2.input_weights().0)?, host(dec.rnn2.input_weights().1)?);
        let mut s_blocks = vec![(&cell1.u_rec[..], rec1)];
        if prev {
            s_blocks.push((&out.o_h.w[..], l2));
        }
        let mut s_cat_b = cell1.b_rec.clone();
        s_cat_b.resize(rec1 + if prev { l2 } else { 0 }, 0.0);
        let w_a = host(&dec.att.w_a)?;
        let mut c_cat_b = b2;
        c_cat_b.resize(g + l2, 0.0);
        let mut y_cat_b = b1.iter().chain(&out.b).copied().collect();
        let mut sp_cat_b = host(&dec.att.b_a)?.into_iter().chain(cell2.b_rec.iter().copied()).collect();
        let norm = normed_blocks(dec, out, prev, [&mut y_cat_b, &mut s_cat_b, &mut sp_cat_b, &mut c_cat_b])?;
        Ok(HostConditional {
            words: WordTerms::new(Dense::new(hcat(&[(&w1[..], g), (&out.o_y.w[..], l2)], m), m), y_cat_b),
            s_cat: Dense::new(hcat(&s_blocks, n), n),
            s_cat_b,
            sp_cat: Dense::new(hcat(&[(&w_a[..], a), (&cell2.u_rec[..], rec2)], n), n),
            sp_cat_b,
            context: ContextTerms::new(Dense::new(hcat(&[(&w2[..], g), (&out.o_c[..], l2)], 2 * n), 2 * n)),
            c_cat_b,
            keys: HostStart::new(&dec.start, &dec.att)?,
            cell1,
            cell2,
            norm,
        })
    }

    /// The step's products in int8.
    pub fn quantize(&mut self) {
        for d in [&mut self.s_cat, &mut self.sp_cat, &mut self.cell1.u_n, &mut self.cell2.u_n] {
            d.quantize();
        }
        self.words.quantize();
        self.context.quantize();
    }

    /// The memory and `s_0 (B, n)` ([`HostStart::memory`]).
    pub fn memory(&self, ann: &[f32], bs: (usize, usize), lens: &[usize], threads: usize) -> (HostMemory, Vec<f32>) {
        self.keys.memory(ann, bs, lens, &self.context, threads)
    }

    /// One step for the `R` live rows of `x` (as `HostAttention::step`):
    /// ```text
    /// E y · [W₁ | O_y],  s_{i-1} · [U₁_rec | O_h?]   → s' = GRU₁          (R, n)
    /// s' · [W_a | U₂_rec]                            → c_i = attention(s')
    /// c_i · [W₂ | O_c]                               → s_i = GRU₂, t~'s terms
    /// ```
    /// the first from the word table, the last as `Σ_j α_ij (h_j · [W₂ | O_c])`.
    pub fn step(&self, m: &HostAttnMemory, lens: &[usize], x: &HostStepIn<'_>, out: &HostOutput, want_alpha: bool) -> HostStepOut {
        use crate::kernels::gemm::Mat;
        let (n, a, l2, threads) = (self.keys.b_s.len(), self.keys.v_a.len(), out.b.len(), x.threads);
        let (r_n, g) = (x.sent.len(), 3 * n);
        let (wy, ws, wsp) = (g + l2, self.s_cat_b.len(), self.sp_cat_b.len());
        let [ny, ns, nsp, nc, noh] = &self.norm;
        let mut gy = self.words.rows(x.ey, x.y, threads);
        NormedBlock::apply_all(ny, &mut gy, r_n, wy);
        let mut gs = self.s_cat.affine(x.s_prev, r_n, &self.s_cat_b, threads);
        NormedBlock::apply_all(ns, &mut gs, r_n, ws);
        let s1 = self.cell1.step((&gy, wy), (&gs, ws, 0), x.s_prev, threads);
        let mut gsp = self.sp_cat.affine(&s1, r_n, &self.sp_cat_b, threads);
        NormedBlock::apply_all(nsp, &mut gsp, r_n, wsp);
        let (ctx, alpha) = super::attention_decoder::attend_rows(&m.mem, lens, x.sent, (&gsp, wsp), &self.keys.v_a, 2 * n);
        let mut gc = fill_rows(&self.c_cat_b, r_n);
        self.context.add_rows(&mut gc, wy, &alpha, x.sent, lens, &m.ctx_terms);
        NormedBlock::apply_all(nc, &mut gc, r_n, wy);
        let state = self.cell2.step((&gc, wy), (&gsp, wsp, a), &s1, threads);
        let mut pre = Vec::with_capacity(r_n * l2);
        for r in 0..r_n {
            let start = pre.len();
            pre.extend(gy[r * wy + g..(r + 1) * wy].iter().zip(&gc[r * wy + g..(r + 1) * wy]).map(|(y, c)| y + c));
            if x.out_state == Some(OutputState::Previous) {
                for (o, &v) in pre[start..].iter_mut().zip(&gs[r * ws + self.cell1.b_rec.len()..(r + 1) * ws]) {
                    *o += v;
                }
            }
        }
        if x.out_state == Some(OutputState::Current) {
            if noh.is_empty() {
                out.o_h.mul_add(&mut pre, 0, l2, Mat::new(&state, r_n, n), threads);
            } else {
                let mut hs = vec![0f32; r_n * l2];
                out.o_h.mul_add(&mut hs, 0, l2, Mat::new(&state, r_n, n), threads);
                NormedBlock::apply_all(noh, &mut hs, r_n, l2);
                pre.iter_mut().zip(&hs).for_each(|(p, h)| *p += h);
            }
        }
        HostStepOut { state, pre, ctx, alpha: want_alpha.then_some(alpha) }
    }
}

#[cfg(test)]
mod tests {
    /// The host step against the composed step (`twins.rs`), either GRU form and output state,
    /// and the reset-after form with layer normalisation.
    #[test]
    fn host_conditional_step_is_the_composed_step() {
        use crate::config::{CellKind, GruForm, OutputState, StartState};
        let starts = [StartState::FirstBackward, StartState::LastForward, StartState::Mean];
        for (i, form) in [GruForm::Paper, GruForm::ResetAfter].into_iter().enumerate() {
            for (j, which) in [OutputState::Previous, OutputState::Current].into_iter().enumerate() {
                let start = starts[(i + 2 * j) % 3];
                crate::model::twins::check_conditional_step(CellKind::Gru(form), which, start, false, 140 + 10 * i as u64);
                if form == GruForm::ResetAfter {
                    crate::model::twins::check_conditional_step(CellKind::Gru(form), which, start, true, 170 + j as u64);
                }
            }
        }
    }
}
