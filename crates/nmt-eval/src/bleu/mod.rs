//! Corpus and sentence BLEU, mirroring sacreBLEU 2.6.0's `metrics/bleu.py`
//! (`BLEU`, `BLEU.compute_bleu`, `BLEUScore`, `BLEUSignature`) with its defaults:
//! 13a tokenizer, `exp` smoothing, effective order off, 4-grams, mixed case.
//!
//! Statistics are exact integers (`counts`, `totals`, `sys_len`, `ref_len`); the score
//! is computed with the same floating-point operations in the same order as Python.
//!
//! `score.rs` holds the options, statistics and score; `segment.rs` counts one sentence.
mod score;
mod segment;

pub use self::score::{BleuOptions, BleuScore, BleuStats, Smooth, MAX_NGRAM_ORDER};
pub(crate) use self::segment::check_streams;
use self::segment::{segment_stats, stats_range, Scratch};
use crate::error::{Error, Result};

/// Sentences per worker thread below which BLEU stays single-threaded.
const MIN_PER_THREAD: usize = 4096;

/// Per-sentence BLEU statistics (sum them, or a subset, and call [`BleuScore::from_stats`]).
/// `refs[k][i]` is the k-th reference of sentence `i`; an empty string is an empty reference.
/// Large corpora are split across the available cores (std threads).
pub fn bleu_sentence_stats<S: AsRef<str> + Sync, R: AsRef<[S]> + Sync>(
    hyps: &[S],
    refs: &[R],
    opts: &BleuOptions,
) -> Result<Vec<BleuStats>> {
    check_streams(hyps.len(), refs)?;
    let n = hyps.len();
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get()).min(8).min(n / MIN_PER_THREAD).max(1);
    if threads == 1 {
        return Ok(stats_range(hyps, refs, opts, 0..n));
    }
    let chunk = n.div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * chunk).min(n)..((t + 1) * chunk).min(n);
                scope.spawn(move || stats_range(hyps, refs, opts, range))
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for h in handles {
            out.extend(h.join().map_err(|_| Error::Internal("a BLEU worker thread panicked".into()))?);
        }
        Ok(out)
    })
}

/// Corpus BLEU as `sacrebleu.corpus_bleu` / `BLEU(...).corpus_score`.
///
/// `refs`: reference streams, each aligned with `hyps` (`refs[k][i]` is the k-th
/// reference of sentence `i`). Errors if there is no stream or a stream's length
/// differs from `hyps.len()`.
pub fn corpus_bleu(hyps: &[String], refs: &[Vec<String>], opts: &BleuOptions) -> Result<BleuScore> {
    let stats: BleuStats = bleu_sentence_stats(hyps, refs, opts)?.into_iter().sum();
    Ok(BleuScore::from_stats(&stats, opts, refs.len()))
}

/// Sentence BLEU as sacreBLEU's `sentence_score` / `--sentence-level`: effective
/// order is always on (whatever `opts.effective_order` says), as sacreBLEU's CLI and
/// `sentence_bleu` do. `refs` are this sentence's references.
pub fn sentence_bleu<S: AsRef<str>>(hyp: &str, refs: &[S], opts: &BleuOptions) -> Result<BleuScore> {
    if refs.is_empty() {
        return Err(Error::NoReferences);
    }
    let opts = BleuOptions { effective_order: true, ..*opts };
    let refs: Vec<String> = refs.iter().map(|r| opts.preprocess(r.as_ref())).collect();
    let stats = segment_stats(&opts.preprocess(hyp), &refs, &mut Scratch::default(), opts.tokenize);
    Ok(BleuScore::from_stats(&stats, &opts, refs.len()))
}

/// Sentence BLEU of every line (reference streams as in [`corpus_bleu`]).
pub fn sentence_bleus<S: AsRef<str> + Sync, R: AsRef<[S]> + Sync>(hyps: &[S], refs: &[R], opts: &BleuOptions) -> Result<Vec<BleuScore>> {
    let opts = BleuOptions { effective_order: true, ..*opts };
    let stats = bleu_sentence_stats(hyps, refs, &opts)?;
    Ok(stats.iter().map(|s| BleuScore::from_stats(s, &opts, refs.len())).collect())
}

#[cfg(test)]
mod tests {
    use super::segment::closest_ref_len;
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn perfect_match_is_100() {
        let hyps = s(&["the cat sat on the mat"]);
        let b = corpus_bleu(&hyps, std::slice::from_ref(&hyps), &BleuOptions::default()).unwrap();
        assert!((b.score - 100.0).abs() < 1e-9);
        assert_eq!(b.counts, [6, 5, 4, 3]);
        assert_eq!(b.signature(), "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0");
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let err = corpus_bleu(&s(&["a", "b"]), &[s(&["a"])], &BleuOptions::default());
        assert!(matches!(err, Err(Error::LengthMismatch { expected: 2, found: 1, .. })));
        assert!(matches!(corpus_bleu(&s(&["a"]), &[], &BleuOptions::default()), Err(Error::NoReferences)));
    }

    #[test]
    fn closest_length_prefers_shorter_on_ties() {
        assert_eq!(closest_ref_len(4, &[3, 5]), 3);
        assert_eq!(closest_ref_len(4, &[5, 3]), 3);
        assert_eq!(closest_ref_len(5, &[3, 7, 6]), 6);
    }
}
