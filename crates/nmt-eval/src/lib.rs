//! `nmt-eval`: evaluation for the `nmt` toolkit.
//!
//! * [`corpus_bleu`], [`sentence_bleu`]: BLEU identical to sacreBLEU 2.6.0 (statistics,
//!   score, signature, text and JSON output), tokenizers `13a`, `intl`, `none`.
//! * [`corpus_chrf`], [`sentence_chrf`]: sacreBLEU's chrF2.
//! * [`by_length`]: BLEU per source-length bucket for several systems (Bahdanau et al., Fig. 2).
//! * [`no_unk`]: BLEU on all sentences and on those without unknown words.
//! * [`plot`]: attention heatmaps, training curves, BLEU-by-length pictures (PNG / SVG).
//! * [`io`]: reading text files line by line with errors that name the file and line.
pub mod bleu;
pub mod by_length;
pub mod chrf;
pub mod error;
mod format;
pub mod io;
mod ngrams;
pub mod no_unk;
pub mod plot;
pub mod text;
pub mod tokenize;

pub use bleu::{bleu_sentence_stats, corpus_bleu, sentence_bleu, sentence_bleus, BleuOptions, BleuScore, BleuStats, Smooth};
pub use chrf::{chrf_sentence_stats, corpus_chrf, sentence_chrf, ChrfOptions, ChrfScore};
pub use error::{Error, Result};
pub use format::SACREBLEU_VERSION;
pub use tokenize::Tokenize;
