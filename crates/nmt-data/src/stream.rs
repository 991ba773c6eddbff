//! Streaming parallel corpora: pairs are read line by line, so a corpus of any size passes
//! through in the memory of one block (what `prepare` needs for corpora of millions of pairs).
//!
//! Two layouts are read: two sentence-aligned files (`train.en`, `train.es`), and one
//! `source<TAB>target` file (`.tsv`). Either may be gzipped (`.gz`). Errors name the file and
//! the 1-based line, as [`crate::read_parallel`]'s do; the filters are [`crate::corpus`]'s
//! (empty sides and more than `max_words` words are skipped and counted).
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Where a corpus's pairs come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairFiles {
    /// Two sentence-aligned files.
    Aligned { src: PathBuf, tgt: PathBuf },
    /// One file, `source<TAB>target` per line.
    Tsv(PathBuf),
}

impl PairFiles {
    /// The files read, for fingerprints and messages.
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            PairFiles::Aligned { src, tgt } => vec![src, tgt],
            PairFiles::Tsv(p) => vec![p],
        }
    }
}

/// One text file read line by line, decompressed when its name ends in `.gz`.
struct LineFile {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    line: usize,
    buf: Vec<u8>,
}

impl LineFile {
    fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        let gz = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let inner: Box<dyn Read> = if gz { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) };
        Ok(LineFile { path: path.to_path_buf(), reader: Box::new(BufReader::with_capacity(1 << 20, inner)), line: 0, buf: Vec::new() })
    }

    /// The next line without its `\n` and one trailing `\r`; `None` at the end.
    fn next_line(&mut self) -> Result<Option<&str>> {
        self.buf.clear();
        let n = self.reader.read_until(b'\n', &mut self.buf).map_err(|source| Error::Io { path: self.path.clone(), source })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut end = self.buf.len();
        if self.buf[..end].ends_with(b"\n") {
            end -= 1;
        }
        if self.buf[..end].ends_with(b"\r") {
            end -= 1;
        }
        let line = self.line;
        std::str::from_utf8(&self.buf[..end]).map(Some).map_err(|_| Error::InvalidUtf8 { path: self.path.clone(), line })
    }

    /// Lines left after the current one (to report both sides' counts on a mismatch).
    fn count_rest(&mut self) -> Result<usize> {
        let start = self.line;
        while self.next_line()?.is_some() {}
        Ok(self.line - start)
    }
}

/// Counts of what the filters dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Pairs with an empty (or whitespace-only) side.
    pub empty: usize,
    /// Pairs with more than `max_words` words on a side.
    pub long: usize,
}

/// Reads the filtered, trimmed pairs of a corpus in blocks.
pub struct PairReader {
    files: PairFiles,
    src: LineFile,
    tgt: Option<LineFile>,
    max_words: Option<usize>,
    /// What the filters dropped so far.
    pub skipped: Skipped,
    /// Pairs read so far, kept or not.
    pub lines: usize,
}

impl PairReader {
    /// Opens the corpus.
    ///
    /// # Errors
    /// [`Error::Io`] when a file is missing or unreadable.
    pub fn open(files: &PairFiles, max_words: Option<usize>) -> Result<Self> {
        let (src, tgt) = match files {
            PairFiles::Aligned { src, tgt } => (LineFile::open(src)?, Some(LineFile::open(tgt)?)),
            PairFiles::Tsv(p) => (LineFile::open(p)?, None),
        };
        Ok(PairReader { files: files.clone(), src, tgt, max_words, skipped: Skipped::default(), lines: 0 })
    }

    /// Appends up to `max` kept pairs to `out`; returns false once the corpus is exhausted.
    ///
    /// # Errors
    /// [`Error::InvalidUtf8`] with the line, [`Error::LineCountMismatch`] when aligned files
    /// differ in length, [`Error::Malformed`] for a TSV line without exactly one tab,
    /// [`Error::EmptyFile`] when the corpus has no line at all.
    pub fn read_block(&mut self, max: usize, out: &mut Vec<(String, String)>) -> Result<bool> {
        let goal = out.len() + max;
        while out.len() < goal {
            let Some((s, t)) = self.next_raw()? else {
                if self.lines == 0 {
                    return Err(Error::EmptyFile { path: self.src.path.clone() });
                }
                return Ok(false);
            };
            self.lines += 1;
            let (s, t) = (s.trim(), t.trim());
            if s.is_empty() || t.is_empty() {
                self.skipped.empty += 1;
            } else if self.max_words.is_some_and(|m| s.split_whitespace().count() > m || t.split_whitespace().count() > m) {
                self.skipped.long += 1;
            } else {
                out.push((s.to_owned(), t.to_owned()));
            }
        }
        Ok(true)
    }

    /// The next raw pair, or `None` at the end of the corpus.
    fn next_raw(&mut self) -> Result<Option<(String, String)>> {
        let Some(tgt) = self.tgt.as_mut() else {
            let path = self.src.path.clone();
            let line = self.src.line + 1;
            return match self.src.next_line()? {
                None => Ok(None),
                Some(l) => match l.split_once('\t') {
                    Some((s, t)) if !t.contains('\t') => Ok(Some((s.to_owned(), t.to_owned()))),
                    _ => Err(Error::Malformed {
                        what: path.display().to_string(),
                        line,
                        reason: "a TSV corpus line must be source<TAB>target (exactly one tab)".into(),
                    }),
                },
            };
        };
        let s = self.src.next_line()?.map(str::to_owned);
        let t = tgt.next_line()?.map(str::to_owned);
        // A file without a single line is empty, whatever the other side holds.
        if self.src.line == 0 && s.is_none() {
            return Err(Error::EmptyFile { path: self.src.path.clone() });
        }
        if tgt.line == 0 && t.is_none() {
            return Err(Error::EmptyFile { path: tgt.path.clone() });
        }
        match (s, t) {
            (Some(s), Some(t)) => Ok(Some((s, t))),
            (None, None) => Ok(None),
            (s, t) => {
                let (src_lines, tgt_lines) = match (s.is_some(), t.is_some()) {
                    (true, _) => (self.src.line + self.src.count_rest()?, tgt.line),
                    _ => (self.src.line, tgt.line + tgt.count_rest()?),
                };
                let PairFiles::Aligned { src: src_path, tgt: tgt_path } = &self.files else { unreachable!("aligned files have a target") };
                Err(Error::LineCountMismatch { src_path: src_path.clone(), src_lines, tgt_path: tgt_path.clone(), tgt_lines })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn aligned_and_tsv_read_the_same_pairs_with_the_same_filters() {
        let d = tempfile::tempdir().unwrap();
        let src = write(d.path(), "a.en", "a b\r\n \nc d e f\ng\n");
        let tgt = write(d.path(), "a.es", "x\ny\nz\n w \n");
        let tsv = write(d.path(), "a.tsv", "a b\tx\r\n \ty\nc d e f\tz\ng\t w \n");
        for files in [PairFiles::Aligned { src, tgt }, PairFiles::Tsv(tsv)] {
            let mut r = PairReader::open(&files, Some(3)).unwrap();
            let mut out = Vec::new();
            assert!(r.read_block(1, &mut out).unwrap());
            while r.read_block(10, &mut out).unwrap() {}
            assert_eq!(out, [("a b".to_string(), "x".to_string()), ("g".into(), "w".into())]);
            assert_eq!(r.skipped, Skipped { empty: 1, long: 1 });
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let tsv = write(d.path(), "b.tsv", "a\tb\nno tab here\n");
        let err = PairReader::open(&PairFiles::Tsv(tsv), None).unwrap().read_block(9, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Error::Malformed { line: 2, .. }), "{err}");
        let (src, tgt) = (write(d.path(), "c.en", "a\nb\nc\n"), write(d.path(), "c.es", "a\n"));
        let err = PairReader::open(&PairFiles::Aligned { src, tgt }, None).unwrap().read_block(9, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Error::LineCountMismatch { src_lines: 3, tgt_lines: 1, .. }), "{err}");
        std::fs::write(d.path().join("u.tsv"), b"a\tb\n\xff\tc\n").unwrap();
        let err = PairReader::open(&PairFiles::Tsv(d.path().join("u.tsv")), None).unwrap().read_block(9, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Error::InvalidUtf8 { line: 2, .. }), "{err}");
    }
}
