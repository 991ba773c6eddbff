//! `nmt`: RNN encoder-decoder neural machine translation (Cho et al. 2014, Bahdanau et al. 2014)
//! on candle. The data pipeline and the evaluation metrics live in their own crates and are
//! re-exported here as [`data`] and [`eval`].
//!
//! What users call is re-exported at the top: [`Translator`] (load a model file, translate
//! lines), [`Searcher`] (search batches of ids with one model or an ensemble), [`train()`],
//! the model file ([`LoadedModel`], [`ModelMeta`]), the configuration types and the errors.
//!
//! `kernels` (the CPU ops with the CPU's engines, their GPU twins, and the floor both stand on:
//! the op shapes, the op trait, the portable product) and `bench` (the speed harness behind
//! `nmt bench`) are not part of the API: they are hidden from the documentation and may change with any commit. They
//! stay reachable only because the crate's integration tests and examples (`crates/nmt/tests`,
//! `crates/nmt/examples`) test and time the kernels directly; the binary reaches them only
//! through the names re-exported here: [`profile`], [`run_bench_each`], [`BenchOptions`],
//! [`cpu_class`], [`cpu_cap_from_env`], [`bf16_available`] and [`bf16_path`].
pub mod config;
pub mod convert;
pub mod embed;
pub mod error;
pub mod languages;
pub mod model;
pub mod model_checksum;
pub mod model_file;
pub mod quantize;
pub mod score;
pub mod search;
pub mod shortlist;
pub mod train;
pub mod translate;
pub mod unk;

#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod kernels;

pub use bench::run::{run as run_bench, run_each as run_bench_each, BenchOptions};
/// The tensor library, re-exported so that users (and the CLI) use the same version.
pub use candle_core;
pub use config::{Arch, Config, DataConfig, Impl, ModelConfig, SearchConfig, TrainConfig};
pub use error::{Error, Result};
pub use kernels::cpu::engine::isa::{cap_from_env as cpu_cap_from_env, cpu_class};
pub use kernels::cpu::engine::products::{bf16_available, bf16_path, GPU_BF16_PRODUCTS};
pub use kernels::profile;
pub use model::Seq2Seq;
pub use model_file::{LoadedModel, ModelMeta};
pub use nmt_data as data;
pub use nmt_eval as eval;
pub use search::{Hypothesis, SearchOptions, Searcher};
pub use train::{train, TrainOptions, TrainSummary};
pub use translate::{Translation, Translator};
