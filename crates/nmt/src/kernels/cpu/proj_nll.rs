//! The vocabulary projection and its loss as one op: `nll_r = lse(z_r) − (1−ε) z_r[y_r] − ε·mean(z_r)`
//! with `z = x W + b` for `x (N, K)`, `W (K, V)`, `b (V)`: the cross-entropy against the
//! smoothed labels `(1−ε)·onehot + ε/V` (ε = 0: the plain NLL). Its gradient in `z` is
//! `softmax − (1−ε)·onehot − ε/V`. The composed twin is `linear`, `log_softmax` and `gather`.
//!
//! The logits `(N, V)` (30 MB on the bench) are computed once, turned in place into
//! `exp(z − max)` with each row's `1 / Σ`, and kept by the op instance for its own backward
//! pass, which scales them into `softmax − onehot` without another `exp`; candle never
//! sees them as a graph node, so no zero-filled gradient buffer of that size is allocated and
//! added into (measured 23 ms for candle's `zeros_like + add` on that shape). If the cache is
//! gone (a second backward through the same graph), the logits are recomputed.
//!
//! [`proj_stats`] is the same op giving each row's `[lse(z_r), z_r[y_r], mean(z_r)]` `(N, 3)`
//! instead (`z_r[y_r] = 0` for a target past `V`): what the copy mixture's loss reads of the
//! vocabulary (`model/copy.rs`), whose composed twin is `copy::logit_stats`. Its gradient in
//! `z` is `d_lse · softmax + d_pick · onehot + d_mean / V`.
use std::any::Any;
use std::sync::Mutex;

use candle_core::{Result, Shape, Tensor};
use rayon::prelude::*;

use super::linear::col_sums;
use super::op::apply;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{Mat, Real};
use crate::kernels::shapes::proj_weight::{Fitted, ProjWeight};

/// Rows per parallel task: a chunk of rows shares one thread's pass over the vocabulary.
const ROWS: usize = 16;

/// The logits buffer of the last backward pass, kept for the next forward pass: allocated
/// fresh, its 30 MB were zero-filled on every step (`memset`, single-threaded: about 2 % of the
/// bf16 training step's cycles, `perf`, 2026-11-26), though the forward GEMM overwrites it.
static KEPT: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);

/// A buffer of `len` for the logits: the kept one when its type fits (old values, which the
/// forward GEMM overwrites without reading them), else a new one.
fn logits_buffer<T: Real>(len: usize) -> Vec<T> {
    let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut z = kept.and_then(|b| b.downcast::<Vec<T>>().ok()).map(|b| *b).unwrap_or_default();
    z.truncate(len);
    z.resize(len, T::ZERO);
    z
}

/// Keeps `z` for the next step's [`logits_buffer`].
fn keep_logits<T: Real>(z: Vec<T>) {
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(z));
}

/// Per-row NLL `(N,)` of `targets` under `softmax(x W + b)`, label-smoothed by `smoothing` (ε);
/// its three products in `products` (`engine::products::matmul_wide`).
pub fn proj_nll(x: &Tensor, w: ProjWeight<'_>, b: &Tensor, targets: &[u32], smoothing: f64, products: Precision) -> Result<Tensor> {
    let Fitted { n, k, v, transposed, w: wt } = w.fitted("proj_nll", x, b, targets)?;
    let op = ProjNll { n, k, v, targets: targets.to_vec(), smoothing, transposed, products, stats: false };
    apply(op, x, wt, b)
}

/// Per row of `z = x W + b`: `[lse(z_r), z_r[y_r], mean(z_r)]` `(N, 3)`, `z_r[y_r] = 0` where
/// `targets[r] ≥ V` (a word the copy mixture can only copy).
pub fn proj_stats(x: &Tensor, w: ProjWeight<'_>, b: &Tensor, targets: &[u32], products: Precision) -> Result<Tensor> {
    let v = b.dims1()?;
    let inside: Vec<u32> = targets.iter().map(|&t| if (t as usize) < v { t } else { 0 }).collect();
    let Fitted { n, k, v, transposed, w: wt } = w.fitted("proj_stats", x, b, &inside)?;
    // Past the vocabulary stays past it (`u32::MAX`): no row of `z` is picked there.
    let targets = targets.iter().map(|&t| if (t as usize) < v { t } else { u32::MAX }).collect();
    apply(ProjNll { n, k, v, targets, smoothing: 0.0, transposed, products, stats: true }, x, wt, b)
}

/// Unnormalised probabilities `exp(z − max)` `(N, V)` and each row's `1 / Σ`, kept between
/// the forward and the backward pass.
struct Probs<T> {
    p: Vec<T>,
    inv_sum: Vec<T>,
}

struct ProjNll {
    n: usize,
    k: usize,
    v: usize,
    targets: Vec<u32>,
    smoothing: f64,
    /// The op's `w` input is `Wᵀ (V, K)` (contiguous) rather than `W (K, V)`.
    transposed: bool,
    products: Precision,
    /// [`proj_stats`]: `(N, 3)` statistics rather than the loss.
    stats: bool,
}

impl ProjNll {
    /// `W (K, V)` as a GEMM operand, whichever layout the input has.
    fn w_mat<'a, T: Real>(&self, w: &'a [T]) -> Mat<'a, T> {
        if self.transposed {
            Mat::new(w, self.v, self.k).t()
        } else {
            Mat::new(w, self.k, self.v)
        }
    }
}

impl<T: Real> FusedOp<Host<T>> for ProjNll {
    type Saved = Probs<T>;
    const NAME: &'static str = "fused-projection-nll";
    const SLOTS: Option<(usize, usize)> = Some((6, 7));

    fn out_shape(&self) -> Shape {
        match self.stats {
            true => Shape::from((self.n, 3)),
            false => Shape::from(self.n),
        }
    }

    /// NLL per row and the probabilities, from `x W + b` computed here.
    fn forward(&self, _: &Host<T>, [x, w, b]: [&[T]; 3]) -> Result<(Vec<T>, Probs<T>)> {
        let (n, v) = (self.n, self.v);
        // The bias is added in the first elementwise pass rather than copied into the GEMM's
        // destination first (a 30 MB copy on the bench).
        let mut z = logits_buffer(n * v);
        matmul_wide(self.products, &mut z, 0, v, Mat::new(x, n, self.k), self.w_mat(w), false, rayon::current_num_threads());
        let width = if self.stats { 3 } else { 1 };
        let mut out = vec![T::ZERO; n * width];
        let mut inv_sum = vec![T::ZERO; n];
        let eps = T::from_f64(self.smoothing);
        let mean = self.stats || self.smoothing != 0.0;
        z.par_chunks_mut(ROWS * v).zip(out.par_chunks_mut(ROWS * width)).zip(inv_sum.par_chunks_mut(ROWS)).enumerate().for_each(
            |(c, ((zb, ob), ib))| {
                simd_dispatch!(for (i, row) in zb.chunks_mut(v).enumerate() {
                    let t = self.targets[c * ROWS + i] as usize;
                    let (lse, zt, avg, inv) = softmax_row(row, b, t.min(v - 1), mean);
                    if self.stats {
                        ob[3 * i..3 * i + 3].copy_from_slice(&[lse, if t < v { zt } else { T::ZERO }, avg]);
                    } else {
                        ob[i] = lse - (T::ONE - eps) * zt - eps * avg;
                    }
                    ib[i] = inv;
                })
            },
        );
        Ok((out, Probs { p: z, inv_sum }))
    }

    /// Gradients of `(x, w, b)` from the probabilities (consumed) and `g = ∂L/∂nll` (or
    /// `∂L/∂[lse, z[y], mean]` per row for [`proj_stats`]).
    fn backward(&self, _: &Host<T>, [x, w, _]: [&[T]; 3], probs: Probs<T>, _nll: &[T], g: &[T]) -> Result<[Vec<T>; 3]> {
        let (n, k, v) = (self.n, self.k, self.v);
        let threads = rayon::current_num_threads();
        let Probs { p: mut z, inv_sum } = probs;
        let eps = T::from_f64(self.smoothing);
        let uniform = eps / T::from_f64(v as f64);
        z.par_chunks_mut(ROWS * v).enumerate().for_each(|(c, blk)| {
            simd_dispatch!(for (i, row) in blk.chunks_mut(v).enumerate() {
                let r = c * ROWS + i;
                let t = self.targets[r] as usize;
                // `z ← z·scale − shift` is `d_lse · softmax` plus the mean's (or smoothing's)
                // uniform term; `pick` is the target's own term.
                let (scale, shift, pick) = match self.stats {
                    true => (g[3 * r] * inv_sum[r], -g[3 * r + 2] / T::from_f64(v as f64), g[3 * r + 1]),
                    false => (g[r] * inv_sum[r], g[r] * uniform, -g[r] * (T::ONE - eps)),
                };
                for zj in row.iter_mut() {
                    *zj = *zj * scale - shift;
                }
                if t < v {
                    row[t] += pick;
                }
            })
        });
        // Transposed views: for GEMMs this large, packing a transposed operand costs nothing
        // measurable (36 ms either way for dx on 2 threads), unlike the per-step GEMMs.
        let mut dx = vec![T::ZERO; n * k];
        matmul_wide(self.products, &mut dx, 0, k, Mat::new(&z, n, v), self.w_mat(w).t(), false, threads);
        let mut dw = vec![T::ZERO; k * v];
        if self.transposed {
            // dWᵀ (V, K) = dZᵀ X, the layout of the op's input.
            matmul_wide(self.products, &mut dw, 0, k, Mat::new(&z, n, v).t(), Mat::new(x, n, k), false, threads);
        } else {
            matmul_wide(self.products, &mut dw, 0, v, Mat::new(x, n, k).t(), Mat::new(&z, n, v), false, threads);
        }
        let db = col_sums(&z, n, v);
        keep_logits(z);
        Ok([dx, dw, db])
    }
}

/// Adds the bias to a row of logits, replaces it by `exp(z − max)`, and returns
/// `(lse, z[target], mean(z) (0 unless `want_mean`), 1 / Σ exp(z − max))`.
#[inline(always)]
fn softmax_row<T: Real>(row: &mut [T], bias: &[T], target: usize, want_mean: bool) -> (T, T, T, T) {
    let v = row.len();
    let (row, bias) = (&mut row[..v], &bias[..v]);
    // 16 lanes of running max and sum: one accumulator per lane lets the compiler vectorise.
    // The smoothed loss's mean logit was a second, scalar pass (one chain of dependent adds);
    // summed here, this closure went from 3.5 % to 2.5 % of the s2s recipe's training cycles
    // (`perf record`, 120 updates, bf16, 2026-11-27).
    let mut mx = [T::from_f64(f64::NEG_INFINITY); 16];
    let mut total = [T::ZERO; 16];
    let full = v / 16 * 16;
    for (ch, bch) in row[..full].chunks_exact_mut(16).zip(bias[..full].chunks_exact(16)) {
        for k in 0..16 {
            ch[k] += bch[k];
            mx[k] = mx[k].max(ch[k]);
            total[k] += ch[k];
        }
    }
    for j in full..v {
        row[j] += bias[j];
        mx[0] = mx[0].max(row[j]);
        total[0] += row[j];
    }
    let max = mx.iter().fold(T::from_f64(f64::NEG_INFINITY), |a, &b| a.max(b));
    let zt = row[target];
    // The mean logit (label smoothing's uniform term), from the same pass.
    let mean = if want_mean { total.iter().fold(T::ZERO, |a, &b| a + b) / T::from_f64(v as f64) } else { T::ZERO };
    let mut acc = [T::ZERO; 16];
    for ch in row[..full].chunks_exact_mut(16) {
        for k in 0..16 {
            ch[k] = (ch[k] - max).exp_fast();
            acc[k] += ch[k];
        }
    }
    let mut sum = acc.iter().fold(T::ZERO, |a, &b| a + b);
    for x in row[full..].iter_mut() {
        *x = (*x - max).exp_fast();
        sum += *x;
    }
    (max + sum.ln(), zt, mean, T::ONE / sum)
}
