//! Reading corpora: plain or gzipped UTF-8 text, one sentence per line, and sentence-aligned
//! parallel corpora made of two such files.
//!
//! Files are read whole into memory (corpora for these models are at most a few hundred MB),
//! which lets us report the exact 1-based line of the first invalid UTF-8 sequence instead of
//! the byte offset a streaming reader would give.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Reads a UTF-8 text file, one sentence per line.
///
/// A trailing `'\r'` is stripped from every line (Windows line endings), and a final newline
/// does not produce an extra empty line. A path ending in `.gz` is decompressed transparently
/// (multi-member gzip files, as produced by concatenating `.gz` files, are supported).
///
/// # Errors
/// [`Error::Io`] when the file is missing or unreadable (including corrupt gzip data),
/// [`Error::EmptyFile`] when it holds no bytes, [`Error::InvalidUtf8`] with the 1-based line
/// number of the first line that is not valid UTF-8.
pub fn read_lines(path: &Path) -> Result<Vec<String>> {
    let bytes = read_bytes(path)?;
    if bytes.is_empty() {
        return Err(Error::EmptyFile { path: path.to_path_buf() });
    }
    split_lines(&bytes, path)
}

/// Reads the raw (decompressed) content of `path`.
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let io_err = |source| Error::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io_err)?;
    let mut bytes = Vec::new();
    if is_gzip(path) {
        MultiGzDecoder::new(file).read_to_end(&mut bytes).map_err(io_err)?;
    } else {
        let mut file = file;
        file.read_to_end(&mut bytes).map_err(io_err)?;
    }
    Ok(bytes)
}

/// Whether the path names a gzip file (by its `.gz` extension, case-insensitively).
fn is_gzip(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Splits `bytes` on `'\n'`, strips one trailing `'\r'` per line and validates UTF-8.
fn split_lines(bytes: &[u8], path: &Path) -> Result<Vec<String>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            std::str::from_utf8(line).map(str::to_owned).map_err(|_| Error::InvalidUtf8 { path: path.to_path_buf(), line: i + 1 })
        })
        .collect()
}

/// A sentence-aligned corpus after filtering: `src[i]` translates to `tgt[i]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParallelCorpus {
    /// Source sentences (trimmed).
    pub src: Vec<String>,
    /// Target sentences (trimmed), aligned with `src`.
    pub tgt: Vec<String>,
    /// Pairs dropped because one side was empty or only whitespace.
    pub skipped_empty: usize,
    /// Pairs dropped because one side had more than `max_words` words.
    pub skipped_long: usize,
}

impl ParallelCorpus {
    /// Number of sentence pairs kept.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether no pair was kept.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
}

/// Reads two sentence-aligned files.
///
/// Pairs where either side is empty after trimming are skipped (an empty sentence teaches
/// nothing and would break the EOS-only target convention) and counted in `skipped_empty`;
/// pairs where either side has more than `max_words` whitespace-separated words (when given)
/// are skipped and counted in `skipped_long`. Both counts are logged with `tracing::info!`.
///
/// # Errors
/// Everything [`read_lines`] reports for either file, and [`Error::LineCountMismatch`] when
/// the files have different numbers of lines (the alignment would be meaningless).
pub fn read_parallel(src: &Path, tgt: &Path, max_words: Option<usize>) -> Result<ParallelCorpus> {
    parallel_from_lines(read_lines(src)?, read_lines(tgt)?, (src, tgt), max_words)
}

/// [`read_parallel`] on the (decompressed) bytes of both sides; `paths` name them in errors.
/// What the fuzz target `corpus` drives.
pub fn parallel_from_bytes(src: &[u8], tgt: &[u8], paths: (&Path, &Path), max_words: Option<usize>) -> Result<ParallelCorpus> {
    let lines = |bytes: &[u8], path: &Path| {
        if bytes.is_empty() {
            return Err(Error::EmptyFile { path: path.to_path_buf() });
        }
        split_lines(bytes, path)
    };
    parallel_from_lines(lines(src, paths.0)?, lines(tgt, paths.1)?, paths, max_words)
}

fn parallel_from_lines(
    src_lines: Vec<String>,
    tgt_lines: Vec<String>,
    paths: (&Path, &Path),
    max_words: Option<usize>,
) -> Result<ParallelCorpus> {
    let (src, tgt) = paths;
    if src_lines.len() != tgt_lines.len() {
        return Err(Error::LineCountMismatch {
            src_path: PathBuf::from(src),
            src_lines: src_lines.len(),
            tgt_path: PathBuf::from(tgt),
            tgt_lines: tgt_lines.len(),
        });
    }
    let corpus = filter_pairs(src_lines, tgt_lines, max_words);
    tracing::info!(
        src = %src.display(),
        tgt = %tgt.display(),
        kept = corpus.len(),
        skipped_empty = corpus.skipped_empty,
        skipped_long = corpus.skipped_long,
        "read parallel corpus"
    );
    Ok(corpus)
}

/// Applies the empty/too-long filters to aligned lines.
fn filter_pairs(src: Vec<String>, tgt: Vec<String>, max_words: Option<usize>) -> ParallelCorpus {
    let mut corpus = ParallelCorpus::default();
    for (s, t) in src.into_iter().zip(tgt) {
        let (s, t) = (s.trim(), t.trim());
        if s.is_empty() || t.is_empty() {
            corpus.skipped_empty += 1;
            continue;
        }
        if let Some(max) = max_words {
            if s.split_whitespace().count() > max || t.split_whitespace().count() > max {
                corpus.skipped_long += 1;
                continue;
            }
        }
        corpus.src.push(s.to_owned());
        corpus.tgt.push(t.to_owned());
    }
    corpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_handles_crlf_and_final_newline() {
        let lines = split_lines(b"a b\r\nc\n\nd\n", Path::new("x")).unwrap();
        assert_eq!(lines, vec!["a b", "c", "", "d"]);
    }

    #[test]
    fn split_without_final_newline() {
        let lines = split_lines(b"a\nb", Path::new("x")).unwrap();
        assert_eq!(lines, vec!["a", "b"]);
    }

    #[test]
    fn invalid_utf8_reports_line() {
        let err = split_lines(b"ok\nfine\n\xff\xfe\n", Path::new("x")).unwrap_err();
        assert!(matches!(err, Error::InvalidUtf8 { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn filter_counts_empty_before_long() {
        let src = vec!["a b c".into(), "  ".into(), "x".into(), "y".into()];
        let tgt = vec!["".into(), "a".into(), "one two three four".into(), " z ".into()];
        let c = filter_pairs(src, tgt, Some(3));
        assert_eq!(c.skipped_empty, 2);
        assert_eq!(c.skipped_long, 1);
        assert_eq!(c.src, vec!["y"]);
        assert_eq!(c.tgt, vec!["z"]);
    }

    #[test]
    fn gz_detection() {
        assert!(is_gzip(Path::new("a/train.en.gz")));
        assert!(is_gzip(Path::new("a/train.en.GZ")));
        assert!(!is_gzip(Path::new("a/train.en")));
        assert!(!is_gzip(Path::new("a/gz")));
    }
}
