//! BLEU by source sentence length, as in Bahdanau et al. (2015), Figure 2: sentences
//! are grouped into buckets of source length (whitespace tokens; default width 10:
//! 0-9, 10-19, ..., with an open-ended last bucket, default 60+), and each system's
//! corpus BLEU (sacreBLEU statistics, see [`crate::bleu`]) is computed per bucket.
use crate::bleu::{bleu_sentence_stats, BleuOptions, BleuScore, BleuStats};
use crate::error::{Error, Result};
use crate::text::py_split;

/// How sentences are bucketed by source length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthBuckets {
    /// Bucket width in source words (default 10).
    pub width: usize,
    /// Lengths `>= cap` share the last, open-ended bucket (default 60; rounded up to a multiple of `width`).
    pub cap: usize,
}

impl Default for LengthBuckets {
    fn default() -> Self {
        LengthBuckets { width: 10, cap: 60 }
    }
}

impl LengthBuckets {
    fn validate(&self) -> Result<()> {
        if self.width == 0 {
            return Err(Error::InvalidArgument("bucket width must be at least 1".into()));
        }
        Ok(())
    }

    /// Number of buckets, the open-ended one included.
    pub fn len(&self) -> usize {
        self.cap.div_ceil(self.width.max(1)) + 1
    }

    /// Never empty (there is always the open-ended bucket).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Bucket index of a sentence with `len` source words.
    pub fn index(&self, len: usize) -> usize {
        (len / self.width.max(1)).min(self.len() - 1)
    }

    /// Inclusive lower bound and (inclusive) upper bound of bucket `i`; `None` when open-ended.
    pub fn range(&self, i: usize) -> (usize, Option<usize>) {
        let lo = i * self.width;
        if i + 1 >= self.len() {
            (lo, None)
        } else {
            (lo, Some(lo + self.width - 1))
        }
    }

    /// `0-9`, `10-19`, ..., `60+`.
    pub fn label(&self, i: usize) -> String {
        match self.range(i) {
            (lo, Some(hi)) => format!("{lo}-{hi}"),
            (lo, None) => format!("{lo}+"),
        }
    }
}

/// One system's scores per bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemByLength {
    /// System name (e.g. its file name).
    pub name: String,
    /// BLEU per bucket; `None` where the bucket has no sentence.
    pub buckets: Vec<Option<BleuScore>>,
    /// BLEU over all sentences.
    pub all: BleuScore,
}

/// BLEU by source length for several systems.
#[derive(Debug, Clone, PartialEq)]
pub struct ByLength {
    /// The bucketing used.
    pub spec: LengthBuckets,
    /// Sentences per bucket.
    pub counts: Vec<usize>,
    /// One entry per system, in the order given.
    pub systems: Vec<SystemByLength>,
}

/// Number of whitespace-separated words (Python's `len(s.split())`).
pub fn word_count(s: &str) -> usize {
    py_split(s).count()
}

/// Compute BLEU per source-length bucket. `sources[i]` is the source of sentence `i`,
/// `refs` are reference streams as in [`crate::corpus_bleu`], `systems` are `(name, hypotheses)`.
pub fn bleu_by_length(
    sources: &[String],
    refs: &[Vec<String>],
    systems: &[(String, Vec<String>)],
    opts: &BleuOptions,
    spec: LengthBuckets,
) -> Result<ByLength> {
    spec.validate()?;
    let n = sources.len();
    let bucket_of: Vec<usize> = sources.iter().map(|s| spec.index(word_count(s))).collect();
    let mut counts = vec![0usize; spec.len()];
    for &b in &bucket_of {
        counts[b] += 1;
    }
    let mut out = Vec::with_capacity(systems.len());
    for (name, hyps) in systems {
        if hyps.len() != n {
            return Err(Error::LengthMismatch { what: format!("system {name}"), expected: n, found: hyps.len() });
        }
        let stats = bleu_sentence_stats(hyps, refs, opts)?;
        let mut sums = vec![BleuStats::default(); spec.len()];
        for (s, &b) in stats.iter().zip(&bucket_of) {
            sums[b] += *s;
        }
        let buckets = sums.iter().zip(&counts).map(|(s, &c)| (c > 0).then(|| BleuScore::from_stats(s, opts, refs.len()))).collect();
        let all = BleuScore::from_stats(&stats.iter().copied().sum(), opts, refs.len());
        out.push(SystemByLength { name: name.clone(), buckets, all });
    }
    Ok(ByLength { spec, counts, systems: out })
}

impl ByLength {
    /// A text table: one row per bucket (plus `All`), sentence count, one BLEU column per system.
    pub fn format_table(&self) -> String {
        let mut header = vec!["Source length".to_string(), "Sentences".to_string()];
        header.extend(self.systems.iter().map(|s| s.name.clone()));
        let mut rows = vec![header];
        for (i, &c) in self.counts.iter().enumerate() {
            let mut row = vec![self.spec.label(i), c.to_string()];
            for s in &self.systems {
                row.push(s.buckets.get(i).and_then(|b| b.as_ref()).map_or("-".to_string(), |b| format!("{:.2}", b.score)));
            }
            rows.push(row);
        }
        let mut all = vec!["All".to_string(), self.counts.iter().sum::<usize>().to_string()];
        all.extend(self.systems.iter().map(|s| format!("{:.2}", s.all.score)));
        rows.push(all);
        format_rows(&rows)
    }
}

/// Align a table: the first column left-aligned, the others right-aligned.
pub(crate) fn format_rows(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| if c == 0 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        let b = LengthBuckets::default();
        assert_eq!(b.len(), 7);
        assert_eq!((b.index(0), b.index(9), b.index(10), b.index(59), b.index(60), b.index(500)), (0, 0, 1, 5, 6, 6));
        assert_eq!((b.label(0), b.label(5), b.label(6)), ("0-9".into(), "50-59".into(), "60+".into()));
    }

    #[test]
    fn per_bucket_scores() {
        let src: Vec<String> = vec!["a b".into(), "a b c d e f g h i j k l".into()];
        let refs = vec![vec!["x y z w".to_string(), "p q r s t".to_string()]];
        let sys = vec![("s1".to_string(), vec!["x y z w".to_string(), "no".to_string()])];
        let r = bleu_by_length(&src, &refs, &sys, &BleuOptions::default(), LengthBuckets::default()).unwrap();
        assert_eq!(r.counts, vec![1, 1, 0, 0, 0, 0, 0]);
        let s = &r.systems[0];
        assert!((s.buckets[0].as_ref().unwrap().score - 100.0).abs() < 1e-9);
        assert_eq!(s.buckets[1].as_ref().unwrap().score, 0.0);
        assert!(s.buckets[2].is_none());
        let t = r.format_table();
        assert!(t.contains("0-9") && t.contains("100.00") && t.contains("All"), "{t}");
        let bad = vec![("s2".to_string(), vec!["x".to_string()])];
        assert!(bleu_by_length(&src, &refs, &bad, &BleuOptions::default(), LengthBuckets::default()).is_err());
    }
}
