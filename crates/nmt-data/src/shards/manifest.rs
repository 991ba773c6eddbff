//! `manifest.json`: what a prepared directory holds, how it was made, and each file's size and
//! CRC-32, so that a truncated, flipped or swapped file is an error naming it.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::subword::SubwordConfig;

/// The manifest's file name inside a prepared directory.
pub const MANIFEST: &str = "manifest.json";
/// What `format` must say.
pub const FORMAT: &str = "nmt-prepared-corpus";
/// The layout's version; another version is refused, not guessed at.
pub const VERSION: u32 = 1;

/// How token ids are stored: two bytes when every id fits, four otherwise.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TokenType {
    U16,
    U32,
}

impl TokenType {
    /// Bytes per token.
    pub fn width(self) -> usize {
        match self {
            TokenType::U16 => 2,
            TokenType::U32 => 4,
        }
    }

    /// The narrowest type that holds ids below `bound`.
    pub fn for_bound(bound: usize) -> Self {
        if bound <= usize::from(u16::MAX) + 1 {
            TokenType::U16
        } else {
            TokenType::U32
        }
    }
}

/// A file of the directory with its length and checksum.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSum {
    pub name: String,
    pub bytes: u64,
    pub crc32: u32,
}

/// One shard: its pairs and its three files.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardEntry {
    pub pairs: u64,
    /// Token ids of every pair: source (with `</s>`), target (with `</s>`), and for copy
    /// models the source's extended ids (as long as the source).
    pub tokens: FileSum,
    /// `pairs + 1` little-endian `u64` token offsets: pair `i` is `tokens[off[i]..off[i+1]]`.
    pub offsets: FileSum,
    /// `pairs` little-endian `(u16 source length, u16 target length)`, `</s>` included.
    pub lengths: FileSum,
}

/// How pairs are filtered and encoded: what `prepare` is told besides the corpora, and what
/// the manifest records of it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Encoding {
    pub src_subword: SubwordConfig,
    pub tgt_subword: SubwordConfig,
    pub max_words: Option<usize>,
    pub max_len: usize,
    /// Pairs sampled (at most) to learn the subword models from (`data.subword_sample`).
    pub subword_sample: usize,
    /// Whether copy-model extended ids are stored (`model.copy`).
    pub copy: bool,
}

/// What the corpus was made from and how: two directories made from the same spec hold the
/// same bytes, so a model directory reuses its prepared data only when the spec is unchanged.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PrepareSpec {
    /// Each corpus with its sampling weight; each file with its size and modification time.
    pub corpora: Vec<CorpusSpec>,
    #[serde(flatten)]
    pub encoding: Encoding,
}

/// One input corpus as the spec records it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CorpusSpec {
    /// The files, as given.
    pub files: Vec<PathBuf>,
    /// `(bytes, seconds since the epoch)` of each file when it was read.
    pub stamps: Vec<(u64, u64)>,
    /// How many times per epoch its pairs are seen (1 = once; 0.5 = a random half).
    pub weight: f64,
}

/// One corpus's pairs inside the directory: the global pair ids `first..first + pairs`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CorpusRange {
    pub first: u64,
    pub pairs: u64,
    pub weight: f64,
    pub skipped_empty: u64,
    pub skipped_long: u64,
    pub skipped_subwords: u64,
}

/// The whole manifest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub spec: PrepareSpec,
    pub pairs: u64,
    pub token_type: TokenType,
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    /// Pairs per shard (every shard but the last holds exactly this many).
    pub shard_pairs: u64,
    pub shards: Vec<ShardEntry>,
    pub corpora: Vec<CorpusRange>,
    /// The segmenters' JSON files (`Segmenter::to_json`).
    pub src_segmenter: FileSum,
    pub tgt_segmenter: FileSum,
}

impl Manifest {
    /// Reads and checks the manifest of `dir`.
    ///
    /// # Errors
    /// [`Error::Io`] when it is missing, [`Error::Prepared`] naming it when it is not such a
    /// manifest or is inconsistent with itself.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        Self::from_json(&text, &path)
    }

    /// Parses and checks a manifest's text; `path` names it in errors (the fuzz target
    /// `manifest` drives this).
    ///
    /// # Errors
    /// [`Error::Prepared`] naming `path` when it is not such a manifest or is inconsistent.
    pub fn from_json(text: &str, path: &Path) -> Result<Self> {
        let bad = |reason: String| Error::Prepared { path: path.to_path_buf(), reason };
        let m: Manifest = serde_json::from_str(text).map_err(|e| bad(format!("not a manifest: {e}")))?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(bad(format!("format {:?} version {} (this build reads {FORMAT:?} version {VERSION})", m.format, m.version)));
        }
        let counted: u64 = m.shards.iter().map(|s| s.pairs).sum();
        let full = m.shards.split_last().is_none_or(|(_, rest)| rest.iter().all(|s| s.pairs == m.shard_pairs));
        let in_corpora: u64 = m.corpora.iter().map(|c| c.pairs).sum();
        if counted != m.pairs || in_corpora != m.pairs || !full || m.shard_pairs == 0 {
            return Err(bad(format!("pair counts disagree: {} in all, {counted} in the shards, {in_corpora} in the corpora", m.pairs)));
        }
        if m.pairs > u64::from(u32::MAX) {
            return Err(bad(format!("{} pairs: at most {} are supported", m.pairs, u32::MAX)));
        }
        Ok(m)
    }
}

/// CRC-32 and length of a file, read in blocks (not mapped: a mapping's pages would stay in
/// the process's resident memory).
pub fn checksum(path: &Path) -> Result<(u64, u32)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let (mut hasher, mut bytes, mut buf) = (crc32fast::Hasher::new(), 0u64, vec![0u8; 1 << 20]);
    loop {
        let n = file.read(&mut buf).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        if n == 0 {
            return Ok((bytes, hasher.finalize()));
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
}

/// Checks a file against its manifest entry.
///
/// # Errors
/// [`Error::Prepared`] naming the file when its length or checksum differs.
pub fn verify(dir: &Path, sum: &FileSum) -> Result<()> {
    let path = dir.join(&sum.name);
    let (bytes, crc) = checksum(&path)?;
    if bytes != sum.bytes || crc != sum.crc32 {
        let reason = match bytes == sum.bytes {
            true => format!("checksum {crc:08x}, the manifest says {:08x}: the file is corrupt; run `nmt prepare` again", sum.crc32),
            false => format!("{bytes} bytes, the manifest says {}: the file is truncated or replaced; run `nmt prepare` again", sum.bytes),
        };
        return Err(Error::Prepared { path, reason });
    }
    Ok(())
}
