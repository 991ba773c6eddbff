//! bench-rnnsearch's training loss, twice: composed from candle ops (the reference, a line-by-line
//! port of `../shared/bench/pytorch_rnnsearch.py`) and with the fused kernels. Both give the
//! same loss and gradients (tested in `tests/kernels.rs`).
//!
//! Shapes: source `(B, S)`, target `(B, T)`; annotations `(B, S, 2H)`; decoder states `(B, T, H)`;
//! contexts `(B, T, 2H)`; logits `(B·T, V)`.
use candle_core::{Device, Tensor, D};

use super::params::{BenchBatch, BenchParams, ATT, BATCH, HIDDEN, SRC_LEN, TGT_LEN};
use crate::error::Result;
use crate::kernels::gru_cell::GruForm;
use crate::kernels::{attn_decoder, attn_op, bigru, linear, maxout, proj_nll};

pub use crate::config::Impl;

/// Mean NLL per target token of the batch.
pub fn loss(p: &BenchParams, batch: &BenchBatch, imp: Impl) -> Result<Tensor> {
    let dev = p.vars[0].device().clone();
    let src = Tensor::from_slice(&batch.src, (BATCH, SRC_LEN), &dev)?;
    let tgt_in = Tensor::from_slice(&batch.tgt_in(), (BATCH, TGT_LEN), &dev)?;
    match imp {
        Impl::Ops => loss_ops(p, &src, &tgt_in, &batch.tgt, &dev),
        Impl::Fused => loss_fused(p, &src, &tgt_in, batch),
    }
}

fn embed(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
    Ok(table.embedding(&ids.flatten_all()?)?)
}

/// `x W + b` over the last dimension of a `(N, in)` matrix.
fn affine(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(x.matmul(w)?.broadcast_add(b)?)
}

/// `x W + b` with the implementation's kernels.
fn affine_with(imp: Impl, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    match imp {
        Impl::Ops => affine(x, w, b),
        Impl::Fused => Ok(linear::linear(x, w, b)?),
    }
}

/// One reset-after GRU step from composed ops (the twin of `kernels::gru`).
pub fn gru_step_ops(gi: &Tensor, h: &Tensor, whh: &Tensor, bhh: &Tensor) -> Result<Tensor> {
    let gh = affine(h, whh, bhh)?;
    let hd = h.dim(1)?;
    let r = candle_nn::ops::sigmoid(&(gi.narrow(1, 0, hd)? + gh.narrow(1, 0, hd)?)?)?;
    let z = candle_nn::ops::sigmoid(&(gi.narrow(1, hd, hd)? + gh.narrow(1, hd, hd)?)?)?;
    let n = (gi.narrow(1, 2 * hd, hd)? + (r * gh.narrow(1, 2 * hd, hd)?)?)?.tanh()?;
    Ok((&n + (z * (h - &n)?)?)?)
}

/// Composed-op GRU over `gi (B, S, 3H)` from `h_0 = 0`: states `(B, S, H)`.
pub fn gru_sequence_ops(gi: &Tensor, whh: &Tensor, bhh: &Tensor, reverse: bool) -> Result<Tensor> {
    let (b, s, _) = gi.dims3()?;
    let mut h = Tensor::zeros((b, whh.dim(0)?), gi.dtype(), gi.device())?;
    let mut out = vec![None; s];
    for step in 0..s {
        let t = if reverse { s - 1 - step } else { step };
        h = gru_step_ops(&gi.narrow(1, t, 1)?.squeeze(1)?, &h, whh, bhh)?;
        out[t] = Some(h.clone());
    }
    let out: Vec<Tensor> = out.into_iter().flatten().collect();
    Ok(Tensor::stack(&out, 1)?)
}

/// Additive attention for one step from composed ops: the context `(B, 2H)`.
pub fn attend_ops(p: &BenchParams, hs: &Tensor, uh: &Tensor, s: &Tensor, mask_bias: &Tensor) -> Result<Tensor> {
    let (b, sl, a) = uh.dims3()?;
    let ws = affine(s, p.get("att_w")?, p.get("att_b")?)?;
    let x = uh.broadcast_add(&ws.unsqueeze(1)?)?.tanh()?;
    let e = (x.reshape((b * sl, a))?.matmul(p.get("att_v")?)?.reshape((b, sl))? + mask_bias)?;
    // Our softmax, not candle_nn's softmax_last_dim, which has no backward in candle-nn 0.11.1.
    let alpha = crate::model::attention::softmax_last(&e)?;
    Ok(alpha.unsqueeze(1)?.matmul(hs)?.squeeze(1)?)
}

/// The composed path's input projections `x W + b` of both encoder directions, `(B, S, 3H)`.
fn encode_inputs(p: &BenchParams, src: &Tensor) -> Result<(Tensor, Tensor)> {
    let xs = embed(p.get("src_emb")?, src)?;
    let gi = |dir: &str| -> Result<Tensor> {
        Ok(affine(&xs, p.get(&format!("enc_{dir}_wih"))?, p.get(&format!("enc_{dir}_bih"))?)?.reshape((BATCH, SRC_LEN, 3 * HIDDEN))?)
    };
    Ok((gi("f")?, gi("b")?))
}

/// `s_0 = tanh(W_s ←h_1 + b)` and `U_a h_j` for all positions.
fn init_and_keys(p: &BenchParams, hs: &Tensor, hb: &Tensor) -> Result<(Tensor, Tensor)> {
    let s0 = affine(&hb.narrow(1, 0, 1)?.squeeze(1)?, p.get("init_w")?, p.get("init_b")?)?.tanh()?;
    let uh = hs.reshape((BATCH * SRC_LEN, 2 * HIDDEN))?.matmul(p.get("att_u")?)?;
    Ok((s0, uh.reshape((BATCH, SRC_LEN, ATT))?))
}

/// Deep output: `maxout([s; Ey; c] W_o + b_o)`, `(N, H)`; the logits are this times `W_p`.
fn deep_output(p: &BenchParams, st: &Tensor, ys: &Tensor, cs: &Tensor, imp: Impl) -> Result<Tensor> {
    let t = affine_with(imp, &Tensor::cat(&[st, ys, cs], 1)?, p.get("out_w")?, p.get("out_b")?)?;
    let t = match imp {
        Impl::Ops => {
            let n = t.dim(0)?;
            t.reshape((n, HIDDEN, 2))?.max(D::Minus1)?
        }
        Impl::Fused => maxout::maxout_pairs(&t)?,
    };
    Ok(t)
}

fn loss_ops(p: &BenchParams, src: &Tensor, tgt_in: &Tensor, tgt: &[u32], dev: &Device) -> Result<Tensor> {
    let (gi_f, gi_b) = encode_inputs(p, src)?;
    let hf = gru_sequence_ops(&gi_f, p.get("enc_f_whh")?, p.get("enc_f_bhh")?, false)?;
    let hb = gru_sequence_ops(&gi_b, p.get("enc_b_whh")?, p.get("enc_b_bhh")?, true)?;
    let hs = Tensor::cat(&[&hf, &hb], 2)?;
    let (mut s, uh) = init_and_keys(p, &hs, &hb)?;
    let mask_bias = ((src.ne(0u32)?.to_dtype(hs.dtype())? - 1.0)? * 1e9)?;
    let ys = embed(p.get("tgt_emb")?, tgt_in)?;
    let gie = affine(&ys, p.get("dec_wie")?, p.get("dec_bih")?)?.reshape((BATCH, TGT_LEN, 3 * HIDDEN))?;
    let (mut states, mut ctxs) = (Vec::new(), Vec::new());
    for i in 0..TGT_LEN {
        let c = attend_ops(p, &hs, &uh, &s, &mask_bias)?;
        let gi = (gie.narrow(1, i, 1)?.squeeze(1)? + c.matmul(p.get("dec_wic")?)?)?;
        s = gru_step_ops(&gi, &s, p.get("dec_whh")?, p.get("dec_bhh")?)?;
        states.push(s.clone());
        ctxs.push(c);
    }
    let st = Tensor::stack(&states, 1)?.reshape((BATCH * TGT_LEN, HIDDEN))?;
    let cs = Tensor::stack(&ctxs, 1)?.reshape((BATCH * TGT_LEN, 2 * HIDDEN))?;
    let t = deep_output(p, &st, &ys, &cs, Impl::Ops)?;
    let logits = affine(&t, p.get("proj_w")?, p.get("proj_b")?)?;
    let lp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
    let tgt_t = Tensor::from_slice(tgt, BATCH * TGT_LEN, dev)?;
    let picked = lp.gather(&tgt_t.unsqueeze(1)?, 1)?.squeeze(1)?;
    let mask = tgt_t.ne(0u32)?.to_dtype(lp.dtype())?;
    Ok(((picked * &mask)?.sum_all()?.neg()? / mask.sum_all()?)?)
}

fn loss_fused(p: &BenchParams, src: &Tensor, tgt_in: &Tensor, batch: &BenchBatch) -> Result<Tensor> {
    // Both directions' input projections as one GEMM, both recurrences as one op.
    let xs = embed(p.get("src_emb")?, src)?;
    let wih = Tensor::cat(&[p.get("enc_f_wih")?, p.get("enc_b_wih")?], 1)?;
    let bih = Tensor::cat(&[p.get("enc_f_bih")?, p.get("enc_b_bih")?], 0)?;
    let gi = linear::linear(&xs, &wih, &bih)?;
    let u = Tensor::stack(&[p.get("enc_f_whh")?, p.get("enc_b_whh")?], 0)?;
    let bh = Tensor::stack(&[p.get("enc_f_bhh")?, p.get("enc_b_bhh")?], 0)?;
    // The reference's GRU runs over the padding (no lengths), as here.
    let hs = bigru::bigru_sequence(&gi, &u, &bh, GruForm::ResetAfter, &[SRC_LEN; BATCH])?;
    let ys = embed(p.get("tgt_emb")?, tgt_in)?;
    let gie = linear::linear(&ys, p.get("dec_wie")?, p.get("dec_bih")?)?;
    let flat = |n: &str| -> Result<Tensor> { Ok(p.get(n)?.flatten_all()?) };
    let names = ["att_w", "att_b", "att_v", "dec_wic", "dec_whh", "dec_bhh", "att_u", "init_w", "init_b"];
    let w = Tensor::cat(&names.iter().map(|n| flat(n)).collect::<Result<Vec<_>>>()?, 0)?;
    let lens = batch.src.chunks(SRC_LEN).map(|row| row.iter().rposition(|&t| t != 0).map_or(1, |i| i + 1)).collect();
    let dims = attn_decoder::AttnDims {
        batch: BATCH,
        tgt_len: TGT_LEN,
        src_len: SRC_LEN,
        hidden: HIDDEN,
        ctx: 2 * HIDDEN,
        att: ATT,
        lens,
        form: GruForm::ResetAfter,
        output: crate::config::OutputState::Current,
    };
    let out = attn_op::attention_decoder(&gie, &hs, &w, dims)?;
    let st = out.narrow(1, 0, HIDDEN)?;
    let cs = out.narrow(1, HIDDEN, 2 * HIDDEN)?;
    let t = deep_output(p, &st, &ys, &cs, Impl::Fused)?;
    let nll = proj_nll::proj_nll(&t, p.get("proj_w")?, p.get("proj_b")?, &batch.tgt, 0.0)?;
    let mask: Vec<f32> = batch.tgt.iter().map(|&t| f32::from(t != 0)).collect();
    let mask = Tensor::from_vec(mask, BATCH * TGT_LEN, nll.device())?.to_dtype(nll.dtype())?;
    Ok(((nll * &mask)?.sum_all()? / mask.sum_all()?)?)
}
