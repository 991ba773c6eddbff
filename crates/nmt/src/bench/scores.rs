//! The search's next-token scores, computed column-major: `zᵀ = W_pᵀ tᵀ + b (V, n)`.
//!
//! Multiplying the pre-transposed projection `W_pᵀ (V, H)` by the small `tᵀ (H, n)` lets the
//! GEMM pack the small operand instead of the 8 MB projection, and that packing is what limits
//! the row-major product at a few rows. Measured with 2 threads (`examples/gemm_shapes.rs`):
//! 1.26–1.44 ms against 1.92–3.06 ms at `n = 32` (greedy), and 4.6–5.4 ms against 5.8–6.7 ms at
//! `n = 160` (beam 5). The normaliser and the top-k are then read down the columns, with `n`
//! rows side by side in each pass, so the loops still vectorise.
use rayon::prelude::*;

use crate::kernels::gemm::{matmul, transpose, Mat};
use crate::kernels::math::FastMath;
use crate::simd_dispatch;

/// `W_pᵀ (V, H)` and `b_p (V)`, prepared once per model.
pub struct Projection {
    wt: Vec<f32>,
    bias: Vec<f32>,
    vocab: usize,
    hidden: usize,
}

impl Projection {
    /// From `W_p (H, V)` stored `[in, out]` and `b_p (V)`.
    pub fn new(w: &[f32], bias: &[f32]) -> Self {
        let (vocab, hidden) = (bias.len(), w.len() / bias.len().max(1));
        Projection { wt: transpose(w, hidden, vocab), bias: bias.to_vec(), vocab, hidden }
    }

    /// The scores of `n` rows of deep-output features `t (n, H)`.
    pub fn scores(&self, t: &[f32], n: usize) -> Scores {
        let v = self.vocab;
        let mut zt = vec![0f32; v * n];
        matmul(&mut zt, 0, n, Mat::new(&self.wt, v, self.hidden), Mat::new(t, n, self.hidden).t(), false, rayon::current_num_threads());
        zt.par_chunks_mut(n * 256).enumerate().for_each(|(c, blk)| {
            for (i, row) in blk.chunks_mut(n).enumerate() {
                let b = self.bias[c * 256 + i];
                row.iter_mut().for_each(|x| *x += b);
            }
        });
        // Normalisers: blocks of 16 columns in parallel, each a pass down all V rows.
        let mut lse = vec![0f32; n];
        lse.par_chunks_mut(16).enumerate().for_each(|(c, out)| simd_dispatch!(column_lse(&zt, n, c * 16, out)));
        Scores { zt, lse, n }
    }
}

#[inline(always)]
fn column_lse(zt: &[f32], n: usize, r0: usize, out: &mut [f32]) {
    let w = out.len();
    let mut mx = [f32::NEG_INFINITY; 16];
    let mut sum = [0f32; 16];
    if w == 16 {
        // Fixed-width lanes: the common case (n a multiple of 16), and the one that vectorises.
        for row in zt.chunks_exact(n) {
            let lane: &[f32; 16] = row[r0..r0 + 16].try_into().unwrap_or(&[0.0; 16]);
            for k in 0..16 {
                mx[k] = mx[k].max(lane[k]);
            }
        }
        for row in zt.chunks_exact(n) {
            let lane: &[f32; 16] = row[r0..r0 + 16].try_into().unwrap_or(&[0.0; 16]);
            for k in 0..16 {
                sum[k] += (lane[k] - mx[k]).exp_fast();
            }
        }
    } else {
        for row in zt.chunks_exact(n) {
            for k in 0..w {
                mx[k] = mx[k].max(row[r0 + k]);
            }
        }
        for row in zt.chunks_exact(n) {
            for k in 0..w {
                sum[k] += (row[r0 + k] - mx[k]).exp_fast();
            }
        }
    }
    for k in 0..w {
        out[k] = mx[k] + sum[k].ln();
    }
}

/// One step's scores: `log p(y | row r) = zt[y, r] − lse[r]`. The normalised log-probabilities
/// are never written: search needs only the best few.
pub struct Scores {
    zt: Vec<f32>,
    pub lse: Vec<f32>,
    n: usize,
}

impl Scores {
    /// The best token of every row.
    pub fn argmax(&self) -> Vec<u32> {
        let n = self.n;
        let mut best = vec![f32::NEG_INFINITY; n];
        let mut arg = vec![0u32; n];
        for (j, row) in self.zt.chunks_exact(n).enumerate() {
            for r in 0..n {
                if row[r] > best[r] {
                    best[r] = row[r];
                    arg[r] = j as u32;
                }
            }
        }
        arg
    }

    /// For every sentence (rows `b·k .. (b+1)·k` are its hypotheses), the `k` best
    /// `(score, h·V + y)` where hypothesis `h`'s candidates score `base[h] + log p(y | row)`;
    /// best first. Rows whose base is −∞ (not yet alive) contribute nothing.
    ///
    /// One pass down the rows of `zᵀ`: each row is first compared, all `n` columns at once,
    /// against each column's current admission threshold (its sentence's k-th best), and only
    /// rows with a candidate that gets in are looked at one by one. The rows are split between
    /// the threads, and the per-part lists merged.
    pub fn top_k_all(&self, base: &[f32], k: usize) -> Vec<Vec<(f32, usize)>> {
        let (n, v) = (self.n, self.zt.len() / self.n);
        let sentences = n / k;
        let off: Vec<f32> = base.iter().zip(&self.lse).map(|(b, l)| b - l).collect();
        let part_rows = v.div_ceil(rayon::current_num_threads().max(1));
        let parts: Vec<Vec<Vec<(f32, usize)>>> = self
            .zt
            .par_chunks(n * part_rows)
            .enumerate()
            .map(|(c, blk)| simd_dispatch!(top_k_part(blk, c * part_rows, &off, k, sentences, v)))
            .collect();
        (0..sentences)
            .map(|s| {
                let mut all: Vec<(f32, usize)> = parts.iter().flat_map(|p| p[s].iter().copied()).collect();
                all.sort_by(|a, b| b.0.total_cmp(&a.0));
                all.truncate(k);
                all
            })
            .collect()
    }
}

#[inline(always)]
fn top_k_part(blk: &[f32], j0: usize, off: &[f32], k: usize, sentences: usize, v: usize) -> Vec<Vec<(f32, usize)>> {
    let n = off.len();
    let mut tops: Vec<Vec<(f32, usize)>> = vec![Vec::with_capacity(k + 1); sentences];
    let mut thr = vec![f32::NEG_INFINITY; n];
    for (i, row) in blk.chunks_exact(n).enumerate() {
        let row = &row[..n];
        let mut any = false;
        for r in 0..n {
            any |= off[r] + row[r] > thr[r];
        }
        if !any {
            continue;
        }
        for r in 0..n {
            let c = off[r] + row[r];
            if c > thr[r] {
                let (s, h) = (r / k, r % k);
                let top = &mut tops[s];
                let at = top.iter().position(|t| c > t.0).unwrap_or(top.len());
                top.insert(at, (c, h * v + j0 + i));
                top.truncate(k);
                if top.len() == k {
                    let t = top[k - 1].0;
                    thr[s * k..(s + 1) * k].fill(t);
                }
            }
        }
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `top_k_all` against sorting every candidate, with dead hypotheses and several threads'
    /// worth of row parts.
    #[test]
    fn top_k_matches_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (v, k, sentences) = (1000usize, 5usize, 7usize);
        let n = k * sentences;
        let zt: Vec<f32> = (0..v * n).map(|_| rng.gen_range(-5.0..5.0)).collect();
        let lse: Vec<f32> = (0..n).map(|_| rng.gen_range(0.0..3.0)).collect();
        let base: Vec<f32> = (0..n).map(|r| if r % k == 3 { f32::NEG_INFINITY } else { rng.gen_range(-4.0..0.0) }).collect();
        let sc = Scores { zt: zt.clone(), lse: lse.clone(), n };
        let got = sc.top_k_all(&base, k);
        for (s, got_s) in got.iter().enumerate() {
            let mut all: Vec<(f32, usize)> = Vec::new();
            for h in 0..k {
                let r = s * k + h;
                if base[r] == f32::NEG_INFINITY {
                    continue;
                }
                for j in 0..v {
                    all.push((base[r] - lse[r] + zt[j * n + r], h * v + j));
                }
            }
            all.sort_by(|a, b| b.0.total_cmp(&a.0));
            all.truncate(k);
            assert_eq!(got_s, &all, "sentence {s}");
        }
        let best = sc.argmax();
        for r in 0..n {
            let want = (0..v).max_by(|&a, &b| zt[a * n + r].total_cmp(&zt[b * n + r])).unwrap_or(0);
            assert_eq!(best[r] as usize, want);
        }
    }
}
