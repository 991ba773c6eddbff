//! Scoring given translations: `log p(y | x)` under a model, teacher-forced (Cho et al. 2014's
//! first use of the RNN Encoder-Decoder, docs/MODELS.md#scoring).
//!
//! Pairs are segmented as training segments them (`</s>` on both sides, the source in the
//! encoder's reading order, a copy model's extended ids), sorted by length into batches so that
//! padding stays small, scored, and returned in input order. A pair's score is the sum of its
//! target tokens' log-probabilities, `</s>` included: what beam search reports as a
//! hypothesis's `log_prob`.
//!
//! An ensemble's token probability is the average of its members' (`search/ensemble.rs`, which
//! decodes with the same average, so an ensemble's scores are what its search reports too):
//! `log p(y_i) = log (1/M) Σ_m p_m(y_i | y_<i, x)`.
use nmt_data::batch::{Batch, Example};
use nmt_data::EOS;

use crate::error::Result;
use crate::model::{BatchTensors, Seq2Seq};
use crate::model_file::ModelMeta;

/// One pair's score.
#[derive(Clone, Debug, PartialEq)]
pub struct PairScore {
    /// `log p(y | x)`.
    pub log_prob: f64,
    /// Each target token's `log p(y_i | y_<i, x)`, `</s>` last.
    pub tokens: Vec<f64>,
}

impl PairScore {
    /// `log p(y | x)`, divided by the target's tokens (`</s>` included) with `normalize`.
    pub fn log_prob_normalized(&self, normalize: bool) -> f64 {
        if normalize {
            self.log_prob / self.tokens.len().max(1) as f64
        } else {
            self.log_prob
        }
    }
}

/// Scores `(source, target)` text pairs under one model or the average of several (`models`,
/// sharing `meta`'s vocabularies), `batch_size` pairs per batch.
pub fn score_pairs(models: &[&Seq2Seq], meta: &ModelMeta, pairs: &[(String, String)], batch_size: usize) -> Result<Vec<PairScore>> {
    let mut per_model = Vec::with_capacity(models.len());
    for m in models {
        per_model.push(score_one(m, meta, pairs, batch_size)?);
    }
    // Copy and plain members together: a copied word outside the target vocabulary has mass
    // under the copy members only (a plain member's `<unk>` is another token), as in the
    // ensemble search; the plain members give it probability 0.
    if models.iter().any(|m| m.cfg.copy()) && models.iter().any(|m| !m.cfg.copy()) {
        let k_y = meta.tgt.vocab_size() as u32;
        for (i, (s, t)) in pairs.iter().enumerate() {
            let ext = nmt_data::copy::extend_source(s, &meta.src, &meta.tgt);
            let copied: Vec<bool> = nmt_data::copy::extend_target(t, &meta.tgt, &ext).iter().map(|&id| id >= k_y).collect();
            for (m, scores) in models.iter().zip(per_model.iter_mut()) {
                if !m.cfg.copy() {
                    for (tok, _) in scores[i].tokens.iter_mut().zip(&copied).filter(|(_, &c)| c) {
                        *tok = f64::NEG_INFINITY;
                    }
                }
            }
        }
    }
    let Some(mut out) = per_model.pop() else {
        return Err(crate::error::Error::Input("no model to score with".into()));
    };
    if per_model.is_empty() {
        return Ok(out);
    }
    let ln_m = (models.len() as f64).ln();
    for (i, pair) in out.iter_mut().enumerate() {
        if per_model.iter().any(|p| p[i].tokens.len() != pair.tokens.len()) {
            return Err(crate::error::Error::Input(format!("pair {}: the ensemble's models segment the target differently", i + 1)));
        }
        for (j, tok) in pair.tokens.iter_mut().enumerate() {
            let xs: Vec<f64> = per_model.iter().map(|p| p[i].tokens[j]).chain(std::iter::once(*tok)).collect();
            let mx = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            *tok = if mx == f64::NEG_INFINITY { mx } else { mx + xs.iter().map(|x| (x - mx).exp()).sum::<f64>().ln() - ln_m };
        }
        pair.log_prob = pair.tokens.iter().sum();
    }
    Ok(out)
}

/// One model's scores.
fn score_one(model: &Seq2Seq, meta: &ModelMeta, pairs: &[(String, String)], batch_size: usize) -> Result<Vec<PairScore>> {
    let cfg = &model.cfg;
    let mut examples = Vec::with_capacity(pairs.len());
    let mut exts = Vec::new();
    for (s, t) in pairs {
        let mut src = meta.src.encode(s);
        src.push(EOS);
        cfg.order_source(&mut src);
        let mut tgt = if cfg.copy() {
            let mut ext = nmt_data::copy::extend_source(s, &meta.src, &meta.tgt);
            let tgt = nmt_data::copy::extend_target(t, &meta.tgt, &ext);
            cfg.order_source(&mut ext.src);
            exts.push(ext.src);
            tgt
        } else {
            meta.tgt.encode(t)
        };
        tgt.push(EOS);
        // Teacher forcing holds the whole pair: the limit `translate` crops sources to
        // (`search.max_source_len`) keeps one huge line from taking the memory. A given
        // translation is not cropped, so a pair beyond it is refused.
        let (longest, limit) = (src.len().max(tgt.len()) - 1, meta.search.max_source_len);
        if longest > limit {
            return Err(crate::error::Error::Input(format!(
                "pair {}: {longest} tokens on one side; pairs longer than {limit} tokens (search.max_source_len) are not scored",
                examples.len() + 1
            )));
        }
        examples.push(Example { src, tgt });
    }
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| (examples[i].src.len(), examples[i].tgt.len()));
    let mut out = vec![PairScore { log_prob: 0.0, tokens: Vec::new() }; examples.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<&Example> = chunk.iter().map(|&i| &examples[i]).collect();
        let mut batch = Batch::from_examples(&rows, chunk.to_vec());
        if cfg.copy() {
            batch.set_source_ext(&exts);
        }
        let bt = BatchTensors::new(&batch, model.dtype(), model.device())?;
        for (&i, tokens) in chunk.iter().zip(model.token_log_probs(&bt)?) {
            out[i] = PairScore { log_prob: tokens.iter().sum(), tokens };
        }
    }
    Ok(out)
}
