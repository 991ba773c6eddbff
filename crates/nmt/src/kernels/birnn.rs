//! A bidirectional recurrent layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) as one
//! op: the two directions run at the same time, one per thread, each over the whole batch.
//! The cell is a GRU or an LSTM (`rnn_cell.rs`), of gate width `G` (`3H` or `4H`).
//!
//! Input `gi (B, S, 2G)`: `[x W_f + b_f | x W_b + b_b]`, from one GEMM for both directions.
//! Weights `u (2, H, G)`: `U_f` then `U_b`; recurrent biases `bh (2, G)` (zero for the paper's
//! cell and the LSTM, `b_h` for the reset-after cell), or with layer normalisation (the
//! reset-after GRU, `model/layer_norm.rs`) `bh (2, 2G)`, each direction's `[b_h | γ_h]`: the
//! recurrent term is then `LN(h U)·γ_h + b_h`, differentiated too (`rnn_cell.rs`). Source
//! lengths as in `gru.rs`: the backward direction starts at each sentence's own last word.
//! Output `(B, S, 2H)`: the annotations, forward state first.
//!
//! Compared with two `rnn_sequence` ops and a `cat`: the per-step GEMMs run on all `B` rows
//! (`m = 32` multiplies faster than two chunks of 16), there is no synchronisation at all
//! between the threads, the forward pass's `GH` is kept for the backward pass, and candle's
//! graph has one node instead of four. With one thread the directions run in turn.
use candle_core::{Result, Shape, Tensor};

use super::gemm::{fill_rows, transpose, Real};
use super::rnn_cell::LnGrads;
use super::rnn_cell::{masked_states, u_grad};
use super::rnn_op::{backward_chunk, forward_chunk, prev_cells, prev_states, BackIn, RnnDims, RnnSpec, Saved, Saved2};
use super::saved_op::{apply, SavedForward};
use crate::kernels::math::simd_dispatch;

/// Runs both directions over `gi (B, S, 2G)` (or `(B·S, 2G)`: no reshape node is needed) with
/// `u (2, H, G)` and `bh (2, G)` (or `(2, 2G)` with layer normalisation, see the module docs);
/// `B = spec.lens.len()`, a state mask is `(2, B, H)`. Returns `(B, S, 2H)`.
pub fn birnn_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(1)?;
    let g = spec.kind.gates() * hidden;
    let normed = spec.kind == super::rnn_cell::CellKind::Gru(super::rnn_cell::GruForm::ResetAfter) && bh.dims() == [2, 2 * g];
    let fit = u.dims() == [2, hidden, g] && (bh.dims() == [2, g] || normed);
    apply(BiGru(spec.dims("birnn_sequence", gi, hidden, false, 2, fit)?), gi, u, bh)
}

/// Per direction: the forward pass's [`Saved`] buffers.
struct Dirs<T> {
    saved: [Saved<T>; 2],
}

struct BiGru(RnnDims);

/// Direction `dir`'s dimensions: reversed for the backward direction, with its half of the
/// mask and of each `gi` row (read in place).
fn dims(d: &RnnDims, dir: usize) -> RnnDims {
    let n = d.batch * d.hidden;
    let mask = d.mask.as_ref().map(|m| m[dir * n..(dir + 1) * n].to_vec());
    RnnDims { reverse: dir == 1, mask, gi_off: dir * d.g(), ..d.clone() }
}

/// Direction `dir`'s `(b_h (G), γ_h)` from `bh (2, G)` or `(2, 2G)`.
fn dir_bias<T>(bh: &[T], dir: usize, g: usize) -> (&[T], Option<&[T]>) {
    let w = bh.len() / 2;
    let row = &bh[dir * w..(dir + 1) * w];
    (&row[..g], (w == 2 * g).then(|| &row[g..]))
}

/// Splits `(N, 2k)` rows into the two directions' contiguous `(N, k)`.
fn split_dirs<T: Real>(gi: &[T], h3: usize) -> [Vec<T>; 2] {
    let mut out = [Vec::with_capacity(gi.len() / 2), Vec::with_capacity(gi.len() / 2)];
    for row in gi.chunks(2 * h3) {
        out[0].extend_from_slice(&row[..h3]);
        out[1].extend_from_slice(&row[h3..]);
    }
    out
}

/// Interleaves two `(N, k)` matrices into `(N, 2k)`.
fn join_dirs<T: Real>(a: &[T], b: &[T], k: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() * 2);
    for (ra, rb) in a.chunks(k).zip(b.chunks(k)) {
        out.extend_from_slice(ra);
        out.extend_from_slice(rb);
    }
    out
}

/// A direction's per-row `[b_h; h_0 = 0] (B, G + H)`.
fn dir_rows<T: Real>(bh: &[T], batch: usize, h: usize) -> Vec<T> {
    let mut row = bh.to_vec();
    row.resize(bh.len() + h, T::ZERO);
    fill_rows(&row, batch)
}

/// The annotations `(B, S, 2H)` alone: the forward pass for search, which keeps nothing for a
/// backward pass (the host search encodes with it).
pub(crate) fn annotations<T: Real>(d: &RnnDims, gi: &[T], u: &[T], bh: &[T]) -> Vec<T> {
    forward(d, gi, u, bh).0
}

fn forward<T: Real>(d: &RnnDims, gi: &[T], u: &[T], bh: &[T]) -> (Vec<T>, Dirs<T>) {
    let (n, h, g) = (d.batch * d.len, d.hidden, d.g());
    let run = |dir: usize| {
        let mut out = vec![T::ZERO; n * h];
        let mut sv = Saved { gh: vec![T::ZERO; n * g], q: vec![T::ZERO; n * h] };
        let ud = &u[dir * h * g..(dir + 1) * h * g];
        let (bd, norm) = dir_bias(bh, dir, g);
        let rows = dir_rows(bd, d.batch, h);
        let mut s2 = Saved2 { gh: &mut sv.gh, q: &mut sv.q };
        simd_dispatch!(forward_chunk(&dims(d, dir), gi, (ud, norm), &rows, &mut out, &mut s2));
        (out, sv)
    };
    let ((hf, sf), (hb, sb)) = rayon::join(|| run(0), || run(1));
    (join_dirs(&hf, &hb, h), Dirs { saved: [sf, sb] })
}

/// One direction's backward pass on the calling thread: `(dgi, du, dbh)`, `dbh` as wide as
/// the direction's `bh` row (`[db_h | dγ_h]` with layer normalisation).
fn backward_dir<T: Real>(
    d: &RnnDims,
    gi: &[T],
    sv: &Saved<T>,
    u: &[T],
    (bh, norm): (&[T], Option<&[T]>),
    hs: &[T],
    dh: &[T],
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (n, h, g) = (d.batch * d.len, d.hidden, d.g());
    let rows = dir_rows(bh, d.batch, h);
    let hprev = prev_states(d, hs, &rows);
    let cprev = prev_cells(d, &sv.q);
    let ut = transpose(u, h, g);
    let mut dgi = vec![T::ZERO; n * g];
    let mut dgh = vec![T::ZERO; n * g];
    let mut dh0 = vec![T::ZERO; d.batch * h];
    let x = BackIn { gi, gh: &sv.gh, hprev: &hprev, cprev: &cprev, dh };
    // With layer normalisation `dgh` ends as the gradient of `h U`; `db_h`, `dγ_h` add up here.
    let (mut dbeta, mut dgamma) = (vec![T::ZERO; g], vec![T::ZERO; if norm.is_some() { g } else { 0 }]);
    let ln = norm.map(|gamma| (gamma, LnGrads { dgamma: &mut dgamma[..], dbeta: &mut dbeta[..] }));
    simd_dispatch!(backward_chunk(d, &x, (u, &ut), ln, &mut dgi, &mut dgh, &mut dh0));
    let du = u_grad(d.kind, h, &masked_states(&hprev, d.mask.as_deref(), d.len, h), &sv.q, &dgh, 1);
    if norm.is_none() {
        for row in dgh.chunks(g) {
            for (acc, &x) in dbeta.iter_mut().zip(row) {
                *acc += x;
            }
        }
    }
    dbeta.append(&mut dgamma);
    (dgi, du, dbeta)
}

fn backward<T: Real>(d: &RnnDims, saved: Dirs<T>, [gi, u, bh]: [&[T]; 3], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (h, g) = (d.hidden, d.g());
    let hs = split_dirs(hs, h);
    let dh = split_dirs(dh, h);
    let run = |dir: usize| {
        let ud = &u[dir * h * g..(dir + 1) * h * g];
        backward_dir(&dims(d, dir), gi, &saved.saved[dir], ud, dir_bias(bh, dir, g), &hs[dir], &dh[dir])
    };
    let ((dgf, mut du, mut dbh), (dgb, mut dub, mut dbhb)) = rayon::join(|| run(0), || run(1));
    du.append(&mut dub);
    dbh.append(&mut dbhb);
    (join_dirs(&dgf, &dgb, g), du, dbh)
}

impl SavedForward for BiGru {
    type Saved<T: Real> = Dirs<T>;
    const NAME: &'static str = "fused-bidirectional-gru";
    const SLOTS: (usize, usize) = (0, 1);

    /// `(B, S, 2H)` whatever the input's shape.
    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch, self.0.len, 2 * self.0.hidden))
    }

    fn forward<T: Real>(&self, [gi, u, bh]: [&[T]; 3]) -> (Vec<T>, Dirs<T>) {
        forward(&self.0, gi, u, bh)
    }

    fn backward<T: Real>(&self, saved: Dirs<T>, x: [&[T]; 3], hs: &[T], dh: &[T]) -> [Vec<T>; 3] {
        let (dgi, du, dbh) = backward(&self.0, saved, x, hs, dh);
        [dgi, du, dbh]
    }
}
