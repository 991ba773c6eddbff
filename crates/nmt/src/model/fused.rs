//! [`Seq2Seq`]'s teacher-forced loss on the fused CPU kernels (`crate::kernels`): the same
//! parameters, the same dropout masks (drawn at the same sites, `regularizer::Site`) and the same
//! numbers as the composed candle ops of `mod.rs`, which stay as its reference twin
//! (`tests/fused_model.rs` checks loss and every gradient, f64 to 1e-10, f32 to 2e-5).
//!
//! Each layer's fused form sits in its layer file beside its composed form: the encoders'
//! `forward_fused` (`encoder.rs`), the decoders' `run_fused` (`attention_decoder.rs`,
//! `summary_decoder.rs`), the upper layers'
//! `run_fused` (`upper.rs`), the deep output's `hidden_fused` and `nll_fused` (`output.rs`).
//! This file draws the dropout masks and wires them together. Per batch the graph has a
//! handful of nodes instead of a few per time step:
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

use super::copy;
use super::inputs::BatchTensors;
use super::regularizer::{stack_masks, Dropout, Side, Site, StackShape};
use super::{Core, Seq2Seq};
use crate::config::{EncoderKind, OutputState};
use crate::error::Result;
use crate::kernels::{attn_decoder, embed};

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

impl Seq2Seq {
    /// Per-token negative log-likelihood `(B·T)`, zero at padding, on the fused kernels;
    /// label-smoothed by `eps`. Each layer's fused form lives in its layer file
    /// (`forward_fused`, `run_fused`, `hidden_fused`, `nll_fused`); this draws the dropout
    /// masks at their sites (`regularizer::Site`) and passes them on.
    pub(super) fn token_nll_fused(&self, batch: &BatchTensors, mut dropout: Option<&mut Dropout>, eps: f64) -> Result<Tensor> {
        let (b, s) = batch.src.dims2()?;
        let (_, t) = batch.tgt_in.dims2()?;
        let (m, n) = (self.cfg.emb_dim, self.cfg.hidden_dim);
        // The kernels take each sentence's length; an empty source still has its `</s>`.
        let src_lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        // Dropout masks, each from its site's own stream (`regularizer::Site`), so the same as
        // the composed path draws whatever the order: source embeddings, encoder layers,
        // target embeddings, decoder layers, maxout.
        let src_ids = batch.src.flatten_all()?.to_vec1::<u32>()?;
        let src_mask = dropout.as_deref_mut().and_then(|d| d.source_mask(src_ids.len(), m));
        let x = embed::embed(&self.src_emb, &src_ids, src_mask.as_deref())?;
        let enc_dirs = if matches!(self.core, Core::Search { .. }) { 2 } else { 1 };
        // grConv has no recurrent states to drop.
        let enc_layers = if self.cfg.encoder == EncoderKind::Grconv { 0 } else { self.cfg.enc_layers };
        let enc_shape = StackShape {
            side: Side::Encoder,
            first: 0,
            layers: enc_layers,
            input_len: b * s * enc_dirs * n,
            rows: b,
            hidden: n,
            dirs: enc_dirs,
        };
        let enc_masks = stack_masks(dropout.as_deref_mut(), enc_shape);
        // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
        let tgt_ids = copy::vocab_ids(&batch.tgt_in, self.cfg.tgt_vocab)?.flatten_all()?.to_vec1::<u32>()?;
        let tgt_mask = dropout.as_deref_mut().and_then(|d| d.target_mask(tgt_ids.len(), m));
        let ey = embed::embed(&self.tgt_emb, &tgt_ids, tgt_mask.as_deref())?;
        let dec_mask = dropout.as_deref_mut().and_then(|d| d.recurrent(Site::State { side: Side::Decoder, layer: 0, dir: 0 }, b, n));
        let upper_shape = StackShape {
            side: Side::Decoder,
            first: 1,
            layers: self.cfg.dec_layers - 1,
            input_len: b * t * n,
            rows: b,
            hidden: n,
            dirs: 1,
        };
        let upper_masks = stack_masks(dropout.as_deref_mut(), upper_shape);
        // The deep output's maxout layer `t (B·T, l)`, with its dropout mask (drawn last).
        let out_mask = dropout.and_then(|d| d.units_mask(Site::Maxout, b * t * self.cfg.maxout_dim));
        let stacked = !self.upper.is_empty();
        let hidden = match &self.core {
            Core::Search { enc, dec } => {
                let ann = enc.forward_fused(&x, &src_lens, &enc_masks)?;
                let dims = attn_decoder::AttnDims {
                    batch: b,
                    tgt_len: t,
                    src_len: s,
                    hidden: n,
                    ctx: 2 * n,
                    att: self.cfg.att_dim,
                    lens: src_lens,
                    kind: self.cfg.cell_kind(),
                    // A stack shifts its top's outputs itself.
                    output: if stacked { OutputState::Current } else { self.cfg.output_state },
                    state_mask: dec_mask,
                };
                // (B·T, n + 2n): [s; c] per target position, the deep output's state and context.
                let mut out = dec.run_fused(&ey, &ann, dims)?;
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
                        let a = dec.att.weights_all(&prev, &dec.att.precompute(&ann)?, &mask_bias)?;
                        Some(a.reshape((b * t, s))?)
                    }
                };
                if stacked {
                    let s0 = s0()?;
                    let s1 = out.narrow(1, 0, n)?.reshape((b, t, n))?;
                    let top = self.upper.run_fused(&s1, &s0, &upper_masks)?;
                    let states = output_states(&top, &self.start_output(&s0)?, self.cfg.output_state)?.reshape((b * t, n))?;
                    out = Tensor::cat(&[&states, &out.narrow(1, n, 2 * n)?], 1)?;
                }
                // maxout([s; c] [O_h; O_c] + E y O_y + b) in one op.
                let hidden = self.out.hidden_fused(&out, &ey, out_mask.as_deref())?;
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
                let last = enc.forward_fused(&x, &src_lens, &enc_masks)?;
                let (c, init) = dec.summarise(&last)?;
                let mut cur = dec.run_fused(&ey, &c, &init, dec_mask.as_deref())?;
                if stacked {
                    cur = self.upper.run_fused(&cur, &init, &upper_masks)?;
                }
                let states = output_states(&cur, &self.start_output(&init)?, self.cfg.output_state)?;
                self.out.hidden_fused_summary(&states, &ey, &c, out_mask)?
            }
        };
        let targets = batch.tgt_out.to_vec1::<u32>()?;
        let nll = self.out.nll_fused(&hidden, &targets, eps)?;
        Ok((nll * &batch.tgt_mask)?)
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
