//! One recurrent step for a block of batch rows, forward and backward: the arithmetic shared
//! by the sequence op (`gru.rs`), the bidirectional op (`birnn.rs`), the attention decoder
//! (`bahdanau.rs`, `bahdanau_backward.rs`) and the host search (`model/snapshot.rs`). The cell is
//! a GRU in either form (this file) or an LSTM (`lstm_cell.rs`, [`CellKind::Lstm`]: `4H`
//! gate columns instead of `3H`, and a cell state kept in `q`); the GEMMs, padding and
//! recurrent dropout below serve both.
//!
//! Gate blocks are ordered `[r | z | n]`; `U (H, 3H) = [U_r | U_z | U_n]`. Each row brings its
//! input term `gi = W x + b (+ C c)` and a per-row recurrent term `ghb` (a bias `b_h`, RNNenc's
//! `C c`, or zero), held in `gh` on entry. The two forms of the cell ([`GruForm`]):
//!
//! ```text
//! r = σ(gi_r + h U_r + ghb_r),  z = σ(gi_z + h U_z + ghb_z)
//! paper:        n = tanh(gi_n + (r ⊙ h) U_n + ghb_n)      two GEMMs per step: h U_rz, q U_n
//! reset-after:  n = tanh(gi_n + r ⊙ (h U_n + ghb_n))      one GEMM per step:  h U
//! h' = n + z ⊙ (h − n)        (Cho et al. 2014 eq. 5–8: h' = z h + (1 − z) h~)
//! ```
//! `gh` ends holding `[h U_rz + ghb_rz | q U_n + ghb_n]` (paper, with `q = r ⊙ h` kept in `q`)
//! or `h U + ghb` (reset-after): what the backward pass and the `dU` GEMMs need.
//!
//! Rows that are not `active` (a sentence's padding) carry their state: `h' = h`, and in the
//! backward pass their gradient passes straight through (the masked update of `model/gru.rs`).
//!
//! Recurrent dropout (Gal & Ghahramani 2016, Nematus' `dropout_hidden`): a per-row mask `m`
//! `(nb, H)` of `0` or `1/(1−p)`, the same at every step, multiplies the state where it enters
//! `U` only: `hu = m ⊙ h` replaces `h` in `h U_rz`, `r ⊙ h` and `h U`, while the update
//! `h' = n + z ⊙ (h − n)` keeps the undropped `h`. Without a mask `hu` is `h` itself.
use super::gru_cell::{self, reset_row, update_row};
use super::lstm_cell;
use super::norm_rows::{ln_backward_product, ln_rows, Product};
pub use crate::config::{CellKind, GruForm};
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::gemm::{matmul, Mat, Real};

/// Row `b` of a `(rows, ·)` view starts at `off + b · stride`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rows {
    pub off: usize,
    pub stride: usize,
}

impl Rows {
    #[inline(always)]
    pub fn at(self, b: usize) -> usize {
        self.off + b * self.stride
    }
}

/// The cell: its kind, `U (H, G)` with `G = gates · H` and, for the backward pass, `Uᵀ (G, H)`;
/// with layer normalisation (the reset-after GRU) its `γ_h (G)`: then `gh` rows end holding
/// `LN(h U)·γ_h + ghb` (`model/layer_norm.rs`), and the backward pass goes through it
/// (`layer_norm.rs`: `h U` recomputed, [`LnGrads`] accumulated).
pub(crate) struct CellKernel<'a, T> {
    pub kind: CellKind,
    pub hidden: usize,
    pub u: &'a [T],
    pub norm: Option<&'a [T]>,
}

/// A step's read-only inputs: previous states `hp (nb, H)`, the states entering `U`
/// `hu = m ⊙ hp (nb, H)` with their dropout mask `m` (or `hp` and `None`), the LSTM's
/// previous cell states `cp (nb, H)` (empty for a GRU), the rows of `gi`, and which rows are
/// live.
pub(crate) struct StepIn<'a, T> {
    pub hp: &'a [T],
    pub cp: &'a [T],
    pub hu: &'a [T],
    pub mask: Option<&'a [T]>,
    pub gi: (&'a [T], Rows),
    pub active: &'a [bool],
}

/// The states entering `U`: `hp ⊙ mask` written into `buf`, or `hp` itself without a mask.
#[inline(always)]
pub(crate) fn dropped<'a, T: Real>(hp: &'a [T], mask: Option<&[T]>, buf: &'a mut [T]) -> &'a [T] {
    match mask {
        None => hp,
        Some(m) => {
            for ((o, &x), &k) in buf.iter_mut().zip(hp).zip(m) {
                *o = x * k;
            }
            buf
        }
    }
}

/// A chunk's recurrent-dropout mask `(nb, H)` in the kernel's element type, from the op's
/// `f32` mask of all rows (`b0` is the chunk's first row).
pub(crate) fn chunk_mask<T: Real>(mask: Option<&[f32]>, b0: usize, nb: usize, h: usize) -> Option<Vec<T>> {
    mask.map(|m| m[b0 * h..(b0 + nb) * h].iter().map(|&x| T::from_f64(f64::from(x))).collect())
}

impl<T: Real> CellKernel<'_, T> {
    /// Forward step: `gh` rows hold `ghb` on entry; writes the new states into `out` rows and,
    /// for the paper form, `q = r ⊙ h` into `q` rows (the LSTM: its new cell states).
    #[inline(always)]
    pub fn forward(&self, x: &StepIn<'_, T>, gh: (&mut [T], Rows), q: (&mut [T], Rows), out: (&mut [T], Rows)) {
        let h = self.hidden;
        let nb = x.active.len();
        let (gi, gir) = x.gi;
        let (gh, ghr) = gh;
        let hp = Mat::new(x.hu, nb, h);
        let form = match self.kind {
            CellKind::Gru(form) => form,
            CellKind::Lstm => {
                matmul(gh, ghr.off, ghr.stride, hp, Mat::new(self.u, h, 4 * h), true, 1);
                let ((q, qr), (out, outr)) = (q, out);
                for b in 0..nb {
                    let (ht, c) = (&mut out[outr.at(b)..][..h], &mut q[qr.at(b)..][..h]);
                    let cpb = &x.cp[b * h..(b + 1) * h];
                    if !x.active[b] {
                        ht.copy_from_slice(&x.hp[b * h..(b + 1) * h]);
                        c.copy_from_slice(cpb);
                        continue;
                    }
                    lstm_cell::update_row(&gi[gir.at(b)..][..4 * h], &gh[ghr.at(b)..][..4 * h], cpb, c, ht);
                }
                return;
            }
        };
        match form {
            GruForm::ResetAfter if self.norm.is_some() => self.normed_product(gh, ghr, hp),
            GruForm::ResetAfter => matmul(gh, ghr.off, ghr.stride, hp, Mat::new(self.u, h, 3 * h), true, 1),
            GruForm::Paper => {
                matmul(gh, ghr.off, ghr.stride, hp, Mat::strided(self.u, 0, h, 2 * h, 3 * h), true, 1);
                let (q, qr) = q;
                for b in 0..nb {
                    let (g, hh) = (&gi[gir.at(b)..][..h], &gh[ghr.at(b)..][..h]);
                    reset_row(g, hh, &x.hu[b * h..(b + 1) * h], &mut q[qr.at(b)..][..h]);
                }
                let qm = Mat::strided(q, qr.off, nb, h, qr.stride);
                matmul(gh, ghr.off + 2 * h, ghr.stride, qm, Mat::strided(self.u, 2 * h, h, h, 3 * h), true, 1);
            }
        }
        let (out, outr) = out;
        for b in 0..nb {
            let hpb = &x.hp[b * h..(b + 1) * h];
            let ht = &mut out[outr.at(b)..][..h];
            if !x.active[b] {
                ht.copy_from_slice(hpb);
                continue;
            }
            let (g, hh) = (&gi[gir.at(b)..][..3 * h], &gh[ghr.at(b)..][..3 * h]);
            update_row(form, g, &hh[..2 * h], &hh[2 * h..], hpb, ht);
        }
    }

    /// `gh` rows `= LN(h U)·γ_h + ghb`, `ghb` being what the rows hold on entry.
    #[inline(always)]
    fn normed_product(&self, gh: &mut [T], ghr: Rows, hp: Mat<'_, T>) {
        let (g, nb) = (3 * self.hidden, hp.rows);
        let mut hu = vec![T::ZERO; nb * g];
        matmul(&mut hu, 0, g, hp, Mat::new(self.u, self.hidden, g), false, 1);
        ln_rows(&mut hu, nb, (g, 0), self.norm.unwrap_or_default(), None);
        for (b, row) in hu.chunks_exact(g).enumerate() {
            for (o, &x) in gh[ghr.at(b)..][..g].iter_mut().zip(row) {
                *o += x;
            }
        }
    }

    /// Layer normalisation's backward pass on a step's `dGH` rows: they hold the gradient of
    /// `LN(h U)·γ_h + ghb` on entry (added to `acc.dbeta`, and times `x̂` to `acc.dgamma`) and
    /// that of `h U` on return, which the `dU` GEMMs and the carry read.
    #[inline(always)]
    fn normed_backward(&self, x: &StepIn<'_, T>, (dgh, dghr): (&mut [T], Rows), gamma: &[T], acc: LnGrads<'_, T>) {
        let (h, nb) = (self.hidden, x.active.len());
        let hu = Product { x: Mat::new(x.hu, nb, h), w: Mat::new(self.u, h, 3 * h), products: Precision::F32, threads: 1 };
        ln_backward_product(hu, (dgh, dghr.stride, dghr.off), gamma, (acc.dgamma, Some(acc.dbeta)));
    }

    /// Backward step. `dh (nb, H)` is the whole gradient reaching the new states; writes the
    /// rows of `dgi` and `dgh` (the gradient of `gh`'s pre-activations: `dghb`, and through the
    /// `dU` GEMMs the weights) and overwrites `carry (nb, H)` with the gradient of `hp`.
    /// `ut` is `Uᵀ (G, H)`; `dq (nb, H)` is scratch; the LSTM carries its cell state's
    /// gradient in `dc (nb, H)` from step to step (zero before the last step). Under
    /// recurrent dropout the gradient through `U` reaches `hp` times the mask.
    #[inline(always)]
    pub fn backward(&self, x: &StepIn<'_, T>, gh: (&[T], Rows), dh: &[T], ut: &[T], grads: StepGrads<'_, T>) {
        let h = self.hidden;
        let nb = x.active.len();
        let (gi, gir) = x.gi;
        let (gh, ghr) = gh;
        let StepGrads { dgi: (dgi, dgir), dgh: (dgh, dghr), carry, dq, dc, ln } = grads;
        let gw = self.kind.gates() * h;
        for b in 0..nb {
            let (dgi_b, dgh_b) = (&mut dgi[dgir.at(b)..][..gw], &mut dgh[dghr.at(b)..][..gw]);
            let (dhb, cr) = (&dh[b * h..(b + 1) * h], &mut carry[b * h..(b + 1) * h]);
            if !x.active[b] {
                dgi_b.fill(T::ZERO);
                dgh_b.fill(T::ZERO);
                cr.copy_from_slice(dhb);
                continue;
            }
            let (g, hh) = (&gi[gir.at(b)..][..gw], &gh[ghr.at(b)..][..gw]);
            let form = match self.kind {
                CellKind::Gru(form) => form,
                CellKind::Lstm => {
                    lstm_cell::backward_row(g, hh, &x.cp[b * h..(b + 1) * h], dhb, &mut dc[b * h..(b + 1) * h], dgi_b);
                    dgh_b.copy_from_slice(dgi_b);
                    cr.fill(T::ZERO);
                    continue;
                }
            };
            gru_cell::backward_row(form, (g, hh), &x.hp[b * h..(b + 1) * h], dhb, dgi_b, dgh_b, cr);
        }
        let form = match self.kind {
            CellKind::Gru(form) => form,
            CellKind::Lstm => {
                // carry = dGH Uᵀ (⊙ m): the LSTM's `h` reaches nothing else.
                let dm = Mat::strided(dgh, dghr.off, nb, 4 * h, dghr.stride);
                through_u(carry, dq, x.mask, dm, Mat::new(ut, 4 * h, h));
                return;
            }
        };
        match form {
            GruForm::ResetAfter => {
                if let (Some(gamma), Some(acc)) = (self.norm, ln) {
                    self.normed_backward(x, (&mut *dgh, dghr), gamma, acc);
                }
                // carry += dGH Uᵀ (⊙ m).
                let dm = Mat::strided(dgh, dghr.off, nb, 3 * h, dghr.stride);
                through_u(carry, dq, x.mask, dm, Mat::new(ut, 3 * h, h));
            }
            GruForm::Paper => {
                // dq = dGH_n U_nᵀ; then dr = dq ⊙ h, and h gets dq ⊙ r and dGH_rz U_rzᵀ.
                let dn = Mat::strided(dgh, dghr.off + 2 * h, nb, h, dghr.stride);
                matmul(dq, 0, h, dn, Mat::new(&ut[2 * h * h..], h, h), false, 1);
                for b in 0..nb {
                    if !x.active[b] {
                        continue;
                    }
                    let (g, hh) = (&gi[gir.at(b)..][..h], &gh[ghr.at(b)..][..h]);
                    let hub = &x.hu[b * h..(b + 1) * h];
                    let (dqb, cr) = (&dq[b * h..(b + 1) * h], &mut carry[b * h..(b + 1) * h]);
                    let (dgi_b, dgh_b) = (&mut dgi[dgir.at(b)..][..h], &mut dgh[dghr.at(b)..][..h]);
                    let mb = x.mask.map(|m| &m[b * h..(b + 1) * h]);
                    for j in 0..h {
                        let r = (g[j] + hh[j]).sigmoid_fast();
                        let dpr = dqb[j] * hub[j] * r * (T::ONE - r);
                        dgi_b[j] = dpr;
                        dgh_b[j] = dpr;
                        cr[j] += match mb {
                            None => dqb[j] * r,
                            Some(m) => dqb[j] * r * m[j],
                        };
                    }
                }
                let drz = Mat::strided(dgh, dghr.off, nb, 2 * h, dghr.stride);
                through_u(carry, dq, x.mask, drz, Mat::new(&ut[..2 * h * h], 2 * h, h));
            }
        }
    }
}

/// `carry += dG Uᵀ`, or `carry += m ⊙ (dG Uᵀ)` under recurrent dropout (through the
/// scratch `buf (nb, H)`).
#[inline(always)]
fn through_u<T: Real>(carry: &mut [T], buf: &mut [T], mask: Option<&[T]>, dg: Mat<'_, T>, ut: Mat<'_, T>) {
    let h = ut.cols;
    match mask {
        None => matmul(carry, 0, h, dg, ut, true, 1),
        Some(m) => {
            matmul(buf, 0, h, dg, ut, false, 1);
            for ((c, &x), &k) in carry.iter_mut().zip(&*buf).zip(m) {
                *c += x * k;
            }
        }
    }
}

/// States `(B, S, H)` as they enter `U`: each row times its mask `(B, H)` at every step (the
/// input of [`u_grad`] under recurrent dropout), or the states themselves.
pub(crate) fn masked_states<'a, T: Real>(states: &'a [T], mask: Option<&[f32]>, steps: usize, h: usize) -> std::borrow::Cow<'a, [T]> {
    let Some(m) = mask else { return std::borrow::Cow::Borrowed(states) };
    let mut out = states.to_vec();
    for (row, o) in out.chunks_mut(h).enumerate() {
        let mb = &m[(row / steps) * h..][..h];
        for (x, &k) in o.iter_mut().zip(mb) {
            *x = *x * T::from_f64(f64::from(k));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The gradient outputs of [`CellKernel::backward`].
pub(crate) struct StepGrads<'a, T> {
    pub dgi: (&'a mut [T], Rows),
    pub dgh: (&'a mut [T], Rows),
    pub carry: &'a mut [T],
    pub dq: &'a mut [T],
    /// The LSTM's cell-state gradient carried between steps (unused by the GRU).
    pub dc: &'a mut [T],
    /// With layer normalisation: where `dγ_h` and `dghb` add up. `dgh` rows then end holding
    /// the gradient of `h U` (for `dU`), no longer that of `ghb`.
    pub ln: Option<LnGrads<'a, T>>,
}

/// Accumulators of a layer-normalised product's gain `dγ (G)` and shift `dβ (G)` (the bias
/// added after the normalisation).
pub(crate) struct LnGrads<'a, T> {
    pub dgamma: &'a mut [T],
    pub dbeta: &'a mut [T],
}

/// `dU (H, G)` over all `n` steps at once: `H_prevᵀ dGH` (reset-after, LSTM), or
/// `[H_prevᵀ dGH_rz | Qᵀ dGH_n]` (paper). Inactive rows have `dGH = 0` and add nothing.
/// Under recurrent dropout `hprev` must be the states entering `U`, `m ⊙ H_prev`. The products
/// in `products` (`engine::products::matmul_wide`).
pub(crate) fn u_grad<T: Real>(kind: CellKind, h: usize, hprev: &[T], q: &[T], dgh: &[T], products: Precision, threads: usize) -> Vec<T> {
    let g = kind.gates() * h;
    let n = dgh.len() / g;
    let mut du = vec![T::ZERO; h * g];
    let hp = Mat::new(hprev, n, h).t();
    match kind {
        CellKind::Gru(GruForm::ResetAfter) | CellKind::Lstm => {
            matmul_wide(products, &mut du, 0, g, hp, Mat::new(dgh, n, g), false, threads)
        }
        CellKind::Gru(GruForm::Paper) => {
            matmul_wide(products, &mut du, 0, 3 * h, hp, Mat::strided(dgh, 0, n, 2 * h, 3 * h), false, threads);
            let qm = Mat::new(q, n, h).t();
            matmul_wide(products, &mut du, 2 * h, 3 * h, qm, Mat::strided(dgh, 2 * h, n, h, 3 * h), false, threads);
        }
    }
    du
}
