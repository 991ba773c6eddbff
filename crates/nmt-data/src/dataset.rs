//! Turning a text corpus into id sequences ready for batching.

use crate::batch::Example;
use crate::corpus::ParallelCorpus;
use crate::subword::Segmenter;
use crate::EOS;

/// Encodes every pair of `corpus` with the two segmenters and appends EOS to both sides.
///
/// Pairs where either side has more than `max_len` subword tokens (EOS not counted) are
/// dropped, because very long pairs dominate memory and step time while adding little; the
/// number dropped is logged with `tracing::info!`.
pub fn examples(corpus: &ParallelCorpus, src: &Segmenter, tgt: &Segmenter, max_len: Option<usize>) -> Vec<Example> {
    let mut out = Vec::with_capacity(corpus.src.len());
    let mut dropped = 0usize;
    for (s, t) in corpus.src.iter().zip(&corpus.tgt) {
        let mut s = src.encode(s);
        let mut t = tgt.encode(t);
        if max_len.is_some_and(|m| s.len() > m || t.len() > m) {
            dropped += 1;
            continue;
        }
        s.push(EOS);
        t.push(EOS);
        out.push(Example { src: s, tgt: t });
    }
    tracing::info!(kept = out.len(), dropped_long = dropped, ?max_len, "encoded examples");
    out
}
