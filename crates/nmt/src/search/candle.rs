//! The candle model as a [`Scorer`]: the reference search and the path for GPUs and dtypes
//! other than `f32`. A step is [`Seq2Seq::decode_step`] on the live rows, states `(R, L·w)`
//! tensors on the model's device; the encoding `(B, …)` is gathered to the rows' sentences
//! each step (`Encoded::select`), and each row's best tokens are picked where the
//! log-probabilities are (`device_best`); the whole distribution comes to the host only for a
//! shortlist or an ensemble.
use candle_core::{DType, Tensor};
use nmt_data::batch::Batch;

use super::scorer::{best_of_full, Pick, Rows, Scored, ScoredFull, Scorer};
use crate::error::Result;
use crate::kernels::cpu::row_best::RowBest;
use crate::kernels::gpu::row_best;
use crate::model::decoder::Encoded;
use crate::model::{BatchTensors, Seq2Seq};

impl Seq2Seq {
    /// Row indices as a `u32` tensor on the model's device.
    fn row_index(&self, idx: impl Iterator<Item = usize>) -> Result<Tensor> {
        let v: Vec<u32> = idx.map(|i| i as u32).collect();
        let n = v.len();
        Ok(Tensor::from_vec(v, n, self.device())?)
    }

    /// One step on the rows: new states, `log p (R, V_ext)` on the model's device (the
    /// vocabulary and a copy model's extended ids) and attention `(R, S)` on the host.
    fn rows_step(&self, enc: &ScorerEncoded, states: &Tensor, rows: &Rows<'_>, alpha: bool) -> Result<(Tensor, Tensor, Option<Vec<f32>>)> {
        let sel = enc.enc.select(rows.sent)?;
        let y = Tensor::from_vec(rows.y.to_vec(), rows.y.len(), self.device())?;
        let out = self.decode_step(&sel, states, &y)?;
        let alpha = match (&out.alpha, alpha) {
            (Some(a), true) => Some(a.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?),
            _ => None,
        };
        let (r, width) = (rows.y.len(), out.log_probs.elem_count() / rows.y.len().max(1));
        Ok((out.state, out.log_probs.to_dtype(DType::F32)?.reshape((r, width))?, alpha))
    }

    /// The whole distribution on the host, renormalised over the batch's shortlist if any.
    fn full(enc: &ScorerEncoded, lp: &Tensor) -> Result<Vec<f32>> {
        let mut log_probs = lp.flatten_all()?.to_vec1::<f32>()?;
        if let Some(ids) = enc.shortlist.as_deref() {
            let width = lp.dim(1)?;
            for row in log_probs.chunks_exact_mut(width.max(1)) {
                renormalise(row, ids);
            }
        }
        Ok(log_probs)
    }
}

/// Each row's `want[r]` best tokens of `lp (R, V)` outside `skip`, picked on `lp`'s device
/// (`kernels::gpu::row_best`): `best_of_full`'s lists, with `(R, 2k)` numbers brought to the host.
fn device_best(lp: &Tensor, want: &[usize], skip: &[u32]) -> Result<RowBest> {
    let k = want.iter().copied().max().unwrap_or(0).min(lp.dim(1)?);
    let r_n = want.len();
    if k == 0 {
        return Ok(RowBest { lse: vec![0.0; r_n], top: vec![Vec::new(); r_n] });
    }
    let picked = row_best::row_top_k(lp, k, skip)?.flatten_all()?.to_vec1::<f32>()?;
    let top = picked
        .chunks_exact(2 * k)
        .zip(want)
        .map(|(row, &w)| {
            let (vals, cols) = row.split_at(k);
            vals.iter().zip(cols).take(w).take_while(|(v, _)| **v > f32::NEG_INFINITY).map(|(&v, &c)| (v, c as u32)).collect()
        })
        .collect();
    Ok(RowBest { lse: vec![0.0; r_n], top })
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
        let (states, lp, alpha) = self.rows_step(enc, states, rows, pick.alpha)?;
        // A shortlist renormalises on the host first; a model on a GPU without its kernels
        // (`impl = "composed"`, the baseline they are measured against) picks on the host too,
        // as before the device's pick existed.
        let composed_on_gpu = !self.device().is_cpu() && !self.backend().gpu();
        let best = match enc.shortlist {
            Some(_) => best_of_full(&Self::full(enc, &lp)?, lp.dim(1)?, pick.want, pick.skip),
            None if composed_on_gpu => best_of_full(&Self::full(enc, &lp)?, lp.dim(1)?, pick.want, pick.skip),
            None => device_best(&lp, pick.want, pick.skip)?,
        };
        Ok(Scored { states, best, alpha })
    }

    fn step_full(&self, enc: &ScorerEncoded, states: &Tensor, rows: &Rows<'_>, width: usize, alpha: bool) -> Result<ScoredFull<Tensor>> {
        let (states, lp, alpha) = self.rows_step(enc, states, rows, alpha)?;
        let native = lp.dim(1)?.max(1);
        let log_probs = Self::full(enc, &lp)?
            .chunks_exact(native)
            .flat_map(|row| row.iter().copied().chain(std::iter::repeat(f32::NEG_INFINITY)).take(width))
            .collect();
        Ok(ScoredFull { states, log_probs, alpha })
    }

    fn gather(&self, states: &Tensor, idx: &[usize]) -> Result<Tensor> {
        Ok(states.index_select(&self.row_index(idx.iter().copied())?, 0)?)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};
    use rand::{Rng, SeedableRng};

    use crate::kernels::gpu::emulated::same_bits_in_any_order;
    use crate::kernels::gpu::launch::Module;
    use crate::kernels::gpu::row_best;

    /// The search's pick on the device (`top_k.rs`, run emulated) against the host's
    /// (`search::scorer::best_of_full`): the same lists, on rows with many equal values, −∞
    /// columns, skipped tokens, and `k` above a row's finite values.
    #[test]
    fn emulated_row_top_k_equals_the_hosts_pick() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(59);
        let skip = [0u32, 1, 5];
        for (r, v, k) in [(1usize, 3usize, 5usize), (9, 40, 1), (70, 1000, 5), (3, 9000, 12), (4, 6, 8)] {
            let lp: Vec<f32> = (0..r * v)
                .map(|_| if rng.gen_bool(0.2) { f32::NEG_INFINITY } else { (rng.gen_range(-80.0f32..0.0)).round() / 8.0 })
                .collect();
            let t = Tensor::from_vec(lp.clone(), (r, v), &Device::Cpu).unwrap();
            let got = same_bits_in_any_order(Module::Search, || row_best::row_top_k(&t, k, &skip).unwrap().to_vec2::<f32>().unwrap());
            let want = crate::search::scorer::best_of_full(&lp, v, &vec![k; r], &skip);
            for (row, list) in got.iter().zip(&want.top) {
                let (vals, cols) = row.split_at(k);
                let picked: Vec<(f32, u32)> =
                    vals.iter().zip(cols).take_while(|(x, _)| **x > f32::NEG_INFINITY).map(|(&x, &c)| (x, c as u32)).collect();
                assert_eq!(&picked, list, "r {r} v {v} k {k}");
                assert!(cols[picked.len()..].iter().all(|&c| c == -1.0), "r {r} v {v} k {k}: unused slots");
            }
        }
    }
}
