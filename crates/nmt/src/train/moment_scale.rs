//! `train.candidates.scale_moments`: the optimiser's moments of the output layer's per-word
//! parameters under the candidate softmax (`model/candidates.rs`).
//!
//! A word drawn into `V′` with probability `Q(k)` enters the normaliser with the weight
//! `1/Q(k)`, so its column of `G` (row of the tied `E`) and its `b_G` get the gradient `g/Q(k)`
//! when drawn and none otherwise: unbiased, but with the mean square `g²/Q(k)`. Adam (and
//! Adadelta) divide each coordinate by the root of that mean square, so a drawn word moves about
//! `√Q(k)` as far per update as under the full softmax: 0.37× for the uniform list's 1 000 draws
//! from ~7 200 words. Multiplying the drawn word's `g²` by `Q(k)` restores the full softmax's
//! mean square, `E[Q(k) · (g/Q(k))² · 1_drawn] = g²`, while the first moment keeps its unbiased
//! mean `g` (Kingma & Ba 2015, algorithm 1, with `v_t ← β₂ v_{t−1} + (1−β₂) Q(k) g_t²`).
//!
//! The words always in `V′` (the batch's targets, the frequent types, `<unk>`, `</s>`) have
//! `Q = 1`; the words outside it have no gradient this update. With tied embeddings `E`'s rows
//! also carry the decoder's input gradient, but only for the words it reads, the batch's targets
//! (`Q = 1`). With several ranks each rank draws its own list, so the factors would not be the
//! summed gradient's: `Backend::training_step` refuses that.
use candle_core::{Tensor, TensorId, Var};

use crate::config::CandidatesConfig;
use crate::error::Result;
use crate::kernels::shapes::update_rule::MomentFactors;
use crate::model::{Candidates, Seq2Seq};

/// Factors on one parameter's squared gradient for one update: element `i` takes
/// `factors[(i / inner) % factors.len()]` ([`MomentFactors`]).
#[derive(Clone, Debug)]
pub struct MomentScale {
    /// The parameter (its tensor's id).
    pub param: TensorId,
    pub factors: Vec<f32>,
    pub inner: usize,
}

impl MomentScale {
    /// The factors as the kernel reads them.
    pub(super) fn view(&self) -> MomentFactors<'_> {
        MomentFactors { factors: &self.factors, inner: self.inner }
    }

    /// The factors laid out element by element as `var`, for the composed update.
    pub(super) fn tensor(&self, var: &Var) -> Result<Tensor> {
        let f = self.view();
        let all: Vec<f32> = (0..var.elem_count()).map(|i| f.at(i)).collect();
        Ok(Tensor::from_vec(all, var.shape(), var.device())?.to_dtype(var.dtype())?)
    }
}

/// The factors `Q(k)` of this update's list for `model`'s per-word parameters. None without a
/// list, with `scale_moments` off, or without draws (every word of `V′` then has `Q = 1`): the
/// trainer and `nmt bench` both decide here, so the two cannot part.
pub(crate) fn moment_scales(model: &Seq2Seq, cands: Option<&Candidates>, config: Option<&CandidatesConfig>) -> Result<Vec<MomentScale>> {
    let (Some(cands), true) = (cands, config.is_some_and(|c| c.scale_moments)) else { return Ok(Vec::new()) };
    let Some(lw) = cands.log_weights() else { return Ok(Vec::new()) };
    let mut factors = vec![1f32; model.cfg.tgt_vocab];
    for (&k, &x) in cands.ids().iter().zip(lw) {
        // `x = −log Q(k)`.
        factors[k as usize] = (-x).exp();
    }
    let params = model.word_params()?;
    Ok(params.iter().map(|&(t, inner)| MomentScale { param: t.id(), factors: factors.clone(), inner }).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use candle_core::{DType, Device};

    use super::*;
    use crate::config::ModelConfig;
    use crate::model::CandidateSpec;

    /// A drawn word's factor is its chance of being drawn, `|S|/|R|` for uniform draws; the
    /// others' is 1; the factors address `E`'s rows when tied and `G`'s columns when not.
    #[test]
    fn the_factors_are_the_draws_chances_on_the_words_parameters() {
        for tied in [true, false] {
            let cfg = ModelConfig { tie_target_embeddings: tied, ..ModelConfig::preset("tiny").unwrap() };
            let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
            let vocab = cfg.tgt_vocab;
            let spec = CandidateSpec { frequent: Arc::new(vec![4, 5]), sampled: 6, vocab, proposal: None };
            let c = Candidates::for_batch(&[7, 8], &spec, 1, 2).unwrap();
            let on = CandidatesConfig { scale_moments: true, ..CandidatesConfig::default() };
            let scales = moment_scales(&model, Some(&c), Some(&on)).unwrap();
            let off = CandidatesConfig { scale_moments: false, ..on };
            assert!(moment_scales(&model, Some(&c), Some(&off)).unwrap().is_empty());
            assert!(moment_scales(&model, None, Some(&on)).unwrap().is_empty());
            let rest = (vocab - 6) as f32; // all but 4, 5, 7, 8, <unk>, </s>
            let drawn: Vec<u32> = c.ids().iter().copied().filter(|w| ![4, 5, 7, 8, nmt_data::UNK, nmt_data::EOS].contains(w)).collect();
            assert_eq!(drawn.len(), 6);
            for s in &scales {
                for k in 0..vocab as u32 {
                    let want = if drawn.contains(&k) { 6.0 / rest } else { 1.0 };
                    assert!((s.factors[k as usize] - want).abs() < 1e-6, "word {k}: {}", s.factors[k as usize]);
                }
            }
            let [(w, inner), (b, _)] = model.word_params().unwrap();
            assert_eq!((scales[0].param, scales[1].param), (w.id(), b.id()));
            assert_eq!(inner, if tied { cfg.emb_dim } else { 1 });
            assert_eq!(w.dims(), if tied { [vocab, cfg.emb_dim] } else { [cfg.maxout_dim, vocab] });
            let none = Candidates::for_batch(&[7, 8], &CandidateSpec { sampled: 0, ..spec }, 1, 2).unwrap();
            assert!(moment_scales(&model, Some(&none), Some(&on)).unwrap().is_empty());
        }
    }
}
