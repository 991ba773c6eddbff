//! Validation: dev perplexity (teacher-forced) and dev BLEU (greedy or beam search, as
//! `train.valid_beam_size` says; sacreBLEU-identical).
use candle_core::DType;
use nmt_data::{Batch, BatchConfig, Example};

use crate::config::SearchConfig;
use crate::error::Result;
use crate::model::{BatchTensors, Seq2Seq};
use crate::model_file::ModelMeta;
use crate::search::{SearchOptions, Searcher};
use crate::translate::translate_lines;

/// Dev set: encoded pairs for perplexity, raw text for BLEU.
pub struct DevSet {
    pub batches: Vec<Batch>,
    pub src_text: Vec<String>,
    pub ref_text: Vec<String>,
}

impl DevSet {
    pub fn new(examples: &[Example], src_text: Vec<String>, ref_text: Vec<String>, cfg: &BatchConfig) -> Self {
        // Fixed order (epoch 0, seed 0): validation sees the same batches every time.
        let batches = nmt_data::epoch_batches(examples, cfg, 0, 0);
        DevSet { batches, src_text, ref_text }
    }
}

/// Mean token NLL over the dev set.
pub fn dev_loss(model: &Seq2Seq, dev: &DevSet) -> Result<f64> {
    let (mut sum, mut tokens) = (0.0, 0usize);
    for b in &dev.batches {
        let t = BatchTensors::new(b, model.dtype(), model.device())?;
        let loss = model.loss(&t, None)?;
        sum += loss.mean.to_dtype(DType::F64)?.to_scalar::<f64>()? * loss.tokens as f64;
        tokens += loss.tokens;
    }
    Ok(sum / tokens.max(1) as f64)
}

/// Corpus BLEU of the first `limit` dev sentences (0 = all), translated with beam size `beam`
/// (1 = greedy) by the same search `nmt translate` runs, with the model's other search settings
/// and the implementation training runs (`train.impl`: the fused host search or the ops).
pub fn dev_bleu(model: &Seq2Seq, meta: &ModelMeta, dev: &DevSet, limit: usize, beam: usize) -> Result<f64> {
    let n = if limit == 0 { dev.src_text.len() } else { limit.min(dev.src_text.len()) };
    let search = SearchConfig { beam_size: beam.max(1), n_best: 1, batch_size: 64, ..meta.search.clone() };
    let opts = SearchOptions { cfg: search, alignments: false, imp: model.backend().imp() };
    let out = translate_lines(&Searcher::new(vec![model])?, meta, &dev.src_text[..n], &opts)?;
    let hyps: Vec<String> = out.into_iter().map(|t| t.hyps.into_iter().next().map(|h| h.text).unwrap_or_default()).collect();
    let refs = vec![dev.ref_text[..n].to_vec()];
    let score = nmt_eval::bleu::corpus_bleu(&hyps, &refs, &nmt_eval::bleu::BleuOptions::default())?;
    Ok(score.score)
}
