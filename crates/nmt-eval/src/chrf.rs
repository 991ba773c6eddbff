//! chrF, mirroring sacreBLEU 2.6.0's `metrics/chrf.py` (`CHRF`, `CHRFScore`,
//! `CHRFSignature`) with its chrF2 defaults: character order 6, word order 0,
//! beta 2, whitespace excluded, effective-order averaging (no eps smoothing).
//!
//! With several references, each sentence keeps the statistics of the reference
//! with the best sentence-level F-score (first one on ties), as sacreBLEU does.
use crate::bleu::check_streams;
use crate::error::{Error, Result};
use crate::format::{json_compact, json_fields, json_pretty, signature, text_line};
use crate::ngrams::{char_ngram_keys, clipped_matches, count_sorted, total, Counts};
use crate::text::py_remove_spaces;

/// The largest supported character n-gram order (keys pack 6 chars in a `u128`).
pub const MAX_CHAR_ORDER: usize = 6;

/// Options of chrF (sacreBLEU's `CHRF(...)` arguments); `Default` is chrF2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChrfOptions {
    /// Character n-gram order, 1..=6 (default 6).
    pub char_order: usize,
    /// Recall weight beta (default 2).
    pub beta: u32,
    /// Lowercase before extracting n-grams.
    pub lowercase: bool,
    /// Keep whitespace inside character n-grams (default: removed).
    pub whitespace: bool,
    /// chrF++.py-style epsilon smoothing instead of effective-order averaging.
    pub eps_smoothing: bool,
}

impl Default for ChrfOptions {
    fn default() -> Self {
        ChrfOptions { char_order: 6, beta: 2, lowercase: false, whitespace: false, eps_smoothing: false }
    }
}

/// A chrF score with its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct ChrfScore {
    /// chrF in 0..=100.
    pub score: f64,
    /// `[hyp, ref, match]` n-gram counts for each order 1..=char_order, flattened.
    pub stats: Vec<u64>,
    /// Number of reference streams.
    pub nrefs: usize,
    /// The options it was computed with.
    pub options: ChrfOptions,
}

impl ChrfScore {
    /// `chrF2` (`chrF{beta}`; word order is always 0 here).
    pub fn name(&self) -> String {
        format!("chrF{}", self.options.beta)
    }

    /// sacreBLEU's signature, e.g. `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0`.
    pub fn signature(&self) -> String {
        let o = &self.options;
        signature(&[
            ("nrefs", self.nrefs.to_string()),
            ("case", if o.lowercase { "lc" } else { "mixed" }.to_string()),
            ("eff", if o.eps_smoothing { "no" } else { "yes" }.to_string()),
            ("nc", o.char_order.to_string()),
            ("nw", "0".to_string()),
            ("space", if o.whitespace { "yes" } else { "no" }.to_string()),
        ])
    }

    /// `chrF2|<signature> = 55.12`, or `chrF2 = 55.12` without the signature.
    pub fn format(&self, width: usize, with_signature: bool) -> String {
        let sig = with_signature.then(|| self.signature());
        text_line(&self.name(), self.score, width, "", sig.as_deref())
    }

    /// sacreBLEU's `--format json` object (indent 1).
    pub fn to_json(&self, width: usize) -> String {
        json_pretty(&json_fields(&self.name(), self.score, width, "", &self.signature()))
    }

    /// The same JSON object on one line.
    pub fn to_json_line(&self, width: usize) -> String {
        json_compact(&json_fields(&self.name(), self.score, width, "", &self.signature()))
    }
}

impl std::fmt::Display for ChrfScore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.format(2, false))
    }
}

/// `CHRF._compute_f_score` on flattened `[hyp, ref, match]` statistics.
pub fn chrf_f_score(stats: &[u64], opts: &ChrfOptions) -> f64 {
    let eps = 1e-16;
    let factor = f64::from(opts.beta) * f64::from(opts.beta);
    let order = stats.len() / 3;
    let (mut score, mut eff, mut avg_prec, mut avg_rec) = (0.0f64, 0usize, 0.0f64, 0.0f64);
    for t in stats.chunks_exact(3) {
        let (n_hyp, n_ref, n_match) = (t[0], t[1], t[2]);
        let prec = if n_hyp > 0 { n_match as f64 / n_hyp as f64 } else { eps };
        let rec = if n_ref > 0 { n_match as f64 / n_ref as f64 } else { eps };
        let denom = factor * prec + rec;
        score += if denom > 0.0 { (1.0 + factor) * prec * rec / denom } else { eps };
        if n_hyp > 0 && n_ref > 0 {
            avg_prec += prec;
            avg_rec += rec;
            eff += 1;
        }
    }
    if opts.eps_smoothing {
        return 100.0 * score / order as f64;
    }
    if eff == 0 {
        avg_prec = 0.0;
        avg_rec = 0.0;
    } else {
        avg_prec /= eff as f64;
        avg_rec /= eff as f64;
    }
    if avg_prec + avg_rec != 0.0 {
        let mut s = (1.0 + factor) * avg_prec * avg_rec;
        s /= (factor * avg_prec) + avg_rec;
        100.0 * s
    } else {
        0.0
    }
}

/// Character n-gram counts of one (preprocessed) segment, per order.
fn char_counts(sent: &str, opts: &ChrfOptions, keys: &mut Vec<u128>) -> Vec<Counts> {
    let chars: Vec<char> = if opts.whitespace { sent.chars().collect() } else { py_remove_spaces(sent).chars().collect() };
    (1..=opts.char_order)
        .map(|n| {
            char_ngram_keys(&chars, n, keys);
            let mut c = Counts::new();
            count_sorted(keys, &mut c);
            c
        })
        .collect()
}

fn preprocess(s: &str, opts: &ChrfOptions) -> String {
    if opts.lowercase {
        s.to_lowercase()
    } else {
        s.to_string()
    }
}

fn validate(opts: &ChrfOptions) -> Result<()> {
    if opts.char_order == 0 || opts.char_order > MAX_CHAR_ORDER {
        return Err(Error::InvalidArgument(format!("chrF character order must be 1..=6, got {}", opts.char_order)));
    }
    Ok(())
}

/// `CHRF._compute_segment_statistics`: best-F-score statistics over the references.
fn segment_stats(hyp: &str, refs: &[String], opts: &ChrfOptions, keys: &mut Vec<u128>) -> Vec<u64> {
    let hyp_counts = char_counts(hyp, opts, keys);
    let mut best: Vec<u64> = Vec::new();
    let mut best_f = -1.0f64;
    for r in refs {
        let ref_counts = char_counts(r, opts, keys);
        let mut stats = Vec::with_capacity(3 * opts.char_order);
        for (h, rc) in hyp_counts.iter().zip(&ref_counts) {
            let (hyp_total, matched) = clipped_matches(h, rc);
            stats.push(if rc.is_empty() { 0 } else { hyp_total });
            stats.push(total(rc));
            stats.push(matched);
        }
        let f = chrf_f_score(&stats, opts);
        if f > best_f {
            best_f = f;
            best = stats;
        }
    }
    best
}

/// Per-sentence chrF statistics (`[hyp, ref, match]` per order, flattened).
pub fn chrf_sentence_stats<S: AsRef<str>, R: AsRef<[S]>>(hyps: &[S], refs: &[R], opts: &ChrfOptions) -> Result<Vec<Vec<u64>>> {
    validate(opts)?;
    check_streams(hyps.len(), refs)?;
    let mut keys = Vec::new();
    let mut out = Vec::with_capacity(hyps.len());
    for (i, hyp) in hyps.iter().enumerate() {
        let rs: Vec<String> = refs.iter().filter_map(|s| s.as_ref().get(i)).map(|r| preprocess(r.as_ref(), opts)).collect();
        out.push(segment_stats(&preprocess(hyp.as_ref(), opts), &rs, opts, &mut keys));
    }
    Ok(out)
}

/// Corpus chrF as `sacrebleu.corpus_chrf` / `CHRF(...).corpus_score`
/// (reference streams as in [`crate::corpus_bleu`]).
pub fn corpus_chrf<S: AsRef<str>, R: AsRef<[S]>>(hyps: &[S], refs: &[R], opts: &ChrfOptions) -> Result<ChrfScore> {
    let per = chrf_sentence_stats(hyps, refs, opts)?;
    let mut stats = vec![0u64; 3 * opts.char_order];
    for s in &per {
        for (a, b) in stats.iter_mut().zip(s) {
            *a += b;
        }
    }
    Ok(ChrfScore { score: chrf_f_score(&stats, opts), stats, nrefs: refs.len(), options: *opts })
}

/// Sentence chrF as sacreBLEU's `sentence_score` (`refs`: this sentence's references).
pub fn sentence_chrf<S: AsRef<str>>(hyp: &str, refs: &[S], opts: &ChrfOptions) -> Result<ChrfScore> {
    validate(opts)?;
    if refs.is_empty() {
        return Err(Error::NoReferences);
    }
    let rs: Vec<String> = refs.iter().map(|r| preprocess(r.as_ref(), opts)).collect();
    let stats = segment_stats(&preprocess(hyp, opts), &rs, opts, &mut Vec::new());
    Ok(ChrfScore { score: chrf_f_score(&stats, opts), stats, nrefs: refs.len(), options: *opts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_is_100() {
        let c = corpus_chrf(&["a cat"], &[vec!["a cat"]], &ChrfOptions::default()).unwrap();
        assert!((c.score - 100.0).abs() < 1e-9);
        assert_eq!(c.signature(), "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0");
    }
}
