//! The backward pass of the gated-feedback stack op (`feedback.rs`; its forward pass is in
//! `feedback_forward.rs`): back through time, the upper layers top-down within a step. A step's gradient reaches the sources `S_t`, every
//! layer's output at `t − 1` (the gates' `S U_g`, the other layers' blocks of `V`, and the
//! layer's own state through `U`, the update and `V`'s first block), so the carry between
//! steps is `dS (B, L·n)` (and the LSTM's cell-state gradients). Block 0 of it is the first
//! decoder layer's output, which goes back to `s1` (or `h0` before the first step); the
//! weights' gradients add up step by step with small GEMMs.
use super::feedback_forward::{block, masked, LayerWeights, Saved, Step, StepBufs};
use crate::config::CellKind;
use crate::kernels::gemm::{matmul, transpose, Mat, Real};
use crate::kernels::shapes::feedback_dims::FeedbackDims;

/// One upper layer's weights transposed once per call (see `gemm::transpose`): `Wᵀ (G, n)`,
/// `Uᵀ (G, n)`, `U_otherᵀ (n, (L−1)·n)`, `W_gᵀ (L, n)`, `U_gᵀ (L, L·n)`.
pub(crate) struct Transposed<T> {
    wt: Vec<T>,
    ut: Vec<T>,
    uot: Vec<T>,
    wgt: Vec<T>,
    ugt: Vec<T>,
}

impl<T: Real> Transposed<T> {
    fn of(d: &FeedbackDims, w: &LayerWeights<'_, T>) -> Self {
        let (n, l, g) = (d.hidden, d.layers, d.gates());
        Transposed {
            wt: transpose(w.w, n, g),
            ut: transpose(w.u, n, g),
            uot: transpose(w.uo, (l - 1) * n, n),
            wgt: transpose(w.wg, n, l),
            ugt: transpose(w.ug, l * n, l),
        }
    }
}

/// One upper layer's weight gradients, views into its block of the flat gradient (the layout
/// of [`LayerWeights`]).
pub(crate) struct LayerGrads<'a, T> {
    w: &'a mut [T],
    b: &'a mut [T],
    u: &'a mut [T],
    bh: &'a mut [T],
    wg: &'a mut [T],
    ug: &'a mut [T],
    uo: &'a mut [T],
}

impl<'a, T> LayerGrads<'a, T> {
    fn of(d: &FeedbackDims, dp: &'a mut [T], k: usize) -> Self {
        let o = d.offsets();
        let blk = &mut dp[k * o.len..][..o.len];
        let (w, rest) = blk.split_at_mut(o.b);
        let (b, rest) = rest.split_at_mut(o.u - o.b);
        let (u, rest) = rest.split_at_mut(o.bh - o.u);
        let (bh, rest) = rest.split_at_mut(o.wg - o.bh);
        let (wg, rest) = rest.split_at_mut(o.ug - o.wg);
        let (ug, uo) = rest.split_at_mut(o.uo - o.ug);
        LayerGrads { w, b, u, bh, wg, ug, uo }
    }
}

/// What one layer's backward step reads: its saved products, the sources `S_t (B, L·n)`, the
/// LSTM's cell states before and after the step (empty for the GRU) and the gradient `dh`
/// reaching its new output `(B, n)`.
pub(crate) struct BackIn<'a, T> {
    pub bufs: StepBufs<&'a [T]>,
    pub s: &'a [T],
    pub cprev: &'a [T],
    pub c: &'a [T],
    pub dh: &'a [T],
}

/// Adds each column's sum of the row-major `(rows, dst.len())` matrix `m` to `dst`.
fn add_col_sums<T: Real>(dst: &mut [T], m: &[T]) {
    for row in m.chunks_exact(dst.len()) {
        for (o, &v) in dst.iter_mut().zip(row) {
            *o += v;
        }
    }
}

impl<T: Real> Step<'_, T> {
    /// The backward step: adds the layer's weight gradients to `dw` and the sources' gradient
    /// to `ds (B, L·n)`, carries the LSTM's cell-state gradient in `dc (B, n)` (from `t` to
    /// `t − 1`), and returns the gradient of the masked input `(B, n)`.
    fn backward(&self, at: &BackIn<'_, T>, dc: &mut [T], tr: &Transposed<T>, dw: &mut LayerGrads<'_, T>, ds: &mut [T]) -> Vec<T> {
        let d = self.d;
        let (b, n, l, g) = (d.batch, d.hidden, d.layers, d.gates());
        let (ln, th, bf) = (l * n, rayon::current_num_threads(), &at.bufs);
        let lstm = d.kind == CellKind::Lstm;
        let hprev = block(at.s, self.own(), n, l);
        let hu = masked(&hprev, self.state_mask);
        let zeros = |len: usize| vec![T::ZERO; len];
        let (mut dgi, mut drs, mut dr, mut dhprev) = (zeros(b * g), zeros(b * n), zeros(b * n), zeros(b * n));
        let sig = |r: usize, q: usize, j: usize| (bf.gi[r * g + q * n + j] + bf.gh[r * g + q * n + j]).sigmoid_fast();
        for r in 0..b {
            for j in 0..n {
                let (i, cd, dh) = (r * n + j, bf.cand[r * n + j], at.dh[r * n + j]);
                let dpre = if lstm {
                    let (ig, fg, og) = (sig(r, 0, j), sig(r, 1, j), sig(r, 3, j));
                    let tc = at.c[i].tanh_fast();
                    let dct = dc[i] + dh * og * (T::ONE - tc * tc);
                    dc[i] = dct * fg;
                    dgi[r * g + j] = dct * cd * ig * (T::ONE - ig);
                    dgi[r * g + n + j] = dct * at.cprev[i] * fg * (T::ONE - fg);
                    dgi[r * g + 3 * n + j] = dh * tc * og * (T::ONE - og);
                    dct * ig * (T::ONE - cd * cd)
                } else {
                    let z = sig(r, 1, j);
                    dhprev[i] = dh * z;
                    dgi[r * g + n + j] = dh * (hprev[i] - cd) * z * (T::ONE - z);
                    dh * (T::ONE - z) * (T::ONE - cd * cd)
                };
                dgi[r * g + 2 * n + j] = dpre;
                drs[i] = dpre;
                if d.reset_after() {
                    drs[i] = dpre * sig(r, 0, j);
                    dr[i] = dpre * (bf.rsum[i] + self.w.bh[2 * n + j]);
                }
            }
        }
        // R = V [U_c; U_other] (+ b_h,c inside ρ).
        add_col_sums(&mut dw.bh[2 * n..3 * n], &drs);
        let dr_m = Mat::new(&drs, b, n);
        matmul(dw.u, 2 * n, g, Mat::strided(bf.v, 0, b, n, ln).t(), dr_m, true, th);
        matmul(dw.uo, 0, n, Mat::strided(bf.v, n, b, (l - 1) * n, ln).t(), dr_m, true, th);
        let mut dv = zeros(b * ln);
        matmul(&mut dv, 0, ln, dr_m, Mat::strided(&tr.ut, 2 * n * n, n, n, n), false, th);
        matmul(&mut dv, n, ln, dr_m, Mat::new(&tr.uot, n, (l - 1) * n), false, th);
        // V's blocks: each source times its gate (and ρ').
        let (mut dg, mut dhu, mut rhos) = (zeros(b * l), zeros(b * n), vec![T::ONE; n]);
        for r in 0..b {
            if d.reset_before() {
                rhos.iter_mut().enumerate().for_each(|(j, p)| *p = sig(r, 0, j));
            }
            for (blk, i) in std::iter::once(self.own()).chain(self.others()).enumerate() {
                let gate = bf.g[r * l + i];
                for j in 0..n {
                    let src = if blk == 0 { hu[r * n + j] } else { at.s[r * ln + i * n + j] };
                    let (dvj, rho) = (dv[r * ln + blk * n + j], rhos[j]);
                    dg[r * l + i] += dvj * rho * src;
                    if d.reset_before() {
                        dr[r * n + j] += dvj * gate * src;
                    }
                    match blk {
                        0 => dhu[r * n + j] += dvj * gate * rho,
                        _ => ds[r * ln + i * n + j] += dvj * gate * rho,
                    }
                }
            }
        }
        if !lstm {
            for r in 0..b {
                for j in 0..n {
                    let rr = sig(r, 0, j);
                    dgi[r * g + j] = dr[r * n + j] * rr * (T::ONE - rr);
                }
            }
        }
        // GH = (m ⊙ h) U + b_h feeds every gate but the candidate.
        let mut dgh = dgi.clone();
        dgh.chunks_exact_mut(g).for_each(|row| row[2 * n..3 * n].fill(T::ZERO));
        matmul(&mut dhu, 0, n, Mat::new(&dgh, b, g), Mat::new(&tr.ut, g, n), true, th);
        matmul(dw.u, 0, g, Mat::new(&hu, b, n).t(), Mat::new(&dgh, b, g), true, th);
        add_col_sums(dw.bh, &dgh);
        let dhu = masked(&dhu, self.state_mask);
        for r in 0..b {
            for j in 0..n {
                ds[r * ln + self.own() * n + j] += dhprev[r * n + j] + dhu[r * n + j];
            }
        }
        // g = σ(x W_g + S U_g), then gi = x W + b.
        let dgp: Vec<T> = dg.iter().zip(bf.g).map(|(&dv, &gv)| dv * gv * (T::ONE - gv)).collect();
        let (xm, dgp_m, dgi_m) = (Mat::new(bf.xin, b, n), Mat::new(&dgp, b, l), Mat::new(&dgi, b, g));
        matmul(dw.wg, 0, l, xm.t(), dgp_m, true, th);
        matmul(dw.ug, 0, l, Mat::new(at.s, b, ln).t(), dgp_m, true, th);
        matmul(ds, 0, ln, dgp_m, Mat::new(&tr.ugt, l, ln), true, th);
        matmul(dw.w, 0, g, xm.t(), dgi_m, true, th);
        add_col_sums(dw.b, &dgi);
        let mut dxin = zeros(b * n);
        matmul(&mut dxin, 0, n, dgp_m, Mat::new(&tr.wgt, l, n), false, th);
        matmul(&mut dxin, 0, n, dgi_m, Mat::new(&tr.wt, g, n), true, th);
        dxin
    }
}

/// The gradients of `s1 (B, T, n)`, `h0 (B, n)` and the flat weights, from the top outputs'
/// gradient `dtop (B, T, n)`.
pub(crate) fn backward<T: Real>(d: &FeedbackDims, sv: &Saved<T>, s1: &[T], h0: &[T], p: &[T], dtop: &[T]) -> [Vec<T>; 3] {
    let (b, tn, n, l, ups) = (d.batch, d.len, d.hidden, d.layers, d.uppers());
    let ln = l * n;
    let lstm = d.kind == CellKind::Lstm;
    let (mut ds1, mut dh0, mut dp) = (vec![T::ZERO; s1.len()], vec![T::ZERO; h0.len()], vec![T::ZERO; p.len()]);
    let tr: Vec<Transposed<T>> = (0..ups).map(|k| Transposed::of(d, &LayerWeights::of(d, p, k))).collect();
    let state_masks: Vec<Option<Vec<T>>> = (0..ups).map(|k| d.state_mask(k)).collect();
    let mut ds_next = vec![T::ZERO; b * ln];
    let mut dc = vec![T::ZERO; if lstm { ups * b * n } else { 0 }];
    for t in (0..tn).rev() {
        let s = &sv.s[t * b * ln..][..b * ln];
        let mut ds_cur = vec![T::ZERO; b * ln];
        let mut d_o: Vec<T> = (0..b).flat_map(|r| dtop[(r * tn + t) * n..][..n].iter().copied()).collect();
        for k in (0..ups).rev() {
            let step = Step { d, k, w: LayerWeights::of(d, p, k), state_mask: state_masks[k].as_deref() };
            let dh: Vec<T> = d_o.iter().zip(block(&ds_next, k + 1, n, l)).map(|(&a, c)| a + c).collect();
            let cs = |at: usize| if lstm { &sv.c[(at * ups + k) * b * n..][..b * n] } else { &[][..] };
            let at = BackIn { bufs: sv.steps.get(d, t * ups + k), s, cprev: cs(t), c: cs(t + 1), dh: &dh };
            let dc_k = if lstm { &mut dc[k * b * n..][..b * n] } else { &mut [][..] };
            let dxin = step.backward(&at, dc_k, &tr[k], &mut LayerGrads::of(d, &mut dp, k), &mut ds_cur);
            let mut dx = masked(&dxin, d.input_mask::<T>(k, t).as_deref());
            if d.residual {
                dx.iter_mut().zip(&d_o).for_each(|(a, &o)| *a += o);
            }
            match k {
                0 => {
                    for r in 0..b {
                        ds1[(r * tn + t) * n..][..n].iter_mut().zip(&dx[r * n..][..n]).for_each(|(a, &v)| *a += v);
                    }
                }
                _ => d_o = dx,
            }
        }
        // Block 0 of S_t is the first layer's output at t − 1, or h0.
        for r in 0..b {
            let src = &ds_cur[r * ln..][..n];
            let dst = if t > 0 { &mut ds1[(r * tn + t - 1) * n..][..n] } else { &mut dh0[r * n..][..n] };
            dst.iter_mut().zip(src).for_each(|(a, &v)| *a += v);
        }
        ds_next = ds_cur;
    }
    // Every upper layer started from h0.
    for i in 1..l {
        dh0.iter_mut().zip(block(&ds_next, i, n, l)).for_each(|(a, v)| *a += v);
    }
    [ds1, dh0, dp]
}
