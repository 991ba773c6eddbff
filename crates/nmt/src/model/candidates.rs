//! The training softmax over a batch's candidate words (`train.candidates`; Jean, Cho, Memisevic
//! and Bengio 2015, "On Using Very Large Target Vocabulary for Neural Machine Translation", §3
//! and GroundHog's implementation).
//!
//! Training normalises `p(y_i | …)` over a candidate list `V′ ⊂ V` instead of the whole
//! target vocabulary:
//!
//! ```text
//! V′     = { the batch's target ids } ∪ { the `frequent` most frequent target types }
//!          ∪ { <unk>, </s> } ∪ S,  S: ids drawn from the rest R by `proposal`  (sorted)
//! nll_r  = lse_{k∈V′}(z_rk) − (1−ε) z_r,y_r − ε · mean_{k∈V′}(z_rk),
//! z      = t G′ + b_G′ − log Q,   Q(k) = 1 off S, P(k ∈ S) on S
//! ```
//!
//! with `G′ (l, |V′|)` and `b_G′` the columns of `G` and `b_G` at `V′` (with tied embeddings the
//! rows of `E`). Every target of the batch is in `V′`, so without draws the importance weights
//! of the paper's eq. 10 are all equal and cancel: the loss is the plain softmax over `V′`;
//! the draws carry their weight `−log P(k ∈ S)`, `log(|R| / |S|)` when uniform ([`Candidates::for_batch`]). Label smoothing
//! spreads `ε/|V′|` over `V′` (weighting it like the normaliser, so that it estimated the full
//! softmax's `ε/K_y` without bias, was measured and did not learn faster: docs/RESULTS.md).
//! The gradient reaches only `V′`'s columns of
//! `G` and `b_G`; the others keep their values (Adam still moves them by their moments).
//!
//! **Only the training loss sees `V′`.** The list lives in [`Regularizer`](super::regularizer::Regularizer),
//! which only the training step builds: validation loss, dev BLEU, every search, `nmt score` and
//! the model file use the full softmax over `V` (the paper's decoding uses the full softmax too).
//!
//! **Implementation.** No second softmax: `V′`'s columns are gathered (in the fused forms by
//! the CPU ops of `kernels::cpu::lookup`, whose backward pass scatters into one zeroed
//! full-size gradient; elsewhere by candle's `index_select`, whose backward pass is
//! `index_add`), the target ids are remapped into `V′`, and the one projection-and-loss op
//! runs on the gathered matrix (`kernels::cpu::proj_nll` in the fused forms, bf16 where the
//! full op is; the composed `linear`/`logsumexp`/`gather` twin otherwise, on candle's GPU path
//! too). With `V′ = V` in order the gathered matrix is the matrix, so the loss and gradients are
//! the full op's bit for bit (`tests/candidates.rs`). The gather of `V′ × l` floats and the
//! scatter are a few MB a step against the `rows × V × l` products they replace.
//!
//! **What the list costs per update** (docs/RESULTS.md, "Learning per update"): around update
//! 1 500 the shipped list's dev BLEU is about 1 below the full softmax's (two seeds). Neither
//! label smoothing weighted like the normaliser nor the unigram proposal closed it; the unigram
//! proposal halved the dev-loss gap. Adam divides each coordinate by the root of its mean
//! squared gradient, so a word in `V′` with probability `π` and weight `1/π` moves about `√π` as
//! far as under the full softmax; `scale_moments` (`train/moment_scale.rs`) undoes that: the
//! gap around 1 500 becomes −0.75, −0.38 and +0.87 (three seeds on an AVX2 EPYC, mean −0.09),
//! and +0.01 around 5 000 (one seed); but the plain list is within noise of it per update on
//! the same CPU (three seeds around 1 500, one around 5 000) and at equal minutes in the demo,
//! so the recipe leaves it off: docs/RESULTS.md, "Quality per minute".
use std::sync::Arc;

use candle_core::Tensor;
use nmt_data::{EOS, PAD, UNK};
use rand::distributions::{Distribution, WeightedIndex};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::attention::composed_nll;
use super::backend::Backend;
use crate::config::{CandidatesConfig, Proposal};
use crate::error::{Error, Result};
use crate::kernels::cpu::lookup::columns_op;
use crate::kernels::shapes::proj_weight::ProjWeight;

/// What a run's candidate lists are made of: the most frequent target types (counted once per
/// run, [`spec`]) and the number of uniform draws per batch.
#[derive(Clone, Debug)]
pub struct CandidateSpec {
    /// The `frequent` most frequent target ids, in any order.
    pub frequent: Arc<Vec<u32>>,
    /// Ids drawn uniformly from the vocabulary per batch.
    pub sampled: usize,
    /// The target vocabulary size `K_y`.
    pub vocab: usize,
    /// The draws' proposal weights per vocabulary id ([`unigram_weights`], `proposal =
    /// "unigram"`), or `None`: distinct ids drawn uniformly.
    pub proposal: Option<Arc<Vec<f64>>>,
}

/// word2vec's smoothed unigram proposal: `(count + 1)^0.75` per id, so every id can be drawn.
pub fn unigram_weights(counts: &[u64]) -> Vec<f64> {
    counts.iter().map(|&c| (c as f64 + 1.0).powf(0.75)).collect()
}

/// One batch's candidate list `V′`, sorted, and each vocabulary id's position in it.
#[derive(Clone, Debug)]
pub struct Candidates {
    ids: Vec<u32>,
    /// `pos[w]`: `w`'s index in `ids`, `u32::MAX` when `w ∉ V′`.
    pos: Vec<u32>,
    /// `−log Q(k)` per entry of `ids`, added to its logit: 0 for the words always in `V′`,
    /// `−log P(k ∈ S)` for the draws `S` from the rest `R` (see [`Candidates::for_batch`]);
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
    /// softmax.
    ///
    /// With a unigram proposal (`spec.proposal`) the `sampled` draws are taken with replacement,
    /// each `k ∈ R` with probability `q_k ∝ spec.proposal[k]`, and the distinct ids kept; each
    /// carries `Q(k) = P(k ∈ S) = 1 − (1 − q_k)^n`, its probability of being drawn at least once
    /// (the Horvitz–Thompson weight, again an unbiased estimate of the normaliser). The words
    /// that carry most of the normaliser are then drawn nearly always, with weights near one;
    /// the uniform draws' weight of `log(|R|/|S|)` ≈ 2 on every draw makes each draw's
    /// gradient several times its expected value.
    ///
    /// The draws are a function of `(seed, step)`, like the dropout masks, so a resumed run
    /// draws the same lists.
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
        if rest.is_empty() {
            return Ok(fixed);
        }
        let key = seed.wrapping_mul(0xA076_1D64_78BD_642F) ^ step.wrapping_add(0xE703_7ED1_A0B4_28DB);
        let mut rng = ChaCha8Rng::seed_from_u64(key);
        // Each draw and its `−log P(k ∈ S)`.
        let drawn: Vec<(u32, f32)> = match &spec.proposal {
            None => {
                let n = spec.sampled.min(rest.len());
                let weight = (rest.len() as f64 / n as f64).ln() as f32;
                rand::seq::index::sample(&mut rng, rest.len(), n).into_iter().map(|i| (rest[i], weight)).collect()
            }
            Some(p) => {
                let w: Vec<f64> = rest.iter().map(|&k| p[k as usize]).collect();
                let total: f64 = w.iter().sum();
                let dist = WeightedIndex::new(&w).map_err(|e| Error::Config(format!("candidate proposal: {e}")))?;
                let mut seen = vec![false; rest.len()];
                (0..spec.sampled).for_each(|_| seen[dist.sample(&mut rng)] = true);
                // `P(k ∈ S) = 1 − (1 − q_k)^n` after `n` draws with replacement.
                let n = spec.sampled as f64;
                let kept = seen.iter().zip(&rest).zip(&w).filter(|((&s, _), _)| s);
                kept.map(|((_, &k), &wk)| (k, -(-(n * (-wk / total).ln_1p()).exp_m1()).ln() as f32)).collect()
            }
        };
        let mut weight_of = vec![0f32; spec.vocab];
        drawn.iter().for_each(|&(k, x)| weight_of[k as usize] = x);
        let mut all = Self::from_ids(fixed.ids.iter().copied().chain(drawn.iter().map(|d| d.0)).collect(), spec.vocab)?;
        all.log_weights = Some(all.ids.iter().map(|&w| weight_of[w as usize]).collect());
        Ok(all)
    }

    /// `−log Q(k)` for each entry of `V′` (the draws' importance weights), or `None` when every
    /// entry has weight one.
    pub fn log_weights(&self) -> Option<&[f32]> {
        self.log_weights.as_deref()
    }

    /// A list for a batch without a corpus (`nmt bench --candidates K`): its `targets`, `<unk>`,
    /// `</s>`, the first `cfg.frequent` word ids (4, 5, …) in place of the most frequent types,
    /// and `cfg.sampled` draws (by unigram: counts falling as `1/(id+1)`); only `|V′|` matters
    /// to a timing.
    pub fn first_words(targets: &[u32], cfg: &CandidatesConfig, vocab: usize) -> Result<Self> {
        let first = (EOS + 1..(EOS as usize + 1 + cfg.frequent).min(vocab) as u32).collect();
        // Zipf's law stands in for a corpus's counts under the unigram proposal.
        let zipf = || Arc::new(unigram_weights(&(0..vocab as u64).map(|k| 1_000_000 / (k + 1)).collect::<Vec<_>>()));
        let proposal = (cfg.proposal == Proposal::Unigram).then(zipf);
        Self::for_batch(targets, &CandidateSpec { frequent: Arc::new(first), sampled: cfg.sampled, vocab, proposal }, 1, 0)
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

impl Candidates {
    /// Teacher forcing's `−log p(y) (rows)` over `V′` ([`DeepOutput::nll`](super::output::DeepOutput::nll)
    /// with a list): `w` is `E (K_y, l)` when `tied`, else `G (l, K_y)`. `V′`'s columns of `w`
    /// and `b_G` are gathered, the draws' weights join the bias, the targets are remapped, and
    /// the one projection-and-loss op runs on the gathered matrix (its composed twin without
    /// kernels).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn nll(
        &self,
        t: &Tensor,
        w: &Tensor,
        tied: bool,
        b_g: &Tensor,
        targets: &Tensor,
        eps: f64,
        backend: Backend,
    ) -> Result<Tensor> {
        let ids = self.ids_tensor(t.device())?;
        let targets = self.remap(&targets.to_vec1::<u32>()?)?;
        let mut b = b_g.index_select(&ids, 0)?;
        if let Some(lw) = self.log_weights() {
            // The draws' importance weights `−log Q(k)`: a constant added to their logits,
            // through the bias the op reads.
            b = (b + Tensor::from_slice(lw, lw.len(), t.device())?.to_dtype(t.dtype())?)?;
        }
        // `E′ (|V′|, l)`: rows of `E`, contiguous, read as `G′ᵀ` with no copy; or `G′ (l, |V′|)`.
        // The CPU ops scatter the gradient into one zeroed buffer (`kernels::cpu::lookup`); a
        // GPU runs candle's gather (its lookup twin was never run on one).
        let w = match (tied, backend.fused()) {
            (true, true) => backend.lookup(w, &self.ids, None)?,
            (false, true) => columns_op(w, &self.ids)?,
            _ => w.index_select(&ids, if tied { 0 } else { 1 })?,
        };
        Ok(match (tied, backend.kernels()) {
            (true, true) => backend.proj_nll(t, ProjWeight::Vk(&w), &b, &targets, eps)?,
            (false, true) => backend.proj_nll(t, ProjWeight::Kv(&w), &b, &targets, eps)?,
            (tied, false) => {
                let targets = Tensor::from_vec(targets, t.dim(0)?, t.device())?;
                composed_nll(&t.matmul(&if tied { w.t()? } else { w })?.broadcast_add(&b)?, &targets, eps)?
            }
        })
    }
}

/// Each target id's count over up to `cap` pairs spread evenly through the corpus
/// (`target(i)` reads pair `i`'s target ids); `<pad>` and `<s>` never
/// count. A full pass over a corpus of millions of pairs would cost more than the list is
/// worth; that 200 000 pairs rank the frequent types as the whole corpus would is assumed, not
/// measured (the bundled corpus has 25 190, all counted). The ranking is the shortlist's
/// (`nmt_data::shortlist::most_frequent`).
fn type_counts(pairs: usize, vocab: usize, cap: usize, mut target: impl FnMut(usize) -> Result<Vec<u32>>) -> Result<Vec<u64>> {
    let mut count = vec![0u64; vocab];
    let stride = pairs.div_ceil(cap.max(1)).max(1);
    for i in (0..pairs).step_by(stride) {
        for w in target(i)? {
            if (w as usize) < vocab && w != PAD && w != nmt_data::BOS {
                count[w as usize] += 1;
            }
        }
    }
    Ok(count)
}

/// The spec of a run's lists from its config, counting the target types over at most 200 000
/// pairs: the `frequent` most frequent (ties to the smaller id), and the unigram proposal.
pub fn spec(cfg: &CandidatesConfig, pairs: usize, vocab: usize, target: impl FnMut(usize) -> Result<Vec<u32>>) -> Result<CandidateSpec> {
    let counts = type_counts(pairs, vocab, 200_000, target)?;
    let frequent = nmt_data::shortlist::most_frequent(&counts, cfg.frequent);
    let proposal = (cfg.proposal == Proposal::Unigram).then(|| Arc::new(unigram_weights(&counts)));
    Ok(CandidateSpec { frequent: Arc::new(frequent), sampled: cfg.sampled, vocab, proposal })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_list_holds_its_targets_the_frequent_types_and_the_specials() {
        let spec = CandidateSpec { frequent: Arc::new(vec![9, 4]), sampled: 0, vocab: 20, proposal: None };
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
    /// bias, for both proposals: the mean over many batches' draws is within 1 % of it.
    #[test]
    fn the_weighted_draws_estimate_the_full_normaliser() {
        let vocab = 60;
        let z: Vec<f64> = (0..vocab).map(|k| ((k * 37 % 17) as f64 / 4.0) - 2.0).collect();
        let full: f64 = z.iter().map(|x| x.exp()).sum();
        let uniform = CandidateSpec { frequent: Arc::new(vec![10, 11, 12]), sampled: 6, vocab, proposal: None };
        let counts: Vec<u64> = (0..vocab as u64).map(|k| k * k % 50).collect();
        let unigram = CandidateSpec { proposal: Some(Arc::new(unigram_weights(&counts))), ..uniform.clone() };
        let runs = 20_000;
        for spec in [uniform, unigram] {
            let mut mean = 0.0;
            for step in 0..runs {
                let c = Candidates::for_batch(&[5, 6], &spec, 7, step).unwrap();
                let lw = c.log_weights().unwrap();
                mean += c.ids().iter().zip(lw).map(|(&w, &x)| (z[w as usize] + x as f64).exp()).sum::<f64>() / runs as f64;
            }
            assert!((mean / full - 1.0).abs() < 0.01, "{mean} against {full} ({:?})", spec.proposal.is_some());
        }
    }

    /// With draws, the loss is `lse_{V′}(z) − (1−ε) z_y − ε mean_{V′}(z)` with the draws'
    /// weights in `z`: [`Candidates::nll`] (composed and fused, tied and not) against that sum
    /// written out in f64.
    #[test]
    fn the_drawn_lists_loss_is_the_weighted_softmax() {
        use candle_core::{DType, Device};
        let (vocab, l, rows, eps) = (30, 4, 3, 0.1);
        let spec = CandidateSpec { frequent: Arc::new(vec![10, 11]), sampled: 6, vocab, proposal: None };
        let targets = [5u32, 6, 10];
        let c = Candidates::for_batch(&targets, &spec, 3, 9).unwrap();
        let lw = c.log_weights().unwrap().to_vec();
        let dev = Device::Cpu;
        let val = |i: usize| ((i * 7919 % 23) as f64 / 11.0 - 1.0) * 0.7;
        let t: Vec<f64> = (0..rows * l).map(|i| val(i + 3)).collect();
        let e: Vec<f64> = (0..vocab * l).map(|i| val(i + 101)).collect(); // E (K_y, l)
        let bg: Vec<f64> = (0..vocab).map(|i| val(i + 57) / 3.0).collect();
        let want: Vec<f64> = (0..rows)
            .map(|r| {
                let z: Vec<f64> = c
                    .ids()
                    .iter()
                    .zip(&lw)
                    .map(|(&k, &x)| (0..l).map(|j| t[r * l + j] * e[k as usize * l + j]).sum::<f64>() + bg[k as usize] + x as f64)
                    .collect();
                let lse = z.iter().map(|v| v.exp()).sum::<f64>().ln();
                let y = c.remap(&[targets[r]]).unwrap()[0] as usize;
                lse - (1.0 - eps) * z[y] - eps * z.iter().sum::<f64>() / z.len() as f64
            })
            .collect();
        let tt = Tensor::from_vec(t.iter().map(|&x| x as f32).collect::<Vec<_>>(), (rows, l), &dev).unwrap();
        let et = Tensor::from_vec(e.iter().map(|&x| x as f32).collect::<Vec<_>>(), (vocab, l), &dev).unwrap();
        let bt = Tensor::from_vec(bg.iter().map(|&x| x as f32).collect::<Vec<_>>(), vocab, &dev).unwrap();
        let yt = Tensor::from_slice(&targets, rows, &dev).unwrap();
        for backend in [Backend::Composed, Backend::FusedF32(crate::config::Precision::F32)] {
            for (w, tied) in [(et.clone(), true), (et.t().unwrap().contiguous().unwrap(), false)] {
                let got = c.nll(&tt, &w, tied, &bt, &yt, eps, backend).unwrap().to_dtype(DType::F64).unwrap();
                for (g, w) in got.to_vec1::<f64>().unwrap().iter().zip(&want) {
                    assert!((g - w).abs() < 1e-5 * w.abs().max(1.0), "{backend:?} tied {tied}: {g} against {w}");
                }
            }
        }
    }

    #[test]
    fn the_frequent_types_are_counted_and_ranked() {
        let corpus = [vec![5, 6, 6, EOS], vec![6, 7, EOS], vec![nmt_data::BOS, 7, EOS]];
        let top = nmt_data::shortlist::most_frequent(&type_counts(corpus.len(), 10, 1000, |i| Ok(corpus[i].clone())).unwrap(), 3);
        assert_eq!(top, vec![EOS, 6, 7]);
    }
}
