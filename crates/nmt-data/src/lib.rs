//! Data handling for the `nmt` toolkit: reading (optionally gzipped) parallel corpora,
//! learning subword segmenters (BPE or word-level vocabularies), and cutting length-bucketed,
//! padded batches whose order is reproducible from a seed and an epoch number.
//!
//! The crate has no CLI dependencies; every fallible function returns [`Result`] so the
//! binaries decide how to report errors.

pub mod atomic;
pub mod batch;
pub mod copy;
pub mod corpus;
pub mod dataset;
pub mod error;
pub mod moses;
pub mod output;
pub mod plan;
pub mod shards;
pub mod shortlist;
pub mod stream;
pub mod subword;

pub use batch::{epoch_batches, inference_batches, Batch, BatchConfig, EpochPlan, Example, Weighted};
pub use corpus::{read_lines, read_parallel, ParallelCorpus};
pub use dataset::{examples, reverse_source};
pub use error::{Error, Result};
pub use shortlist::{Shortlist, ShortlistSpec};
pub use stream::{PairFiles, PairReader};
pub use subword::{ForeignVocab, Segmenter, SubwordConfig, SubwordKind, WordIds};

/// Id of the padding symbol, the same in every vocabulary.
pub const PAD: u32 = 0;
/// Id of the unknown-token symbol, the same in every vocabulary.
pub const UNK: u32 = 1;
/// Id of the begin-of-sentence symbol (first decoder input), the same in every vocabulary.
pub const BOS: u32 = 2;
/// Id of the end-of-sentence symbol, the same in every vocabulary.
pub const EOS: u32 = 3;
/// Surface forms of the special symbols, indexed by their ids.
pub const SPECIALS: [&str; 4] = ["<pad>", "<unk>", "<s>", "</s>"];
