//! RNNenc's decoder (Cho et al. 2014, appendix A), with the summary-vector bridge, in its
//! three forms: `c = tanh(V h^(T))`, `h'_0 = tanh(V' c)`, and
//! `z', r' = σ(W' e(y) + U' h' + C c)`, `h~' = tanh(W' e(y) + r' ⊙ (U' h' + C c))` — here the
//! reset multiplies `U' h' + C c` (the paper's decoder), so `h' U'` is one `(n, 3n)` matmul.
//! With `model.cell = "lstm"` the same step drives an LSTM (`lstm.rs`): `C c` joins its four
//! gates' pre-activations and its state is `[h'; cell]`, starting from `[h'_0; 0]`.
//!
//! - [`SummaryDecoder::step`]: the composed candle step (the candle search, the GPU);
//! - [`SummaryDecoder::forward`]: teacher forcing over every target step, in one kernel
//!   (`kernels::cpu::rnn_sequence`, `C c` as each sentence's recurrent term) or step by step on composed
//!   ops (autodiff's reference twin);
//! - [`HostSummary::step`]: one search step for `R` live rows on host slices.
use candle_core::{Tensor, D};

use super::backend::Backend;
use super::decoder::{DecoderDims, HostMemory, HostStepIn, HostStepOut, StepOut, SummaryMemory};
use super::gru::{cell_step, Recurrent};
use super::lstm::lstm_step;
use super::output::HostOutput;
use super::params::{Init, ParamBuilder};
use super::precomputed::WordTerms;
use super::regularizer::{state_tensor, Dropout, Side, Site};
use super::rnn::state_output as rnn_state_output;
use crate::config::{CellKind, GruForm, OutputState};
use crate::error::Result;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::gru_cell::update_row;
use crate::kernels::cpu::lstm_cell;
use crate::kernels::gemm::Mat;
use crate::kernels::shapes::rnn_dims::RnnSpec;
use crate::model::dense::{affine, host, tanh_in_place, Dense};

/// RNNenc's decoder, with the summary-vector bridge `c = tanh(V h^(T))`. Its GRU is the
/// paper's (reset over `U' h' + C c`), whatever `model.gru`; or an LSTM.
#[derive(Clone, Debug)]
pub struct SummaryDecoder {
    /// `(m, G)` and bias: `[W'_r | W'_z | W']`.
    pub(crate) w: Tensor,
    pub(crate) b: Tensor,
    /// `(n, G)`: `[U'_r | U'_z | U']`.
    pub(crate) u: Tensor,
    /// `(n, G)`: `[C_r | C_z | C]`.
    pub(crate) c: Tensor,
    /// `V (n_enc, n)`, `V' (n, n)` and biases.
    pub(crate) v: Tensor,
    pub(crate) b_v: Tensor,
    pub(crate) v_init: Tensor,
    pub(crate) b_init: Tensor,
    /// The reset-after form's `b_h (3n)`, added to `C c`.
    pub(crate) b_h: Option<Tensor>,
    pub(crate) hidden: usize,
    pub(crate) kind: CellKind,
}

impl SummaryDecoder {
    pub fn new(dims: DecoderDims, pb: &ParamBuilder) -> Result<Self> {
        let DecoderDims { emb, enc, hidden, kind } = dims;
        let g = kind.gates() * hidden;
        Ok(SummaryDecoder {
            w: pb.get("w", &[emb, g], Init::Normal)?,
            b: pb.get("b", &[g], Init::Zeros)?,
            u: pb.get("u", &[hidden, g], Init::OrthogonalBlocks)?,
            c: pb.get("c", &[hidden, g], Init::Normal)?,
            v: pb.get("v", &[enc, hidden], Init::Normal)?,
            b_v: pb.get("b_v", &[hidden], Init::Zeros)?,
            v_init: pb.get("v_init", &[hidden, hidden], Init::Normal)?,
            b_init: pb.get("b_init", &[hidden], Init::Zeros)?,
            b_h: match kind {
                CellKind::Gru(GruForm::ResetAfter) => Some(pb.get("b_h", &[g], Init::Zeros)?),
                CellKind::Gru(GruForm::Paper) | CellKind::Lstm => None,
            },
            hidden,
            kind,
        })
    }

    /// `c = tanh(h^(T) V + b_v)` `(batch, n)` and `h'_0 = tanh(c V' + b')` `(batch, n)`: the
    /// decoder's first output (the LSTM starts from `[h'_0; 0]`, [`Self::start`]).
    pub fn summarise(&self, last: &Tensor) -> Result<(Tensor, Tensor)> {
        let c = last.matmul(&self.v)?.broadcast_add(&self.b_v)?.tanh()?;
        let init = c.matmul(&self.v_init)?.broadcast_add(&self.b_init)?.tanh()?;
        Ok((c, init))
    }

    /// The start state from `h'_0`: itself, or the LSTM's `[h'_0; 0]`.
    pub fn start(&self, h0: &Tensor) -> Result<Tensor> {
        super::rnn::start_state(self.kind, h0)
    }

    /// Input projections of all target embeddings: `(batch, len, m)` → `(batch, len, G)`.
    pub fn project(&self, x: &Tensor) -> Result<Tensor> {
        super::gru::project_sequence(x, &self.w, &self.b, None)
    }

    /// What the step reads of a batch: the summary `c (B, n)` and the deep output's `O_c c`.
    pub fn memory(&self, c: &Tensor, out_ctx: Tensor) -> Result<SummaryMemory> {
        Ok(SummaryMemory { c: c.clone(), gate_ctx: c.matmul(&self.c)?, out_ctx })
    }

    /// One step from `h = h'_{i-1}` with the batch's `C c` (`gate_ctx (B, G)`); `state_mask`
    /// as for [`AttentionDecoder::step`](super::attention_decoder::AttentionDecoder::step).
    pub fn step(&self, gate_ctx: &Tensor, gi: &Tensor, h: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let n = self.hidden;
        let ghb = self.recurrent_term(gate_ctx)?;
        if self.kind == CellKind::Lstm {
            let state = lstm_step(gi, h, &self.u, Some(&ghb), state_mask)?;
            return Ok(StepOut { state, ctx: None, alpha: None });
        }
        // `U'` is one `(n, 3n)` parameter; its column blocks are strided views, which candle's
        // CUDA matmul refuses (the CPU one accepts them), so they are copied. Only this
        // composed path (the GPU, f64, the reference twin) pays for it: the fused kernels and
        // the host search read `U'` in place.
        let u_rz = self.u.narrow(D::Minus1, 0, 2 * n)?.contiguous()?;
        let u_n = self.u.narrow(D::Minus1, 2 * n, n)?.contiguous()?;
        let rec = Recurrent { u_rz: &u_rz, u_n: &u_n, ghb: Some(&ghb), state_mask, norm: None };
        let state = cell_step(GruForm::ResetAfter, gi, h, &rec)?;
        Ok(StepOut { state, ctx: None, alpha: None })
    }

    /// Teacher forcing over every target step: `ey (B, T, m)` the target embeddings, the
    /// summary `c (B, n)`, the first output `h'_0 (B, n)` → the outputs `(B, T, n)`; the
    /// recurrent mask drawn from `dropout` at `State {Decoder, 0, 0}`, in the form `backend` says.
    pub fn forward(&self, ey: &Tensor, c: &Tensor, h0: &Tensor, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let b = c.dim(0)?;
        let state_mask = dropout.and_then(|d| d.recurrent(Site::State { side: Side::Decoder, layer: 0, dir: 0 }, b, self.hidden));
        // No layer normalisation here: on a GPU the recurrence has its GPU kernels.
        match backend.fused() || backend.gpu() {
            true => self.forward_fused(ey, c, h0, state_mask.as_deref(), backend),
            false => self.forward_composed(ey, c, h0, state_mask.as_deref()),
        }
    }

    /// The composed form: [`Self::step`] at each target position.
    fn forward_composed(&self, ey: &Tensor, c: &Tensor, h0: &Tensor, state_mask: Option<&[f32]>) -> Result<Tensor> {
        let (b, t, _) = ey.dims3()?;
        let gate_ctx = c.matmul(&self.c)?;
        let gi = self.project(ey)?;
        let mask = state_tensor(state_mask, b, self.hidden, ey)?;
        let mut h = self.start(h0)?;
        let mut outs = Vec::with_capacity(t);
        for i in 0..t {
            h = self.step(&gate_ctx, &gi.narrow(1, i, 1)?.squeeze(1)?, &h, mask.as_ref())?.state;
            outs.push(rnn_state_output(&h, self.hidden)?);
        }
        Ok(Tensor::stack(&outs, 1)?)
    }

    /// The fused form (`kernels::cpu::rnn_sequence`, `C c` as each sentence's recurrent term; on a GPU
    /// its twin, [`Backend::rnn_sequence`]).
    fn forward_fused(&self, ey: &Tensor, c: &Tensor, h0: &Tensor, state_mask: Option<&[f32]>, backend: Backend) -> Result<Tensor> {
        let (b, t, m) = ey.dims3()?;
        let ghb = self.recurrent_term(&c.matmul(&self.c)?)?;
        let gie = backend.linear(&ey.reshape((b * t, m))?, &self.w, &self.b)?.reshape((b, t, self.kind.gates() * self.hidden))?;
        let rows = Tensor::cat(&[&ghb, h0], 1)?;
        // The paper's decoder resets `U' h' + C c` as a whole: the reset-after cell.
        let kind = match self.kind {
            CellKind::Gru(_) => CellKind::Gru(GruForm::ResetAfter),
            CellKind::Lstm => CellKind::Lstm,
        };
        let lens = vec![t; b];
        Ok(backend.rnn_sequence(&gie, &self.u, &rows, false, RnnSpec { kind, lens: &lens, state_mask, products: backend.products() })?)
    }

    /// The per-sentence recurrent term `C c (+ b_h)` `(batch, G)`: the paper's decoder
    /// resets `U' h' + C c` as a whole, the reset-after cell's way, whichever `model.gru` is.
    pub fn recurrent_term(&self, gate_ctx: &Tensor) -> Result<Tensor> {
        match &self.b_h {
            Some(b) => Ok(gate_ctx.broadcast_add(b)?),
            None => Ok(gate_ctx.clone()),
        }
    }
}

/// The host form of [`SummaryDecoder`]: `W' (m, G)`, `b (G)`, `U' (n, G)`, `C (n, G)`, `V (n, n)`,
/// `b_v`, `V' (n, n)`, `b'`; its cell (the GRU's reset-after arithmetic, or the LSTM).
pub struct HostSummary {
    /// `E y W' + b` `(m, G)`, a table over the vocabulary (`precomputed.rs`).
    pub(crate) words: WordTerms,
    pub(crate) u: Dense,
    pub(crate) c: Vec<f32>,
    pub(crate) v: Vec<f32>,
    pub(crate) b_v: Vec<f32>,
    pub(crate) v_init: Vec<f32>,
    pub(crate) b_init: Vec<f32>,
    /// The recurrent bias `b_h (G)` of the reset-after form (zeros for the paper's and the LSTM).
    pub(crate) b_h: Vec<f32>,
    pub(crate) kind: CellKind,
}

impl HostSummary {
    pub fn new(dec: &SummaryDecoder, hidden: usize) -> Result<Self> {
        Ok(HostSummary {
            words: WordTerms::new(Dense::new(host(&dec.w)?, dec.w.dim(0)?), host(&dec.b)?),
            u: Dense::new(host(&dec.u)?, hidden),
            c: host(&dec.c)?,
            v: host(&dec.v)?,
            b_v: host(&dec.b_v)?,
            v_init: host(&dec.v_init)?,
            b_init: host(&dec.b_init)?,
            b_h: match &dec.b_h {
                Some(b) => host(b)?,
                None => vec![0.0; dec.kind.gates() * hidden],
            },
            kind: dec.kind,
        })
    }

    /// The step's products in int8 (`model::dense::Dense`).
    pub fn quantize(&mut self) {
        self.words.quantize();
        self.u.quantize();
    }

    /// What the decoder reads of the summary input `last = h^(T) (B, n)`, once per batch:
    /// `c = tanh(h^(T) V + b_v)`, then its gate term `C c (+ b_h)` `(B, G)` (the recurrent
    /// term the reset multiplies) and deep-output term `O_c c` `(B, 2l)`, and
    /// `h'_0 = tanh(c V' + b')` `(B, n)`.
    pub fn memory(&self, last: &[f32], out: &HostOutput, threads: usize) -> (HostMemory, Vec<f32>) {
        let n = self.b_v.len();
        let b = last.len() / n.max(1);
        let mut c = affine(last, b, n, &self.v, &self.b_v, threads);
        tanh_in_place(&mut c);
        let mut h0 = affine(&c, b, n, &self.v_init, &self.b_init, threads);
        tanh_in_place(&mut h0);
        let gate_ctx = affine(&c, b, n, &self.c, &self.b_h, threads);
        let out_ctx = affine(&c, b, n, &out.o_c, &vec![0f32; out.b.len()], threads);
        (HostMemory::Summary { gate_ctx, out_ctx }, h0)
    }

    /// One step for the `R` live rows of `x`, reading each sentence's `gate_ctx (B, G)` and
    /// `out_ctx (B, 2l)` ([`Self::memory`]): `gi = E y W' + b`, `hc = h' U' + C c`, then
    /// `r, z = σ(gi + hc)`, `h~ = tanh(gi_n + r ⊙ hc_n)` (the reset-after row arithmetic of
    /// `kernels::cpu::rnn_cell`, or the LSTM's gates on `gi + hc`), and the deep output's
    /// pre-activation `b_o + O_c c [+ O_h s] + O_y E y` `(R, 2l)`.
    pub fn step(&self, gate_ctx: &[f32], out_ctx: &[f32], x: &HostStepIn<'_>, out: &HostOutput) -> HostStepOut {
        let (n, l2, threads) = (self.b_v.len(), out.b.len(), x.threads);
        let (r_n, sw, g) = (x.sent.len(), x.width, self.kind.gates() * n);
        let lw = if self.kind == CellKind::Lstm { 2 * n } else { n };
        let m = self.words.dense.inner_dim();
        let s_prev = x.s_prev;
        let cell = |r: usize| &x.state[r * sw + n..r * sw + lw];
        let mut state = vec![0f32; r_n * lw];
        let gi = self.words.rows(x.ey, x.y, threads);
        let mut hc = Vec::with_capacity(r_n * g);
        for &b in x.sent {
            hc.extend_from_slice(&gate_ctx[b * g..(b + 1) * g]);
        }
        self.u.mul_add(&mut hc, 0, g, Mat::new(s_prev, r_n, n), threads);
        for r in 0..r_n {
            let (xr, c) = (&gi[r * g..(r + 1) * g], &hc[r * g..(r + 1) * g]);
            let (s_new, c_new) = state[r * lw..(r + 1) * lw].split_at_mut(n);
            match self.kind {
                CellKind::Gru(_) => {
                    simd_dispatch!(update_row(GruForm::ResetAfter, xr, &c[..2 * n], &c[2 * n..], &s_prev[r * n..(r + 1) * n], s_new))
                }
                CellKind::Lstm => simd_dispatch!(lstm_cell::update_row(xr, c, cell(r), c_new, s_new)),
            }
        }
        let mut pre = Vec::with_capacity(r_n * l2);
        for &b in x.sent {
            let oc = &out_ctx[b * l2..(b + 1) * l2];
            pre.extend(out.b.iter().zip(oc).map(|(x, y)| x + y));
        }
        if let Some(os) = x.out_state {
            let s_out = match os {
                OutputState::Previous => Mat::new(s_prev, r_n, n),
                OutputState::Current => Mat::strided(&state, 0, r_n, n, lw),
            };
            out.o_h.mul_add(&mut pre, 0, l2, s_out, threads);
        }
        out.o_y.mul_add(&mut pre, 0, l2, Mat::new(x.ey, r_n, m), threads);
        HostStepOut { state, pre, ctx: Vec::new(), alpha: None }
    }
}

#[cfg(test)]
mod tests {
    /// The host step against the composed step (`twins.rs`), every cell, either output state.
    #[test]
    fn host_summary_step_is_the_composed_step() {
        use crate::config::{CellKind, GruForm, OutputState};
        for (i, kind) in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm].into_iter().enumerate() {
            for which in [OutputState::Previous, OutputState::Current] {
                crate::model::twin_support::check_summary_step(kind, which, 70 + 10 * i as u64);
            }
        }
    }
}
