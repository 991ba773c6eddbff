//! Scoring given translations: `log p(y | x)` under a model, teacher-forced (Cho et al. 2014's
//! first use of the RNN Encoder-Decoder, `shared/SPEC.md` "Using a trained model", 2).
//!
//! Pairs are segmented as training segments them (`</s>` on both sides, the source in the
//! encoder's reading order, a copy model's extended ids), sorted by length into batches so that
//! padding stays small, scored, and returned in input order. A pair's score is the sum of its
//! target tokens' log-probabilities, `</s>` included: what beam search reports as a
//! hypothesis's `log_prob`.
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

/// Scores `(source, target)` text pairs, `batch_size` pairs per batch.
pub fn score_pairs(model: &Seq2Seq, meta: &ModelMeta, pairs: &[(String, String)], batch_size: usize) -> Result<Vec<PairScore>> {
    let cfg = &model.cfg;
    let mut examples = Vec::with_capacity(pairs.len());
    let mut exts = Vec::new();
    for (s, t) in pairs {
        let mut src = meta.src.encode(s);
        src.push(EOS);
        cfg.order_source(&mut src);
        let mut tgt = if cfg.copy {
            let mut ext = nmt_data::copy::extend_source(s, &meta.src, &meta.tgt);
            let tgt = nmt_data::copy::extend_target(t, &meta.tgt, &ext);
            cfg.order_source(&mut ext.src);
            exts.push(ext.src);
            tgt
        } else {
            meta.tgt.encode(t)
        };
        tgt.push(EOS);
        examples.push(Example { src, tgt });
    }
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| (examples[i].src.len(), examples[i].tgt.len()));
    let mut out = vec![PairScore { log_prob: 0.0, tokens: Vec::new() }; examples.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<&Example> = chunk.iter().map(|&i| &examples[i]).collect();
        let mut batch = Batch::from_examples(&rows, chunk.to_vec());
        if cfg.copy {
            batch.set_source_ext(&exts);
        }
        let bt = BatchTensors::new(&batch, model.dtype(), model.device())?;
        for (&i, tokens) in chunk.iter().zip(model.token_log_probs(&bt)?) {
            out[i] = PairScore { log_prob: tokens.iter().sum(), tokens };
        }
    }
    Ok(out)
}
