//! Per-sentence BLEU statistics (sacreBLEU's `_extract_reference_info` and
//! `_compute_segment_statistics`): tokenised n-gram counts clipped by the references.
use super::score::{BleuOptions, BleuStats, MAX_NGRAM_ORDER};
use crate::error::{Error, Result};
use crate::ngrams::{clipped_matches, count_sorted, merge_max_in_place, word_ngram_keys, Counts, Interner};
use crate::text::py_split;
use crate::tokenize::Tokenize;

/// `BLEU._get_closest_ref_len`: the closest length, the shorter one on ties.
pub(super) fn closest_ref_len(hyp_len: u64, ref_lens: &[u64]) -> u64 {
    let mut best: Option<(u64, u64)> = None; // (diff, len)
    for &r in ref_lens {
        let diff = hyp_len.abs_diff(r);
        best = match best {
            None => Some((diff, r)),
            Some((d, _)) if diff < d => Some((diff, r)),
            Some((d, l)) if diff == d && r < l => Some((d, r)),
            keep => keep,
        };
    }
    best.map_or(0, |(_, l)| l)
}

/// Reusable buffers for segment statistics.
#[derive(Default)]
pub(super) struct Scratch {
    keys: Vec<u128>,
    counts: Counts,
    ids: Vec<u32>,
    /// Reference n-gram counts per order (max over references once merged).
    refs: [Counts; MAX_NGRAM_ORDER],
    ref_lens: Vec<u64>,
}

/// Map the tokens of `sent` to per-sentence ids. `single_spaced`: the text is the
/// output of a tokenizer (`' '.join(...split())`), so splitting on `' '` is `split()`.
fn intern<'a>(interner: &mut Interner<'a>, sent: &'a str, ids: &mut Vec<u32>, single_spaced: bool) {
    ids.clear();
    let mut push = |tok: &'a str| {
        let next = interner.len() as u32;
        ids.push(*interner.entry(tok).or_insert(next));
    };
    if single_spaced {
        sent.split(' ').filter(|t| !t.is_empty()).for_each(&mut push);
    } else {
        py_split(sent).for_each(&mut push);
    }
}

/// `BLEU._extract_reference_info` + `_compute_segment_statistics` on preprocessed text.
pub(super) fn segment_stats<S: AsRef<str>>(hyp: &str, refs: &[S], scratch: &mut Scratch, tok: Tokenize) -> BleuStats {
    let single_spaced = tok != Tokenize::None;
    let mut interner = Interner::with_capacity_and_hasher(64, Default::default());
    scratch.ref_lens.clear();
    for r in scratch.refs.iter_mut() {
        r.clear();
    }
    for r in refs {
        intern(&mut interner, r.as_ref(), &mut scratch.ids, single_spaced);
        scratch.ref_lens.push(scratch.ids.len() as u64);
        for (n, acc) in scratch.refs.iter_mut().enumerate() {
            word_ngram_keys(&scratch.ids, n + 1, &mut scratch.keys);
            count_sorted(&mut scratch.keys, &mut scratch.counts);
            acc.extend_from_slice(&scratch.counts);
        }
    }
    if refs.len() > 1 {
        for acc in scratch.refs.iter_mut() {
            merge_max_in_place(acc);
        }
    }
    intern(&mut interner, hyp, &mut scratch.ids, single_spaced);
    let sys_len = scratch.ids.len() as u64;
    let mut stats = BleuStats { sys_len, ref_len: closest_ref_len(sys_len, &scratch.ref_lens), ..Default::default() };
    for (n, ref_counts) in scratch.refs.iter().enumerate() {
        word_ngram_keys(&scratch.ids, n + 1, &mut scratch.keys);
        count_sorted(&mut scratch.keys, &mut scratch.counts);
        let (total, matched) = clipped_matches(&scratch.counts, ref_counts);
        stats.totals[n] = total;
        stats.counts[n] = matched;
    }
    stats
}

/// Check that every reference stream is as long as the hypotheses.
pub(crate) fn check_streams<S: AsRef<str>, R: AsRef<[S]>>(n_hyps: usize, refs: &[R]) -> Result<()> {
    if refs.is_empty() {
        return Err(Error::NoReferences);
    }
    for (k, r) in refs.iter().enumerate() {
        let found = r.as_ref().len();
        if found != n_hyps {
            return Err(Error::LengthMismatch { what: format!("reference stream {}", k + 1), expected: n_hyps, found });
        }
    }
    Ok(())
}

/// Statistics of sentences `range` (one worker's share).
pub(super) fn stats_range<S: AsRef<str>, R: AsRef<[S]>>(
    hyps: &[S],
    refs: &[R],
    opts: &BleuOptions,
    range: std::ops::Range<usize>,
) -> Vec<BleuStats> {
    let mut scratch = Scratch::default();
    let mut ref_buf: Vec<String> = Vec::with_capacity(refs.len());
    let mut out = Vec::with_capacity(range.len());
    for i in range {
        ref_buf.clear();
        for stream in refs {
            if let Some(r) = stream.as_ref().get(i) {
                ref_buf.push(opts.preprocess(r.as_ref()));
            }
        }
        let h = hyps.get(i).map_or_else(String::new, |h| opts.preprocess(h.as_ref()));
        out.push(segment_stats(&h, &ref_buf, &mut scratch, opts.tokenize));
    }
    out
}
