//! The error type of `nmt-eval`: every fallible function returns [`Result`].
use std::path::PathBuf;

/// Everything that can go wrong while reading inputs, scoring or plotting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, read or written.
    /// (The I/O error is part of the message, not a `source()`, so error chains print it once.)
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// A line of a text file is not valid UTF-8 (line numbers start at 1).
    #[error("{}:{line}: invalid UTF-8", path.display())]
    Utf8 { path: PathBuf, line: usize },
    /// A line of a file could not be parsed (JSON lines, vocabularies).
    #[error("{}:{line}: {msg}", path.display())]
    Parse { path: PathBuf, line: usize, msg: String },
    /// Parallel streams (hypotheses, references, sources) differ in length.
    #[error("{what} has {found} lines but the hypotheses have {expected}")]
    LengthMismatch { what: String, expected: usize, found: usize },
    /// Scoring needs at least one reference stream.
    #[error("no reference given")]
    NoReferences,
    /// A tokenizer name other than `none`, `13a` or `intl`.
    #[error("unknown tokenizer {0:?} (expected none, 13a or intl)")]
    UnknownTokenizer(String),
    /// An option value out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A bug (e.g. a worker thread panicked); should not happen.
    #[error("internal error: {0}")]
    Internal(String),
    /// Drawing a picture failed.
    #[error("plot: {0}")]
    Plot(String),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
