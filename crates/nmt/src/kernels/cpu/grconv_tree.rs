//! grConv's tree as one op (Cho et al. 2014, "On the Properties of Neural Machine Translation",
//! §3; the composed twin is `GrConv::forward` in `model/grconv.rs`): every level of every
//! sentence, forward and backward written out by hand.
//!
//! ```text
//! level t = 1 … L−1 of a sentence of L words; node j = 0 … L−t−1 merges j and j+1 of level t−1:
//!   p_j     = [h_j; h_{j+1}] [W^l G^l; W^r G^r]        (L−t, n + 3)  one GEMM per level, whose
//!                                                                    rows are overlapping windows of level t−1
//!   h~_j    = ReLU(p_j[..n]),  ω_j = softmax(p_j[n..]) = [ω_c, ω_l, ω_r]
//!   h_j^(t) = ω_c h~_j + ω_l h_j + ω_r h_{j+1}
//! summary: level L−1's single node (level 0's node 0 when L = 1)   (B, n)
//! ```
//! Inputs `h0 (B, S, n)` (level 0, `x U`), `wc (2n, n)` = `[W^l; W^r]` and `wg (2n, 3)` =
//! `[G^l; G^r]`; output the summaries `(B, n)`. Level `t` of the whole batch is one buffer
//! `(B, S − t, n)`, so that its windows are one overlapping strided view of `B (S − t + 1) − 1`
//! rows and each level is one batch-wide GEMM on all threads (a window that straddles two
//! sentences is computed and never read). Per sentence of `L` words only the `L − t` nodes of
//! level `t < L` that its summary reads are evaluated and kept, each node's `h`, `h~` (after the
//! ReLU: its sign is the ReLU's derivative) and `ω`. The composed twin runs about fifteen graph
//! nodes per level, each with a gradient buffer, and evaluates every position.
//!
//! Backward, level by level from the top, with `dh` the gradient reaching node `j` of level `t`
//! (a sentence's summary's gradient enters at node 0 of its level `L − 1`):
//! ```text
//! dω_k   = dh · [h~_j, h_j, h_{j+1}]_k,   dp_j[n + k] = ω_k (dω_k − Σ_i ω_i dω_i)
//! dp_j[k] = ω_c dh_k [h~_jk > 0]
//! dh_j^(t−1) += ω_l dh + (dp_j W_catᵀ)[..n],   dh_{j+1}^(t−1) += ω_r dh + (dp_j W_catᵀ)[n..]
//! dW_cat += [h_j; h_{j+1}]ᵀ dp_j
//! ```
//! again three batch-wide GEMMs per level. The products are f32 or f64 as the model is
//! (`kernels::gemm`): `train.precision = "bf16"` does not reach this op.
use candle_core::{Result, Shape, Tensor};
use rayon::prelude::*;

use super::op::apply;
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{matmul, transpose, Mat, Real};
use crate::kernels::math::{axpy, dot};

/// The summaries `(B, n)` of sentences of lengths `lens` (each clamped to `1..=S`, as the
/// composed twin reads them) from level 0 `h0 (B, S, n)`, `wc = [W^l; W^r] (2n, n)` and
/// `wg = [G^l; G^r] (2n, 3)`.
pub fn grconv_tree(h0: &Tensor, wc: &Tensor, wg: &Tensor, lens: &[usize]) -> Result<Tensor> {
    let (b, s, n) = h0.dims3()?;
    if wc.dims() != [2 * n, n] || wg.dims() != [2 * n, 3] || lens.len() != b || s == 0 {
        candle_core::bail!("grconv_tree: h0 {:?}, wc {:?}, wg {:?} and {} lengths do not fit", h0.dims(), wc.dims(), wg.dims(), lens.len());
    }
    let lens = lens.iter().map(|&l| l.clamp(1, s)).collect();
    apply(GrConvTree { b, s, n, lens }, h0, wc, wg)
}

struct GrConvTree {
    b: usize,
    s: usize,
    n: usize,
    lens: Vec<usize>,
}

/// Levels `1 … S−1` of the batch, level `t` as `(B, S − t, ·)` from node `B ·`[`start`]`(t, S)`:
/// `h (·, n)`, `h~ (·, n)` after the ReLU and `ω (·, 3)`; zero where no summary reads a node.
struct Levels<T> {
    h: Vec<T>,
    cand: Vec<T>,
    omega: Vec<T>,
}

/// The first node of level `t ≥ 1` among the levels `1 …` of one sentence of `s` positions.
fn start(t: usize, s: usize) -> usize {
    (t - 1) * s - (t - 1) * t / 2
}

/// `[W^l G^l; W^r G^r] (2n, n + 3)`: both products of a window in one GEMM.
fn packed<T: Real>(wc: &[T], wg: &[T], n: usize) -> Vec<T> {
    let mut w = Vec::with_capacity(2 * n * (n + 3));
    for r in 0..2 * n {
        w.extend_from_slice(&wc[r * n..(r + 1) * n]);
        w.extend_from_slice(&wg[r * 3..(r + 1) * 3]);
    }
    w
}

fn softmax3<T: Real>(p: &[T]) -> [T; 3] {
    let top = p[0].max(p[1]).max(p[2]);
    let e = [(p[0] - top).exp_fast(), (p[1] - top).exp_fast(), (p[2] - top).exp_fast()];
    let inv = T::ONE / (e[0] + e[1] + e[2]);
    [e[0] * inv, e[1] * inv, e[2] * inv]
}

impl GrConvTree {
    /// Nodes per sentence at level `t`, and level `t`'s first value (of width `width`) in a
    /// [`Levels`] buffer.
    fn level(&self, t: usize, width: usize) -> (usize, usize) {
        (self.s - t, self.b * start(t, self.s) * width)
    }

    /// Level `t − 1` of `lv.h`, or `h0` for `t = 1`: `(B, S − t + 1, n)`.
    fn below<'a, T: Real>(&self, t: usize, h0: &'a [T], h: &'a [T]) -> &'a [T] {
        let (wn, at) = self.level(t - 1, self.n);
        if t == 1 {
            h0
        } else {
            &h[at..at + self.b * wn * self.n]
        }
    }
}

impl<T: Real> FusedOp<Host<T>> for GrConvTree {
    type Saved = Levels<T>;
    const NAME: &'static str = "fused-grconv-tree";

    fn out_shape(&self) -> Shape {
        Shape::from((self.b, self.n))
    }

    fn forward(&self, _: &Host<T>, [h0, wc, wg]: [&[T]; 3]) -> Result<(Vec<T>, Levels<T>)> {
        let (b, s, n, wd) = (self.b, self.s, self.n, self.n + 3);
        let threads = rayon::current_num_threads();
        let w = packed(wc, wg, n);
        let nodes = b * start(s, s);
        let mut lv = Levels { h: vec![T::ZERO; nodes * n], cand: vec![T::ZERO; nodes * n], omega: vec![T::ZERO; nodes * 3] };
        let mut pre = vec![T::ZERO; b * s * wd];
        for t in 1..s {
            let ((wn, at), pw) = (self.level(t, n), s - t + 1);
            let (below, here) = lv.h.split_at_mut(at);
            let prev = if t == 1 { h0 } else { &below[self.level(t - 1, n).1..] };
            let rows = b * pw - 1;
            matmul(&mut pre, 0, wd, Mat::strided(prev, 0, rows, 2 * n, n), Mat::new(&w, 2 * n, wd), false, threads);
            let (cand, omega) = (&mut lv.cand[at..at + b * wn * n], &mut lv.omega[at / n * 3..(at / n + b * wn) * 3]);
            let (pre, lens) = (&pre, &self.lens);
            here[..b * wn * n]
                .par_chunks_mut(wn * n)
                .zip(cand.par_chunks_mut(wn * n))
                .zip(omega.par_chunks_mut(wn * 3))
                .enumerate()
                .for_each(|(bi, ((hb, cb), ob))| {
                    for j in 0..lens[bi].saturating_sub(t) {
                        let r = bi * pw + j;
                        let p = &pre[r * wd..(r + 1) * wd];
                        let om = softmax3(&p[n..]);
                        ob[j * 3..j * 3 + 3].copy_from_slice(&om);
                        let (l, rt) = (&prev[r * n..(r + 1) * n], &prev[(r + 1) * n..(r + 2) * n]);
                        let (hj, cj) = (&mut hb[j * n..(j + 1) * n], &mut cb[j * n..(j + 1) * n]);
                        for k in 0..n {
                            let c = p[k].max(T::ZERO);
                            cj[k] = c;
                            hj[k] = om[0] * c + om[1] * l[k] + om[2] * rt[k];
                        }
                    }
                });
        }
        let mut out = Vec::with_capacity(b * n);
        for (bi, &len) in self.lens.iter().enumerate() {
            let top = match len {
                1 => &h0[bi * s * n..][..n],
                _ => {
                    let (wn, at) = self.level(len - 1, n);
                    &lv.h[at + bi * wn * n..][..n]
                }
            };
            out.extend_from_slice(top);
        }
        Ok((out, lv))
    }

    fn backward(&self, _: &Host<T>, [h0, wc, wg]: [&[T]; 3], lv: Levels<T>, _: &[T], dout: &[T]) -> Result<[Vec<T>; 3]> {
        let (b, s, n, wd) = (self.b, self.s, self.n, self.n + 3);
        let threads = rayon::current_num_threads();
        let wt = transpose(&packed(wc, wg, n), 2 * n, wd);
        let mut dw = vec![T::ZERO; 2 * n * wd];
        // The gradient of level t's nodes `(B, S − t, n)`, and of level t − 1's as it is built.
        let (mut dcur, mut dprev) = (vec![T::ZERO; b * s * n], vec![T::ZERO; b * s * n]);
        let mut dpre = vec![T::ZERO; b * s * wd];
        let enter = |dl: &mut [T], t: usize, wn: usize| {
            for (bi, &len) in self.lens.iter().enumerate() {
                if len == t + 1 {
                    axpy(T::ONE, &dout[bi * n..(bi + 1) * n], &mut dl[bi * wn * n..bi * wn * n + n]);
                }
            }
        };
        for t in (1..s).rev() {
            let ((wn, at), pw) = (self.level(t, n), s - t + 1);
            let rows = b * pw - 1;
            enter(&mut dcur, t, wn);
            let prev = self.below(t, h0, &lv.h);
            let (dp, dq) = (&mut dprev[..b * pw * n], &mut dpre[..b * pw * wd]);
            dp.fill(T::ZERO);
            dq.fill(T::ZERO);
            let (dc, lens, lv) = (&dcur, &self.lens, &lv);
            dp.par_chunks_mut(pw * n).zip(dq.par_chunks_mut(pw * wd)).enumerate().for_each(|(bi, (dpb, dqb))| {
                for j in 0..lens[bi].saturating_sub(t) {
                    let (r, node) = (bi * pw + j, at / n + bi * wn + j);
                    let dh = &dc[(bi * wn + j) * n..(bi * wn + j + 1) * n];
                    let om = &lv.omega[node * 3..node * 3 + 3];
                    let cand = &lv.cand[node * n..(node + 1) * n];
                    let (l, rt) = (&prev[r * n..(r + 1) * n], &prev[(r + 1) * n..(r + 2) * n]);
                    let dom = [dot(dh, cand), dot(dh, l), dot(dh, rt)];
                    let mean = om[0] * dom[0] + om[1] * dom[1] + om[2] * dom[2];
                    let dpj = &mut dqb[j * wd..(j + 1) * wd];
                    for k in 0..n {
                        dpj[k] = if cand[k] > T::ZERO { om[0] * dh[k] } else { T::ZERO };
                    }
                    for k in 0..3 {
                        dpj[n + k] = om[k] * (dom[k] - mean);
                    }
                    axpy(om[1], dh, &mut dpb[j * n..(j + 1) * n]);
                    axpy(om[2], dh, &mut dpb[(j + 1) * n..(j + 2) * n]);
                }
            });
            // Through the product: window r, [h_r; h_{r+1}], gets dp_r W_catᵀ, whose halves go
            // to nodes r and r + 1 (two products, so that no destination row is written twice).
            let dpm = Mat::new(&dpre, rows, wd);
            matmul(&mut dprev, 0, n, dpm, Mat::strided(&wt, 0, wd, n, 2 * n), true, threads);
            matmul(&mut dprev, n, n, dpm, Mat::strided(&wt, n, wd, n, 2 * n), true, threads);
            matmul(&mut dw, 0, wd, Mat::strided(prev, 0, rows, 2 * n, n).t(), dpm, true, threads);
            std::mem::swap(&mut dcur, &mut dprev);
        }
        // `dcur` is now level 0's gradient; one-word sentences' summaries are their node 0.
        let mut dh0 = dcur;
        enter(&mut dh0, 0, s);
        let (mut dwc, mut dwg) = (Vec::with_capacity(2 * n * n), Vec::with_capacity(2 * n * 3));
        for row in dw.chunks_exact(wd) {
            dwc.extend_from_slice(&row[..n]);
            dwg.extend_from_slice(&row[n..]);
        }
        Ok([dh0, dwc, dwg])
    }
}
