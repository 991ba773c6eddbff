//! The parameters of an RNNsearch model as the recorded GPU training step reads them
//! (`launch_step.rs`): one flat arena of `f32`, each region a [`Param`] in the layout its op takes,
//! so that the optimiser's update is one launch over all of them and no op needs a copy of its
//! weights:
//!
//! ```text
//! src_emb (K_x, m)          enc_w (m, 2G) = [W→ | W←]    enc_b (2G)     enc_u (2, H, G) = [U→; U←]
//! enc_bh (2, G)             start_w (P, H), start_b (H)  keys (C, A) = U_a
//! dec_w (m, G), dec_b (G)   the first decoder cell's input weights (reads E y)
//! loop                      the decoder loop's packed weights (`decoder_loop_gpu::LoopWeights::packed`)
//! out_wb (n + C + m + 1, w) = [O_h; O_c; O_y; b]     proj (l, K_y) = G and proj_b (K_y)
//! tgt_emb (K_y, m)          (tied embeddings: the projection reads it as Eᵀ, no `proj` slot)
//! ```
//!
//! [`pack`] takes the slots from the layers (each layer's `launch_slots`), built by the same
//! expressions the layers' own forms use (`u_cat`, `bias_h`, `packed`), so packing a model built from the gradients of
//! another packs its gradients alike (the tests compare the step's gradients with the composed
//! model's that way). A position that is no parameter (the paper GRU's `b_h`, zeros made by
//! `bias_h`) is found by packing a model of indices ([`positions`], which also gives the inverse,
//! [`unpack`]); the step zeroes its gradient so that the update leaves it alone.
use candle_core::{DType, Tensor};

use super::launch_tape::{Layout, Param};
use super::rnnsearch::Rnnsearch;
use super::seq2seq::Seq2Seq;
use crate::error::{Error, Result};

/// The RNNsearch of `model`, if the recorded step runs it: the refusal is
/// [`Backend::recorded_refusal`](super::backend::Backend::recorded_refusal)'s, the one place that decides.
pub(crate) fn supported(model: &Seq2Seq) -> Result<&Rnnsearch> {
    if let Some(why) = super::backend::Backend::recorded_refusal(&model.cfg, model.dtype()) {
        return Err(Error::Config(format!("the recorded GPU step {why}")));
    }
    model.rnnsearch().ok_or_else(|| Error::Config("the recorded GPU step runs RNNsearch only".into()))
}

/// The slots of `net` with the embeddings `src`, `tgt`, in arena order, flat: each layer's own
/// (`Rnnsearch::launch_slots`).
fn pack(net: &Rnnsearch, src: &Tensor, tgt: &Tensor) -> Result<Vec<(Param, Tensor)>> {
    net.launch_slots(src, tgt)?.into_iter().map(|(s, t)| Ok((s, t.flatten_all()?))).collect()
}

/// The arena of `model` (flat `f32`) and its layout.
pub(crate) fn pack_model(model: &Seq2Seq) -> Result<(Vec<f32>, Layout)> {
    let net = supported(model)?;
    let (src, tgt) = model.embeddings();
    let mut regions = Vec::new();
    let mut flat = Vec::new();
    for (s, t) in pack(net, src, tgt)? {
        let v = t.to_vec1::<f32>()?;
        regions.push((s, flat.len(), v.len()));
        flat.extend(v);
    }
    let len = flat.len();
    Ok((flat, Layout { regions, len }))
}

/// For each arena position, the parameter element it holds: its index in the parameters laid
/// end to end (`named_vars` order, each row-major), or `None` for a constant of the packing (the
/// paper GRU's zero `b_h`). Found by packing a model whose every element holds its index + 1 in
/// `f64` (exact to 2^53), so it follows the packing wherever the layers' expressions put it.
pub(crate) fn positions(model: &Seq2Seq) -> Result<Vec<Option<usize>>> {
    supported(model)?;
    let mut starts = std::collections::BTreeMap::new();
    let mut total = 0usize;
    for (name, v) in model.params.named_vars() {
        starts.insert(name, total);
        total += v.elem_count();
    }
    let dev = model.device().clone();
    let indexed = model.with_params_in(DType::F64, |name, t| {
        let start = starts.get(name).copied().unwrap_or(0) as f64 + 1.0;
        Ok(Tensor::arange(start, start + t.elem_count() as f64, &dev)?.reshape(t.shape())?)
    })?;
    let Some(net) = indexed.rnnsearch() else { return Err(Error::Config("the recorded GPU step runs RNNsearch only".into())) };
    let (src, tgt) = indexed.embeddings();
    let mut out = Vec::new();
    for (_, t) in pack(net, src, tgt)? {
        out.extend(t.to_vec1::<f64>()?.into_iter().map(|x| if x >= 1.0 { Some(x as usize - 1) } else { None }));
    }
    Ok(out)
}

/// An arena's values as one tensor per parameter of `model`, by name (the inverse of
/// [`pack_model`]), `pos` its [`positions`]: every parameter element must appear in the arena
/// exactly once, or it is an error (an element held twice would be updated twice, apart).
pub(crate) fn unpack_named(model: &Seq2Seq, pos: &[Option<usize>], arena: &[f32]) -> Result<Vec<(String, Tensor)>> {
    if pos.len() != arena.len() {
        return Err(Error::Config(format!("an arena of {} values for a model whose arena holds {}", arena.len(), pos.len())));
    }
    let vars = model.params.named_vars();
    let total: usize = vars.iter().map(|(_, v)| v.elem_count()).sum();
    let (mut flat, mut seen) = (vec![0f32; total], vec![false; total]);
    for (&p, &x) in pos.iter().zip(arena) {
        if let Some(i) = p {
            if std::mem::replace(&mut seen[i], true) {
                return Err(Error::Config(format!("parameter element {i} appears twice in the arena")));
            }
            flat[i] = x;
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(Error::Config(format!("parameter element {i} is missing from the arena")));
    }
    let mut at = 0;
    let mut out = Vec::with_capacity(vars.len());
    for (name, v) in vars {
        let n = v.elem_count();
        out.push((name, Tensor::from_vec(flat[at..at + n].to_vec(), v.shape(), v.device())?));
        at += n;
    }
    Ok(out)
}

/// Writes an arena's parameters back into `model` ([`unpack_named`]).
pub(crate) fn unpack(model: &Seq2Seq, pos: &[Option<usize>], arena: &[f32]) -> Result<()> {
    let named = unpack_named(model, pos, arena)?;
    for ((_, v), (_, t)) in model.params.named_vars().iter().zip(named) {
        v.set(&t)?;
    }
    Ok(())
}

/// The arena of per-parameter tensors `named` (a parameter's moments, its gradients), laid out as
/// `model`'s parameters are.
pub(crate) fn pack_named(model: &Seq2Seq, named: &std::collections::BTreeMap<String, Tensor>) -> Result<Vec<f32>> {
    let like = model.with_params(|name, t| match named.get(name) {
        Some(x) => Ok(x.to_dtype(t.dtype())?.reshape(t.shape())?),
        None => Err(Error::Config(format!("no {name} to pack"))),
    })?;
    Ok(pack_model(&like)?.0)
}
