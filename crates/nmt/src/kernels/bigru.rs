//! A bidirectional GRU layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) as one op:
//! the two directions run at the same time, one per thread, each over the whole batch.
//!
//! Input `gi (B, S, 6H)`: `[x W_f + b_f | x W_b + b_b]`, from one GEMM for both directions.
//! Weights `u (2, H, 3H)`: `U_f` then `U_b`; recurrent biases `bh (2, 3H)` (zero for the paper's
//! cell, `b_h` for the reset-after cell). Source lengths as in `gru.rs`: the backward direction
//! starts at each sentence's own last word.
//! Output `(B, S, 2H)`: the annotations, forward state first.
//!
//! Compared with two `gru_sequence` ops and a `cat`: the per-step GEMMs run on all `B` rows
//! (`m = 32` multiplies faster than two chunks of 16), there is no synchronisation at all
//! between the threads, the forward pass's `GH` is kept for the backward pass, and candle's
//! graph has one node instead of four. With one thread the directions run in turn.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};

use super::gemm::{fill_rows, transpose, Real};
use super::gru::{backward_chunk, forward_chunk, prev_states, BackIn, GruDims, Saved, Saved2};
use super::gru_cell::{u_grad, GruForm};
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slices};
use crate::simd_dispatch;

/// Runs both directions over `gi (B, S, 6H)` (or `(B·S, 6H)`: no reshape node is needed) with
/// `u (2, H, 3H)` and `bh (2, 3H)`; `B = lens.len()`. Returns `(B, S, 2H)`.
pub fn bigru_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, form: GruForm, lens: &[usize]) -> Result<Tensor> {
    let (batch, hidden) = (lens.len(), u.dim(1)?);
    let h6 = 6 * hidden;
    let len = gi.elem_count() / (batch * h6).max(1);
    let ok = gi.elem_count() == batch * len * h6
        && gi.dims().last() == Some(&h6)
        && u.dims() == [2, hidden, 3 * hidden]
        && bh.dims() == [2, 3 * hidden]
        && lens.len() == batch
        && lens.iter().all(|&l| (1..=len).contains(&l));
    if !ok {
        candle_core::bail!("bigru_sequence: gi {:?}, u {:?}, bh {:?}, lens {lens:?} do not fit", gi.dims(), u.dims(), bh.dims());
    }
    let d = GruDims { batch, len, hidden, reverse: false, form, lens: lens.to_vec() };
    gi.contiguous()?.apply_op3(&u.contiguous()?, &bh.contiguous()?, BiGru(d, Mutex::new(None)))
}

/// Per direction: its `gi (B, S, 3H)` and the forward pass's [`Saved`] buffers.
struct Dirs<T> {
    gi: [Vec<T>; 2],
    saved: [Saved<T>; 2],
}

enum Cached {
    F32(Dirs<f32>),
    F64(Dirs<f64>),
}

struct BiGru(GruDims, Mutex<Option<Cached>>);

fn dims(d: &GruDims, dir: usize) -> GruDims {
    GruDims { reverse: dir == 1, ..d.clone() }
}

/// Splits `(B, S, 6H)` into the two directions' contiguous `(B, S, 3H)`.
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

/// A direction's per-row `[b_h; h_0 = 0] (B, 4H)`.
fn dir_rows<T: Real>(bh: &[T], batch: usize) -> Vec<T> {
    let mut row = bh.to_vec();
    row.resize(bh.len() + bh.len() / 3, T::ZERO);
    fill_rows(&row, batch)
}

/// The annotations `(B, S, 2H)` alone: the forward pass for search, which keeps nothing for a
/// backward pass (`crate::infer` encodes with it).
pub(crate) fn annotations<T: Real>(d: &GruDims, gi: &[T], u: &[T], bh: &[T]) -> Vec<T> {
    forward(d, gi, u, bh).0
}

fn forward<T: Real>(d: &GruDims, gi: &[T], u: &[T], bh: &[T]) -> (Vec<T>, Dirs<T>) {
    let (n, h) = (d.batch * d.len, d.hidden);
    let gis = split_dirs(gi, 3 * h);
    let run = |dir: usize| {
        let mut out = vec![T::ZERO; n * h];
        let mut sv = Saved { gh: vec![T::ZERO; n * 3 * h], q: vec![T::ZERO; n * h] };
        let ud = &u[dir * h * 3 * h..(dir + 1) * h * 3 * h];
        let rows = dir_rows(&bh[dir * 3 * h..(dir + 1) * 3 * h], d.batch);
        let mut s2 = Saved2 { gh: &mut sv.gh, q: &mut sv.q };
        simd_dispatch!(forward_chunk(&dims(d, dir), &gis[dir], ud, &rows, &mut out, &mut s2));
        (out, sv)
    };
    let ((hf, sf), (hb, sb)) = rayon::join(|| run(0), || run(1));
    (join_dirs(&hf, &hb, h), Dirs { gi: gis, saved: [sf, sb] })
}

/// One direction's backward pass on the calling thread: `(dgi, du, dbh)`.
fn backward_dir<T: Real>(d: &GruDims, gi: &[T], sv: &Saved<T>, u: &[T], bh: &[T], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (n, h) = (d.batch * d.len, d.hidden);
    let rows = dir_rows(bh, d.batch);
    let hprev = prev_states(d, hs, &rows);
    let ut = transpose(u, h, 3 * h);
    let mut dgi = vec![T::ZERO; n * 3 * h];
    let mut dgh = vec![T::ZERO; n * 3 * h];
    let mut dh0 = vec![T::ZERO; d.batch * h];
    let x = BackIn { gi, gh: &sv.gh, hprev: &hprev, dh };
    simd_dispatch!(backward_chunk(d, &x, u, &ut, &mut dgi, &mut dgh, &mut dh0));
    let du = u_grad(d.form, h, &hprev, &sv.q, &dgh, 1);
    let mut dbh = vec![T::ZERO; 3 * h];
    for row in dgh.chunks(3 * h) {
        for (acc, &x) in dbh.iter_mut().zip(row) {
            *acc += x;
        }
    }
    (dgi, du, dbh)
}

fn backward<T: Real>(d: &GruDims, saved: Dirs<T>, u: &[T], bh: &[T], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let h = d.hidden;
    let hs = split_dirs(hs, h);
    let dh = split_dirs(dh, h);
    let run = |dir: usize| {
        let ud = &u[dir * h * 3 * h..(dir + 1) * h * 3 * h];
        let bd = &bh[dir * 3 * h..(dir + 1) * 3 * h];
        backward_dir(&dims(d, dir), &saved.gi[dir], &saved.saved[dir], ud, bd, &hs[dir], &dh[dir])
    };
    let ((dgf, mut du, mut dbh), (dgb, mut dub, mut dbhb)) = rayon::join(|| run(0), || run(1));
    du.append(&mut dub);
    dbh.append(&mut dbhb);
    (join_dirs(&dgf, &dgb, 3 * h), du, dbh)
}

impl CustomOp3 for BiGru {
    fn name(&self) -> &'static str {
        "fused-bidirectional-gru"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = &self.0;
        let shape = Shape::from((d.batch, d.len, 2 * d.hidden));
        // (B, S, 2H) whatever the input's shape.
        let (out, cached) = match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let (gi, u, bh) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                let (out, saved) = super::profile::timed(0, || forward::<f32>(d, gi, u, bh));
                (CpuStorage::F32(out), Cached::F32(saved))
            }
            _ => {
                let (out, saved) = forward::<f64>(d, cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                (CpuStorage::F64(out), Cached::F64(saved))
            }
        };
        if let Ok(mut c) = self.1.lock() {
            *c = Some(cached);
        }
        Ok((out, shape))
    }

    fn bwd(
        &self,
        gi: &Tensor,
        u: &Tensor,
        bh: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        fn go<T: Real + WithDType>(d: &GruDims, saved: Option<Dirs<T>>, t: [&Tensor; 5]) -> Result<(Tensor, Tensor, Tensor)> {
            let [gi, u, bh, _, _] = t;
            with_slices::<T, _, 5>(t, |[gi_s, u_s, bh_s, hs, g]| {
                // No saved forward pass (a second backward): run it again.
                let saved = saved.unwrap_or_else(|| forward(d, gi_s, u_s, bh_s).1);
                let (dgi, du, dbh) = backward(d, saved, u_s, bh_s, hs, g);
                Ok((tensor_from(dgi, gi.shape(), gi)?, tensor_from(du, u.shape(), u)?, tensor_from(dbh, bh.shape(), bh)?))
            })
        }
        let cached = self.1.lock().ok().and_then(|mut c| c.take());
        let t = [gi, u, bh, res, grad];
        let (a, b, c) = match (gi.dtype(), cached) {
            (DType::F32, Some(Cached::F32(s))) => super::profile::timed(1, || go::<f32>(&self.0, Some(s), t))?,
            (DType::F32, _) => go::<f32>(&self.0, None, t)?,
            (_, Some(Cached::F64(s))) => go::<f64>(&self.0, Some(s), t)?,
            _ => go::<f64>(&self.0, None, t)?,
        };
        Ok((Some(a), Some(b), Some(c)))
    }
}
