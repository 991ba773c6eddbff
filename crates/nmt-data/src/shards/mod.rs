//! Prepared corpora: a corpus encoded once into binary shards that training reads in bounded
//! memory (fairseq's `preprocess`, Marian's on-disk corpus), made by `nmt prepare` or by
//! `nmt train` itself into the model directory.
//!
//! A prepared directory holds:
//! - `manifest.json` ([`Manifest`]): the spec it was made from, counts, the token type, and each
//!   file's length and CRC-32;
//! - `src.subword.json`, `tgt.subword.json`: the segmenters (`Segmenter::to_json`);
//! - per shard of `shard_pairs` pairs, `shard-NNNNN.tok` (the ids, `u16` when every id fits,
//!   else `u32`, little-endian), `.off` (`u64` offsets, the index) and `.len` (`u16` source and
//!   target lengths, for bucketing without reading tokens).
//!
//! [`Prepared::open`] verifies every file against the manifest, so a truncated or corrupt shard
//! is an error naming that file before training starts.
mod manifest;
mod prepare;
mod reader;
mod swap;
mod writer;

pub use manifest::{checksum, CorpusRange, CorpusSpec, Encoding, FileSum, Manifest, PrepareSpec, ShardEntry, TokenType, MANIFEST};
pub use prepare::{encode_cached, prepare, Corpus, PrepareOptions};
pub use reader::Prepared;
pub use swap::listed_files;
pub use writer::{EncodedPair, ShardWriter};
