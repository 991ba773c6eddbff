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

use super::inputs::BatchTensors;
use super::regularizer::{times_mask, Dropout};
use super::{Core, Seq2Seq};
use crate::config::{CellKind, GruForm, OutputState};
use crate::error::Result;
use crate::kernels::{attn_decoder, attn_op, bigru, deep_output, embed, gru, linear, maxout, proj_nll};

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
    /// label-smoothed by `eps`.
    pub(super) fn token_nll_fused(&self, batch: &BatchTensors, mut dropout: Option<&mut Dropout>, eps: f64) -> Result<Tensor> {
        let (b, s) = batch.src.dims2()?;
        let (_, t) = batch.tgt_in.dims2()?;
        let (m, n) = (self.cfg.emb_dim, self.cfg.hidden_dim);
        // The kernels take each sentence's length; an empty source still has its `</s>`.
        let src_lens: Vec<usize> = batch.src_lengths.iter().map(|&l| l.max(1)).collect();
        // Dropout masks in the composed path's order and element order (a mask depends only
        // on the element count): source embeddings, encoder states, target embeddings,
        // decoder states, maxout.
        let src_ids = batch.src.flatten_all()?.to_vec1::<u32>()?;
        let src_mask = dropout.as_deref_mut().and_then(|d| d.source_mask(src_ids.len(), m));
        let x = embed::embed(&self.src_emb, &src_ids, src_mask.as_deref())?;
        let enc_dirs = if matches!(self.core, Core::Search { .. }) { 2 } else { 1 };
        let enc_mask: Option<Vec<f32>> = match dropout.as_deref_mut() {
            Some(d) => (0..enc_dirs).map(|_| d.recurrent(b, n)).collect::<Option<Vec<_>>>().map(|v| v.concat()),
            None => None,
        };
        let tgt_ids = batch.tgt_in.flatten_all()?.to_vec1::<u32>()?;
        let tgt_mask = dropout.as_deref_mut().and_then(|d| d.target_mask(tgt_ids.len(), m));
        let ey = embed::embed(&self.tgt_emb, &tgt_ids, tgt_mask.as_deref())?;
        let dec_mask = dropout.as_deref_mut().and_then(|d| d.recurrent(b, n));
        // The deep output's maxout layer `t (B·T, l)`, with its dropout mask (drawn last).
        let out_mask = dropout.and_then(|d| d.units_mask(b * t * self.cfg.maxout_dim));
        let kind = self.cfg.cell_kind();
        let hidden = match &self.core {
            Core::Search { enc, dec } => {
                let ((wf, bf), (wb, bb)) = (enc.fwd.input_weights(), enc.bwd.input_weights());
                let w = Tensor::cat(&[wf, wb], 1)?;
                let bias = Tensor::cat(&[bf, bb], 0)?;
                let gi = linear::linear(&x, &w, &bias)?;
                let u = Tensor::stack(&[enc.fwd.u_cat()?, enc.bwd.u_cat()?], 0)?;
                let bh = Tensor::stack(&[enc.fwd.bias_h()?, enc.bwd.bias_h()?], 0)?;
                let spec = gru::GruSpec { kind, lens: &src_lens, state_mask: enc_mask.as_deref() };
                let ann = bigru::bigru_sequence(&gi, &u, &bh, spec)?;
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
                    output: self.cfg.output_state,
                    state_mask: dec_mask,
                };
                // (B·T, n + 2n): [s; c] per target position, the deep output's state and context.
                let out = attn_op::attention_decoder(&gie, &ann, &Tensor::cat(&packed, 0)?, dims)?;
                let o = &self.out;
                // maxout([s; c] [O_h; O_c] + E y O_y + b) in one op.
                let wb = Tensor::cat(&[&o.o_h, &o.o_c, &o.o_y, &o.b.unsqueeze(0)?], 0)?;
                deep_output::deep_output(&out, &ey, &wb, out_mask.as_deref())?
            }
            Core::Enc { enc, dec } => {
                let g = &enc.rnn;
                let gw = kind.gates() * n;
                let (w, bias) = g.input_weights();
                let gi = linear::linear(&x, w, bias)?.reshape((b, s, gw))?;
                let zeros = Tensor::zeros((b, n), x.dtype(), x.device())?;
                let enc_rows = Tensor::cat(&[&g.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, &zeros], 1)?;
                let spec = gru::GruSpec { kind, lens: &src_lens, state_mask: enc_mask.as_deref() };
                let hs = gru::gru_sequence(&gi, &g.u_cat()?, &enc_rows, false, spec)?;
                let (c, init) = dec.summarise(&hs.narrow(1, s - 1, 1)?.squeeze(1)?)?;
                let ghb = dec.recurrent_term(&c.matmul(&dec.c)?)?;
                let gie = linear::linear(&ey, &dec.w, &dec.b)?.reshape((b, t, gw))?;
                let dec_rows = Tensor::cat(&[&ghb, &init], 1)?;
                // The paper's decoder resets `U' h' + C c` as a whole: the reset-after cell.
                let tgt_lens = vec![t; b];
                let dec_kind = match kind {
                    CellKind::Gru(_) => CellKind::Gru(GruForm::ResetAfter),
                    CellKind::Lstm => CellKind::Lstm,
                };
                let spec = gru::GruSpec { kind: dec_kind, lens: &tgt_lens, state_mask: dec_mask.as_deref() };
                let cur = gru::gru_sequence(&gie, &dec.u, &dec_rows, false, spec)?;
                let states = output_states(&cur, &init, self.cfg.output_state)?;
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
}
