//! A recurrent layer over a whole batch of sequences as one candle op, with a hand-written
//! backward pass through time. The cell (a GRU in either form, or an LSTM) is `rnn_cell.rs`;
//! `G` below is its gate width, `3H` for the GRU and `4H` for the LSTM.
//!
//! Inputs:
//! - `gi (B, S, G)`: `x W + b` (plus any per-row input term), one GEMM by the caller for the
//!   whole sequence (Marian's layout);
//! - `u (H, G)`: `[U_r | U_z | U_n]` (LSTM: `[U_i | U_f | U_g | U_o]`);
//! - `rows (B, G + H)`: each sentence's `[ghb (G); h_0 (H)]`: the recurrent term added to
//!   `h U` (a bias `b_h`, RNNenc's decoder `C c`, or zero) and the start state (the LSTM's
//!   cell state starts at zero).
//!
//! Output: every state `(B, S, H)`. `reverse` runs right to left (the backward half of a
//! bidirectional encoder) and still writes state `t` at position `t`. Each sentence's length
//! `lens[b]` bounds its live steps: at padding the state is carried, so the last position of a
//! forward pass holds the state after the last word and a reverse pass starts at the sentence's
//! own end from `h_0`, exactly as `model/gru.rs` masks it.
//!
//! The forward pass keeps `GH` (and `Q`: the paper form's `R ⊙ H_prev`, the LSTM's cell states) for the backward pass,
//! which loops back through time with one or two small GEMMs per step and forms `dU` with GEMMs
//! over all steps. Batch rows are independent, so both loops run in chunks of rows on the rayon
//! pool with no synchronisation between steps.
use candle_core::{Result, Shape, Tensor};
use rayon::prelude::*;

use super::op::apply;
use super::rnn_cell::{chunk_mask, dropped, masked_states, u_grad, CellKernel, CellKind, LnGrads, Rows, StepGrads, StepIn};
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{transpose, Real};
use crate::kernels::shapes::rnn_dims::{RnnDims, RnnSpec};

/// The CPU loops' walk over a call's steps and rows.
impl RnnDims {
    /// The step processed before position `t`, if any.
    fn prev(&self, t: usize) -> Option<usize> {
        if self.reverse {
            (t + 1 < self.len).then_some(t + 1)
        } else {
            t.checked_sub(1)
        }
    }
    /// Position of the `step`-th step processed.
    fn pos(&self, step: usize) -> usize {
        if self.reverse {
            self.len - 1 - step
        } else {
            step
        }
    }
    /// The same op for rows `b0..b0 + nb`.
    pub(crate) fn chunk(&self, b0: usize, nb: usize) -> RnnDims {
        let h = self.hidden;
        let mask = self.mask.as_ref().map(|m| m[b0 * h..(b0 + nb) * h].to_vec());
        RnnDims { batch: nb, lens: self.lens[b0..b0 + nb].to_vec(), mask, ..self.clone() }
    }
}

/// Runs the cell over `gi (B, S, G)` (or `(B·S, G)`) with `u (H, G)` and per-row
/// `rows = [ghb; h_0] (B, G + H)`; returns the states `(B, S, H)`. Differentiable with respect
/// to all three inputs.
pub fn rnn_sequence(gi: &Tensor, u: &Tensor, rows: &Tensor, reverse: bool, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(0)?;
    let g = spec.kind.gates() * hidden;
    let fit = u.dims() == [hidden, g] && rows.dims() == [spec.lens.len(), g + hidden];
    apply(GruSeq(spec.dims("rnn_sequence", gi, hidden, reverse, 1, fit)?), gi, u, rows)
}

/// Rows per parallel chunk: one chunk per thread. Smaller chunks would let a free core steal
/// work from a busy one, but the per-step GEMMs lose a quarter of their speed going from 16
/// rows to 8 (measured: 75 → 57 GFLOP/s for `(m, 256)·(256, 768)` on one thread; no log kept).
pub(crate) fn chunk_rows(batch: usize) -> usize {
    let chunks = rayon::current_num_threads().min(batch).max(1);
    batch.div_ceil(chunks).max(1)
}

/// What the forward pass keeps for the backward pass: `GH (B, S, G)`, `Q (B, S, H)`.
pub(crate) struct Saved<T> {
    pub gh: Vec<T>,
    pub q: Vec<T>,
}

struct GruSeq(RnnDims);

/// Forward pass: the states `(B, S, H)` and what backward needs. `norm`: layer normalisation's
/// `γ_h (G)` on `h U` (`model/layer_norm.rs`): the host search's forward pass only (this op
/// trains no layer-normalised layer; the bidirectional op does, `birnn.rs`).
pub(crate) fn forward<T: Real>(d: &RnnDims, gi: &[T], u: &[T], rows: &[T], norm: Option<&[T]>) -> (Vec<T>, Saved<T>) {
    forward_rows(d, gi, (u, norm), rows, chunk_rows(d.batch))
}

/// [`forward`] in chunks of `n` rows (the bidirectional op gives each direction half the
/// threads, `birnn.rs`).
pub(crate) fn forward_rows<T: Real>(d: &RnnDims, gi: &[T], (u, norm): (&[T], Option<&[T]>), rows: &[T], n: usize) -> (Vec<T>, Saved<T>) {
    let (s, h, g) = (d.len, d.hidden, d.g());
    let mut out = vec![T::ZERO; d.batch * s * h];
    let mut sv = Saved { gh: vec![T::ZERO; d.batch * s * g], q: vec![T::ZERO; d.batch * s * h] };
    out.par_chunks_mut(n * s * h).zip(sv.gh.par_chunks_mut(n * s * g)).zip(sv.q.par_chunks_mut(n * s * h)).enumerate().for_each(
        |(c, ((out_c, gh_c), q_c))| {
            let nb = out_c.len() / (s * h);
            let dc = d.chunk(c * n, nb);
            let gi_c = &gi[c * n * s * d.gi_stride..][..nb * s * d.gi_stride];
            let rows_c = &rows[c * n * (g + h)..][..nb * (g + h)];
            simd_dispatch!(forward_chunk(&dc, gi_c, (u, norm), rows_c, out_c, &mut Saved2 { gh: gh_c, q: q_c }))
        },
    );
    (out, sv)
}

/// Mutable views of a chunk's [`Saved`] buffers.
pub(crate) struct Saved2<'a, T> {
    pub gh: &'a mut [T],
    pub q: &'a mut [T],
}

/// Runs the rows of `d` (a chunk) through all steps with `U` and, with layer normalisation,
/// `γ_h`.
#[inline(always)]
pub(crate) fn forward_chunk<T: Real>(
    d: &RnnDims,
    gi: &[T],
    (u, norm): (&[T], Option<&[T]>),
    rows: &[T],
    out: &mut [T],
    sv: &mut Saved2<'_, T>,
) {
    let (nb, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    let cell = CellKernel { kind: d.kind, hidden: h, u, norm };
    let mut hp: Vec<T> = rows.chunks(g + h).flat_map(|r| r[g..].iter().copied()).collect();
    let lstm = d.kind == CellKind::Lstm;
    // The LSTM's cell states, starting at zero.
    let mut cp = vec![T::ZERO; if lstm { nb * h } else { 0 }];
    let mask = chunk_mask::<T>(d.mask.as_deref(), 0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    let mut active = vec![true; nb];
    for step in 0..s {
        let t = d.pos(step);
        for b in 0..nb {
            sv.gh[(b * s + t) * g..][..g].copy_from_slice(&rows[b * (g + h)..b * (g + h) + g]);
            active[b] = t < d.lens[b];
        }
        let (rg3, r1) = (Rows { off: t * g, stride: s * g }, Rows { off: t * h, stride: s * h });
        let rg = Rows { off: t * d.gi_stride + d.gi_off, stride: s * d.gi_stride };
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let x = StepIn { hp: &hp, cp: &cp, hu, mask: mask.as_deref(), gi: (gi, rg), active: &active };
        cell.forward(&x, (&mut *sv.gh, rg3), (&mut *sv.q, r1), (&mut *out, r1));
        for b in 0..nb {
            hp[b * h..(b + 1) * h].copy_from_slice(&out[r1.at(b)..][..h]);
            if lstm {
                cp[b * h..(b + 1) * h].copy_from_slice(&sv.q[r1.at(b)..][..h]);
            }
        }
    }
}

/// `H_prev (B, S, H)`: the state each step started from (`h_0` for the first step).
pub(crate) fn prev_states<T: Real>(d: &RnnDims, hs: &[T], rows: &[T]) -> Vec<T> {
    let (s, h, g) = (d.len, d.hidden, d.g());
    let mut hprev = vec![T::ZERO; d.batch * s * h];
    for bi in 0..d.batch {
        for t in 0..s {
            let src = match d.prev(t) {
                Some(tp) => &hs[(bi * s + tp) * h..][..h],
                None => &rows[bi * (g + h) + g..][..h],
            };
            hprev[(bi * s + t) * h..][..h].copy_from_slice(src);
        }
    }
    hprev
}

/// The LSTM's `C_prev (B, S, H)` from its cell states `q (B, S, H)`: zero before the first
/// step. Empty for a GRU, which has none.
pub(crate) fn prev_cells<T: Real>(d: &RnnDims, q: &[T]) -> Vec<T> {
    if d.kind != CellKind::Lstm {
        return Vec::new();
    }
    let (s, h) = (d.len, d.hidden);
    let mut cprev = vec![T::ZERO; d.batch * s * h];
    for bi in 0..d.batch {
        for t in 0..s {
            if let Some(tp) = d.prev(t) {
                cprev[(bi * s + t) * h..][..h].copy_from_slice(&q[(bi * s + tp) * h..][..h]);
            }
        }
    }
    cprev
}

/// The inputs of a backward pass over rows of `d`.
pub(crate) struct BackIn<'a, T> {
    pub gi: &'a [T],
    pub gh: &'a [T],
    pub hprev: &'a [T],
    /// The LSTM's `C_prev` ([`prev_cells`]); empty for a GRU.
    pub cprev: &'a [T],
    pub dh: &'a [T],
}

/// The backward loop through time for the rows of `d` (a chunk): fills `dgi`, `dgh`
/// `(nb, S, G)` and `dh0 (nb, H)`. With layer normalisation (`norm`: `γ_h` and where `dγ_h`,
/// `dghb` add up) `dgh` ends holding the gradient of `h U` ([`StepGrads::ln`]).
#[inline(always)]
pub(crate) fn backward_chunk<T: Real>(
    d: &RnnDims,
    x: &BackIn<'_, T>,
    (u, ut): (&[T], &[T]),
    mut norm: Option<(&[T], LnGrads<'_, T>)>,
    dgi: &mut [T],
    dgh: &mut [T],
    dh0: &mut [T],
) {
    let (nb, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    let cell = CellKernel { kind: d.kind, hidden: h, u, norm: norm.as_ref().map(|n| n.0) };
    let (mut hp, mut dh, mut dq) = (vec![T::ZERO; nb * h], vec![T::ZERO; nb * h], vec![T::ZERO; nb * h]);
    let lstm = d.kind == CellKind::Lstm;
    let (mut cp, mut dc) = (vec![T::ZERO; if lstm { nb * h } else { 0 }], vec![T::ZERO; if lstm { nb * h } else { 0 }]);
    let mask = chunk_mask::<T>(d.mask.as_deref(), 0, nb, h);
    let mut hu_buf = vec![T::ZERO; if mask.is_some() { nb * h } else { 0 }];
    let mut active = vec![true; nb];
    // dh0 is the carry: the gradient reaching the state before the current step.
    dh0.fill(T::ZERO);
    for step in (0..s).rev() {
        let t = d.pos(step);
        for b in 0..nb {
            let o1 = (b * s + t) * h;
            hp[b * h..(b + 1) * h].copy_from_slice(&x.hprev[o1..o1 + h]);
            if lstm {
                cp[b * h..(b + 1) * h].copy_from_slice(&x.cprev[o1..o1 + h]);
            }
            // Zipped slices, not `dh[b * h + j]`: the indexed loop kept its bounds checks, scalar.
            let (dhb, carry) = (&mut dh[b * h..(b + 1) * h], &dh0[b * h..(b + 1) * h]);
            for ((d, &a), &c) in dhb.iter_mut().zip(&x.dh[o1..o1 + h]).zip(carry) {
                *d = a + c;
            }
            active[b] = t < d.lens[b];
        }
        let r3 = Rows { off: t * g, stride: s * g };
        let rg = Rows { off: t * d.gi_stride + d.gi_off, stride: s * d.gi_stride };
        let hu = dropped(&hp, mask.as_deref(), &mut hu_buf);
        let si = StepIn { hp: &hp, cp: &cp, hu, mask: mask.as_deref(), gi: (x.gi, rg), active: &active };
        let ln = norm.as_mut().map(|(_, a)| LnGrads { dgamma: &mut *a.dgamma, dbeta: &mut *a.dbeta });
        let grads = StepGrads { dgi: (&mut *dgi, r3), dgh: (&mut *dgh, r3), carry: &mut *dh0, dq: &mut dq, dc: &mut dc, ln };
        cell.backward(&si, (x.gh, r3), &dh, ut, grads);
    }
}

/// Backward pass: the gradients of `(gi, u, rows)`.
pub(crate) fn backward<T: Real>(d: &RnnDims, sv: &Saved<T>, gi: &[T], u: &[T], rows: &[T], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (b, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    let threads = rayon::current_num_threads();
    let hprev = prev_states(d, hs, rows);
    let cprev = prev_cells(d, &sv.q);
    let ut = transpose(u, h, g);
    let x = BackIn { gi, gh: &sv.gh, hprev: &hprev, cprev: &cprev, dh };
    let (dgi, dgh, dh0) = backward_rows(d, &x, (u, &ut), chunk_rows(b));
    let du = u_grad(d.kind, h, &masked_states(&hprev, d.mask.as_deref(), s, h), &sv.q, &dgh, d.products, threads);
    let drows = row_grads(&dgh, &dh0, b, s, h, g);
    (dgi, du, drows)
}

/// The backward loop of all rows of `d` in chunks of `n` rows, without layer normalisation:
/// `(dgi, dgh) (B, S, G)` and `dh0 (B, H)` ([`backward_chunk`]).
pub(crate) fn backward_rows<T: Real>(d: &RnnDims, x: &BackIn<'_, T>, (u, ut): (&[T], &[T]), n: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (b, s, h, g) = (d.batch, d.len, d.hidden, d.g());
    let mut dgi = vec![T::ZERO; b * s * g];
    let mut dgh = vec![T::ZERO; b * s * g];
    let mut dh0 = vec![T::ZERO; b * h];
    dgi.par_chunks_mut(n * s * g).zip(dgh.par_chunks_mut(n * s * g)).zip(dh0.par_chunks_mut(n * h)).enumerate().for_each(
        |(c, ((dgi_c, dgh_c), dh0_c))| {
            let nb = dh0_c.len() / h;
            let (ag, a1) = (c * n * s * g..(c * n + nb) * s * g, c * n * s * h..(c * n + nb) * s * h);
            let gi_c = &x.gi[c * n * s * d.gi_stride..][..nb * s * d.gi_stride];
            let cp = if x.cprev.is_empty() { x.cprev } else { &x.cprev[a1.clone()] };
            let xc = BackIn { gi: gi_c, gh: &x.gh[ag], hprev: &x.hprev[a1.clone()], cprev: cp, dh: &x.dh[a1] };
            simd_dispatch!(backward_chunk(&d.chunk(c * n, nb), &xc, (u, ut), None, dgi_c, dgh_c, dh0_c))
        },
    );
    (dgi, dgh, dh0)
}

/// `[dghb; dh_0] (B, G + H)`: each row's `dGH` summed over its steps, then its `dh_0`.
pub(crate) fn row_grads<T: Real>(dgh: &[T], dh0: &[T], b: usize, s: usize, h: usize, g: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; b * (g + h)];
    for bi in 0..b {
        let dst = &mut out[bi * (g + h)..(bi + 1) * (g + h)];
        for row in dgh[bi * s * g..(bi + 1) * s * g].chunks(g) {
            for (acc, &x) in dst[..g].iter_mut().zip(row) {
                *acc += x;
            }
        }
        dst[g..].copy_from_slice(&dh0[bi * h..(bi + 1) * h]);
    }
    out
}

impl<T: Real> FusedOp<Host<T>> for GruSeq {
    type Saved = Saved<T>;
    const NAME: &'static str = "fused-gru-sequence";
    const SLOTS: Option<(usize, usize)> = Some((0, 1));

    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch, self.0.len, self.0.hidden))
    }

    fn forward(&self, _: &Host<T>, [gi, u, rows]: [&[T]; 3]) -> Result<(Vec<T>, Saved<T>)> {
        Ok(forward(&self.0, gi, u, rows, None))
    }

    fn backward(&self, _: &Host<T>, [gi, u, rows]: [&[T]; 3], sv: Saved<T>, hs: &[T], dh: &[T]) -> Result<[Vec<T>; 3]> {
        let (dgi, du, drows) = backward(&self.0, &sv, gi, u, rows, hs, dh);
        Ok([dgi, du, drows])
    }
}
