//! N-gram counting shared by BLEU and chrF, equivalent to sacreBLEU's
//! `metrics/helpers.py` (`extract_all_word_ngrams`, `extract_all_char_ngrams`)
//! and the `Counter` arithmetic in `BLEU._compute_segment_statistics` and
//! `CHRF._get_match_statistics`.
//!
//! Instead of Python `Counter`s of tuples, an n-gram is packed into a `u128` key
//! (per-sentence token ids, or Unicode scalar values) and counted with a sort
//! and run-length pass; matching is a merge of two sorted lists. This is exact
//! and avoids hashing strings, which keeps corpus BLEU fast.
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Sorted `(key, count)` pairs with distinct keys.
pub(crate) type Counts = Vec<(u128, u32)>;

/// A small FxHash-style hasher for per-sentence token interning.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.hash = (self.hash.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.hash = (self.hash.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Token-to-id map used within one sentence (hypothesis and its references).
pub(crate) type Interner<'a> = HashMap<&'a str, u32, BuildHasherDefault<FxHasher>>;

/// Sort `keys` and collapse equal keys into `(key, count)` runs, written to `out`.
pub(crate) fn count_sorted(keys: &mut [u128], out: &mut Counts) {
    out.clear();
    keys.sort_unstable();
    for &k in keys.iter() {
        match out.last_mut() {
            Some((last, c)) if *last == k => *c += 1,
            _ => out.push((k, 1)),
        }
    }
}

/// Collapse a concatenation of several count lists, keeping for each key the
/// maximum count (sacreBLEU's multi-reference `ngrams[ngram] = max(ngrams[ngram], count)`).
pub(crate) fn merge_max_in_place(all: &mut Counts) {
    all.sort_unstable();
    let mut w = 0;
    for r in 0..all.len() {
        let (k, c) = all[r];
        if w > 0 && all[w - 1].0 == k {
            all[w - 1].1 = all[w - 1].1.max(c);
        } else {
            all[w] = (k, c);
            w += 1;
        }
    }
    all.truncate(w);
}

/// `(total hypothesis n-grams, clipped matches)` of a hypothesis against references.
pub(crate) fn clipped_matches(hyp: &Counts, refs: &Counts) -> (u64, u64) {
    let (mut total, mut matched) = (0u64, 0u64);
    let mut j = 0;
    for &(k, c) in hyp {
        total += u64::from(c);
        while j < refs.len() && refs[j].0 < k {
            j += 1;
        }
        if j < refs.len() && refs[j].0 == k {
            matched += u64::from(c.min(refs[j].1));
        }
    }
    (total, matched)
}

/// Sum of all counts.
pub(crate) fn total(counts: &Counts) -> u64 {
    counts.iter().map(|&(_, c)| u64::from(c)).sum()
}

/// Keys of all `n`-grams over `ids` (n <= 4), each id in 32 bits.
pub(crate) fn word_ngram_keys(ids: &[u32], n: usize, out: &mut Vec<u128>) {
    out.clear();
    if ids.len() < n {
        return;
    }
    for w in ids.windows(n) {
        let mut k = 0u128;
        for &id in w {
            k = (k << 32) | u128::from(id);
        }
        out.push(k);
    }
}

/// Keys of all `n`-grams over characters (n <= 6), each character in 21 bits.
pub(crate) fn char_ngram_keys(chars: &[char], n: usize, out: &mut Vec<u128>) {
    out.clear();
    if n == 0 || chars.len() < n {
        return;
    }
    for w in chars.windows(n) {
        let mut k = 0u128;
        for &c in w {
            k = (k << 21) | u128::from(u32::from(c));
        }
        out.push(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_and_matching() {
        let mut out = Vec::new();
        count_sorted(&mut [3, 1, 3, 2, 3], &mut out);
        assert_eq!(out, vec![(1, 1), (2, 1), (3, 3)]);
        let mut refs = vec![(1, 1), (3, 1), (3, 2), (4, 1)];
        merge_max_in_place(&mut refs);
        assert_eq!(refs, vec![(1, 1), (3, 2), (4, 1)]);
        assert_eq!(clipped_matches(&out, &refs), (5, 3));
    }
}
