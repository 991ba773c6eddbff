//! Decoders: one recurrent step conditioned on the source, for both papers.
//!
//! * [`AttentionDecoder`] (RNNsearch appendix A.2.2): `s_0 = tanh(W_s ←h_1)`; at step `i` the
//!   context `c_i` from additive attention over `s_{i-1}`, then
//!   `z, r = σ(W E y_{i-1} + U s_{i-1} + C c_i)`, `s~ = tanh(W E y_{i-1} + U (r ⊙ s_{i-1}) + C c_i)`.
//! * [`SummaryDecoder`] (RNNenc appendix A): `c = tanh(V h^(T))`, `h'_0 = tanh(V' c)`, and
//!   `z', r' = σ(W' e(y) + U' h' + C c)`, `h~' = tanh(W' e(y) + r' ⊙ (U' h' + C c))` — here the
//!   reset multiplies `U' h' + C c` (the paper's decoder), so `h' U'` is one `(n, 3n)` matmul.
//!
//! With `model.cell = "lstm"` the same decoders step an LSTM (`lstm.rs`) on the same inputs
//! (`C c_i` or `C c` joins its four gates' pre-activations); its state is `[s; cell]`
//! (`rnn.rs`), `s_0` and `h'_0` as above with a zero cell, and attention, the deep output and
//! the search read `s`.
use candle_core::{Tensor, D};

use super::attention::Attention;
use super::encoder::cell_name;
use super::gru::{cell_step, Recurrent};
use super::lstm::lstm_step;
use super::output::HostOutput;
use super::params::{Init, ParamBuilder};
use super::rnn::Rnn;
use crate::config::{CellKind, GruForm, ModelConfig, OutputState};
use crate::error::Result;
use crate::infer::dense::{hcat, host};
use crate::kernels::attn_decoder::AttnDims;
use crate::kernels::{attn_op, linear, rnn};

/// What the decoder reads of the source, computed once per batch by `Seq2Seq::encode`.
#[derive(Clone, Debug)]
pub enum Memory {
    /// RNNsearch: annotations `(batch, src_len, 2n)`, `U_a h_j` `(batch, src_len, n')`,
    /// mask bias `(batch, src_len)` (0 at words, −1e9 at padding); a copy model's extended
    /// source ids `(batch, src_len)` u32 and how many ids they add past the vocabulary.
    Attention { annotations: Tensor, uh: Tensor, mask_bias: Tensor, src_ext: Option<Tensor>, n_ext: usize },
    /// RNNenc: summary `c` `(batch, n)`, its gate term `C c` `(batch, 3n)` and its deep-output
    /// term `O_c c` `(batch, 2l)`.
    Summary { c: Tensor, gate_ctx: Tensor, out_ctx: Tensor },
}

/// Encoder output plus the decoder's initial state `(batch, n)` (the LSTM's: `(batch, 2n)`).
#[derive(Clone, Debug)]
pub struct Encoded {
    pub memory: Memory,
    pub init: Tensor,
}

impl Encoded {
    /// Rows `idx` of everything (beam search: expand to `batch·beam`, reorder after a step).
    pub fn select(&self, idx: &Tensor) -> Result<Encoded> {
        let s = |t: &Tensor| t.index_select(idx, 0);
        let memory = match &self.memory {
            Memory::Attention { annotations, uh, mask_bias, src_ext, n_ext } => Memory::Attention {
                annotations: s(annotations)?,
                uh: s(uh)?,
                mask_bias: s(mask_bias)?,
                src_ext: src_ext.as_ref().map(s).transpose()?,
                n_ext: *n_ext,
            },
            Memory::Summary { c, gate_ctx, out_ctx } => Memory::Summary { c: s(c)?, gate_ctx: s(gate_ctx)?, out_ctx: s(out_ctx)? },
        };
        Ok(Encoded { memory, init: s(&self.init)? })
    }
}

/// The result of one decoder step.
pub struct StepOut {
    /// New state `s_i` `(batch, n)`.
    pub state: Tensor,
    /// RNNsearch's context `c_i` `(batch, 2n)` and weights `α_i` `(batch, src_len)`.
    pub ctx: Option<Tensor>,
    pub alpha: Option<Tensor>,
}

/// Sizes and cell of a decoder: embedding `m`, encoder state `n_enc`, hidden `n`.
#[derive(Clone, Copy, Debug)]
pub struct DecoderDims {
    pub emb: usize,
    pub enc: usize,
    pub hidden: usize,
    pub kind: CellKind,
}

/// RNNsearch's decoder.
#[derive(Clone, Debug)]
pub struct AttentionDecoder {
    pub rnn: Rnn,
    /// `(2n_enc, G)`: `[C_r | C_z | C]` (the LSTM: `[C_i | C_f | C_g | C_o]`).
    pub c: Tensor,
    /// `W_s (n_enc, n)` and bias: `s_0 = tanh(←h_1 W_s + b_s)`.
    pub w_s: Tensor,
    pub b_s: Tensor,
    pub att: Attention,
}

impl AttentionDecoder {
    pub fn new(dims: DecoderDims, att: usize, pb: &ParamBuilder) -> Result<Self> {
        let DecoderDims { emb, enc, hidden, kind } = dims;
        Ok(AttentionDecoder {
            rnn: Rnn::new(emb, hidden, kind, &pb.pp(cell_name(kind)))?,
            c: pb.get("c", &[2 * enc, kind.gates() * hidden], Init::Normal)?,
            w_s: pb.get("w_s", &[enc, hidden], Init::Normal)?,
            b_s: pb.get("b_s", &[hidden], Init::Zeros)?,
            att: Attention::new(hidden, 2 * enc, att, &pb.pp("attention"))?,
        })
    }

    /// The start state from `s_0 = tanh(←h_1 W_s + b_s)` (the LSTM's cell at zero).
    pub fn init_state(&self, back_first: &Tensor) -> Result<Tensor> {
        self.rnn.start(&back_first.matmul(&self.w_s)?.broadcast_add(&self.b_s)?.tanh()?)
    }

    /// `gi = E y_{i-1} W + b` `(batch, G)`, `s` the state after `s_{i-1}` → the new state, `c_i`,
    /// `α_i`; `state_mask (batch, n)`: recurrent dropout on `s_{i-1}` entering `U` (training only).
    pub fn step(&self, memory: &Memory, gi: &Tensor, s: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let Memory::Attention { annotations, uh, mask_bias, .. } = memory else {
            return Err(crate::Error::Config("attention decoder given a summary memory".into()));
        };
        let (ctx, alpha) = self.att.attend(&self.rnn.output(s)?, annotations, uh, mask_bias)?;
        let gi = (gi + ctx.matmul(&self.c)?)?;
        let state = self.rnn.step(&gi, s, state_mask)?;
        Ok(StepOut { state, ctx: Some(ctx), alpha: Some(alpha) })
    }

    /// The fused form of teacher forcing over every target step (`kernels::attn_decoder`:
    /// `s_0`, `U_a h_j` and all steps in one op): `ey (B·T, m)` the target embeddings,
    /// `ann (B, S, 2n)` → `[s; c] (B·T, n + 2n)` per target position, `s` as `dims.output`
    /// says.
    pub fn run_fused(&self, ey: &Tensor, ann: &Tensor, dims: AttnDims) -> Result<Tensor> {
        let (dw, db) = self.rnn.input_weights();
        let gie = linear::linear(ey, dw, db)?;
        let att = &self.att;
        let (u_cat, b_h) = (self.rnn.u_cat()?, self.rnn.bias_h()?);
        let packed = [&att.w_a, &att.b_a, &att.v_a, &self.c, &u_cat, &b_h, &att.u_a, &self.w_s, &self.b_s]
            .iter()
            .map(|p| p.flatten_all())
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(attn_op::attention_decoder(&gie, ann, &Tensor::cat(&packed, 0)?, dims)?)
    }
}

/// RNNenc's decoder, with the summary-vector bridge `c = tanh(V h^(T))`. Its GRU is the
/// paper's (reset over `U' h' + C c`), whatever `model.gru`; or an LSTM.
#[derive(Clone, Debug)]
pub struct SummaryDecoder {
    /// `(m, G)` and bias: `[W'_r | W'_z | W']`.
    pub w: Tensor,
    pub b: Tensor,
    /// `(n, G)`: `[U'_r | U'_z | U']`.
    pub u: Tensor,
    /// `(n, G)`: `[C_r | C_z | C]`.
    pub c: Tensor,
    /// `V (n_enc, n)`, `V' (n, n)` and biases.
    pub v: Tensor,
    pub b_v: Tensor,
    pub v_init: Tensor,
    pub b_init: Tensor,
    /// The reset-after form's `b_h (3n)`, added to `C c`.
    pub b_h: Option<Tensor>,
    pub hidden: usize,
    pub kind: CellKind,
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
        super::gru::project_sequence(x, &self.w, &self.b)
    }

    /// One step from `h = h'_{i-1}`; `state_mask` as for [`AttentionDecoder::step`].
    pub fn step(&self, memory: &Memory, gi: &Tensor, h: &Tensor, state_mask: Option<&Tensor>) -> Result<StepOut> {
        let Memory::Summary { gate_ctx, .. } = memory else {
            return Err(crate::Error::Config("summary decoder given an attention memory".into()));
        };
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
        let rec = Recurrent { u_rz: &u_rz, u_n: &u_n, ghb: Some(&ghb), state_mask };
        let state = cell_step(GruForm::ResetAfter, gi, h, &rec)?;
        Ok(StepOut { state, ctx: None, alpha: None })
    }

    /// The fused form of teacher forcing (`kernels::rnn`, `C c` as each sentence's recurrent
    /// term): `ey (B·T, m)`, the summary `c (B, n)`, the start `h'_0 (B, n)`, recurrent
    /// dropout's mask → the outputs `(B, T, n)`.
    pub fn run_fused(&self, ey: &Tensor, c: &Tensor, init: &Tensor, state_mask: Option<&[f32]>) -> Result<Tensor> {
        let b = c.dim(0)?;
        let t = ey.dim(0)? / b.max(1);
        let ghb = self.recurrent_term(&c.matmul(&self.c)?)?;
        let gie = linear::linear(ey, &self.w, &self.b)?.reshape((b, t, self.kind.gates() * self.hidden))?;
        let rows = Tensor::cat(&[&ghb, init], 1)?;
        // The paper's decoder resets `U' h' + C c` as a whole: the reset-after cell.
        let kind = match self.kind {
            CellKind::Gru(_) => CellKind::Gru(GruForm::ResetAfter),
            CellKind::Lstm => CellKind::Lstm,
        };
        let lens = vec![t; b];
        Ok(rnn::rnn_sequence(&gie, &self.u, &rows, false, rnn::RnnSpec { kind, lens: &lens, state_mask })?)
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

/// The host form of [`AttentionDecoder`] (with `attention.rs`'s weights), as the search
/// multiplies it: the step's products that share a left operand sit side by side, so each is
/// one GEMM (Marian's layout: a few wide products instead of many narrow ones).
pub struct HostAttention {
    /// `s_{i-1} · [W_a | U_rec | O_h]` `(n, A + rec [+ 2l])`, with bias `[b_a | b_h | 0]`: the
    /// recurrent block is `U_rz` (`rec = 2n`, paper cell, `b_h = 0`) or all of `U` with its
    /// bias (`rec = 3n`, reset-after cell; `rec = 4n` and no bias, the LSTM); `O_h` only when
    /// the deep output reads `s_{i-1}`.
    pub s_cat: Vec<f32>,
    pub s_cat_b: Vec<f32>,
    /// The cell and the width `rec` of the recurrent block in `s_cat`.
    pub kind: CellKind,
    pub rec: usize,
    /// `E y · [W | O_y]` `(m, G + 2l)` plus `c_i · [C | O_c]` `(2n, G + 2l)`, with bias
    /// `[b | b_o]`.
    pub y_cat: Vec<f32>,
    pub c_cat: Vec<f32>,
    pub yc_cat_b: Vec<f32>,
    /// The paper cell's `U (n, n)` of the candidate (applied to `r ⊙ s_{i-1}`; empty otherwise).
    pub u: Vec<f32>,
    /// `W_s (n, n)`, `b_s (n)`: `s_0 = tanh(←h_1 W_s + b_s)`.
    pub w_s: Vec<f32>,
    pub b_s: Vec<f32>,
    /// `U_a (2n, A)` (encoder side) and `v_a (A)`.
    pub u_a: Vec<f32>,
    pub v_a: Vec<f32>,
}

impl HostAttention {
    pub fn new(dec: &AttentionDecoder, cfg: &ModelConfig, out: &HostOutput) -> Result<Self> {
        let (n, m, a, l2) = (cfg.hidden_dim, cfg.emb_dim, cfg.att_dim, out.b.len());
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
            s_blocks.push((&out.o_h[..], l2));
        }
        let mut s_cat_b = b_a.clone();
        s_cat_b.extend(host(&dec.rnn.bias_h()?)?.into_iter().take(rec));
        s_cat_b.resize(a + rec + if prev { l2 } else { 0 }, 0.0);
        Ok(HostAttention {
            s_cat: hcat(&s_blocks, n),
            s_cat_b,
            kind,
            rec,
            y_cat: hcat(&[(&w[..], g), (&out.o_y[..], l2)], m),
            c_cat: hcat(&[(&c[..], g), (&out.o_c[..], l2)], 2 * n),
            yc_cat_b: b.iter().chain(&out.b).copied().collect(),
            u,
            w_s: host(&dec.w_s)?,
            b_s: host(&dec.b_s)?,
            u_a: host(&dec.att.u_a)?,
            v_a: host(&dec.att.v_a)?,
        })
    }
}

/// The host form of [`SummaryDecoder`]: `W' (m, G)`, `b (G)`, `U' (n, G)`, `C (n, G)`, `V (n, n)`,
/// `b_v`, `V' (n, n)`, `b'`; its cell (the GRU's reset-after arithmetic, or the LSTM).
pub struct HostSummary {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub u: Vec<f32>,
    pub c: Vec<f32>,
    pub v: Vec<f32>,
    pub b_v: Vec<f32>,
    pub v_init: Vec<f32>,
    pub b_init: Vec<f32>,
    /// The recurrent bias `b_h (G)` of the reset-after form (zeros for the paper's and the LSTM).
    pub b_h: Vec<f32>,
    pub kind: CellKind,
}

impl HostSummary {
    pub fn new(dec: &SummaryDecoder, hidden: usize) -> Result<Self> {
        Ok(HostSummary {
            w: host(&dec.w)?,
            b: host(&dec.b)?,
            u: host(&dec.u)?,
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
}
