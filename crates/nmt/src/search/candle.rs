//! The candle model as a [`Scorer`]: the reference search and the path for GPUs and dtypes
//! other than `f32`. A step is [`Seq2Seq::decode_step`] on the live rows, states `(R, L·w)`
//! tensors on the model's device; the encoding `(B, …)` is gathered to the rows' sentences
//! each step (`Encoded::select`), and the log-probabilities come to the host for the choice.
use candle_core::{DType, Tensor};
use nmt_data::batch::Batch;

use super::scorer::{best_of_full, Pick, Rows, Scored, ScoredFull, Scorer};
use crate::error::Result;
use crate::model::decoder::Encoded;
use crate::model::{BatchTensors, Seq2Seq};

impl Seq2Seq {
    /// Row indices as a `u32` tensor on the model's device.
    fn row_index(&self, idx: impl Iterator<Item = usize>) -> Result<Tensor> {
        let v: Vec<u32> = idx.map(|i| i as u32).collect();
        let n = v.len();
        Ok(Tensor::from_vec(v, n, self.device())?)
    }

    /// One step on the rows: new states, `log p` `(R, V_ext)` row-major (the vocabulary and a
    /// copy model's extended ids) and attention `(R, S)`.
    fn rows_step(&self, enc: &ScorerEncoded, states: &Tensor, rows: &Rows<'_>, alpha: bool) -> Result<ScoredFull<Tensor>> {
        let shortlist = enc.shortlist.as_deref();
        let enc = enc.enc.select(&self.row_index(rows.sent.iter().copied())?)?;
        let y = Tensor::from_vec(rows.y.to_vec(), rows.y.len(), self.device())?;
        let out = self.decode_step(&enc, states, &y)?;
        let mut log_probs = out.log_probs.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if let Some(ids) = shortlist {
            let width = log_probs.len() / rows.y.len().max(1);
            for row in log_probs.chunks_exact_mut(width.max(1)) {
                renormalise(row, ids);
            }
        }
        let alpha = match (&out.alpha, alpha) {
            (Some(a), true) => Some(a.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?),
            _ => None,
        };
        Ok(ScoredFull { states: out.state, log_probs, alpha })
    }
}

/// A shortlisted distribution from a full one, in place: `log p(y) − log Σ_{c ∈ ids} p(c)` on
/// `ids` (sorted), −∞ elsewhere; the same as a softmax over the shortlist's logits.
fn renormalise(row: &mut [f32], ids: &[u32]) {
    let max = ids.iter().map(|&w| row[w as usize]).fold(f32::NEG_INFINITY, f32::max);
    let lse = max + ids.iter().map(|&w| (row[w as usize] - max).exp()).sum::<f32>().ln();
    let mut next = ids.iter().peekable();
    for (j, v) in row.iter_mut().enumerate() {
        if next.next_if(|&&w| w as usize == j).is_some() {
            *v -= lse;
        } else {
            *v = f32::NEG_INFINITY;
        }
    }
}

/// The candle scorer's encoded batch: the model's encoding and the batch's shortlist.
pub struct ScorerEncoded {
    enc: Encoded,
    shortlist: Option<Vec<u32>>,
}

impl Scorer for Seq2Seq {
    type Encoded = ScorerEncoded;
    type States = Tensor;

    fn reads_reversed(&self) -> bool {
        self.cfg.reverse_source
    }

    fn has_attention(&self) -> bool {
        Seq2Seq::has_attention(self)
    }

    fn vocab_size(&self) -> usize {
        self.cfg.tgt_vocab
    }

    fn encode(&self, batch: &Batch, shortlist: Option<&[u32]>) -> Result<ScorerEncoded> {
        let mut enc = Seq2Seq::encode(self, batch)?;
        if let Some(ext) = BatchTensors::source_ext(batch, self.device())? {
            self.attach_copy_source(&mut enc, &ext)?;
        }
        Ok(ScorerEncoded { enc, shortlist: shortlist.map(<[u32]>::to_vec) })
    }

    fn start(&self, enc: &ScorerEncoded, sent: &[usize]) -> Result<Tensor> {
        Ok(enc.enc.init.index_select(&self.row_index(sent.iter().copied())?, 0)?)
    }

    fn step(&self, enc: &ScorerEncoded, states: &Tensor, rows: &Rows<'_>, pick: &Pick<'_>) -> Result<Scored<Tensor>> {
        let out = self.rows_step(enc, states, rows, pick.alpha)?;
        let width = out.log_probs.len() / rows.y.len().max(1);
        let best = best_of_full(&out.log_probs, width, pick.want, pick.skip);
        Ok(Scored { states: out.states, best, alpha: out.alpha })
    }

    fn step_full(&self, enc: &ScorerEncoded, states: &Tensor, rows: &Rows<'_>, width: usize, alpha: bool) -> Result<ScoredFull<Tensor>> {
        let out = self.rows_step(enc, states, rows, alpha)?;
        let native = (out.log_probs.len() / rows.y.len().max(1)).max(1);
        let log_probs = out
            .log_probs
            .chunks_exact(native)
            .flat_map(|row| row.iter().copied().chain(std::iter::repeat(f32::NEG_INFINITY)).take(width))
            .collect();
        Ok(ScoredFull { log_probs, ..out })
    }

    fn gather(&self, states: &Tensor, idx: &[usize]) -> Result<Tensor> {
        Ok(states.index_select(&self.row_index(idx.iter().copied())?, 0)?)
    }
}
