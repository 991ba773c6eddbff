//! RNNsearch's decoder (Bahdanau et al. 2015, appendix A.2.2), in its three forms:
//! `s_0 = tanh(W_s ←h_1)`; at step `i` the context `c_i` from additive attention over `s_{i-1}`
//! (`attention.rs`), then `z, r = σ(W E y_{i-1} + U s_{i-1} + C c_i)`,
//! `s~ = tanh(W E y_{i-1} + U (r ⊙ s_{i-1}) + C c_i)`, `s_i = (1 − z) ⊙ s_{i-1} + z ⊙ s~`.
//! With `model.cell = "lstm"` the same step drives an LSTM (`lstm.rs`): `C c_i` joins its
//! four gates' pre-activations, its state is `[s; cell]` and attention reads `s`.
//!
//! - [`AttentionDecoder::step`]: the composed candle step `(batch, ·)` (the candle search, the
//!   GPU);
//! - [`AttentionDecoder::forward`]: teacher forcing over every target step, in one kernel
//!   (`kernels::cpu::bahdanau`), its GPU twin (`decoder_gpu.rs`, a GRU or an LSTM) or step by step on
//!   composed ops (autodiff's reference twin);
//! - [`HostAttention::step`]: one search step for `R` live rows on host slices, with the deep
//!   output's input terms folded into the same GEMMs.
use candle_core::Tensor;
use rayon::prelude::*;

use super::attention::Attention;
use super::attention_memory::{attention_memory, forced_steps, AttnForced, DecoderStart, ForcedDecoder, ForcedIn, HostStart};
use super::decoder::{shift_outputs, AttentionMemory, DecoderDims, HostAttnMemory, HostMemory, HostStepIn, HostStepOut, StepOut};
use super::encoder::cell_name;
use super::encoder::Source;
use super::output::HostOutput;
use super::params::{Init, ParamBuilder};
use super::precomputed::{ContextTerms, WordTerms};
use super::rnn::Rnn;
use super::{decoder_gpu, decoder_loop_gpu};
use crate::config::{CellKind, GruForm, ModelConfig, OutputState, Precision, StartState};
use crate::error::Result;
use crate::kernels::cpu::bahdanau::{attend_row, AttnScratch};
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::gru_cell::{reset_row, update_row};
use crate::kernels::cpu::{attention_op, linear, lstm_cell};
use crate::kernels::gemm::Mat;
use crate::kernels::profile;
use crate::model::dense::{hcat, host, Dense};

/// RNNsearch's decoder.
#[derive(Clone, Debug)]
pub struct AttentionDecoder {
    pub(crate) rnn: Rnn,
    /// `(2n_enc, G)`: `[C_r | C_z | C]` (the LSTM: `[C_i | C_f | C_g | C_o]`).
    pub(crate) c: Tensor,
    /// `s_0 = tanh(←h_1 W_s + b_s)` (`attention_memory.rs`).
    pub(crate) start: DecoderStart,
    pub(crate) att: Attention,
}

impl AttentionDecoder {
    pub fn new(dims: DecoderDims, att: usize, start: StartState, pb: &ParamBuilder) -> Result<Self> {
        let DecoderDims { emb, enc, hidden, kind } = dims;
        Ok(AttentionDecoder {
            rnn: Rnn::new(emb, hidden, kind, false, &pb.pp(cell_name(kind)))?,
            c: pb.get("c", &[2 * enc, kind.gates() * hidden], Init::Normal)?,
            start: DecoderStart::new(enc, hidden, start, false, pb)?,
            att: Attention::new(hidden, 2 * enc, att, false, &pb.pp("attention"))?,
        })
    }

    /// `s_0 = tanh(←h_1 W_s + b_s) (B, n)` from the annotations `(B, S, 2n)`: `←h_1`, their
    /// backward half at the first word, has read the whole sentence.
    pub fn start_output(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        self.start.output(ann, src)
    }

    /// The start state from `s_0` (the LSTM's cell at zero) `(B, w)`.
    pub fn init_state(&self, ann: &Tensor, src: Source<'_>) -> Result<Tensor> {
        self.rnn.start(&self.start_output(ann, src)?)
    }

    /// What the step reads of a batch: `ann (B, S, 2n)`, `src_mask (B, S)` (1 at words).
    pub fn memory(&self, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
        attention_memory(&self.att, ann, src_mask)
    }

    /// `gi = E y_{i-1} W + b` `(batch, G)`, `s` the state after `s_{i-1}` → the new state, `c_i`,
    /// `α_i`; `state_mask (batch, n)`: recurrent dropout on `s_{i-1}` entering `U` (training only).
    pub fn step(&self, mem: &AttentionMemory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let (ctx, alpha) = self.att.attend(&self.rnn.output(s)?, &mem.annotations, &mem.uh, &mem.mask_bias)?;
        let gi = (gi + ctx.matmul(&self.c)?)?;
        let state = self.rnn.step(&gi, s, state_mask)?;
        Ok(StepOut { state, ctx: Some(ctx), alpha: Some(alpha) })
    }
}

impl ForcedDecoder for AttentionDecoder {
    fn hidden(&self) -> usize {
        self.rnn.hidden()
    }

    fn forward_composed(&self, x: &ForcedIn, mask: Option<&Tensor>) -> Result<AttnForced> {
        let mem = self.memory(x.ann, x.src.mask)?;
        let s0 = self.start_output(x.ann, x.src)?;
        let gi = self.rnn.project(x.ey)?;
        let init = self.rnn.start(&s0)?;
        forced_steps(x, s0, init, |i, s| self.step(&mem, &gi.narrow(1, i, 1)?.squeeze(1)?, s, mask), |s| self.rnn.output(s))
    }

    /// The fused form (`kernels::cpu::bahdanau`: `s_0`, `U_a h_j` and all steps in one op); the
    /// copy mixture's `α` is recomputed from the first layer's `s_{i-1}` by its own op.
    fn forward_fused(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>, products: Precision) -> Result<AttnForced> {
        let (b, t, m) = x.ey.dims3()?;
        let dims = x.attn_dims(self.rnn.hidden(), self.att.u_a.dim(1)?, self.rnn.kind(), self.start.kind, state_mask, products)?;
        let (dw, db) = self.rnn.input_weights();
        let gie = linear::linear(&x.ey.reshape((b * t, m))?, dw, db, products)?;
        let att = &self.att;
        let (u_cat, b_h) = (self.rnn.u_cat()?, self.rnn.bias_h()?);
        let packed = [&att.w_a, &att.b_a, &att.v_a, &self.c, &u_cat, &b_h, &att.u_a, &self.start.w_s, &self.start.b_s]
            .iter()
            .map(|p| p.flatten_all())
            .collect::<candle_core::Result<Vec<_>>>()?;
        let state_ctx = attention_op::attention_decoder(&gie, x.ann, &Tensor::cat(&packed, 0)?, dims)?;
        // The op computes `s_0` inside; the layers above and the copy's `α` read it as a tensor.
        let s0 = self.start_output(x.ann, x.src)?;
        let alpha = self.forced_alpha(x, &state_ctx, &s0, true)?;
        Ok(AttnForced { state_ctx, alpha, start: s0 })
    }

    fn has_gpu_kernels(&self) -> bool {
        decoder_gpu::has_gpu_cell(&self.rnn)
    }

    /// The GPU form (`decoder_gpu.rs`).
    fn forward_gpu(&self, x: &ForcedIn, state_mask: Option<Vec<f32>>) -> Result<AttnForced> {
        let s0 = self.start_output(x.ann, x.src)?;
        let (state_ctx, _) = decoder_gpu::forced_loop(x, self.loop_weights(), &s0, state_mask)?;
        let alpha = self.forced_alpha(x, &state_ctx, &s0, false)?;
        Ok(AttnForced { state_ctx, alpha, start: s0 })
    }
}

impl AttentionDecoder {
    /// The weights as the GPU's loop and step pack them: the one cell reads the context by `C`.
    pub(crate) fn loop_weights(&self) -> decoder_loop_gpu::LoopWeights<'_> {
        decoder_loop_gpu::LoopWeights { att: &self.att, cell: &self.rnn, wc: &self.c, first: None }
    }

    /// The copy mixture's `α (B·T, S)` when asked, recomputed from the teacher-forced `[s; c]`
    /// and `s_0`: one op on the CPU kernels (`fused`), composed ops on a GPU.
    fn forced_alpha(&self, x: &ForcedIn, state_ctx: &Tensor, s0: &Tensor, fused: bool) -> Result<Option<Tensor>> {
        if !x.want_alpha {
            return Ok(None);
        }
        let (b, t, _) = x.ey.dims3()?;
        let (s, n) = (x.ann.dim(1)?, self.rnn.hidden());
        let s1 = state_ctx.narrow(1, 0, n)?.reshape((b, t, n))?;
        let prev = match x.output {
            OutputState::Previous => s1,
            OutputState::Current => shift_outputs(&s1, s0, OutputState::Previous)?,
        };
        let mem = self.memory(x.ann, x.src.mask)?;
        Ok(Some(self.att.weights_all(&prev, &mem.uh, (&mem.mask_bias, x.src.lens), fused)?.reshape((b * t, s))?))
    }
}

/// The host form of [`AttentionDecoder`] (with `attention.rs`'s weights), as the search
/// multiplies it: the step's products that share a left operand sit side by side, so each is
/// one GEMM (Marian's layout: a few wide products instead of many narrow ones).
pub struct HostAttention {
    /// `s_{i-1} · [W_a | U_rec | O_h]` `(n, A + rec [+ 2l])`, with bias `[b_a | b_h | 0]`: the
    /// recurrent block is `U_rz` (`rec = 2n`, paper cell, `b_h = 0`) or all of `U` with its
    /// bias (`rec = 3n`, reset-after cell; `rec = 4n` and no bias, the LSTM); `O_h` only when
    /// the deep output reads `s_{i-1}`.
    pub(crate) s_cat: Dense,
    pub(crate) s_cat_b: Vec<f32>,
    /// The cell and the width `rec` of the recurrent block in `s_cat`.
    pub(crate) kind: CellKind,
    pub(crate) rec: usize,
    /// `E y · [W | O_y] + [b | b_o]` `(m, G + 2l)` (a table over the vocabulary) plus
    /// `c_i · [C | O_c]` `(2n, G + 2l)` (per source position), `precomputed.rs`.
    pub(crate) words: WordTerms,
    pub(crate) context: ContextTerms,
    /// The paper cell's `U (n, n)` of the candidate (applied to `r ⊙ s_{i-1}`; empty otherwise).
    pub(crate) u: Dense,
    /// `s_0`'s weights, `U_a` and `v_a` (`attention_memory.rs`).
    pub(crate) keys: HostStart,
}

impl HostAttention {
    pub fn new(dec: &AttentionDecoder, cfg: &ModelConfig, out: &HostOutput) -> Result<Self> {
        // The alignment model's size `n'` is its own weights' (`b_a (A)`).
        let (n, m, a, l2) = (cfg.hidden_dim, cfg.emb_dim, dec.att.b_a.dim(0)?, out.b.len());
        let kind = dec.rnn.kind();
        let g = kind.gates() * n;
        let (w, b) = (host(dec.rnn.input_weights().0)?, host(dec.rnn.input_weights().1)?);
        let (w_a, b_a, c) = (host(&dec.att.w_a)?, host(&dec.att.b_a)?, host(&dec.c)?);
        // A stack's deep output reads its top layer, added after the upper layers step.
        let prev = cfg.output_state == OutputState::Previous && cfg.dec_layers == 1;
        // The paper GRU multiplies `r ⊙ s` by its candidate's `U` after the gates: only
        // `U_rz` joins the shared product, and `U` stays apart.
        let (u_rec, rec, u) = match &dec.rnn {
            Rnn::Gru(gru) if gru.form == GruForm::Paper => (host(&gru.u_rz)?, 2 * n, host(&gru.u)?),
            rnn => (host(&rnn.u_cat()?)?, g, Vec::new()),
        };
        let mut s_blocks = vec![(&w_a[..], a), (&u_rec[..], rec)];
        if prev {
            s_blocks.push((&out.o_h.w[..], l2));
        }
        let mut s_cat_b = b_a.clone();
        s_cat_b.extend(host(&dec.rnn.bias_h()?)?.into_iter().take(rec));
        s_cat_b.resize(a + rec + if prev { l2 } else { 0 }, 0.0);
        Ok(HostAttention {
            s_cat: Dense::new(hcat(&s_blocks, n), n),
            s_cat_b,
            kind,
            rec,
            words: WordTerms::new(Dense::new(hcat(&[(&w[..], g), (&out.o_y.w[..], l2)], m), m), b.iter().chain(&out.b).copied().collect()),
            context: ContextTerms::new(Dense::new(hcat(&[(&c[..], g), (&out.o_c[..], l2)], 2 * n), 2 * n)),
            u: Dense::new(u, n),
            keys: HostStart::new(&dec.start, &dec.att)?,
        })
    }

    /// The step's products in int8 (`model::dense::Dense`).
    pub fn quantize(&mut self) {
        for d in [&mut self.s_cat, &mut self.u] {
            d.quantize();
        }
        self.words.quantize();
        self.context.quantize();
    }

    /// What the decoder reads of the annotations `ann (B, S, 2n)`, once per batch
    /// ([`HostStart::memory`]): the memory and `s_0 (B, n)`.
    pub fn memory(&self, ann: &[f32], bs: (usize, usize), lens: &[usize], threads: usize) -> (HostMemory, Vec<f32>) {
        self.keys.memory(ann, bs, lens, &self.context, threads)
    }

    /// One step for the `R` live rows of `x`, reading the memory `m` of sentences with true
    /// lengths `lens` padded to `S`; `want_alpha` keeps the weights.
    /// The products (Marian's few wide GEMMs):
    /// ```text
    /// s_{i-1} · [W_a | U_rec | O_h?]      (R, A + rec [+ 2l])   the query, the recurrent gates
    /// c_i = attention(s_{i-1}, h)         (R, 2n)               per row (`attend_row`)
    /// E y · [W | O_y] + c_i · [C | O_c]   (R, G + 2l)           the cell's inputs, t~'s terms
    /// ```
    /// the last from the word table and `Σ_j α_ij (h_j · [C | O_c])` (`precomputed.rs`);
    /// then the training kernels' cell row arithmetic (`kernels::cpu::rnn_cell`, `lstm_cell`).
    pub fn step(&self, m: &HostAttnMemory, lens: &[usize], x: &HostStepIn<'_>, out: &HostOutput, want_alpha: bool) -> HostStepOut {
        let (n, a, l2, threads) = (self.keys.b_s.len(), self.keys.v_a.len(), out.b.len(), x.threads);
        let (r_n, sw, g) = (x.sent.len(), x.width, self.kind.gates() * n);
        let lw = if self.kind == CellKind::Lstm { 2 * n } else { n };
        let s_prev = x.s_prev;
        // The LSTM's previous cell state of row `r`.
        let cell = |r: usize| &x.state[r * sw + n..r * sw + lw];
        let mut state = vec![0f32; r_n * lw];
        let mut pre = Vec::with_capacity(r_n * l2);
        // s_{i-1} · [W_a | U_rz | O_h?]: the attention query, the GRU's recurrent gate term,
        // and (deep output on s_{i-1}) the output's state term.
        let w1 = self.s_cat_b.len();
        let g1 = self.s_cat.affine(s_prev, r_n, &self.s_cat_b, threads);
        let (ctx, alpha) = attend_rows(&m.mem, lens, x.sent, (&g1, w1), &self.keys.v_a, 2 * n);
        // E y · [W | O_y] + c_i · [C | O_c] + [b | b_o]: the cell's input terms and the
        // deep output's word and context terms, in one (R, G + 2l) block.
        let w2 = g + l2;
        let mut g2 = self.words.rows(x.ey, x.y, threads);
        self.context.add_rows(&mut g2, w2, &alpha, x.sent, lens, &m.ctx_terms);
        // The cell, with the training kernels' row arithmetic (`kernels::cpu::rnn_cell`): the
        // input terms are g2's first G columns, the recurrent ones g1's block after W_a.
        let rec = self.rec;
        let hh_n = match self.kind {
            CellKind::Gru(GruForm::Paper) => {
                // q = r ⊙ s_{i-1}, then q U_n.
                let mut q = vec![0f32; r_n * n];
                for r in 0..r_n {
                    let (x, h) = (&g2[r * w2..], &g1[r * w1..]);
                    simd_dispatch!(reset_row(&x[..n], &h[a..a + n], &s_prev[r * n..(r + 1) * n], &mut q[r * n..(r + 1) * n]));
                }
                let mut hn = vec![0f32; r_n * n];
                self.u.mul_add(&mut hn, 0, n, Mat::new(&q, r_n, n), threads);
                hn
            }
            CellKind::Gru(GruForm::ResetAfter) | CellKind::Lstm => Vec::new(),
        };
        for r in 0..r_n {
            let (xr, h) = (&g2[r * w2..(r + 1) * w2], &g1[r * w1..(r + 1) * w1]);
            let (s_new, c_new) = state[r * lw..(r + 1) * lw].split_at_mut(n);
            match self.kind {
                CellKind::Gru(form) => {
                    let hn = match form {
                        GruForm::Paper => &hh_n[r * n..(r + 1) * n],
                        GruForm::ResetAfter => &h[a + 2 * n..a + 3 * n],
                    };
                    simd_dispatch!(update_row(form, &xr[..g], &h[a..a + 2 * n], hn, &s_prev[r * n..(r + 1) * n], s_new));
                }
                CellKind::Lstm => simd_dispatch!(lstm_cell::update_row(&xr[..g], &h[a..a + g], cell(r), c_new, s_new)),
            }
            let start = pre.len();
            pre.extend_from_slice(&xr[g..]);
            if x.out_state == Some(OutputState::Previous) {
                for (o, &v) in pre[start..].iter_mut().zip(&h[a + rec..]) {
                    *o += v;
                }
            }
        }
        if x.out_state == Some(OutputState::Current) {
            out.o_h.mul_add(&mut pre, 0, l2, Mat::strided(&state, 0, r_n, n, lw), threads);
        }
        HostStepOut { state, pre, ctx, alpha: want_alpha.then_some(alpha) }
    }
}

/// The attention of `R` rows on the host: row `r`'s query `s W_a + b_a` is the first `A`
/// columns of `q.0[r · q.1 ..]`, its sentence `sent[r]` in `mem (B, S, ctx + A)` of true
/// lengths `lens`. Returns the contexts `(R, ctx)` and the weights `(R, S)`, zero at padding.
pub(crate) fn attend_rows(
    mem: &[f32],
    lens: &[usize],
    sent: &[usize],
    q: (&[f32], usize),
    v_a: &[f32],
    ctx_dim: usize,
) -> (Vec<f32>, Vec<f32>) {
    let (a, r_n) = (v_a.len(), sent.len());
    let ew = ctx_dim + a;
    let s_len = mem.len() / (lens.len() * ew).max(1);
    let t_attn = profile::start();
    let mut ctx = vec![0f32; r_n * ctx_dim];
    let mut alpha = vec![0f32; r_n * s_len];
    ctx.par_chunks_mut(ctx_dim).zip(alpha.par_chunks_mut(s_len.max(1))).enumerate().for_each_init(
        || AttnScratch::new(s_len, a),
        |sc, (r, (c, out))| {
            let b = sent[r];
            let mem = &mem[b * s_len * ew..(b + 1) * s_len * ew];
            simd_dispatch!(attend_row(mem, &q.0[r * q.1..r * q.1 + a], v_a, lens[b], sc, c));
            out.copy_from_slice(&sc.alpha[..out.len()]);
        },
    );
    profile::stop(profile::SEARCH_ATTN, t_attn);
    (ctx, alpha)
}

#[cfg(test)]
mod tests {
    /// The host step against the composed step (`twins.rs`), every cell, either output state,
    /// each start summary.
    #[test]
    fn host_attention_step_is_the_composed_step() {
        use crate::config::{CellKind, GruForm, OutputState, StartState};
        let starts = [StartState::FirstBackward, StartState::LastForward, StartState::Mean];
        for (i, kind) in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm].into_iter().enumerate() {
            for (j, which) in [OutputState::Previous, OutputState::Current].into_iter().enumerate() {
                crate::model::twin_support::check_attention_step(kind, which, starts[(i + j) % 3], 40 + 10 * i as u64);
            }
        }
    }
}
