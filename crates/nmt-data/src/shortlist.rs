//! Lexical shortlists (Marian's `--shortlist`): for each source token, its `k` most likely
//! translations, plus the `frequent` most frequent target tokens. A search that translates a
//! batch scores only the union of its sources' candidates ([`Shortlist::candidates`]) instead
//! of the whole target vocabulary, which is about half of each search step's work.
//!
//! The translation table is IBM Model 1's `p(t | s)` (Brown et al. 1993), learned by EM over
//! the training pairs' subword ids, as Marian's shortlists come from fast_align's lexical
//! table. The table is sparse: a source token's row holds only the targets it co-occurs with
//! (compressed rows, [`Cooc`]), so memory follows the co-occurrences, not `K_x · K_y`.
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::{EOS, UNK};

/// How a shortlist is learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortlistSpec {
    /// Translations kept per source token.
    pub k: usize,
    /// The most frequent target tokens, always candidates.
    pub frequent: usize,
    /// EM iterations of IBM Model 1.
    pub iterations: usize,
}

impl Default for ShortlistSpec {
    /// `k = 20`, `frequent = 100`: chosen on dev (docs/PERF.md, "int8 and the lexical shortlist"): on the
    /// Bible's 1 000 dev verses (rnnsearch-small, beam 5), k = 20 and k = 50 both lose 0.07
    /// BLEU against the full vocabulary, k = 10 loses 0.32 and k = 5 loses 1.06; a batch of
    /// 32 sentences then scores about 2 560 of the 8 000 target tokens (k = 50: 3 980).
    fn default() -> Self {
        ShortlistSpec { k: 20, frequent: 100, iterations: 5 }
    }
}

/// A learned shortlist over a source vocabulary of `K_x` and a target vocabulary of `K_y`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortlist {
    k: usize,
    /// `(K_x, k)`: row `s` holds its best translations, best first, padded with [`NONE`].
    cands: Vec<u32>,
    frequent: Vec<u32>,
}

/// Padding in a row of [`Shortlist`] candidates.
pub const NONE: u32 = u32::MAX;

impl Shortlist {
    /// From stored parts (a model file's tensors): `cands` is `(src_vocab, k)`; every id must be
    /// a target id or [`NONE`].
    pub fn from_parts(k: usize, cands: Vec<u32>, frequent: Vec<u32>, src_vocab: usize, tgt_vocab: usize) -> Result<Self> {
        let bad = |m: String| Err(Error::Shortlist(m));
        if cands.len() != src_vocab * k {
            return bad(format!("{} candidates for {src_vocab} source tokens × {k}", cands.len()));
        }
        if let Some(&w) = cands.iter().chain(&frequent).find(|&&w| w != NONE && w as usize >= tgt_vocab) {
            return bad(format!("candidate {w} is outside the target vocabulary of {tgt_vocab}"));
        }
        Ok(Shortlist { k, cands, frequent })
    }

    /// `(k, cands (K_x, k), frequent)`, as [`Shortlist::from_parts`] takes them.
    pub fn parts(&self) -> (usize, &[u32], &[u32]) {
        (self.k, &self.cands, &self.frequent)
    }

    /// The sorted target ids a batch with these source ids may produce: the frequent tokens,
    /// each source token's translations, `<unk>` and `</s>` (`<pad>` and `<s>` only where the
    /// table lists them: a shortlist of every word then normalises as the full vocabulary). Source ids outside the table
    /// (a copy model's extended ids) add nothing.
    pub fn candidates(&self, src: &[u32]) -> Vec<u32> {
        let mut seen = vec![false; self.cands.len() / self.k.max(1)];
        let mut out: Vec<u32> = self.frequent.iter().copied().chain([UNK, EOS]).collect();
        for &s in src {
            let s = s as usize;
            if s < seen.len() && !seen[s] {
                seen[s] = true;
                out.extend(self.cands[s * self.k..(s + 1) * self.k].iter().copied().filter(|&w| w != NONE));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Learns a shortlist from `pairs` (source and target ids, specials allowed: they are
    /// left out of the table).
    pub fn learn(pairs: &[(Vec<u32>, Vec<u32>)], src_vocab: usize, tgt_vocab: usize, spec: &ShortlistSpec) -> Result<Self> {
        if spec.k == 0 {
            return Err(Error::Shortlist("k must be at least 1".into()));
        }
        let words = |ids: &[u32], v: usize| -> Vec<u32> { ids.iter().copied().filter(|&w| w > EOS && (w as usize) < v).collect() };
        let sents: Vec<(Vec<u32>, Vec<u32>)> = pairs.par_iter().map(|(s, t)| (words(s, src_vocab), words(t, tgt_vocab))).collect();
        let table = Cooc::new(&sents, src_vocab);
        let t = table.model1(&sents, spec.iterations);
        let mut cands = vec![NONE; src_vocab * spec.k];
        for (s, row) in cands.chunks_exact_mut(spec.k).enumerate() {
            let r = table.off[s]..table.off[s + 1];
            let mut best: Vec<(f32, u32)> = t[r.clone()].iter().copied().zip(table.tgt[r].iter().copied()).collect();
            best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for (slot, (_, w)) in row.iter_mut().zip(best) {
                *slot = w;
            }
        }
        let mut freq = vec![0u64; tgt_vocab];
        for (_, tgt) in &sents {
            for &w in tgt {
                freq[w as usize] += 1;
            }
        }
        Ok(Shortlist { k: spec.k, cands, frequent: most_frequent(&freq, spec.frequent) })
    }
}

/// The `k` ids of highest `count` (`count[id]`), most frequent first, ties to the smaller id;
/// ids never seen are left out. The shortlist's frequent targets, and the training softmax's
/// frequent types (`nmt::model::candidates`).
pub fn most_frequent(count: &[u64], k: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..count.len() as u32).filter(|&w| count[w as usize] > 0).collect();
    order.sort_by(|&a, &b| count[b as usize].cmp(&count[a as usize]).then(a.cmp(&b)));
    order.truncate(k);
    order
}

/// The co-occurrences of source and target tokens as compressed rows: row `s` is
/// `tgt[off[s]..off[s + 1]]`, sorted, every target that appears in a pair with `s`.
struct Cooc {
    off: Vec<usize>,
    tgt: Vec<u32>,
}

impl Cooc {
    fn new(sents: &[(Vec<u32>, Vec<u32>)], src_vocab: usize) -> Self {
        // Rows are built in parallel, each thread owning the source tokens `s ≡ p (mod P)`.
        let parts = rayon::current_num_threads().max(1);
        let rows: Vec<Vec<(u32, Vec<u32>)>> = (0..parts)
            .into_par_iter()
            .map(|p| {
                let mut rows: Vec<Vec<u32>> = vec![Vec::new(); src_vocab.div_ceil(parts)];
                let mut compact_at = vec![1024usize; rows.len()];
                for (src, tgt) in sents {
                    for &s in src.iter().filter(|&&s| s as usize % parts == p) {
                        let i = s as usize / parts;
                        rows[i].extend_from_slice(tgt);
                        if rows[i].len() > compact_at[i] {
                            rows[i].sort_unstable();
                            rows[i].dedup();
                            compact_at[i] = 2 * rows[i].len() + 1024;
                        }
                    }
                }
                rows.into_iter()
                    .enumerate()
                    .map(|(i, mut r)| {
                        r.sort_unstable();
                        r.dedup();
                        ((i * parts + p) as u32, r)
                    })
                    .collect()
            })
            .collect();
        let mut by_src: Vec<Vec<u32>> = vec![Vec::new(); src_vocab];
        for (s, r) in rows.into_iter().flatten() {
            if (s as usize) < src_vocab {
                by_src[s as usize] = r;
            }
        }
        let mut off = Vec::with_capacity(src_vocab + 1);
        off.push(0);
        for r in &by_src {
            off.push(off.last().copied().unwrap_or(0) + r.len());
        }
        Cooc { off, tgt: by_src.concat() }
    }

    /// The position of `(s, t)` in the rows (it exists for every pair of one sentence).
    fn at(&self, s: u32, t: u32) -> usize {
        let (a, b) = (self.off[s as usize], self.off[s as usize + 1]);
        a + self.tgt[a..b].binary_search(&t).unwrap_or(0)
    }

    /// IBM Model 1's `t(t | s)` after `iterations` EM steps from uniform, one value per entry.
    fn model1(&self, sents: &[(Vec<u32>, Vec<u32>)], iterations: usize) -> Vec<f32> {
        let nnz = self.tgt.len();
        let mut t = vec![1f32; nnz];
        for _ in 0..iterations {
            // E-step: each target token's mass split over the sentence's source tokens.
            let counts = sents
                .par_chunks(256)
                .fold(
                    || vec![0f32; nnz],
                    |mut c, chunk| {
                        let mut idx = Vec::new();
                        for (src, tgt) in chunk {
                            for &w in tgt {
                                idx.clear();
                                idx.extend(src.iter().map(|&s| self.at(s, w)));
                                let den: f32 = idx.iter().map(|&i| t[i]).sum();
                                if den > 0.0 {
                                    for &i in &idx {
                                        c[i] += t[i] / den;
                                    }
                                }
                            }
                        }
                        c
                    },
                )
                .reduce(
                    || vec![0f32; nnz],
                    |mut a, b| {
                        a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                        a
                    },
                );
            // M-step: normalise each source token's row.
            for s in 0..self.off.len() - 1 {
                let r = self.off[s]..self.off[s + 1];
                let total: f32 = counts[r.clone()].iter().sum();
                for i in r {
                    t[i] = if total > 0.0 { counts[i] / total } else { 0.0 };
                }
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_the_translations_of_a_toy_corpus() {
        // Source 10..13 translate to target 20..23; each pair holds two of them in varying
        // company, so only EM separates the true translation from its neighbour.
        let mut pairs = Vec::new();
        for a in 0..4u32 {
            for b in 0..4u32 {
                if a != b {
                    pairs.push((vec![10 + a, 10 + b, EOS], vec![20 + b, 20 + a, EOS]));
                }
            }
        }
        let spec = ShortlistSpec { k: 1, frequent: 2, iterations: 10 };
        let sl = Shortlist::learn(&pairs, 14, 24, &spec).unwrap();
        for a in 0..4u32 {
            assert_eq!(sl.cands[(10 + a) as usize], 20 + a);
        }
        assert_eq!(sl.frequent.len(), 2);
        let c = sl.candidates(&[10, 11, EOS]);
        assert!(c.contains(&20) && c.contains(&21) && c.contains(&EOS) && c.contains(&UNK));
        assert!(!c.contains(&crate::PAD) && !c.contains(&crate::BOS));
        let back = Shortlist::from_parts(1, sl.cands.clone(), sl.frequent.clone(), 14, 24).unwrap();
        assert_eq!(back, sl);
        assert!(Shortlist::from_parts(1, sl.cands.clone(), vec![99], 14, 24).is_err());
        assert!(Shortlist::from_parts(2, sl.cands, vec![], 14, 24).is_err());
    }
}
