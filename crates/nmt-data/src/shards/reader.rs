//! Reading a prepared directory: the index (offsets and lengths) is memory-mapped, the tokens
//! of a batch are read with positioned reads when the batch is due.
//!
//! Why tokens are not mapped too: every page of a mapping that the process touches counts in its
//! resident memory until the mapping goes, and one epoch touches every token page, so a mapped
//! 10 M-pair corpus would show 1.4 GB resident by the end of the first epoch. Positioned reads
//! leave those pages to the kernel's page cache (shared by every rank on a node, dropped under
//! pressure), and the process keeps only the index: 12 bytes a pair.
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;

use super::manifest::{verify, Manifest, ShardEntry, TokenType};
use super::writer::EncodedPair;
use crate::error::{Error, Result};
use crate::plan::Weighted;
use crate::subword::Segmenter;

/// One shard, opened.
struct Shard {
    tokens: File,
    tokens_path: PathBuf,
    offsets: Mmap,
    lengths: Mmap,
}

impl Shard {
    fn offset(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.offsets[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]))
    }

    fn lengths(&self, i: usize) -> (usize, usize) {
        let l = &self.lengths[i * 4..i * 4 + 4];
        (usize::from(u16::from_le_bytes([l[0], l[1]])), usize::from(u16::from_le_bytes([l[2], l[3]])))
    }
}

/// A prepared corpus, opened and verified.
pub struct Prepared {
    dir: PathBuf,
    manifest: Manifest,
    src: Segmenter,
    tgt: Segmenter,
    shards: Vec<Shard>,
}

fn map(path: &Path) -> Result<Mmap> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    // SAFETY: the file is only read; a prepared directory is written once, renamed into place
    // and never modified (a new `prepare` writes new files), so the mapping cannot change.
    unsafe { Mmap::map(&file) }.map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

impl Prepared {
    /// Opens `dir`: reads the manifest, checks every file's length and CRC-32 against it,
    /// loads the segmenters, maps the index and checks that offsets and lengths agree.
    ///
    /// # Errors
    /// [`Error::Io`] for a missing file, [`Error::Prepared`] naming the manifest or the file
    /// that does not match it.
    pub fn open(dir: &Path) -> Result<Self> {
        let manifest = Manifest::read(dir)?;
        let m = &manifest;
        for sum in [&m.src_segmenter, &m.tgt_segmenter] {
            verify(dir, sum)?;
        }
        let seg = |name: &str| -> Result<Segmenter> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
            Segmenter::from_json(&text).map_err(|e| Error::Prepared { path, reason: e.to_string() })
        };
        let (src, tgt) = (seg(&m.src_segmenter.name)?, seg(&m.tgt_segmenter.name)?);
        if src.vocab_size() != m.src_vocab || tgt.vocab_size() != m.tgt_vocab {
            let reason = format!(
                "vocabularies of {} and {} ids, the segmenters have {} and {}",
                m.src_vocab,
                m.tgt_vocab,
                src.vocab_size(),
                tgt.vocab_size()
            );
            return Err(Error::Prepared { path: dir.join(super::MANIFEST), reason });
        }
        // Shards are checked on every thread: the checksums are most of the start-up time.
        let shards = m
            .shards
            .par_iter()
            .map(|entry| -> Result<Shard> {
                for sum in [&entry.tokens, &entry.offsets, &entry.lengths] {
                    verify(dir, sum)?;
                }
                let tokens_path = dir.join(&entry.tokens.name);
                let tokens = File::open(&tokens_path).map_err(|source| Error::Io { path: tokens_path.clone(), source })?;
                let (offsets, lengths) = (map(&dir.join(&entry.offsets.name))?, map(&dir.join(&entry.lengths.name))?);
                let shard = Shard { tokens, tokens_path, offsets, lengths };
                check_index(&shard, entry, m, dir)?;
                Ok(shard)
            })
            .collect::<Result<Vec<Shard>>>()?;
        Ok(Prepared { dir: dir.to_path_buf(), manifest, src, tgt, shards })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The source and target segmenters the corpus was encoded with.
    pub fn segmenters(&self) -> (&Segmenter, &Segmenter) {
        (&self.src, &self.tgt)
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.manifest.pairs as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each corpus's pairs and sampling weight, for [`crate::plan::EpochPlan`].
    pub fn weighted(&self) -> Vec<Weighted> {
        self.manifest.corpora.iter().map(|c| Weighted { first: c.first as usize, len: c.pairs as usize, weight: c.weight }).collect()
    }

    fn locate(&self, i: usize) -> (&Shard, usize) {
        let per = self.manifest.shard_pairs as usize;
        (&self.shards[i / per], i % per)
    }

    /// Pair `i`'s `(source, target)` lengths, `</s>` included (`i < len()`).
    pub fn lengths(&self, i: usize) -> (usize, usize) {
        let (shard, j) = self.locate(i);
        shard.lengths(j)
    }

    /// Pair `i`'s ids (`i < len()`).
    ///
    /// # Errors
    /// [`Error::Io`] on a failed read, [`Error::Prepared`] naming the shard when an id lies
    /// outside the vocabulary (a shard that passed its checksum but was made for another).
    pub fn pair(&self, i: usize) -> Result<EncodedPair> {
        let (shard, j) = self.locate(i);
        let (start, end) = (shard.offset(j), shard.offset(j + 1));
        let width = self.manifest.token_type.width();
        let mut bytes = vec![0u8; (end - start) as usize * width];
        shard
            .tokens
            .read_exact_at(&mut bytes, start * width as u64)
            .map_err(|source| Error::Io { path: shard.tokens_path.clone(), source })?;
        let mut src: Vec<u32> = match self.manifest.token_type {
            TokenType::U16 => bytes.chunks_exact(2).map(|b| u32::from(u16::from_le_bytes([b[0], b[1]]))).collect(),
            TokenType::U32 => bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        };
        // The stored run is source, target, then (copy models only) the extended source ids;
        // the index check at opening guarantees the lengths add up.
        let (s, t) = shard.lengths(j);
        let src_ext = src.split_off(s + t);
        let tgt = src.split_off(s);
        let pair = EncodedPair { src, tgt, src_ext };
        // A copy model's extended ids stand for source positions: below vocabulary + length.
        let ext_bound = (self.manifest.tgt_vocab + s) as u32;
        let tgt_bound = if self.manifest.spec.encoding.copy { ext_bound } else { self.manifest.tgt_vocab as u32 };
        let bad = pair.src.iter().any(|&id| id as usize >= self.manifest.src_vocab)
            || pair.tgt.iter().any(|&id| id >= tgt_bound)
            || pair.src_ext.iter().any(|&id| id >= ext_bound);
        if bad {
            let reason = format!("pair {j} holds an id outside the vocabulary: the shard does not belong to this manifest");
            return Err(Error::Prepared { path: shard.tokens_path.clone(), reason });
        }
        Ok(pair)
    }
}

/// Offsets start at 0, grow by each pair's stored length, and end at the token count.
fn check_index(shard: &Shard, entry: &ShardEntry, m: &Manifest, dir: &Path) -> Result<()> {
    let (pairs, copy) = (entry.pairs as usize, m.spec.encoding.copy);
    let tokens = entry.tokens.bytes / m.token_type.width() as u64;
    let fail = |name: &str, reason: String| Err(Error::Prepared { path: dir.join(name), reason });
    if shard.offsets.len() != (pairs + 1) * 8 || shard.lengths.len() != pairs * 4 {
        return fail(&entry.offsets.name, format!("the index does not hold {pairs} pairs"));
    }
    let mut at = shard.offset(0);
    if at != 0 {
        return fail(&entry.offsets.name, "the first offset is not 0".into());
    }
    for j in 0..pairs {
        let (s, t) = shard.lengths(j);
        let stored = (s + t + if copy { s } else { 0 }) as u64;
        let next = shard.offset(j + 1);
        if s == 0 || t == 0 || next != at + stored {
            return fail(&entry.offsets.name, format!("pair {j}: offsets and lengths disagree"));
        }
        at = next;
    }
    if at != tokens {
        return fail(&entry.tokens.name, format!("{tokens} tokens, the index says {at}"));
    }
    Ok(())
}
