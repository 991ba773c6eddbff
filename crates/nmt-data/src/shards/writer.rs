//! Writing shards: pairs are appended in order, each shard's three files are written to
//! temporary files (`tempfile`, named `NAME.XXXXXX.tmp` beside the final name) with their CRC-32
//! computed on the way, and persisted (renamed) when whole. The manifest is written last
//! ([`super::prepare`]), so a directory with a manifest is always complete.
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::manifest::{FileSum, ShardEntry, TokenType};
use crate::error::{Error, Result};

/// A file written to a temporary name, checksummed as it goes.
struct SumFile {
    dir: PathBuf,
    name: String,
    out: BufWriter<NamedTempFile>,
    hasher: crc32fast::Hasher,
    bytes: u64,
}

impl SumFile {
    fn create(dir: &Path, name: String) -> Result<Self> {
        let tmp = crate::atomic::temp_beside(dir, &format!("{name}.")).map_err(|source| Error::Io { path: dir.join(&name), source })?;
        Ok(SumFile {
            dir: dir.to_path_buf(),
            name,
            out: BufWriter::with_capacity(1 << 20, tmp),
            hasher: crc32fast::Hasher::new(),
            bytes: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
        self.out.write_all(bytes).map_err(|source| Error::Io { path: self.dir.join(&self.name), source })
    }

    /// Flushes, syncs and persists under the final name.
    fn finish(self) -> Result<FileSum> {
        let path = self.dir.join(&self.name);
        let io = |source| Error::Io { path: path.clone(), source };
        let tmp = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(FileSum { name: self.name, bytes: self.bytes, crc32: self.hasher.finalize() })
    }
}

/// An encoded pair: ids with `</s>` on both sides, and a copy model's extended source ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedPair {
    pub src: Vec<u32>,
    pub tgt: Vec<u32>,
    /// Empty unless the directory stores copy ids; then as long as `src`.
    pub src_ext: Vec<u32>,
}

/// The shard being written.
struct Open {
    tokens: SumFile,
    offsets: SumFile,
    lengths: SumFile,
    pairs: u64,
    offset: u64,
}

/// Appends pairs to numbered shards of `shard_pairs` pairs each.
pub struct ShardWriter {
    dir: PathBuf,
    token_type: TokenType,
    shard_pairs: u64,
    open: Option<Open>,
    done: Vec<ShardEntry>,
    scratch: Vec<u8>,
}

/// The file names of shard `k`.
pub fn shard_names(k: usize) -> [String; 3] {
    [format!("shard-{k:05}.tok"), format!("shard-{k:05}.off"), format!("shard-{k:05}.len")]
}

impl ShardWriter {
    pub fn new(dir: &Path, token_type: TokenType, shard_pairs: u64) -> Self {
        ShardWriter {
            dir: dir.to_path_buf(),
            token_type,
            shard_pairs: shard_pairs.max(1),
            open: None,
            done: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Appends one pair.
    ///
    /// # Errors
    /// [`Error::Io`] on a failed write; [`Error::InvalidConfig`] when a side is longer than the
    /// `u16` length field or an id does not fit the token type (a bug in the caller's bound).
    pub fn push(&mut self, pair: &EncodedPair) -> Result<()> {
        if pair.src.len() > usize::from(u16::MAX) || pair.tgt.len() > usize::from(u16::MAX) {
            return Err(Error::InvalidConfig(format!(
                "a pair of {} and {} tokens exceeds the 65535-token limit",
                pair.src.len(),
                pair.tgt.len()
            )));
        }
        if self.open.is_none() {
            let [t, o, l] = shard_names(self.done.len());
            let mut open = Open {
                tokens: SumFile::create(&self.dir, t)?,
                offsets: SumFile::create(&self.dir, o)?,
                lengths: SumFile::create(&self.dir, l)?,
                pairs: 0,
                offset: 0,
            };
            open.offsets.write(&0u64.to_le_bytes())?;
            self.open = Some(open);
        }
        let Some(open) = self.open.as_mut() else { unreachable!("opened above") };
        self.scratch.clear();
        let wide = self.token_type == TokenType::U32;
        for &id in pair.src.iter().chain(&pair.tgt).chain(&pair.src_ext) {
            match wide {
                true => self.scratch.extend_from_slice(&id.to_le_bytes()),
                false => {
                    let id = u16::try_from(id).map_err(|_| Error::InvalidConfig(format!("token id {id} does not fit u16")))?;
                    self.scratch.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        open.tokens.write(&self.scratch)?;
        open.offset += (pair.src.len() + pair.tgt.len() + pair.src_ext.len()) as u64;
        open.offsets.write(&open.offset.to_le_bytes())?;
        let mut lens = [0u8; 4];
        lens[..2].copy_from_slice(&(pair.src.len() as u16).to_le_bytes());
        lens[2..].copy_from_slice(&(pair.tgt.len() as u16).to_le_bytes());
        open.lengths.write(&lens)?;
        open.pairs += 1;
        if open.pairs == self.shard_pairs {
            self.close()?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        if let Some(open) = self.open.take() {
            let entry = ShardEntry {
                pairs: open.pairs,
                tokens: open.tokens.finish()?,
                offsets: open.offsets.finish()?,
                lengths: open.lengths.finish()?,
            };
            self.done.push(entry);
        }
        Ok(())
    }

    /// Closes the last shard; returns every shard's entry.
    pub fn finish(mut self) -> Result<Vec<ShardEntry>> {
        self.close()?;
        Ok(self.done)
    }
}

/// Writes `bytes` to `dir/name` atomically and returns its entry.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<FileSum> {
    let mut f = SumFile::create(dir, name.to_owned())?;
    f.write(bytes)?;
    f.finish()
}
