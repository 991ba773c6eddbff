//! The search's next-token scores in one fused pass: projection `z = G t + b_G`, the
//! log-softmax normaliser and the best few tokens of every row, without ever storing the
//! `(K_y, n)` scores.
//!
//! The scores are computed column-major, `zᵀ = Gᵀ tᵀ`, in blocks of [`block_rows`] vocabulary rows:
//! multiplying the pre-transposed `Gᵀ (V, l)` by the small `tᵀ (l, n)` lets the GEMM pack the
//! small operand instead of the 8 MB projection (measured with 2 threads,
//! `examples/gemm_shapes.rs`: 1.26–1.44 ms against 1.92–3.06 ms at `n = 32`, 4.6–5.4 ms against
//! 5.8–6.7 ms at `n = 160`). Each `(block, n)` block is consumed while it is in cache:
//! - an online log-sum-exp per row (a running max; the running sum rescaled once per block);
//! - each row's best `want[r]` raw scores, behind a per-row admission threshold that is tested
//!   for all `n` rows at once, so a vocabulary entry that enters no list costs one compare.
//!
//! The earlier version stored the 5 MB block and read it twice more, down its columns, for the
//! normalisers: with `n` live beam rows not a multiple of 16 that was 18 % of a translation's
//! profile (`perf`, docs/PERF-HISTORY.md). The vocabulary is split between threads, each running its
//! blocks with a single-threaded GEMM; the per-thread results are merged at the end.
//!
//! Why per-row lists suffice for beam search: a sentence's `w` best extensions over all its
//! hypotheses are each among their own row's `w` best, so [`RowBest::top_k_groups`] merges
//! per-row lists of `w` entries.
use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::gemm::{matmul, transpose, Mat};
use crate::kernels::int8::{self, QActs, QWeights};
use crate::kernels::math::FastMath;
use crate::simd_dispatch;

/// Vocabulary rows per block for `n` rows: about 320 KB of scores (512 rows at beam 5 × 32
/// sentences), inside L2, and never fewer than 64 rows. Measured on the 300-sentence test
/// prefix, beam 5: 512-row blocks 8.6–9.0 s against 9.1–9.4 s for 128-row blocks (three
/// alternations); fewer, larger blocks repack the small operand `tᵀ` fewer times.
pub fn block_rows(n: usize) -> usize {
    (81_920 / n.max(1)).clamp(64, 512) / 16 * 16
}

/// `G^T (V, l)` and `b_G (V)`, prepared once per model.
pub struct Projection {
    wt: Vec<f32>,
    bias: Vec<f32>,
    vocab: usize,
    hidden: usize,
    /// `Gᵀ` in int8 (`kernels/int8.rs`) when [`Projection::best`] multiplies in int8.
    q: Option<QWeights>,
}

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

/// One thread's running state over its share of the vocabulary.
struct Part {
    max: Vec<f32>,
    sum: Vec<f32>,
    top: Vec<Vec<(f32, u32)>>,
    thr: Vec<f32>,
    /// Scratch: the running maxima updated by the current block.
    bmax: Vec<f32>,
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
    pub fn vocab(&self) -> usize {
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
    /// tokens, never choosing a token in `skip`. `threads` parts of the vocabulary are scored
    /// side by side (the partition, hence the result's last bits, depends on it alone).
    pub fn best(&self, t: &[f32], n: usize, want: &[usize], skip: &[u32], threads: usize) -> RowBest {
        let threads = threads.max(1);
        // int8 blocks are the weights' prepacked chunks (512 rows, what `block_rows` gives up
        // to 160 rows anyway).
        let block = if self.q.is_some() { int8::CHUNK } else { block_rows(n) };
        let blocks = self.vocab.div_ceil(block);
        let per = blocks.div_ceil(threads).max(1);
        let qa = self.q.as_ref().map(|q| QActs::new(t, n, q));
        let rows = Features { t, qa: qa.as_ref(), n, want, skip };
        let parts: Vec<Part> = (0..blocks.div_ceil(per))
            .into_par_iter()
            .map(|p| {
                let j0 = p * per * block;
                let j1 = ((p + 1) * per * block).min(self.vocab);
                self.part(&rows, j0..j1, block)
            })
            .collect();
        merge(parts, n, want)
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
    fn part(&self, x: &Features<'_>, range: Range<usize>, block: usize) -> Part {
        let Features { t, qa, n, want, skip } = *x;
        let mut st = Part {
            max: vec![f32::NEG_INFINITY; n],
            sum: vec![0.0; n],
            top: want.iter().map(|&w| Vec::with_capacity(w + 1)).collect(),
            // A row that wants nothing admits nothing.
            thr: want.iter().map(|&w| if w == 0 { f32::INFINITY } else { f32::NEG_INFINITY }).collect(),
            bmax: vec![0.0; n],
        };
        let tt = Mat::new(t, n, self.hidden).t();
        let mut zb = vec![0f32; block * n];
        for j0 in range.clone().step_by(block) {
            let bs = block.min(range.end - j0);
            let z = &mut zb[..bs * n];
            for (i, row) in z.chunks_exact_mut(n).enumerate() {
                row.fill(self.bias[j0 + i]);
            }
            match (&self.q, qa) {
                (Some(q), Some(a)) => int8::block(q, j0, bs, a, int8::Out::columns(z, n)),
                _ => matmul(z, 0, n, Mat::new(&self.wt[j0 * self.hidden..], bs, self.hidden), tt, true, 1),
            }
            simd_dispatch!(consume(z, j0, want, skip, &mut st));
        }
        st
    }
}

/// Folds one block `z (bs, n)` of vocabulary rows `j0..` into the running state.
#[inline(always)]
fn consume(z: &[f32], j0: usize, want: &[usize], skip: &[u32], st: &mut Part) {
    let Part { max, sum, top, thr, bmax } = st;
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
                let (top, w) = (&mut top[r], want[r]);
                let at = top.iter().position(|e| row[r] > e.0).unwrap_or(top.len());
                top.insert(at, (row[r], tok));
                top.truncate(w);
                if top.len() == w {
                    thr[r] = top[w - 1].0;
                }
            }
        }
    }
}

/// Combines the threads' parts: `lse = M + ln Σ_p s_p exp(m_p − M)`, and the per-row lists.
fn merge(parts: Vec<Part>, n: usize, want: &[usize]) -> RowBest {
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
    /// The best token of every row (rows that wanted none get `0`).
    pub fn argmax(&self) -> Vec<u32> {
        self.top.iter().map(|l| l.first().map_or(0, |e| e.1)).collect()
    }

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
