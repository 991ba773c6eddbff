//! "No UNK" evaluation as in Bahdanau et al. (2015), Table 1: BLEU on all sentences
//! and on the subset whose source and reference(s) contain only known words
//! (whitespace tokens). Whether a word is known is a caller-supplied predicate, so a
//! model's own vocabulary can be plugged in; [`vocab_predicate`] wraps a word set
//! (e.g. from [`crate::io::read_vocab`]).
use std::collections::HashSet;

use crate::bleu::{bleu_sentence_stats, BleuOptions, BleuScore, BleuStats};
use crate::by_length::format_rows;
use crate::error::{Error, Result};
use crate::text::py_split;

/// `|w| set.contains(w)`.
pub fn vocab_predicate(set: &HashSet<String>) -> impl Fn(&str) -> bool + '_ {
    move |w| set.contains(w)
}

/// For each sentence: true when every source word is known to `src_known` and every
/// word of every reference is known to `tgt_known`.
pub fn known_mask(
    sources: &[String],
    refs: &[Vec<String>],
    src_known: impl Fn(&str) -> bool,
    tgt_known: impl Fn(&str) -> bool,
) -> Vec<bool> {
    sources
        .iter()
        .enumerate()
        .map(|(i, s)| py_split(s).all(&src_known) && refs.iter().all(|stream| stream.get(i).is_none_or(|r| py_split(r).all(&tgt_known))))
        .collect()
}

/// One system's All / No-UNK scores.
#[derive(Debug, Clone, PartialEq)]
pub struct NoUnkRow {
    /// System name.
    pub name: String,
    /// BLEU on all sentences.
    pub all: BleuScore,
    /// BLEU on the sentences without unknown words; `None` if there is none.
    pub no_unk: Option<BleuScore>,
}

/// All vs No-UNK for several systems.
#[derive(Debug, Clone, PartialEq)]
pub struct NoUnkReport {
    /// Number of sentences.
    pub all_count: usize,
    /// Number of sentences without unknown words.
    pub no_unk_count: usize,
    /// One row per system.
    pub systems: Vec<NoUnkRow>,
}

/// Score each system on all sentences and on the No-UNK subset.
pub fn no_unk_report(
    sources: &[String],
    refs: &[Vec<String>],
    systems: &[(String, Vec<String>)],
    opts: &BleuOptions,
    src_known: impl Fn(&str) -> bool,
    tgt_known: impl Fn(&str) -> bool,
) -> Result<NoUnkReport> {
    let n = sources.len();
    for (k, r) in refs.iter().enumerate() {
        if r.len() != n {
            return Err(Error::LengthMismatch { what: format!("reference stream {}", k + 1), expected: n, found: r.len() });
        }
    }
    let mask = known_mask(sources, refs, src_known, tgt_known);
    let no_unk_count = mask.iter().filter(|&&m| m).count();
    let mut rows = Vec::with_capacity(systems.len());
    for (name, hyps) in systems {
        if hyps.len() != n {
            return Err(Error::LengthMismatch { what: format!("system {name}"), expected: n, found: hyps.len() });
        }
        let stats = bleu_sentence_stats(hyps, refs, opts)?;
        let all: BleuStats = stats.iter().copied().sum();
        let known: BleuStats = stats.iter().zip(&mask).filter(|(_, &m)| m).map(|(s, _)| *s).sum();
        rows.push(NoUnkRow {
            name: name.clone(),
            all: BleuScore::from_stats(&all, opts, refs.len()),
            no_unk: (no_unk_count > 0).then(|| BleuScore::from_stats(&known, opts, refs.len())),
        });
    }
    Ok(NoUnkReport { all_count: n, no_unk_count, systems: rows })
}

impl NoUnkReport {
    /// A text table: `System | All (n) | No UNK (m)`.
    pub fn format_table(&self) -> String {
        let mut rows = vec![vec!["System".to_string(), format!("All ({})", self.all_count), format!("No UNK ({})", self.no_unk_count)]];
        for r in &self.systems {
            rows.push(vec![
                r.name.clone(),
                format!("{:.2}", r.all.score),
                r.no_unk.as_ref().map_or("-".to_string(), |s| format!("{:.2}", s.score)),
            ]);
        }
        format_rows(&rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_and_table() {
        let src: Vec<String> = vec!["a b".into(), "a zz".into(), "b".into()];
        let refs = vec![vec!["x y x y".to_string(), "x y".to_string(), "x qq".to_string()]];
        let sv: HashSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let tv: HashSet<String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        assert_eq!(known_mask(&src, &refs, vocab_predicate(&sv), vocab_predicate(&tv)), [true, false, false]);
        let sys = vec![("s".to_string(), vec!["x y x y".to_string(), "q".to_string(), "q".to_string()])];
        let r = no_unk_report(&src, &refs, &sys, &BleuOptions::default(), vocab_predicate(&sv), vocab_predicate(&tv)).unwrap();
        assert_eq!((r.all_count, r.no_unk_count), (3, 1));
        assert!((r.systems[0].no_unk.as_ref().unwrap().score - 100.0).abs() < 1e-9);
        assert!(r.format_table().contains("No UNK (1)"));
    }
}
