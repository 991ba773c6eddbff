//! The library's error type. Every fallible function returns [`Result`]; the CLI prints the chain.
use std::path::PathBuf;

/// Errors from model building, training, search and model files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Data(#[from] nmt_data::Error),
    #[error(transparent)]
    Eval(#[from] nmt_eval::Error),
    #[error("tensor error: {0}")]
    Tensor(#[from] candle_core::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("{path}: not a valid nmt model file: {reason}")]
    ModelFile { path: PathBuf, reason: String },
    #[error("{path}: the checkpoint does not match the configuration: {reason}")]
    CheckpointMismatch { path: PathBuf, reason: String },
    #[error("invalid input: {0}")]
    Input(String),
    /// A data-parallel run's ranks disagree, or the collective itself failed.
    #[error("distributed training: {0}")]
    Collective(String),
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}
