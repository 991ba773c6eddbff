//! `nmt`: RNN encoder-decoder neural machine translation (Cho et al. 2014, Bahdanau et al. 2014)
//! on candle. The data pipeline and the evaluation metrics live in their own crates and are
//! re-exported here as [`data`] and [`eval`].
pub mod config;
pub mod embed;
pub mod error;
pub mod hypothesis;
pub mod languages;
pub mod model;

pub use error::{Error, Result};
pub use nmt_data as data;
pub use nmt_eval as eval;
pub mod model_checksum;
pub mod model_file;
pub mod quantize;
pub mod score;
pub mod search;
pub mod shortlist;
pub mod train;
pub mod translate;
pub mod unk;

/// The tensor library, re-exported so that users (and the CLI) use the same version.
pub use candle_core;
pub mod bench;
pub mod infer;
pub mod kernels;
