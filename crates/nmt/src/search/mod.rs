//! Generation with the candle ops: greedy and beam search over batches of sentences, and
//! [`search_all`], which runs the host search of `crate::infer` instead where it can.
//!
//! The types both searches share (hypotheses, options, length normalisation, the beam
//! bookkeeping) live in `crate::hypothesis` and are re-exported here.
pub mod beam;
pub mod greedy;

use candle_core::Tensor;
use nmt_data::batch::Batch;

use crate::config::Impl;
use crate::error::Result;
pub use crate::hypothesis::{max_output_len, normalized, take_row_steps, Hypothesis, SearchOptions};
use crate::model::{BatchTensors, Seq2Seq};

/// Translates one batch (source side of `batch`) with the candle ops; returns up to `n_best` hypotheses per row,
/// best first, in the batch's row order.
pub fn search_batch(model: &Seq2Seq, batch: &Batch, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    let (src, mask) = BatchTensors::source(batch, model.dtype(), model.device())?;
    let mut enc = model.encode(&src, &mask, None)?;
    if let Some(ext) = BatchTensors::source_ext(batch, model.device())? {
        model.attach_copy_source(&mut enc, &ext)?;
    }
    let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &opts.cfg)).collect();
    if opts.cfg.beam_size <= 1 {
        Ok(greedy::greedy(model, &enc, &limits, opts)?.into_iter().map(|h| vec![h]).collect())
    } else {
        beam::beam(model, &enc, &limits, opts)
    }
}

/// Host copy of a `(rows, k)` float tensor.
pub(crate) fn to_rows(t: &Tensor) -> Result<Vec<Vec<f32>>> {
    Ok(t.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?)
}

/// Translates many source id sequences (each ending with `</s>`): sorted by length into batches
/// of `opts.cfg.batch_size` sentences, searched with `opts.imp`, and returned in the input
/// order.
pub fn search_all(model: &Seq2Seq, srcs: &[Vec<u32>], opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    search_all_ext(model, srcs, None, opts)
}

/// [`search_all`] for a copy model (`model.copy`): `exts[i]` is source `i` in the extended
/// target space (`nmt_data::copy`), and hypotheses may hold its extended ids.
pub fn search_all_ext(model: &Seq2Seq, srcs: &[Vec<u32>], exts: Option<&[Vec<u32>]>, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
    search_ensemble(&[model], srcs, exts, opts)
}

/// [`search_all_ext`] for an ensemble (`crate::infer::ensemble`): `models` share their
/// vocabularies, `srcs` and `exts` are in the first model's reading order, and so are the
/// alignments. An ensemble of more than one model runs on the host search only (`f32` on the
/// CPU); one model runs wherever [`search_all`] does.
pub fn search_ensemble(
    models: &[&Seq2Seq],
    srcs: &[Vec<u32>],
    exts: Option<&[Vec<u32>]>,
    opts: &SearchOptions,
) -> Result<Vec<Vec<Hypothesis>>> {
    let hosts = host_models(models, opts.imp)?;
    search_prepared(models, hosts.as_deref(), srcs, exts, opts)
}

/// The host snapshots the fused search runs on (`crate::infer::HostModel`), when `imp` is
/// `Fused` and every model is `f32` on the CPU; `None` otherwise. Building them copies the
/// weights, so callers that search often ([`crate::translate::Translator`], the server) keep them.
pub fn host_models(models: &[&Seq2Seq], imp: Impl) -> Result<Option<Vec<crate::infer::HostModel>>> {
    let ok = matches!(imp, Impl::Fused) && models.iter().all(|m| crate::infer::HostModel::supports(m));
    if !ok {
        return Ok(None);
    }
    Ok(Some(models.iter().map(|m| crate::infer::HostModel::new(m)).collect::<Result<_>>()?))
}

/// [`search_ensemble`] with the host snapshots already built ([`host_models`]; `None`: the
/// candle search, one model only).
pub fn search_prepared(
    models: &[&Seq2Seq],
    hosts: Option<&[crate::infer::HostModel]>,
    srcs: &[Vec<u32>],
    exts: Option<&[Vec<u32>]>,
    opts: &SearchOptions,
) -> Result<Vec<Vec<Hypothesis>>> {
    let Some(&lead) = models.first() else {
        return Err(crate::Error::Input("an ensemble needs at least one model".into()));
    };
    if models.iter().any(|m| m.cfg.copy) && exts.is_none() {
        return Err(crate::Error::Input("a copy model needs each source's extended ids".into()));
    }
    let hosts = hosts.filter(|h| matches!(opts.imp, Impl::Fused) && h.len() == models.len());
    if models.len() > 1 && hosts.is_none() {
        return Err(crate::Error::Input("an ensemble decodes on the fused host search only: f32 models on the CPU, --impl fused".into()));
    }
    let per = opts.cfg.batch_size.max(1);
    // The beam multiplies rows; keep `rows × src_len` near what one batch of `per` sentences holds.
    let cfg = nmt_data::BatchConfig { max_tokens: per * 100, max_sentences: per };
    let mut out: Vec<Vec<Hypothesis>> = vec![Vec::new(); srcs.len()];
    let host_refs: Option<Vec<&crate::infer::HostModel>> = hosts.map(|h| h.iter().collect());
    for mut batch in nmt_data::inference_batches(srcs, &cfg) {
        if let Some(e) = exts {
            batch.set_source_ext(e);
        }
        let hyps = match &host_refs {
            Some(h) => crate::infer::search_batch(h, &batch, opts),
            None => search_batch(lead, &batch, opts)?,
        };
        for (row, h) in batch.indices.iter().zip(hyps) {
            out[*row] = h;
        }
    }
    Ok(out)
}
