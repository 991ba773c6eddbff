//! A bidirectional recurrent layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) as one
//! op: the two directions run at the same time, each on half the threads: on 2 threads one
//! thread over the whole batch, on more each direction's rows in chunks, one per thread
//! (`dir_chunk_rows`; bit for bit the same numbers, this module's test). One direction per
//! thread left 14 of 16 threads idle for the encoder, about a ninth of a training step on 2
//! threads (docs/PERF.md, "The encoder on many threads").
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

use super::op::apply;
use super::rnn_cell::LnGrads;
use super::rnn_cell::{masked_states, u_grad};
use super::rnn_sequence::{backward_chunk, backward_rows, forward_rows, prev_cells, prev_states, BackIn, Saved};
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{fill_rows, transpose, Real};
use crate::kernels::shapes::rnn_dims::{RnnDims, RnnSpec};

/// Runs both directions over `gi (B, S, 2G)` (or `(B·S, 2G)`: no reshape node is needed) with
/// `u (2, H, G)` and `bh (2, G)` (or `(2, 2G)` with layer normalisation, see the module docs);
/// `B = spec.lens.len()`, a state mask is `(2, B, H)`. Returns `(B, S, 2H)`.
pub fn birnn_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, spec: RnnSpec<'_>) -> Result<Tensor> {
    let hidden = u.dim(1)?;
    let g = spec.kind.gates() * hidden;
    let normed = spec.kind == super::rnn_cell::CellKind::Gru(super::rnn_cell::GruForm::ResetAfter) && bh.dims() == [2, 2 * g];
    let fit = u.dims() == [2, hidden, g] && (bh.dims() == [2, g] || normed);
    apply(BiRnn(spec.dims("birnn_sequence", gi, hidden, false, 2, fit)?), gi, u, bh)
}

/// Per direction: the forward pass's [`Saved`] buffers.
struct Dirs<T> {
    saved: [Saved<T>; 2],
}

/// Both directions of one bidirectional layer, GRU (either form) or LSTM, as one op.
struct BiRnn(RnnDims);

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

/// The threads of one direction: half the pool's, as both directions run at once.
fn dir_threads() -> usize {
    (rayon::current_num_threads() / 2).max(1)
}

/// Rows per chunk of one direction: one chunk per thread of [`dir_threads`], so that on more
/// than 2 threads each direction's batch is split too (on 2 threads, or 1, a direction runs
/// as one chunk, as before). Rows are independent and every product keeps at least two rows
/// (`gemm.rs`), so a row's numbers do not depend on the thread count.
fn dir_chunk_rows(batch: usize) -> usize {
    batch.div_ceil(dir_threads().min(batch).max(1)).max(1)
}

/// A direction's per-row `[b_h; h_0 = 0] (B, G + H)`.
fn dir_rows<T: Real>(bh: &[T], batch: usize, h: usize) -> Vec<T> {
    let mut row = bh.to_vec();
    row.resize(bh.len() + h, T::ZERO);
    fill_rows(&row, batch)
}

/// The annotations `(B, S, 2H)` alone: the forward pass for search, which keeps nothing for a
/// backward pass (the host search encodes with it).
/// Each direction in one chunk: the search runs whole batches side by side on more threads
/// (`search::Searcher`), so its encoder needs no split of its own.
pub(crate) fn annotations<T: Real>(d: &RnnDims, gi: &[T], u: &[T], bh: &[T]) -> Vec<T> {
    forward(d, gi, u, bh, d.batch).0
}

/// Both directions, each in chunks of `n` rows.
fn forward<T: Real>(d: &RnnDims, gi: &[T], u: &[T], bh: &[T], n: usize) -> (Vec<T>, Dirs<T>) {
    let (h, g) = (d.hidden, d.g());
    let run = |dir: usize| {
        let ud = &u[dir * h * g..(dir + 1) * h * g];
        let (bd, norm) = dir_bias(bh, dir, g);
        let rows = dir_rows(bd, d.batch, h);
        forward_rows(&dims(d, dir), gi, (ud, norm), &rows, n)
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
    let x = BackIn { gi, gh: &sv.gh, hprev: &hprev, cprev: &cprev, dh };
    // With layer normalisation `dgh` ends as the gradient of `h U`; `db_h`, `dγ_h` add up here,
    // over all rows in one chunk (chunks would sum them in another order on each thread count).
    let (mut dbeta, mut dgamma) = (vec![T::ZERO; g], vec![T::ZERO; if norm.is_some() { g } else { 0 }]);
    let (dgi, dgh) = match norm {
        None => {
            let (dgi, dgh, _dh0) = backward_rows(d, &x, (u, &ut), dir_chunk_rows(d.batch));
            (dgi, dgh)
        }
        Some(gamma) => {
            let (mut dgi, mut dgh, mut dh0) = (vec![T::ZERO; n * g], vec![T::ZERO; n * g], vec![T::ZERO; d.batch * h]);
            let ln = Some((gamma, LnGrads { dgamma: &mut dgamma[..], dbeta: &mut dbeta[..] }));
            simd_dispatch!(backward_chunk(d, &x, (u, &ut), ln, &mut dgi, &mut dgh, &mut dh0));
            (dgi, dgh)
        }
    };
    let threads = dir_threads();
    let du = u_grad(d.kind, h, &masked_states(&hprev, d.mask.as_deref(), d.len, h), &sv.q, &dgh, d.products, threads);
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

impl<T: Real> FusedOp<Host<T>> for BiRnn {
    type Saved = Dirs<T>;
    const NAME: &'static str = "fused-bidirectional-gru";
    const SLOTS: Option<(usize, usize)> = Some((0, 1));

    /// `(B, S, 2H)` whatever the input's shape.
    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch, self.0.len, 2 * self.0.hidden))
    }

    fn forward(&self, _: &Host<T>, [gi, u, bh]: [&[T]; 3]) -> Result<(Vec<T>, Dirs<T>)> {
        Ok(forward(&self.0, gi, u, bh, dir_chunk_rows(self.0.batch)))
    }

    fn backward(&self, _: &Host<T>, x: [&[T]; 3], saved: Dirs<T>, hs: &[T], dh: &[T]) -> Result<[Vec<T>; 3]> {
        let (dgi, du, dbh) = backward(&self.0, saved, x, hs, dh);
        Ok([dgi, du, dbh])
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor, Var};
    use rand::{Rng, SeedableRng};

    use super::super::rnn_cell::{CellKind, GruForm};
    use super::*;

    const LENS: [usize; 13] = [7, 3, 5, 7, 1, 2, 6, 7, 4, 4, 7, 2, 5];

    fn random(rng: &mut impl Rng, shape: &[usize]) -> Var {
        let n: usize = shape.iter().product();
        Var::from_tensor(&Tensor::from_vec((0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>(), shape, &Device::Cpu).unwrap())
            .unwrap()
    }

    /// The op's output and the gradients of its three inputs on a pool of `threads`.
    fn run(threads: usize, kind: CellKind, norm: bool, dropout: bool) -> Vec<Vec<f32>> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(56);
            let (b, s, h) = (LENS.len(), 7, 256);
            let g = kind.gates() * h;
            let (gi, u) = (random(&mut rng, &[b, s, 2 * g]), random(&mut rng, &[2, h, g]));
            let bh = random(&mut rng, &[2, if norm { 2 * g } else { g }]);
            let mask: Vec<f32> = (0..2 * b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
            let probe = random(&mut rng, &[b, s, 2 * h]);
            let spec = RnnSpec { kind, lens: &LENS, state_mask: dropout.then_some(&mask[..]), products: crate::config::Precision::F32 };
            let y = birnn_sequence(gi.as_tensor(), u.as_tensor(), bh.as_tensor(), spec).unwrap();
            let grads = (&y * probe.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let mut all = vec![flat(&y)];
            all.extend([&gi, &u, &bh].map(|v| flat(grads.get(v.as_tensor()).unwrap())));
            all
        })
    }

    /// Issue 56: on more than 2 threads each direction's rows are split between its threads
    /// (`dir_chunk_rows`: chunks of 7, 2 and 1 of 13 sentences here); the annotations and every
    /// gradient stay those of 2 threads, bit for bit, for both GRU forms and the LSTM, with
    /// recurrent dropout and with layer normalisation (kept in one chunk).
    #[test]
    fn any_thread_count_computes_what_two_threads_compute() {
        let cases = [
            (CellKind::Gru(GruForm::ResetAfter), false, false),
            (CellKind::Gru(GruForm::ResetAfter), false, true),
            (CellKind::Gru(GruForm::ResetAfter), true, true),
            (CellKind::Gru(GruForm::Paper), false, true),
            (CellKind::Lstm, false, true),
        ];
        for (kind, norm, dropout) in cases {
            let two = run(2, kind, norm, dropout);
            for threads in [1, 3, 5, 16, 64] {
                let got = run(threads, kind, norm, dropout);
                for (k, (a, b)) in got.iter().zip(&two).enumerate() {
                    let differ = a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                    assert_eq!(
                        differ,
                        0,
                        "{kind:?} norm {norm} dropout {dropout}: {threads} threads, tensor {k}: {differ} of {} differ",
                        a.len()
                    );
                }
            }
        }
    }
}
