//! [`Seq2Seq`]'s teacher-forced loss on the fused CPU kernels (`crate::kernels`): the same
//! parameters, the same dropout masks (drawn in the same order and shapes) and the same
//! numbers as the composed candle ops of `mod.rs`, which stay as its reference twin
//! (`tests/fused_model.rs` checks loss and every gradient, f64 to 1e-10, f32 to 2e-5).
//!
//! Per batch the graph has a handful of nodes instead of a few per time step:
//! - RNNsearch: source embeddings → one GEMM for both directions' `x W + b` (`linear`) → the
//!   bidirectional GRU op (source lengths inside) → the attention-decoder op (`s_0`, `U_a h_j`
//!   and all target steps) → the deep output `maxout([s; c] [O_h; O_c] + E y O_y + b)` as one
//!   op (`deep_output`, no concatenation of activations).
//! - RNNenc: `x W + b` → the GRU op → `c = tanh(V h_T)`, `h'_0 = tanh(V' c)` → the GRU op again
//!   for the decoder, with `C c` as each sentence's recurrent term and `h'_0` as its start →
//!   `[s; E y] [O_h; O_y] + b + O_c c`.
//!
//! then maxout (inside `deep_output` for RNNsearch, `maxout_pairs` for RNNenc) and the output projection fused with its log-softmax and NLL
//! (`proj_nll`), which never materialises the `(B·T, K_y)` probabilities' gradient twice.
//!
//! Shapes: `B` sentences, `S`/`T` padded source/target lengths, `m` embedding, `n` hidden,
//! `l` maxout units.
use candle_core::Tensor;

use super::encoder::SummaryEncoder;
use super::inputs::BatchTensors;
use super::regularizer::{times_mask, Dropout};
use super::{copy, feedback};
use super::{Core, Seq2Seq};
use crate::config::{CellKind, EncoderKind, GruForm, OutputState};
use crate::error::Result;
use crate::kernels::{attn_decoder, attn_op, birnn, deep_output, embed, linear, maxout, proj_nll, rnn};

/// `(B, T, n)` decoder states → the ones the deep output reads: `s_i` or `s_{i-1}`.
fn output_states(cur: &Tensor, init: &Tensor, which: OutputState) -> Result<Tensor> {
    match which {
        OutputState::Current => Ok(cur.clone()),
        OutputState::Previous => {
            let t = cur.dim(1)?;
            Ok(Tensor::cat(&[&init.unsqueeze(1)?, &cur.narrow(1, 0, t - 1)?], 1)?)
        }
    }
}

/// One stacked layer's dropout masks: on its input (upper layers' unit dropout) and on its
/// states entering `U` (one per direction, concatenated).
struct LayerMasks {
    input: Option<Vec<f32>>,
    state: Option<Vec<f32>>,
}

/// Draws the masks of `layers` stacked layers in the composed path's order (`encoder.rs`,
/// `upper.rs`): for each layer bottom up, the input's unit mask (not for the first layer of a
/// stack, `first_input = false`), then the recurrent mask of each of its `dirs` directions.
fn stack_masks(
    dropout: &mut Option<&mut Dropout>,
    layers: usize,
    first_input: bool,
    input_len: usize,
    rows: usize,
    n: usize,
    dirs: usize,
) -> Vec<LayerMasks> {
    (0..layers)
        .map(|k| match dropout.as_deref_mut() {
            None => LayerMasks { input: None, state: None },
            Some(d) => {
                let input = if k > 0 || first_input { d.units_mask(input_len) } else { None };
                let state = (0..dirs).map(|_| d.recurrent(rows, n)).collect::<Option<Vec<_>>>().map(|v| v.concat());
                LayerMasks { input, state }
            }
        })
        .collect()
}

/// `x ⊙ mask`, or `x`.
fn masked(x: &Tensor, mask: &Option<Vec<f32>>) -> Result<Tensor> {
    match mask {
        Some(m) => times_mask(x, m.clone()),
        None => Ok(x.clone()),
    }
}

impl Seq2Seq {
    /// Per-token negative log-likelihood `(B·T)`, zero at padding, on the fused kernels;
    /// label-smoothed by `eps`.
    pub(super) fn token_nll_fused(&self, batch: &BatchTensors, mut dropout: Option<&mut Dropout>, eps: f64) -> Result<Tensor> {
        let (b, s) = batch.src.dims2()?;
        let (_, t) = batch.tgt_in.dims2()?;
        let (m, n) = (self.cfg.emb_dim, self.cfg.hidden_dim);
        let kind = self.cfg.cell_kind();
        let gw = kind.gates() * n;
        // The kernels take each sentence's length; an empty source still has its `</s>`.
        let src_lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        // Dropout masks in the composed path's order and element order (a mask depends only
        // on the element count): source embeddings, encoder layers, target embeddings,
        // decoder layers, maxout.
        let src_ids = batch.src.flatten_all()?.to_vec1::<u32>()?;
        let src_mask = dropout.as_deref_mut().and_then(|d| d.source_mask(src_ids.len(), m));
        let x = embed::embed(&self.src_emb, &src_ids, src_mask.as_deref())?;
        let enc_dirs = if matches!(self.core, Core::Search { .. }) { 2 } else { 1 };
        // grConv has no recurrent states to drop.
        let enc_layers = if self.cfg.encoder == EncoderKind::Grconv { 0 } else { self.cfg.enc_layers };
        let enc_masks = stack_masks(&mut dropout, enc_layers, false, b * s * enc_dirs * n, b, n, enc_dirs);
        // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
        let tgt_ids = copy::vocab_ids(&batch.tgt_in, self.cfg.tgt_vocab)?.flatten_all()?.to_vec1::<u32>()?;
        let tgt_mask = dropout.as_deref_mut().and_then(|d| d.target_mask(tgt_ids.len(), m));
        let ey = embed::embed(&self.tgt_emb, &tgt_ids, tgt_mask.as_deref())?;
        let dec_mask = dropout.as_deref_mut().and_then(|d| d.recurrent(b, n));
        let upper_masks = stack_masks(&mut dropout, self.cfg.dec_layers - 1, true, b * t * n, b, n, 1);
        // The deep output's maxout layer `t (B·T, l)`, with its dropout mask (drawn last).
        let out_mask = dropout.and_then(|d| d.units_mask(b * t * self.cfg.maxout_dim));
        let stacked = !self.upper.is_empty();
        let hidden = match &self.core {
            Core::Search { enc, dec } => {
                // (B, S, 2n) annotations, layer by layer.
                let mut ann = x.clone();
                for (k, (layer, mk)) in enc.layers.iter().zip(&enc_masks).enumerate() {
                    let ((wf, bf), (wb, bb)) = (layer.fwd.input_weights(), layer.bwd.input_weights());
                    let input = if k == 0 { x.clone() } else { masked(&ann, &mk.input)?.reshape((b * s, 2 * n))? };
                    let gi = linear::linear(&input, &Tensor::cat(&[wf, wb], 1)?, &Tensor::cat(&[bf, bb], 0)?)?;
                    let u = Tensor::stack(&[layer.fwd.u_cat()?, layer.bwd.u_cat()?], 0)?;
                    let bh = Tensor::stack(&[layer.fwd.bias_h()?, layer.bwd.bias_h()?], 0)?;
                    let spec = rnn::RnnSpec { kind, lens: &src_lens, state_mask: mk.state.as_deref() };
                    let out = birnn::birnn_sequence(&gi, &u, &bh, spec)?;
                    ann = if k > 0 && self.cfg.residual { (out + ann)? } else { out };
                }
                let (dw, db) = dec.rnn.input_weights();
                let gie = linear::linear(&ey, dw, db)?;
                let att = &dec.att;
                let (u_cat, b_h) = (dec.rnn.u_cat()?, dec.rnn.bias_h()?);
                let packed = [&att.w_a, &att.b_a, &att.v_a, &dec.c, &u_cat, &b_h, &att.u_a, &dec.w_s, &dec.b_s]
                    .iter()
                    .map(|p| p.flatten_all())
                    .collect::<candle_core::Result<Vec<_>>>()?;
                let dims = attn_decoder::AttnDims {
                    batch: b,
                    tgt_len: t,
                    src_len: s,
                    hidden: n,
                    ctx: 2 * n,
                    att: self.cfg.att_dim,
                    lens: src_lens,
                    kind,
                    // A stack shifts its top's outputs itself.
                    output: if stacked { OutputState::Current } else { self.cfg.output_state },
                    state_mask: dec_mask,
                };
                // (B·T, n + 2n): [s; c] per target position, the deep output's state and context.
                let mut out = attn_op::attention_decoder(&gie, &ann, &Tensor::cat(&packed, 0)?, dims)?;
                // s_0 = tanh(←h_1 W_s + b_s), as the op computes it, for the upper layers and copying.
                let s0 = || -> Result<Tensor> {
                    let back_first = ann.narrow(1, 0, 1)?.squeeze(1)?.narrow(1, n, n)?;
                    Ok(back_first.matmul(&dec.w_s)?.broadcast_add(&dec.b_s)?.tanh()?)
                };
                // The copy mixture's attention, recomputed from the first layer's s_{i-1}.
                let alpha = match self.cfg.copy {
                    false => None,
                    true => {
                        let s1 = out.narrow(1, 0, n)?.reshape((b, t, n))?;
                        let prev = match (stacked, self.cfg.output_state) {
                            (false, OutputState::Previous) => s1,
                            _ => output_states(&s1, &s0()?, OutputState::Previous)?,
                        };
                        let mask_bias = ((batch.src_mask.clone() - 1.0)? * 1e9)?;
                        let a = att.weights_all(&prev, &att.precompute(&ann)?, &mask_bias)?;
                        Some(a.reshape((b * t, s))?)
                    }
                };
                if stacked {
                    let s0 = s0()?;
                    let s1 = out.narrow(1, 0, n)?.reshape((b, t, n))?;
                    let top = self.upper_fused(&s1, &s0, &upper_masks)?;
                    let states = output_states(&top, &self.start_output(&s0)?, self.cfg.output_state)?.reshape((b * t, n))?;
                    out = Tensor::cat(&[&states, &out.narrow(1, n, 2 * n)?], 1)?;
                }
                let o = &self.out;
                // maxout([s; c] [O_h; O_c] + E y O_y + b) in one op.
                let wb = Tensor::cat(&[&o.o_h, &o.o_c, &o.o_y, &o.b.unsqueeze(0)?], 0)?;
                let hidden = deep_output::deep_output(&out, &ey, &wb, out_mask.as_deref())?;
                if let (Some(alpha), Some(gate)) = (alpha, &self.copy) {
                    let (states, ctx) = (out.narrow(1, 0, n)?, out.narrow(1, n, 2 * n)?);
                    let g = gate.gate(&states, &ctx, &ey)?;
                    let logits = self.out.logits(&hidden)?;
                    let Some(src_ext) = &batch.src_ext else {
                        return Err(crate::Error::Input(
                            "a copy model's batch needs the extended source ids (Batch::set_source_ext)".into(),
                        ));
                    };
                    let rows = src_ext.unsqueeze(1)?.broadcast_as((b, t, s))?.contiguous()?.reshape((b * t, s))?;
                    let mix = copy::Mixture { logits: &logits, alpha: &alpha, gate: &g, src_ext: &rows };
                    return Ok((copy::copy_nll(&mix, &batch.tgt_out, eps)? * &batch.tgt_mask)?);
                }
                hidden
            }
            Core::Enc { enc, dec } => {
                let last = match enc {
                    SummaryEncoder::Rnn(enc) => {
                        let zeros = Tensor::zeros((b, n), x.dtype(), x.device())?;
                        let mut hs = x.clone();
                        for (k, (g, mk)) in enc.layers.iter().zip(&enc_masks).enumerate() {
                            let input = if k == 0 { x.clone() } else { masked(&hs, &mk.input)?.reshape((b * s, n))? };
                            let (w, bias) = g.input_weights();
                            let gi = linear::linear(&input, w, bias)?.reshape((b, s, gw))?;
                            let enc_rows = Tensor::cat(&[&g.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, &zeros], 1)?;
                            let spec = rnn::RnnSpec { kind, lens: &src_lens, state_mask: mk.state.as_deref() };
                            let out = rnn::rnn_sequence(&gi, &g.u_cat()?, &enc_rows, false, spec)?;
                            hs = if k > 0 && self.cfg.residual { (out + hs)? } else { out };
                        }
                        hs.narrow(1, s - 1, 1)?.squeeze(1)?
                    }
                    // Level by level on composed ops (`grconv.rs`): no recurrence to fuse.
                    SummaryEncoder::GrConv(g) => g.forward(&x.reshape((b, s, m))?, &src_lens)?,
                };
                let (c, init) = dec.summarise(&last)?;
                let ghb = dec.recurrent_term(&c.matmul(&dec.c)?)?;
                let gie = linear::linear(&ey, &dec.w, &dec.b)?.reshape((b, t, gw))?;
                let dec_rows = Tensor::cat(&[&ghb, &init], 1)?;
                // The paper's decoder resets `U' h' + C c` as a whole: the reset-after cell.
                let tgt_lens = vec![t; b];
                let dec_kind = match kind {
                    CellKind::Gru(_) => CellKind::Gru(GruForm::ResetAfter),
                    CellKind::Lstm => CellKind::Lstm,
                };
                let spec = rnn::RnnSpec { kind: dec_kind, lens: &tgt_lens, state_mask: dec_mask.as_deref() };
                let mut cur = rnn::rnn_sequence(&gie, &dec.u, &dec_rows, false, spec)?;
                if stacked {
                    cur = self.upper_fused(&cur, &init, &upper_masks)?;
                }
                let states = output_states(&cur, &self.start_output(&init)?, self.cfg.output_state)?;
                let rows = Tensor::cat(&[&states, &ey.reshape((b, t, m))?], 2)?.reshape((b * t, n + m))?;
                let o = &self.out;
                let pre = linear::linear(&rows, &Tensor::cat(&[&o.o_h, &o.o_y], 0)?, &o.b)?;
                let ctx = o.project_context(&c)?.unsqueeze(1)?; // (B, 1, 2l)
                let l2 = 2 * self.cfg.maxout_dim;
                let hidden = maxout::maxout_pairs(&pre.reshape((b, t, l2))?.broadcast_add(&ctx)?.reshape((b * t, l2))?)?;
                match out_mask {
                    Some(mk) => times_mask(&hidden, mk)?,
                    None => hidden,
                }
            }
        };
        let targets = batch.tgt_out.to_vec1::<u32>()?;
        let nll = proj_nll::proj_nll(&hidden, self.out.projection(), &self.out.b_g, &targets, eps)?;
        Ok((nll * &batch.tgt_mask)?)
    }

    /// The decoder's layers above the first on the sequence op (`upper.rs` is the composed
    /// twin): the first layer's outputs `s1 (B, T, n)`, every layer starting from `h0 (B, n)`.
    fn upper_fused(&self, s1: &Tensor, h0: &Tensor, masks: &[LayerMasks]) -> Result<Tensor> {
        let (b, t, n) = s1.dims3()?;
        if let Some(stack) = self.upper.feedback_stack() {
            // Step by step on composed ops: each layer reads the layers above it at t − 1.
            let tensor = |m: &Option<Vec<f32>>, dims: &[usize]| -> Result<Option<Tensor>> {
                m.as_ref().map(|v| Ok(Tensor::from_vec(v.clone(), dims, s1.device())?.to_dtype(s1.dtype())?)).transpose()
            };
            let masks = masks
                .iter()
                .map(|mk| Ok(feedback::LayerMasks { input: tensor(&mk.input, &[b, t, n])?, state: tensor(&mk.state, &[b, n])? }))
                .collect::<Result<Vec<_>>>()?;
            return stack.run(s1, h0, &masks);
        }
        let kind = self.cfg.cell_kind();
        let gw = kind.gates() * n;
        let lens = vec![t; b];
        let mut x = s1.clone();
        for (rnn, mk) in self.upper.layers.iter().zip(masks) {
            let (w, bias) = rnn.input_weights();
            let gi = linear::linear(&masked(&x, &mk.input)?.reshape((b * t, n))?, w, bias)?.reshape((b, t, gw))?;
            let rows = Tensor::cat(&[&rnn.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, h0], 1)?;
            let spec = rnn::RnnSpec { kind, lens: &lens, state_mask: mk.state.as_deref() };
            let h = rnn::rnn_sequence(&gi, &rnn.u_cat()?, &rows, false, spec)?;
            x = if self.cfg.residual { (h + x)? } else { h };
        }
        Ok(x)
    }

    /// What the deep output reads as `s_{i-1}` at the first step of a stack started from
    /// `h0`: `h0`, or with residual connections the sum over the `L` layers, `L·h0`.
    fn start_output(&self, h0: &Tensor) -> Result<Tensor> {
        if self.cfg.residual && !self.upper.is_empty() {
            Ok((h0 * self.cfg.dec_layers as f64)?)
        } else {
            Ok(h0.clone())
        }
    }
}
