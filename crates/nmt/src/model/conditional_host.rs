//! The host form of the conditional GRU decoder (`conditional_decoder.rs`): one search step
//! for `R` rows on host slices, its products that share a left operand side by side.
use super::attention_memory::HostStart;
use super::conditional_decoder::ConditionalDecoder;
use super::decoder::{HostAttnMemory, HostMemory, HostStepIn, HostStepOut};
use super::output::HostOutput;
use super::precomputed::{ContextTerms, WordTerms};
use super::rnn::Rnn;
use crate::config::{GruForm, OutputState};
use crate::error::{Error, Result};
use crate::kernels::cpu::norm_rows::NormedBlock;
use crate::kernels::gemm::fill_rows;
use crate::model::dense::{hcat, host, Dense};

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
    /// (`kernels::cpu::rnn_cell`).
    fn step(&self, gi: (&[f32], usize), gh: (&[f32], usize, usize), h: &[f32], threads: usize) -> Vec<f32> {
        use crate::kernels::cpu::engine::isa::simd_dispatch;
        use crate::kernels::cpu::gru_cell::{reset_row, update_row};
        use crate::kernels::gemm::Mat;
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
                crate::model::twin_support::check_conditional_step(CellKind::Gru(form), which, start, false, 140 + 10 * i as u64);
                if form == GruForm::ResetAfter {
                    crate::model::twin_support::check_conditional_step(CellKind::Gru(form), which, start, true, 170 + j as u64);
                }
            }
        }
    }
}
