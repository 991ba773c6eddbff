//! What one pass over the vocabulary keeps of each row's scores (`kernels/cpu/projection.rs`): the
//! row's log-softmax normaliser, as an online log-sum-exp (a running max; the running sum
//! rescaled once per block), and its best few raw scores behind a per-row admission threshold,
//! so that a vocabulary entry that enters no list costs one compare.
//!
//! Blocks of raw scores `z` arrive in either layout, read while they are in cache:
//! - column-major `(bs, n)` from the `f32` product `zᵀ = Gᵀ tᵀ` ([`Fold::columns`]): the loops
//!   run along a vocabulary row's `n` scores, 16 rows at a time;
//! - row-major `(n, bs)` from the int8 product ([`Fold::rows`]), which is how rten-gemm writes
//!   its sums: the loops run along a row's `bs` vocabulary scores. Before this layout the int8
//!   path transposed every block into the column-major one while scaling it: `perf record` of
//!   `nmt bench --int8 --only beam5 --steps 60` (2026-11-27) had that scaling pass at 11.9 % of
//!   the cycles and the fold at 9.9 %, against rten's kernel at 31.3 %; folded row-major, 2.4 %
//!   and 12.4 % against 35.2 %: a third less for the two, about a tenth of the search's cycles.
//!
//! Both keep the same per-row lists (vocabulary order within a row, equal scores in that
//! order); the normalisers differ in the order of their sums only.
//!
//! Why per-row lists suffice for beam search: a sentence's `w` best extensions over all its
//! hypotheses are each among their own row's `w` best, so [`RowBest::top_k_groups`] merges
//! per-row lists of `w` entries.
use std::ops::Range;

use crate::kernels::math::FastMath;

/// A candidate extension of a row: the row's score for the sentence ranking, the row, the
/// token, and the token's `log p(y | row)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cand {
    pub score: f32,
    pub row: usize,
    pub token: u32,
    pub log_prob: f32,
}

/// What one pass over the vocabulary keeps: each row's normaliser and its best raw scores.
pub struct RowBest {
    /// `log Σ_y exp z_y` per row.
    pub lse: Vec<f32>,
    /// Per row, up to `want[r]` `(z, token)`, best first.
    pub top: Vec<Vec<(f32, u32)>>,
}

/// One thread's running state over its share of the vocabulary, for `n` rows.
pub(crate) struct Fold {
    max: Vec<f32>,
    sum: Vec<f32>,
    top: Vec<Vec<(f32, u32)>>,
    thr: Vec<f32>,
    /// Scratch: the running maxima updated by the current block.
    bmax: Vec<f32>,
}

impl Fold {
    /// Nothing seen yet, for rows that keep `want[r]` scores each.
    pub(crate) fn new(want: &[usize]) -> Self {
        let n = want.len();
        Fold {
            max: vec![f32::NEG_INFINITY; n],
            sum: vec![0.0; n],
            top: want.iter().map(|&w| Vec::with_capacity(w + 1)).collect(),
            // A row that wants nothing admits nothing.
            thr: want.iter().map(|&w| if w == 0 { f32::INFINITY } else { f32::NEG_INFINITY }).collect(),
            bmax: vec![0.0; n],
        }
    }

    /// The per-row lists alone (for scores that are already log-probabilities).
    pub(crate) fn into_top(self) -> Vec<Vec<(f32, u32)>> {
        self.top
    }

    /// Folds in a column-major block `z (bs, n)` of vocabulary rows `j0..`.
    #[inline(always)]
    pub(crate) fn columns(&mut self, z: &[f32], j0: usize, want: &[usize], skip: &[u32]) {
        let Fold { max, sum, top, thr, bmax } = self;
        let n = max.len();
        bmax.copy_from_slice(max);
        for row in z.chunks_exact(n) {
            for (m, &x) in bmax.iter_mut().zip(row) {
                *m = m.max(x);
            }
        }
        // Rescale the running sums to the new maxima: one exp per row and block.
        for ((s, &m), &b) in sum.iter_mut().zip(max.iter()).zip(bmax.iter()) {
            *s *= (m - b).exp_fast();
        }
        max.copy_from_slice(bmax);
        for (i, row) in z.chunks_exact(n).enumerate() {
            // Zipped slices, no indexing: these two loops must vectorise (with bounds checks they
            // did not, and this function was half of a translation's profile).
            for ((s, &x), &m) in sum.iter_mut().zip(row).zip(bmax.iter()) {
                *s += (x - m).exp_fast();
            }
            let any = row.iter().zip(thr.iter()).fold(false, |a, (&x, &t)| a | (x > t));
            let tok = (j0 + i) as u32;
            if !any || skip.contains(&tok) {
                continue;
            }
            for r in 0..n {
                if row[r] > thr[r] {
                    admit(&mut top[r], &mut thr[r], want[r], row[r], tok);
                }
            }
        }
    }

    /// Folds in a row-major block `z (n, bs)` of vocabulary rows `j0..j0 + bs`.
    #[inline(always)]
    pub(crate) fn rows(&mut self, z: &[f32], bs: usize, j0: usize, want: &[usize], skip: &[u32]) {
        let Fold { max, sum, top, thr, .. } = self;
        if bs == 0 {
            return;
        }
        for r in 0..max.len() {
            let x = &z[r * bs..(r + 1) * bs];
            let mut lanes = [f32::NEG_INFINITY; 16];
            let mut chunks = x.chunks_exact(16);
            for c in &mut chunks {
                for (l, &v) in lanes.iter_mut().zip(c) {
                    *l = l.max(v);
                }
            }
            let m = chunks.remainder().iter().chain(&lanes).fold(max[r], |m, &v| m.max(v));
            let mut acc = [0f32; 16];
            let mut chunks = x.chunks_exact(16);
            for c in &mut chunks {
                for (a, &v) in acc.iter_mut().zip(c) {
                    *a += (v - m).exp_fast();
                }
            }
            let tail: f32 = chunks.remainder().iter().map(|&v| (v - m).exp_fast()).sum();
            sum[r] = sum[r] * (max[r] - m).exp_fast() + acc.iter().sum::<f32>() + tail;
            max[r] = m;
            // 16 scores per compare; only a group with a score above the threshold is read one
            // by one (scanning every score of a row that admits any was 40 % of this pass).
            let mut t = thr[r];
            for (c, group) in x.chunks(16).enumerate() {
                if !group.iter().fold(false, |a, &v| a | (v > t)) {
                    continue;
                }
                for (i, &v) in group.iter().enumerate() {
                    let tok = (j0 + c * 16 + i) as u32;
                    if v > t && !skip.contains(&tok) {
                        admit(&mut top[r], &mut t, want[r], v, tok);
                    }
                }
            }
            thr[r] = t;
        }
    }
}

/// Inserts `(z, tok)` into a row's list of at most `w`, best first (after equal scores), and
/// raises the row's threshold once the list is full.
#[inline(always)]
fn admit(top: &mut Vec<(f32, u32)>, thr: &mut f32, w: usize, z: f32, tok: u32) {
    let at = top.iter().position(|e| z > e.0).unwrap_or(top.len());
    top.insert(at, (z, tok));
    top.truncate(w);
    if top.len() == w {
        *thr = top[w - 1].0;
    }
}

/// Combines the threads' parts: `lse = M + ln Σ_p s_p exp(m_p − M)`, and the per-row lists.
pub(crate) fn merge(parts: Vec<Fold>, n: usize, want: &[usize]) -> RowBest {
    let mut lse = vec![0f32; n];
    let mut top: Vec<Vec<(f32, u32)>> = vec![Vec::new(); n];
    for (r, out) in lse.iter_mut().enumerate() {
        let m = parts.iter().map(|p| p.max[r]).fold(f32::NEG_INFINITY, f32::max);
        let s: f32 = parts.iter().filter(|p| p.max[r] > f32::NEG_INFINITY).map(|p| p.sum[r] * (p.max[r] - m).exp_fast()).sum();
        *out = m + s.ln();
    }
    for p in parts {
        for (r, list) in p.top.into_iter().enumerate() {
            top[r].extend(list);
        }
    }
    for (r, list) in top.iter_mut().enumerate() {
        // Stable: equal scores keep vocabulary order (parts are in vocabulary order).
        list.sort_by(|a, b| b.0.total_cmp(&a.0));
        list.truncate(want[r]);
    }
    RowBest { lse, top }
}

impl RowBest {
    /// For every group of rows (a sentence's live hypotheses, `groups[g]` a range of rows), its
    /// `widths[g]` best candidates, best first, where row `r`'s extension by `y` scores
    /// `base[r] + log p(y | row r)`. Rows whose base is −∞ contribute nothing. Each row must
    /// have been asked for at least its group's width.
    pub fn top_k_groups(&self, base: &[f32], groups: &[Range<usize>], widths: &[usize]) -> Vec<Vec<Cand>> {
        groups
            .iter()
            .zip(widths)
            .map(|(rows, &w)| {
                let mut all: Vec<Cand> = Vec::new();
                for r in rows.clone().filter(|&r| base[r] > f32::NEG_INFINITY) {
                    for &(z, token) in &self.top[r] {
                        let log_prob = z - self.lse[r];
                        all.push(Cand { score: base[r] + log_prob, row: r, token, log_prob });
                    }
                }
                all.sort_by(|a, b| b.score.total_cmp(&a.score));
                all.truncate(w);
                all
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The same scores folded block by block in both layouts, in two parts merged, against
    /// f64 sorting and log-sum-exp: equal lists (ties included: scores are rounded to a coarse
    /// grid so that many are equal), normalisers within float rounding.
    #[test]
    fn row_major_and_column_major_folds_keep_the_same_rows() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let skip = [3u32, 40];
        for (n, v, block) in [(1usize, 100usize, 16usize), (7, 531, 64), (21, 1000, 128), (160, 700, 512)] {
            let want: Vec<usize> = (0..n).map(|r| r % 6).collect();
            // z[r][j], on a grid of 1/8 so that ties are common.
            let z: Vec<Vec<f32>> = (0..n).map(|_| (0..v).map(|_| (rng.gen_range(-40.0f32..40.0)).round() / 8.0).collect()).collect();
            let half = (v / 2).div_ceil(block) * block;
            let fold = |range: Range<usize>, rows: bool| {
                let mut f = Fold::new(&want);
                for j0 in range.clone().step_by(block) {
                    let bs = block.min(range.end - j0);
                    if rows {
                        let b: Vec<f32> = z.iter().flat_map(|row| row[j0..j0 + bs].iter().copied()).collect();
                        f.rows(&b, bs, j0, &want, &skip);
                    } else {
                        let b: Vec<f32> = (0..bs).flat_map(|i| z.iter().map(move |row| row[j0 + i])).collect();
                        f.columns(&b, j0, &want, &skip);
                    }
                }
                f
            };
            let by_rows = merge(vec![fold(0..half.min(v), true), fold(half.min(v)..v, true)], n, &want);
            let by_cols = merge(vec![fold(0..half.min(v), false), fold(half.min(v)..v, false)], n, &want);
            assert_eq!(by_rows.top, by_cols.top, "n {n} v {v}");
            for r in 0..n {
                let m = z[r].iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
                let lse = m + z[r].iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
                for got in [by_rows.lse[r], by_cols.lse[r]] {
                    assert!((got as f64 - lse).abs() < 1e-4, "n {n} row {r}: {got} vs {lse}");
                }
                let mut order: Vec<u32> = (0..v as u32).filter(|j| !skip.contains(j)).collect();
                order.sort_by(|&a, &b| z[r][b as usize].total_cmp(&z[r][a as usize]));
                let tokens: Vec<u32> = by_rows.top[r].iter().map(|e| e.1).collect();
                assert_eq!(tokens, order[..want[r]].to_vec(), "n {n} row {r}");
            }
        }
    }
}
