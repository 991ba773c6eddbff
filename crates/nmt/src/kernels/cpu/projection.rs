//! The search's next-token scores in one fused pass: projection `z = G t + b_G`, the
//! log-softmax normaliser and the best few tokens of every row, without ever storing the
//! `(K_y, n)` scores.
//!
//! The scores are computed column-major, `zᵀ = Gᵀ tᵀ`, in blocks of [`BLOCK_ROWS`] vocabulary rows:
//! multiplying the pre-transposed `Gᵀ (V, l)` by the small `tᵀ (l, n)` lets the GEMM pack the
//! small operand instead of the 8 MB projection (measured with 2 threads,
//! `examples/gemm_shapes.rs`: 1.26–1.44 ms against 1.92–3.06 ms at `n = 32`, 4.6–5.4 ms against
//! 5.8–6.7 ms at `n = 160`). Each block is folded into the rows' running normalisers and
//! best-score lists while it is in cache (`kernels/cpu/row_best.rs`); the int8 product writes its
//! blocks row-major `(n, bs)`, as rten-gemm produces them, and they are folded in that layout.
//!
//! The earlier version stored the 5 MB block and read it twice more, down its columns, for the
//! normalisers: with `n` live beam rows not a multiple of 16 that was 18 % of a translation's
//! profile (`perf`, docs/PERF-HISTORY.md). The vocabulary is split into fixed parts ([`PART_ROWS`]),
//! scored side by side, each with a single-threaded GEMM; the parts' results are merged in order.
use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::cpu::engine::int8::{self, QActs, QWeights};
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::row_best::{merge, Fold, RowBest};
use crate::kernels::gemm::{matmul, transpose, Mat};

/// Vocabulary rows per block of `f32` scores: 320 KB at 160 rows (beam 5 × the default 32
/// sentences), inside L2. Measured on the 300-sentence test prefix, beam 5: 512-row blocks
/// 8.6–9.0 s against 9.1–9.4 s for 128-row blocks (three alternations); fewer, larger blocks
/// repack the small operand `tᵀ` fewer times. It was `81 920 / n` rows (512 up to 160 rows):
/// fixed since 2026-11-27, because a block is where a row's running normaliser is rescaled, and
/// a row's numbers must not depend on how many rows share its step (issue 56).
pub const BLOCK_ROWS: usize = 512;

/// Vocabulary rows per part of [`Projection::best`]: parts are scored side by side and merged
/// in vocabulary order. Fixed, so that the partition, and with it the last bits of every
/// normaliser, does not depend on the thread count: when it was one part per thread, 16
/// threads translated otherwise than 2, choosing between near-equal hypotheses (issue 56).
/// 4 096 rows is what 2 threads made of an 8 000-word vocabulary before, so their results are
/// unchanged. A multiple of [`BLOCK_ROWS`] and of int8's chunk.
pub const PART_ROWS: usize = 8 * BLOCK_ROWS;
const _: () = assert!(PART_ROWS.is_multiple_of(BLOCK_ROWS) && PART_ROWS.is_multiple_of(int8::CHUNK));

/// `G^T (V, l)` and `b_G (V)`, prepared once per model.
pub struct Projection {
    wt: Vec<f32>,
    bias: Vec<f32>,
    vocab: usize,
    hidden: usize,
    /// `Gᵀ` in int8 (`kernels/cpu/engine/int8.rs`) when [`Projection::best`] multiplies in int8.
    q: Option<QWeights>,
}

/// The rows [`Projection::best`] scores: features `t (n, l)` (and quantised, when the
/// projection is), and what each row keeps.
#[derive(Clone, Copy)]
struct Features<'a> {
    t: &'a [f32],
    qa: Option<&'a QActs>,
    n: usize,
    want: &'a [usize],
    skip: &'a [u32],
}

impl Projection {
    /// From `G (l, V)` stored `[in, out]` and `b_G (V)`.
    pub fn new(w: &[f32], bias: &[f32]) -> Self {
        let (vocab, hidden) = (bias.len(), w.len() / bias.len().max(1));
        Projection { wt: transpose(w, hidden, vocab), bias: bias.to_vec(), vocab, hidden, q: None }
    }

    /// This projection with [`Projection::best`] multiplying in int8 (weights quantised per
    /// vocabulary row, once; [`Projection::log_probs`], for ensembles, stays `f32`).
    pub fn quantized(mut self) -> Self {
        self.q = Some(QWeights::new(&self.wt, self.vocab, self.hidden));
        self
    }

    /// The raw score `z_y = t · G_y + b_y` of one token for one row of features `t (l)`.
    pub fn score(&self, t: &[f32], token: u32) -> f32 {
        let w = &self.wt[token as usize * self.hidden..][..self.hidden];
        t.iter().zip(w).map(|(a, b)| a * b).sum::<f32>() + self.bias[token as usize]
    }

    /// The vocabulary size `V`.
    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// The projection onto the vocabulary rows `ids` only (a lexical shortlist): row `i` of the
    /// result scores token `ids[i]`. Copies `|ids| · l` weights, once per batch.
    pub fn subset(&self, ids: &[u32]) -> Projection {
        let h = self.hidden;
        let mut wt = Vec::with_capacity(ids.len() * h);
        for &w in ids {
            wt.extend_from_slice(&self.wt[w as usize * h..][..h]);
        }
        let sub = Projection { wt, bias: ids.iter().map(|&w| self.bias[w as usize]).collect(), vocab: ids.len(), hidden: h, q: None };
        // Rows are quantised independently: quantising the subset is subsetting the quantised.
        if self.q.is_some() {
            sub.quantized()
        } else {
            sub
        }
    }

    /// For `n` rows of features `t (n, l)`: every row's normaliser and its `want[r]` best
    /// tokens, never choosing a token in `skip`. The vocabulary's parts of [`PART_ROWS`] are
    /// scored side by side when `threads > 1`, else one after the other: the same numbers
    /// either way.
    pub fn best(&self, t: &[f32], n: usize, want: &[usize], skip: &[u32], threads: usize) -> RowBest {
        // int8 blocks are the weights' prepacked chunks (512 rows too).
        let block = if self.q.is_some() { int8::CHUNK } else { BLOCK_ROWS };
        let qa = self.q.as_ref().map(|q| QActs::new(t, n, q));
        let rows = Features { t, qa: qa.as_ref(), n, want, skip };
        let part = |p: usize| self.part(&rows, p * PART_ROWS..((p + 1) * PART_ROWS).min(self.vocab), block);
        let parts = self.vocab.div_ceil(PART_ROWS);
        let folds: Vec<Fold> = match threads > 1 {
            true => (0..parts).into_par_iter().map(part).collect(),
            false => (0..parts).map(part).collect(),
        };
        merge(folds, n, want)
    }

    /// Every row's full log-softmax `(n, V)`, row-major, for `n` rows of features `t (n, l)`.
    ///
    /// An ensemble needs this: the best tokens of an average of distributions need not be
    /// among any member's best, so [`Projection::best`]'s pruning does not apply. The scores are
    /// computed column-major as there (`zᵀ = Gᵀ tᵀ`), then transposed.
    pub fn log_probs(&self, t: &[f32], n: usize) -> Vec<f32> {
        let threads = rayon::current_num_threads().max(1);
        let mut zt = vec![0f32; self.vocab * n];
        for (row, &b) in zt.chunks_exact_mut(n.max(1)).zip(&self.bias) {
            row.fill(b);
        }
        matmul(&mut zt, 0, n, Mat::new(&self.wt, self.vocab, self.hidden), Mat::new(t, n, self.hidden).t(), true, threads);
        let mut z = transpose(&zt, self.vocab, n);
        for row in z.chunks_exact_mut(self.vocab.max(1)) {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = m + row.iter().map(|&x| (x - m).exp()).sum::<f32>().ln();
            for x in row.iter_mut() {
                *x -= lse;
            }
        }
        z
    }

    /// One thread's share `range` of the vocabulary, in blocks of `block` rows.
    fn part(&self, x: &Features<'_>, range: Range<usize>, block: usize) -> Fold {
        let Features { t, qa, n, want, skip } = *x;
        let mut st = Fold::new(want);
        let tt = Mat::new(t, n, self.hidden).t();
        let mut zb = vec![0f32; block * n];
        for j0 in range.clone().step_by(block) {
            let bs = block.min(range.end - j0);
            let z = &mut zb[..bs * n];
            let bias = &self.bias[j0..j0 + bs];
            match (&self.q, qa) {
                // Row-major `(n, bs)`, rten-gemm's layout.
                (Some(q), Some(a)) => {
                    for row in z.chunks_exact_mut(bs) {
                        row.copy_from_slice(bias);
                    }
                    int8::block(q, j0, bs, a, z, bs);
                    simd_dispatch!(st.rows(z, bs, j0, want, skip));
                }
                // Column-major `(bs, n)`: `zᵀ = Gᵀ tᵀ`.
                _ => {
                    for (row, &b) in z.chunks_exact_mut(n).zip(bias) {
                        row.fill(b);
                    }
                    matmul(z, 0, n, Mat::new(&self.wt[j0 * self.hidden..], bs, self.hidden), tt, true, 1);
                    simd_dispatch!(st.columns(z, j0, want, skip));
                }
            }
        }
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Scores in f64, row-major `(n, V)`.
    fn reference(w: &[f32], b: &[f32], t: &[f32], n: usize, h: usize) -> Vec<Vec<f64>> {
        let v = b.len();
        (0..n)
            .map(|r| (0..v).map(|j| b[j] as f64 + (0..h).map(|k| t[r * h + k] as f64 * w[k * v + j] as f64).sum::<f64>()).collect())
            .collect()
    }

    /// Normalisers and per-row lists against f64 sorting, for row counts on and off the
    /// 16-wide lanes, a vocabulary that is not a multiple of the block, and skipped tokens.
    #[test]
    fn best_matches_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let (v, h) = (3 * 512 + 45, 24usize);
        let w: Vec<f32> = (0..h * v).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..v).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let proj = Projection::new(&w, &b);
        let skip = [0u32, 7];
        for n in [1usize, 7, 16, 21] {
            let t: Vec<f32> = (0..n * h).map(|_| rng.gen_range(-2.0..2.0)).collect();
            let want: Vec<usize> = (0..n).map(|r| r % 4).collect();
            let got = proj.best(&t, n, &want, &skip, 2);
            for (r, z) in reference(&w, &b, &t, n, h).into_iter().enumerate() {
                let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + z.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
                assert!((got.lse[r] as f64 - lse).abs() < 1e-4, "n {n} row {r}: {} vs {lse}", got.lse[r]);
                let mut order: Vec<u32> = (0..v as u32).filter(|j| !skip.contains(j)).collect();
                order.sort_by(|&a, &c| z[c as usize].total_cmp(&z[a as usize]));
                let tokens: Vec<u32> = got.top[r].iter().map(|e| e.1).collect();
                assert_eq!(tokens, order[..want[r]].to_vec(), "n {n} row {r}");
                for &(s, j) in &got.top[r] {
                    assert!((s as f64 - z[j as usize]).abs() < 1e-4);
                }
            }
        }
    }

    /// The full log-softmax against f64, and against `best`'s normaliser.
    #[test]
    fn log_probs_match_reference() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let (v, h, n) = (700usize, 12usize, 5usize);
        let w: Vec<f32> = (0..h * v).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..v).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let t: Vec<f32> = (0..n * h).map(|_| rng.gen_range(-2.0..2.0)).collect();
        let proj = Projection::new(&w, &b);
        let got = proj.log_probs(&t, n);
        let best = proj.best(&t, n, &[1; 5], &[], 2);
        for (r, z) in reference(&w, &b, &t, n, h).into_iter().enumerate() {
            let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = m + z.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
            for j in 0..v {
                assert!((got[r * v + j] as f64 - (z[j] - lse)).abs() < 1e-4, "row {r} token {j}");
            }
            let top = best.top[r][0];
            assert!((got[r * v + top.1 as usize] - (top.0 - best.lse[r])).abs() < 1e-4);
        }
    }

    /// Group selection against sorting every candidate of the group, with a dead row.
    #[test]
    fn groups_match_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (v, h, n) = (500usize, 8usize, 9usize);
        let w: Vec<f32> = (0..h * v).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let b = vec![0f32; v];
        let t: Vec<f32> = (0..n * h).map(|_| rng.gen_range(-2.0..2.0)).collect();
        let groups = vec![0..4, 4..5, 5..9];
        let widths = vec![4, 1, 3];
        let want = [4, 4, 4, 4, 1, 3, 3, 3, 3];
        let base: Vec<f32> = (0..n).map(|r| if r == 2 { f32::NEG_INFINITY } else { rng.gen_range(-3.0..0.0) }).collect();
        let got = Projection::new(&w, &b).best(&t, n, &want, &[], 2).top_k_groups(&base, &groups, &widths);
        let z = reference(&w, &b, &t, n, h);
        for (g, rows) in groups.iter().enumerate() {
            let mut all: Vec<(f64, usize, u32)> = Vec::new();
            for r in rows.clone().filter(|&r| r != 2) {
                let m = z[r].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + z[r].iter().map(|x| (x - m).exp()).sum::<f64>().ln();
                all.extend((0..v).map(|j| (base[r] as f64 + z[r][j] - lse, r, j as u32)));
            }
            all.sort_by(|a, c| c.0.total_cmp(&a.0));
            let want_g: Vec<(usize, u32)> = all[..widths[g]].iter().map(|c| (c.1, c.2)).collect();
            let got_g: Vec<(usize, u32)> = got[g].iter().map(|c| (c.row, c.token)).collect();
            assert_eq!(got_g, want_g, "group {g}");
            for (c, a) in got[g].iter().zip(&all) {
                assert!((c.score as f64 - a.0).abs() < 1e-4);
            }
        }
    }
}
