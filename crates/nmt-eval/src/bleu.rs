//! Corpus and sentence BLEU, mirroring sacreBLEU 2.6.0's `metrics/bleu.py`
//! (`BLEU`, `BLEU.compute_bleu`, `BLEUScore`, `BLEUSignature`) with its defaults:
//! 13a tokenizer, `exp` smoothing, effective order off, 4-grams, mixed case.
//!
//! Statistics are exact integers (`counts`, `totals`, `sys_len`, `ref_len`); the score
//! is computed with the same floating-point operations in the same order as Python.
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::format::{json_compact, json_fields, json_pretty, signature, text_line};
use crate::ngrams::{clipped_matches, count_sorted, merge_max_in_place, word_ngram_keys, Counts, Interner};
use crate::text::{py_rstrip, py_split};
use crate::tokenize::Tokenize;

/// BLEU's maximum n-gram order (sacreBLEU's `MAX_NGRAM_ORDER`).
pub const MAX_NGRAM_ORDER: usize = 4;

/// Smoothing of zero n-gram precisions (sacreBLEU's `smooth_method` / `smooth_value`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Smooth {
    /// No smoothing.
    None,
    /// Method 1: zero precisions become `smooth_value / total` (sacreBLEU default 0.1).
    Floor(f64),
    /// Method 2: add `k` to counts and totals of orders > 1 (sacreBLEU default 1).
    AddK(f64),
    /// Method 3, NIST / mteval-v13a exponential smoothing (sacreBLEU's default).
    #[default]
    Exp,
}

impl Smooth {
    /// The `smooth:` value of the signature, e.g. `exp` or `floor[0.10]`.
    pub fn signature_value(&self) -> String {
        match self {
            Smooth::None => "none".to_string(),
            Smooth::Exp => "exp".to_string(),
            Smooth::Floor(v) => format!("floor[{v:.2}]"),
            Smooth::AddK(v) => format!("add-k[{v:.2}]"),
        }
    }
}

impl FromStr for Smooth {
    type Err = Error;
    /// `none`, `exp`, `floor`, `add-k` (with sacreBLEU's default values).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Smooth::None),
            "exp" => Ok(Smooth::Exp),
            "floor" => Ok(Smooth::Floor(0.1)),
            "add-k" => Ok(Smooth::AddK(1.0)),
            other => Err(Error::InvalidArgument(format!("unknown smoothing method {other:?} (expected none, floor, add-k or exp)"))),
        }
    }
}

/// Options of BLEU (sacreBLEU's `BLEU(...)` arguments); `Default` is sacreBLEU's default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BleuOptions {
    /// Lowercase hypotheses and references before tokenizing (`-lc`).
    pub lowercase: bool,
    /// Tokenizer (`--tokenize`), default 13a.
    pub tokenize: Tokenize,
    /// Smoothing method, default `exp`.
    pub smooth: Smooth,
    /// Average only over n-gram orders the hypothesis has (sacreBLEU's `effective_order`).
    /// Off for corpus BLEU by default; [`sentence_bleu`] always turns it on.
    pub effective_order: bool,
}

impl BleuOptions {
    /// Lowercasing, right-stripping and tokenizing one segment (`BLEU._preprocess_segment`).
    pub fn preprocess(&self, sent: &str) -> String {
        if self.lowercase {
            let lower = sent.to_lowercase();
            self.tokenize.apply(py_rstrip(&lower))
        } else {
            self.tokenize.apply(py_rstrip(sent))
        }
    }
}

/// BLEU's sufficient statistics for one segment or a whole corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BleuStats {
    /// Hypothesis length in tokens.
    pub sys_len: u64,
    /// Closest reference length in tokens.
    pub ref_len: u64,
    /// Clipped n-gram matches per order 1..=4.
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order 1..=4.
    pub totals: [u64; MAX_NGRAM_ORDER],
}

impl std::ops::AddAssign for BleuStats {
    fn add_assign(&mut self, o: Self) {
        self.sys_len += o.sys_len;
        self.ref_len += o.ref_len;
        for n in 0..MAX_NGRAM_ORDER {
            self.counts[n] += o.counts[n];
            self.totals[n] += o.totals[n];
        }
    }
}

impl std::iter::Sum for BleuStats {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        let mut acc = BleuStats::default();
        for s in iter {
            acc += s;
        }
        acc
    }
}

/// A BLEU score with its statistics and what its signature needs.
#[derive(Debug, Clone, PartialEq)]
pub struct BleuScore {
    /// BLEU in 0..=100.
    pub score: f64,
    /// Clipped n-gram matches per order.
    pub counts: [u64; MAX_NGRAM_ORDER],
    /// Hypothesis n-grams per order.
    pub totals: [u64; MAX_NGRAM_ORDER],
    /// n-gram precisions in percent (smoothed as sacreBLEU does).
    pub precisions: [f64; MAX_NGRAM_ORDER],
    /// Brevity penalty.
    pub bp: f64,
    /// `sys_len / ref_len` (0 when `ref_len` is 0).
    pub ratio: f64,
    /// Hypothesis length.
    pub sys_len: u64,
    /// Reference length.
    pub ref_len: u64,
    /// Number of reference streams (signature `nrefs`).
    pub nrefs: usize,
    /// The options it was computed with (signature `case`, `eff`, `tok`, `smooth`).
    pub options: BleuOptions,
}

impl BleuScore {
    /// `BLEU.compute_bleu` from aggregated statistics.
    pub fn from_stats(stats: &BleuStats, opts: &BleuOptions, nrefs: usize) -> BleuScore {
        let (sys_len, ref_len) = (stats.sys_len, stats.ref_len);
        let mut bp = 1.0;
        if sys_len < ref_len {
            bp = if sys_len > 0 { (1.0 - ref_len as f64 / sys_len as f64).exp() } else { 0.0 };
        }
        let ratio = if ref_len > 0 { sys_len as f64 / ref_len as f64 } else { 0.0 };
        let mut precisions = [0.0f64; MAX_NGRAM_ORDER];
        let make = |score: f64, precisions: [f64; MAX_NGRAM_ORDER]| BleuScore {
            score,
            counts: stats.counts,
            totals: stats.totals,
            precisions,
            bp,
            ratio,
            sys_len,
            ref_len,
            nrefs,
            options: *opts,
        };
        // Early stop if there are no matches (sacreBLEU #141).
        if stats.counts.iter().all(|&c| c == 0) {
            return make(0.0, precisions);
        }
        let mut correct = stats.counts.map(|c| c as f64);
        let mut total = stats.totals.map(|t| t as f64);
        let mut smooth_mteval = 1.0f64;
        let mut eff_order = MAX_NGRAM_ORDER;
        for n in 1..=MAX_NGRAM_ORDER {
            if let Smooth::AddK(k) = opts.smooth {
                if n > 1 {
                    correct[n - 1] += k;
                    total[n - 1] += k;
                }
            }
            if total[n - 1] == 0.0 {
                break;
            }
            if opts.effective_order {
                eff_order = n;
            }
            if correct[n - 1] == 0.0 {
                match opts.smooth {
                    Smooth::Exp => {
                        smooth_mteval *= 2.0;
                        precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1]);
                    }
                    Smooth::Floor(v) => precisions[n - 1] = 100.0 * v / total[n - 1],
                    Smooth::None | Smooth::AddK(_) => {}
                }
            } else {
                precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1];
            }
        }
        let log_sum: f64 = precisions[..eff_order].iter().fold(0.0, |acc, &p| acc + my_log(p));
        let score = bp * (log_sum / eff_order as f64).exp();
        make(score, precisions)
    }

    /// sacreBLEU's signature, e.g. `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`.
    pub fn signature(&self) -> String {
        let o = &self.options;
        signature(&[
            ("nrefs", self.nrefs.to_string()),
            ("case", if o.lowercase { "lc" } else { "mixed" }.to_string()),
            ("eff", if o.effective_order { "yes" } else { "no" }.to_string()),
            ("tok", o.tokenize.name().to_string()),
            ("smooth", o.smooth.signature_value()),
        ])
    }

    /// The verbose part: `60.0/35.1/22.0/14.0 (BP = 1.000 ratio = 1.012 hyp_len = 123 ref_len = 121)`.
    pub fn verbose(&self) -> String {
        let prec: Vec<String> = self.precisions.iter().map(|p| format!("{p:.1}")).collect();
        format!("{} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})", prec.join("/"), self.bp, self.ratio, self.sys_len, self.ref_len)
    }

    /// `Score.format(width, signature=...)`: `BLEU|<signature> = 30.12 <verbose>`,
    /// or `BLEU = 30.12 <verbose>` without the signature.
    pub fn format(&self, width: usize, with_signature: bool) -> String {
        let sig = with_signature.then(|| self.signature());
        text_line("BLEU", self.score, width, &self.verbose(), sig.as_deref())
    }

    /// sacreBLEU's `--format json` object (indent 1), score rounded to `width` decimals.
    pub fn to_json(&self, width: usize) -> String {
        json_pretty(&json_fields("BLEU", self.score, width, &self.verbose(), &self.signature()))
    }

    /// The same JSON object on a single line.
    pub fn to_json_line(&self, width: usize) -> String {
        json_compact(&json_fields("BLEU", self.score, width, &self.verbose(), &self.signature()))
    }
}

impl fmt::Display for BleuScore {
    /// `BLEU = 30.12 60.0/35.1/22.0/14.0 (BP = 1.000 ratio = 1.012 hyp_len = 123 ref_len = 121)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(2, false))
    }
}

/// `utils.my_log`: log floored for zero.
fn my_log(x: f64) -> f64 {
    if x == 0.0 {
        -9_999_999_999.0
    } else {
        x.ln()
    }
}

/// `BLEU._get_closest_ref_len`: the closest length, the shorter one on ties.
fn closest_ref_len(hyp_len: u64, ref_lens: &[u64]) -> u64 {
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
struct Scratch {
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
fn segment_stats<S: AsRef<str>>(hyp: &str, refs: &[S], scratch: &mut Scratch, tok: Tokenize) -> BleuStats {
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
fn stats_range<S: AsRef<str>, R: AsRef<[S]>>(hyps: &[S], refs: &[R], opts: &BleuOptions, range: std::ops::Range<usize>) -> Vec<BleuStats> {
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
