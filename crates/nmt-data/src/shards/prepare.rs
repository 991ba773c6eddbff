//! `nmt prepare`: text corpora → a prepared directory, in two streaming passes.
//!
//! 1. The subword models are learned from a uniform sample of at most `subword_sample` pairs
//!    (reservoir sampling with a fixed seed; Marian's `--sentencepiece-max-lines`). A corpus no
//!    larger than the sample is learned from whole, in order, as before this module existed.
//! 2. The pairs are encoded in blocks on every thread and appended to the shards.
//!
//! Encoding caches each whitespace word's ids per thread: both segmenter kinds split at
//! whitespace first, so a sentence's ids are its words' ids in turn (`Segmenter::encode_words`,
//! tested equal), and a corpus repeats its frequent words millions of times.
use std::collections::HashMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::manifest::{CorpusRange, CorpusSpec, Encoding, Manifest, PrepareSpec, TokenType, FORMAT, MANIFEST, VERSION};
use super::swap;
use super::writer::{write_file, EncodedPair, ShardWriter};
use crate::copy::extended_pair;
use crate::error::{Error, Result};
use crate::stream::{PairFiles, PairReader};
use crate::subword::{Segmenter, SubwordConfig, SubwordKind};
use crate::EOS;

/// One input corpus and its sampling weight.
#[derive(Clone, Debug, PartialEq)]
pub struct Corpus {
    pub files: PairFiles,
    pub weight: f64,
}

/// Everything `prepare` needs.
#[derive(Clone, Debug, PartialEq)]
pub struct PrepareOptions {
    pub corpora: Vec<Corpus>,
    pub encoding: Encoding,
    /// Pairs per shard file.
    pub shard_pairs: u64,
}

/// Pairs read and encoded at a time.
const BLOCK: usize = 1 << 17;
/// Words a thread's cache holds before it stops growing (≈ 50 MB at the most).
const CACHE_WORDS: usize = 1 << 19;
/// The reservoir sample's seed: the sample depends on the corpus alone, not on `train.seed`.
const SAMPLE_SEED: u64 = 0x5a3b_1e00;

impl PrepareOptions {
    /// The spec recorded in the manifest: the options plus each file's canonical path, size and
    /// modification time.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be examined.
    pub fn spec(&self) -> Result<PrepareSpec> {
        let mut corpora = Vec::new();
        for c in &self.corpora {
            let mut stamps = Vec::new();
            for p in c.files.paths() {
                let meta = std::fs::metadata(p).map_err(|source| Error::Io { path: p.to_path_buf(), source })?;
                let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs());
                stamps.push((meta.len(), mtime));
            }
            // Canonical paths: the same files named another way (a relative path, the resolved
            // config.toml a model directory keeps) are the same input.
            let files = c.files.paths().into_iter().map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())).collect();
            corpora.push(CorpusSpec { files, stamps, weight: c.weight });
        }
        Ok(PrepareSpec { corpora, encoding: self.encoding.clone() })
    }
}

/// Prepares `dir` from `opts`; `given` segmenters are used as they are (a resumed model keeps
/// its vocabularies) instead of being learned. `say` receives progress lines.
///
/// # Errors
/// Whatever reading the corpora reports (file and line), [`Error::NoTrainingData`] when no
/// pair survives the filters, [`Error::Io`] on a failed write.
pub fn prepare(opts: &PrepareOptions, dir: &Path, given: Option<(Segmenter, Segmenter)>, say: &mut dyn FnMut(&str)) -> Result<Manifest> {
    if opts.corpora.is_empty() {
        return Err(Error::NoTrainingData("no training corpus is configured".into()));
    }
    if opts.encoding.max_len >= usize::from(u16::MAX) {
        return Err(Error::InvalidConfig(format!("max_len {} must be below 65535", opts.encoding.max_len)));
    }
    let spec = opts.spec()?;
    // Written into a temporary directory beside `dir`, swapped in when complete (swap.rs).
    let tmp = swap::begin(dir)?;
    let manifest = prepare_into(opts, tmp.path(), given, spec, say)?;
    swap::finish(tmp, dir, &manifest)?;
    Ok(manifest)
}

/// [`prepare`]'s work, into the empty directory `dir`.
fn prepare_into(
    opts: &PrepareOptions,
    dir: &Path,
    given: Option<(Segmenter, Segmenter)>,
    spec: PrepareSpec,
    say: &mut dyn FnMut(&str),
) -> Result<Manifest> {
    let (src, tgt) = match given {
        Some(s) => s,
        None => learn(opts, say)?,
    };
    let bound = src.vocab_size().max(tgt.vocab_size() + if opts.encoding.copy { opts.encoding.max_len + 1 } else { 0 });
    let token_type = TokenType::for_bound(bound);
    let mut writer = ShardWriter::new(dir, token_type, opts.shard_pairs);
    let mut caches: Vec<(Cache, Cache)> = (0..rayon::current_num_threads()).map(|_| Default::default()).collect();
    let (mut ranges, mut total) = (Vec::new(), 0u64);
    for c in &opts.corpora {
        let mut reader = PairReader::open(&c.files, opts.encoding.max_words)?;
        let (first, mut too_long, mut block) = (total, 0u64, Vec::with_capacity(BLOCK));
        loop {
            block.clear();
            let more = reader.read_block(BLOCK, &mut block)?;
            let piece = block.len().div_ceil(caches.len()).max(1);
            let encoded: Vec<Vec<Option<EncodedPair>>> = caches
                .par_iter_mut()
                .zip(block.par_chunks(piece))
                .map(|((cs, ct), pairs)| pairs.iter().map(|(s, t)| encode_pair(s, t, &src, &tgt, (cs, ct), opts)).collect())
                .collect();
            for pair in encoded.into_iter().flatten() {
                match pair {
                    Some(p) => {
                        writer.push(&p)?;
                        total += 1;
                    }
                    None => too_long += 1,
                }
            }
            say(&format!("encoded {} pairs of {}", reader.lines, c.files.paths()[0].display()));
            if !more {
                break;
            }
        }
        let s = reader.skipped;
        ranges.push(CorpusRange {
            first,
            pairs: total - first,
            weight: c.weight,
            skipped_empty: s.empty as u64,
            skipped_long: s.long as u64,
            skipped_subwords: too_long,
        });
    }
    if total == 0 {
        return Err(Error::NoTrainingData(format!("no training pair is at most {} tokens long", opts.encoding.max_len)));
    }
    if total > u64::from(u32::MAX) {
        return Err(Error::InvalidConfig(format!("{total} pairs: at most {} are supported", u32::MAX)));
    }
    let shards = writer.finish()?;
    let src_segmenter = write_file(dir, "src.subword.json", src.to_json()?.as_bytes())?;
    let tgt_segmenter = write_file(dir, "tgt.subword.json", tgt.to_json()?.as_bytes())?;
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        spec,
        pairs: total,
        token_type,
        src_vocab: src.vocab_size(),
        tgt_vocab: tgt.vocab_size(),
        shard_pairs: opts.shard_pairs.max(1),
        shards,
        corpora: ranges,
        src_segmenter,
        tgt_segmenter,
    };
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| Error::Json(e.to_string()))?;
    write_file(dir, MANIFEST, json.as_bytes())?;
    Ok(manifest)
}

/// Pass 1: the sample, then both segmenters (learned side by side).
fn learn(opts: &PrepareOptions, say: &mut dyn FnMut(&str)) -> Result<(Segmenter, Segmenter)> {
    // Imported SentencePiece models learn nothing: no sample when both sides are imported.
    let imported = |c: &SubwordConfig| c.kind == SubwordKind::Sentencepiece;
    let sample = match imported(&opts.encoding.src_subword) && imported(&opts.encoding.tgt_subword) {
        true => (Vec::new(), Vec::new()),
        false => sample(opts)?,
    };
    say(&format!("learning subword vocabularies from {} pairs", sample.0.len()));
    let (s, t) =
        rayon::join(|| Segmenter::train(&sample.0, &opts.encoding.src_subword), || Segmenter::train(&sample.1, &opts.encoding.tgt_subword));
    Ok((s?, t?))
}

/// A uniform sample of at most `subword_sample` kept pairs over all corpora (algorithm R).
fn sample(opts: &PrepareOptions) -> Result<(Vec<String>, Vec<String>)> {
    let k = opts.encoding.subword_sample.max(1);
    let (mut src, mut tgt) = (Vec::new(), Vec::new());
    let mut rng = ChaCha8Rng::seed_from_u64(SAMPLE_SEED);
    let (mut seen, mut block) = (0usize, Vec::with_capacity(BLOCK));
    for c in &opts.corpora {
        let mut reader = PairReader::open(&c.files, opts.encoding.max_words)?;
        loop {
            block.clear();
            let more = reader.read_block(BLOCK, &mut block)?;
            for (s, t) in block.drain(..) {
                if seen < k {
                    src.push(s);
                    tgt.push(t);
                } else {
                    let j = rng.gen_range(0..=seen);
                    if j < k {
                        (src[j], tgt[j]) = (s, t);
                    }
                }
                seen += 1;
            }
            if !more {
                break;
            }
        }
    }
    if src.is_empty() {
        return Err(Error::NoTrainingData("no usable training pairs (every line empty or over max_words)".into()));
    }
    Ok((src, tgt))
}

/// A thread's word → ids cache for one side.
type Cache = HashMap<String, Vec<u32>>;

/// `seg.encode(text)`, word by word through `cache`.
pub fn encode_cached(seg: &Segmenter, text: &str, cache: &mut Cache) -> Vec<u32> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        if let Some(ids) = cache.get(word) {
            out.extend_from_slice(ids);
            continue;
        }
        let ids = seg.encode(word);
        out.extend_from_slice(&ids);
        if cache.len() < CACHE_WORDS {
            cache.insert(word.to_owned(), ids);
        }
    }
    out
}

/// One pair's ids with `</s>` (and a copy model's extended ids); `None` when a side is longer
/// than `max_len` tokens.
fn encode_pair(
    s: &str,
    t: &str,
    src: &Segmenter,
    tgt: &Segmenter,
    caches: (&mut Cache, &mut Cache),
    opts: &PrepareOptions,
) -> Option<EncodedPair> {
    let mut pair = EncodedPair { src: encode_cached(src, s, caches.0), ..Default::default() };
    if opts.encoding.copy {
        let (ids, ext) = extended_pair(s, t, src, tgt);
        (pair.tgt, pair.src_ext) = (ids, ext.src);
    } else {
        pair.tgt = encode_cached(tgt, t, caches.1);
    }
    if pair.src.len() > opts.encoding.max_len || pair.tgt.len() > opts.encoding.max_len {
        return None;
    }
    pair.src.push(EOS);
    pair.tgt.push(EOS);
    Some(pair)
}
