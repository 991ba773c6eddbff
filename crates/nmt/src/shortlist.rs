//! A model file's lexical shortlist (`nmt_data::shortlist`): learned from the training pairs
//! (at the end of `nmt train`, or by `nmt shortlist` for an existing model) and written into the
//! model file, where `SearchConfig::shortlist` searches find it.
use std::path::Path;

use nmt_data::shards::Prepared;
use nmt_data::{Shortlist, ShortlistSpec};

use crate::error::{Error, Result};
use crate::model_file::{self, ModelMeta, CHECKSUM_KEY, SHORTLIST_PREFIX};

/// Pairs read for learning a shortlist: an even sample of this many at most, which bounds the
/// time and the memory on corpora of millions of pairs. Measured with `nmt shortlist` on 2
/// threads (8 000-token vocabularies): the Bible's 26 542 pairs 8.2 s and 436 MB peak; the
/// Bible 8 times with a marker per copy, 212 336 pairs, 53.0 s and 641 MB.
pub const MAX_PAIRS: usize = 200_000;

/// `max_pairs` pairs at most, evenly spread over a prepared corpus, as (source, target) ids.
pub fn sample_prepared(prepared: &Prepared, max_pairs: usize) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
    let n = prepared.len();
    let step = n.div_ceil(max_pairs.max(1)).max(1);
    (0..n).step_by(step).map(|i| prepared.pair(i).map(|p| (p.src, p.tgt)).map_err(Error::from)).collect()
}

/// The pairs of two aligned text files, segmented as the model was (`max_pairs` at most,
/// evenly spread).
pub fn sample_text(src: &Path, tgt: &Path, meta: &ModelMeta, max_pairs: usize) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
    let corpus = nmt_data::read_parallel(src, tgt, None)?;
    let step = corpus.src.len().div_ceil(max_pairs.max(1)).max(1);
    Ok(corpus.src.iter().zip(&corpus.tgt).step_by(step).map(|(s, t)| (meta.src.encode(s), meta.tgt.encode(t))).collect())
}

/// Learns a shortlist for the model `meta` describes.
pub fn learn(pairs: &[(Vec<u32>, Vec<u32>)], meta: &ModelMeta, spec: &ShortlistSpec) -> Result<Shortlist> {
    Ok(Shortlist::learn(pairs, meta.config.src_vocab, meta.config.tgt_vocab, spec)?)
}

/// Writes `shortlist` into the model file at `path` (replacing one it has), atomically; the
/// weights and the rest of the metadata stay byte for byte.
pub fn attach(path: &Path, shortlist: &Shortlist) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (mut tensors, mut raw) = model_file::parse_safetensors(&bytes, path, &candle_core::Device::Cpu)?;
    let meta = model_file::read_meta(&raw, path)?;
    let (k, cands, _) = shortlist.parts();
    if cands.len() != meta.config.src_vocab * k {
        return Err(Error::Input(format!("the shortlist is for another source vocabulary than {}'s", path.display())));
    }
    tensors.retain(|name, _| !name.starts_with(SHORTLIST_PREFIX));
    let mut all: Vec<(String, candle_core::Tensor)> = tensors.into_iter().collect();
    all.extend(model_file::shortlist_tensors(shortlist)?);
    raw.remove(CHECKSUM_KEY);
    model_file::write_atomic(path, &model_file::to_safetensors(&all, raw)?)
}

/// The end of training: learns the shortlist (default [`ShortlistSpec`]) from the training
/// pairs and writes it into each of `files` that exists. Returns the line that reports it (the
/// trainer shows it through its progress display).
pub(crate) fn after_training(prepared: &Prepared, meta: &ModelMeta, files: &[&Path]) -> Result<String> {
    let began = std::time::Instant::now();
    let pairs = sample_prepared(prepared, MAX_PAIRS)?;
    let shortlist = learn(&pairs, meta, &ShortlistSpec::default())?;
    for f in files.iter().filter(|f| f.exists()) {
        attach(f, &shortlist)?;
    }
    Ok(format!(
        "lexical shortlist learned from {} pairs in {:.1} s and stored in the model files",
        pairs.len(),
        began.elapsed().as_secs_f64()
    ))
}
