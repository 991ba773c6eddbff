//! Turning a text corpus into id sequences ready for batching.

use crate::batch::Example;
use crate::corpus::ParallelCorpus;
use crate::subword::Segmenter;
use crate::EOS;

/// Reverses a source sentence for a model that reads it backwards (`model.reverse_source`,
/// Sutskever et al. 2014): the tokens before the final `</s>` swap ends and `</s>` stays last,
/// so lengths, padding and the encoder's end-of-sentence state mean what they always do.
/// A sentence without a final `</s>` is reversed whole. The permutation is its own inverse:
/// applied to a row of attention weights over the reversed source (`reverse_source` on any
/// slice), it gives the weights in the source's own order.
pub fn reverse_source<T>(xs: &mut [T], ends_with_eos: bool) {
    let words = if ends_with_eos { xs.len().saturating_sub(1) } else { xs.len() };
    xs[..words].reverse();
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reversal_keeps_eos_last_and_undoes_itself() {
        let mut ids = vec![7, 8, 9, EOS];
        reverse_source(&mut ids, true);
        assert_eq!(ids, [9, 8, 7, EOS]);
        reverse_source(&mut ids, true);
        assert_eq!(ids, [7, 8, 9, EOS]);
        let mut bare = vec![1.0, 2.0];
        reverse_source(&mut bare, false);
        assert_eq!(bare, [2.0, 1.0]);
        let mut empty: Vec<u32> = vec![];
        reverse_source(&mut empty, true);
        assert!(empty.is_empty());
    }
}
