//! The training softmax over a batch's candidate words (`train.candidates`; Jean, Cho, Memisevic
//! and Bengio 2015, "On Using Very Large Target Vocabulary for Neural Machine Translation", §3
//! and GroundHog's implementation).
//!
//! Training normalises `p(y_i | …)` over a candidate list `V′ ⊂ V` instead of the whole
//! target vocabulary:
//!
//! ```text
//! V′     = { the batch's target ids } ∪ { the `frequent` most frequent target types }
//!          ∪ { <unk>, </s> } ∪ S,  S: `sampled` ids drawn uniformly from the rest R  (sorted)
//! nll_r  = lse_{k∈V′}(z_rk) − (1−ε) z_r,y_r − ε · mean_{k∈V′}(z_rk),
//! z      = t G′ + b_G′ − log Q,   Q(k) = 1 off S, |S| / |R| on S
//! ```
//!
//! with `G′ (l, |V′|)` and `b_G′` the columns of `G` and `b_G` at `V′` (with tied embeddings the
//! rows of `E`). Every target of the batch is in `V′`, so without draws the importance weights
//! of the paper's eq. 10 are all equal and cancel: the loss is the plain softmax over `V′`;
//! the draws carry their weight `log(|R| / |S|)` ([`Candidates::for_batch`]). Label smoothing
//! spreads `ε/|V′|` over `V′`. The gradient reaches only `V′`'s columns of
//! `G` and `b_G`; the others keep their values (Adam still moves them by their moments).
//!
//! **Only the training loss sees `V′`.** The list lives in [`Regularizer`](super::regularizer::Regularizer),
//! which only the training step builds: validation loss, dev BLEU, every search, `nmt score` and
//! the model file use the full softmax over `V` (the paper's decoding uses the full softmax too).
//!
//! **Implementation.** No second softmax: `V′`'s columns are gathered with `index_select`
//! (its backward pass is the scatter: candle's `index_add` into the full gradient), the target
//! ids are remapped into `V′`, and the one projection-and-loss op runs on the gathered matrix
//! (`kernels::cpu::proj_nll` in the fused forms, bf16 where the full op is; the composed
//! `linear`/`logsumexp`/`gather` twin otherwise, on candle's GPU path too). With `V′ = V` in
//! order the gathered matrix is the matrix, so the loss and gradients are the full op's bit for
//! bit (`tests/candidates.rs`). The gather of `V′ × l` floats and the scatter's full-size add
//! are a few MB a step against the `rows × V × l` products they replace.
use std::sync::Arc;

use candle_core::Tensor;
use nmt_data::{EOS, PAD, UNK};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::CandidatesConfig;
use crate::error::{Error, Result};

/// What a run's candidate lists are made of: the most frequent target types (counted once per
/// run, [`frequent_types`]) and the number of uniform draws per batch.
#[derive(Clone, Debug)]
pub struct CandidateSpec {
    /// The `frequent` most frequent target ids, in any order.
    pub frequent: Arc<Vec<u32>>,
    /// Ids drawn uniformly from the vocabulary per batch.
    pub sampled: usize,
    /// The target vocabulary size `K_y`.
    pub vocab: usize,
}

/// One batch's candidate list `V′`, sorted, and each vocabulary id's position in it.
#[derive(Clone, Debug)]
pub struct Candidates {
    ids: Vec<u32>,
    /// `pos[w]`: `w`'s index in `ids`, `u32::MAX` when `w ∉ V′`.
    pos: Vec<u32>,
    /// `−log Q(k)` per entry of `ids`, added to its logit: 0 for the words always in `V′`,
    /// `log(|R| / |S|)` for the uniform draws `S` from the rest `R` (see [`Candidates::for_batch`]);
    /// `None` without draws.
    log_weights: Option<Vec<f32>>,
}

impl Candidates {
    /// `V′` from explicit ids below `vocab` (sorted and deduplicated here).
    pub fn from_ids(mut ids: Vec<u32>, vocab: usize) -> Result<Self> {
        if let Some(&w) = ids.iter().find(|&&w| w as usize >= vocab) {
            return Err(Error::Config(format!("candidate id {w} is outside the vocabulary of {vocab}")));
        }
        ids.sort_unstable();
        ids.dedup();
        let mut pos = vec![u32::MAX; vocab];
        for (i, &w) in ids.iter().enumerate() {
            pos[w as usize] = i as u32;
        }
        Ok(Candidates { ids, pos, log_weights: None })
    }

    /// The list of a batch whose targets (padding included) are `targets`: see the module doc.
    ///
    /// The draws `S` are `spec.sampled` distinct ids taken uniformly, without replacement, from
    /// the rest `R = V ∖ (targets ∪ frequent ∪ specials)`, and each carries the importance weight
    /// of the paper's eq. 10 with `Q(k) = |S| / |R|`: its logit gains `log(|R| / |S|)`, so that
    /// `Σ_{k∈V′} exp(z_k − log Q(k))` is an unbiased estimate of the full normaliser. Without
    /// the weight the draws only add a few negatives and the words never drawn keep the mass the
    /// full softmax would have taken from them (measured: dev loss 3.51 against 2.94 at 1 250
    /// updates, docs/RESULTS.md). `sampled ≥ |R|` draws all of `R` with weight 1: the full
    /// softmax. The draws are a function of `(seed, step)`, like the dropout masks, so a resumed
    /// run draws the same lists.
    pub fn for_batch(targets: &[u32], spec: &CandidateSpec, seed: u64, step: u64) -> Result<Self> {
        let mut ids: Vec<u32> = targets.to_vec();
        ids.extend(spec.frequent.iter().copied());
        // `</s>` ends every sentence and `<unk>` stands for any unseen word at search time;
        // `<pad>` is a target only at masked rows and joins `V′` only through them.
        ids.extend([UNK, EOS].into_iter().filter(|&w| (w as usize) < spec.vocab));
        let fixed = Self::from_ids(ids, spec.vocab)?;
        if spec.sampled == 0 {
            return Ok(fixed);
        }
        let rest: Vec<u32> = (0..spec.vocab as u32).filter(|&w| fixed.pos[w as usize] == u32::MAX).collect();
        let n = spec.sampled.min(rest.len());
        if n == 0 {
            return Ok(fixed);
        }
        let key = seed.wrapping_mul(0xA076_1D64_78BD_642F) ^ step.wrapping_add(0xE703_7ED1_A0B4_28DB);
        let mut rng = ChaCha8Rng::seed_from_u64(key);
        let drawn = rand::seq::index::sample(&mut rng, rest.len(), n).into_iter().map(|i| rest[i]);
        let mut all = Self::from_ids(fixed.ids.iter().copied().chain(drawn).collect(), spec.vocab)?;
        let weight = (rest.len() as f64 / n as f64).ln() as f32;
        all.log_weights = Some(all.ids.iter().map(|&w| if fixed.pos[w as usize] == u32::MAX { weight } else { 0.0 }).collect());
        Ok(all)
    }

    /// `−log Q(k)` for each entry of `V′` (the draws' importance weights), or `None` when every
    /// entry has weight one.
    pub fn log_weights(&self) -> Option<&[f32]> {
        self.log_weights.as_deref()
    }

    /// A list for a batch without a corpus (`nmt bench --candidates K`): its `targets`, `<unk>`,
    /// `</s>`, the first `cfg.frequent` word ids (4, 5, …) in place of the most frequent types,
    /// and `cfg.sampled` draws; only `|V′|` matters to a timing.
    pub fn first_words(targets: &[u32], cfg: &CandidatesConfig, vocab: usize) -> Result<Self> {
        let first = (EOS + 1..(EOS as usize + 1 + cfg.frequent).min(vocab) as u32).collect();
        Self::for_batch(targets, &CandidateSpec { frequent: Arc::new(first), sampled: cfg.sampled, vocab }, 1, 0)
    }

    /// `|V′|`.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether `V′` is empty (never, for a batch with a target).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The sorted ids of `V′`.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// `V′` as a u32 tensor on `device`, for `index_select`.
    pub fn ids_tensor(&self, device: &candle_core::Device) -> Result<Tensor> {
        Ok(Tensor::from_slice(&self.ids, self.ids.len(), device)?)
    }

    /// Vocabulary ids remapped to their positions in `V′`; an error for an id outside it (a
    /// list built for another batch).
    pub fn remap(&self, targets: &[u32]) -> Result<Vec<u32>> {
        targets
            .iter()
            .map(|&w| match self.pos.get(w as usize) {
                Some(&p) if p != u32::MAX => Ok(p),
                _ => Err(Error::Config(format!("target id {w} is not in this batch's candidate list"))),
            })
            .collect()
    }
}

/// The `k` most frequent target ids over up to `cap` pairs spread evenly through the corpus
/// (`target(i)` reads pair `i`'s target ids), ties to the smaller id; `<pad>` and `<s>` never
/// count. A full pass over a corpus of millions of pairs would cost more than the list is
/// worth; that 200 000 pairs rank the frequent types as the whole corpus would is assumed, not
/// measured (the bundled corpus has 25 190, all counted). The ranking is the shortlist's
/// (`nmt_data::shortlist::most_frequent`).
pub fn frequent_types(
    pairs: usize,
    vocab: usize,
    k: usize,
    cap: usize,
    mut target: impl FnMut(usize) -> Result<Vec<u32>>,
) -> Result<Vec<u32>> {
    let mut count = vec![0u64; vocab];
    let stride = pairs.div_ceil(cap.max(1)).max(1);
    for i in (0..pairs).step_by(stride) {
        for w in target(i)? {
            if (w as usize) < vocab && w != PAD && w != nmt_data::BOS {
                count[w as usize] += 1;
            }
        }
    }
    Ok(nmt_data::shortlist::most_frequent(&count, k))
}

/// The spec of a run's lists from its config, counting the frequent types with
/// [`frequent_types`] over at most 200 000 pairs.
pub fn spec(cfg: &CandidatesConfig, pairs: usize, vocab: usize, target: impl FnMut(usize) -> Result<Vec<u32>>) -> Result<CandidateSpec> {
    let frequent = frequent_types(pairs, vocab, cfg.frequent, 200_000, target)?;
    Ok(CandidateSpec { frequent: Arc::new(frequent), sampled: cfg.sampled, vocab })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_list_holds_its_targets_the_frequent_types_and_the_specials() {
        let spec = CandidateSpec { frequent: Arc::new(vec![9, 4]), sampled: 0, vocab: 20 };
        let c = Candidates::for_batch(&[7, 5, EOS, 7, PAD], &spec, 1, 1).unwrap();
        assert_eq!(c.ids(), &[PAD, UNK, EOS, 4, 5, 7, 9]);
        assert_eq!(c.remap(&[7, 9, PAD]).unwrap(), vec![5, 6, 0]);
        assert!(c.remap(&[8]).is_err());
        let drawn = CandidateSpec { sampled: 5, ..spec };
        let (a, b) = (Candidates::for_batch(&[7], &drawn, 1, 3).unwrap(), Candidates::for_batch(&[7], &drawn, 1, 3).unwrap());
        assert_eq!(a.ids(), b.ids(), "the draws are a function of (seed, step)");
        // Fixed: 4, 7, 9, <unk>, </s>; the rest 15 words, 5 of them drawn with weight ln 3.
        assert_eq!(a.len(), 10);
        let lw = a.log_weights().unwrap();
        for (&w, &x) in a.ids().iter().zip(lw) {
            let want = if [4, 7, 9, UNK, EOS].contains(&w) { 0.0 } else { 3f32.ln() };
            assert_eq!(x, want, "word {w}");
        }
        let all = Candidates::for_batch(&[7], &CandidateSpec { sampled: 100, ..drawn }, 1, 3).unwrap();
        assert_eq!(all.len(), 20);
        assert!(all.log_weights().unwrap().iter().all(|&x| x == 0.0), "drawing all of the rest: weight one");
        assert!(Candidates::from_ids(vec![20], 20).is_err());
    }

    /// With the weights, `Σ_{k∈V′} exp(z_k − log Q(k))` estimates the full `Σ_k exp(z_k)` without
    /// bias: the mean over many batches' draws is within 1 % of it.
    #[test]
    fn the_weighted_draws_estimate_the_full_normaliser() {
        let vocab = 60;
        let z: Vec<f64> = (0..vocab).map(|k| ((k * 37 % 17) as f64 / 4.0) - 2.0).collect();
        let full: f64 = z.iter().map(|x| x.exp()).sum();
        let spec = CandidateSpec { frequent: Arc::new(vec![10, 11, 12]), sampled: 6, vocab };
        let runs = 20_000;
        let mut mean = 0.0;
        for step in 0..runs {
            let c = Candidates::for_batch(&[5, 6], &spec, 7, step).unwrap();
            let lw = c.log_weights().unwrap();
            mean += c.ids().iter().zip(lw).map(|(&w, &x)| (z[w as usize] + x as f64).exp()).sum::<f64>() / runs as f64;
        }
        assert!((mean / full - 1.0).abs() < 0.01, "{mean} against {full}");
    }

    #[test]
    fn the_frequent_types_are_counted_and_ranked() {
        let corpus = [vec![5, 6, 6, EOS], vec![6, 7, EOS], vec![nmt_data::BOS, 7, EOS]];
        let top = frequent_types(corpus.len(), 10, 3, 1000, |i| Ok(corpus[i].clone())).unwrap();
        assert_eq!(top, vec![EOS, 6, 7]);
    }
}
