//! The error type of `nmt-data`.
//!
//! Every failure that user input can cause (a missing file, a corrupt corpus, a bad
//! vocabulary JSON) surfaces as a variant here instead of a panic, so the CLI can print a
//! message that names the offending file and, where it helps, the line.

use std::path::PathBuf;

/// Errors from reading corpora, training/loading segmenters and batching.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file exists but holds no lines at all.
    #[error("{} is empty", path.display())]
    EmptyFile {
        /// The empty file.
        path: PathBuf,
    },
    /// A line is not valid UTF-8.
    #[error("{}: line {line} is not valid UTF-8", path.display())]
    InvalidUtf8 {
        /// The file involved.
        path: PathBuf,
        /// 1-based line number of the first invalid line.
        line: usize,
    },
    /// The two sides of a parallel corpus have different numbers of lines.
    #[error(
        "parallel corpus sides differ in length: {} has {src_lines} lines but {} has {tgt_lines} lines",
        src_path.display(),
        tgt_path.display()
    )]
    LineCountMismatch {
        /// Source-side file.
        src_path: PathBuf,
        /// Number of lines in the source file.
        src_lines: usize,
        /// Target-side file.
        tgt_path: PathBuf,
        /// Number of lines in the target file.
        tgt_lines: usize,
    },
    /// A subword configuration that cannot be trained (e.g. a vocabulary smaller than the specials).
    #[error("invalid subword configuration: {0}")]
    InvalidConfig(String),
    /// There is nothing to learn a vocabulary from.
    #[error("cannot train a segmenter: {0}")]
    NoTrainingData(String),
    /// The `tokenizers` library reported an error (training, encoding or (de)serialising BPE).
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// A line of a Moses phrase table or n-best list that does not have the format's fields.
    #[error("{what}, line {line}: {reason}")]
    Malformed {
        /// The file (or stream) read.
        what: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A prepared corpus directory (`nmt prepare`) whose manifest or shard is wrong.
    #[error("{}: {reason}", path.display())]
    Prepared {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A segmenter JSON could not be parsed or does not describe a valid segmenter.
    #[error("invalid segmenter JSON: {0}")]
    Json(String),
    /// An output that is one of the command's inputs, or another of its outputs.
    #[error("{} is the same file as the {what} {}: refused before reading anything", output.display(), other.display())]
    SameFile {
        /// The output refused.
        output: PathBuf,
        /// The input or earlier output it coincides with.
        other: PathBuf,
        /// `"input"` or `"output"`.
        what: &'static str,
    },
    /// A lexical shortlist that cannot be learned or does not fit its vocabularies.
    #[error("lexical shortlist: {0}")]
    Shortlist(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
