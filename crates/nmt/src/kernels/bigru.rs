//! A bidirectional GRU layer (Bahdanau et al. 2014, §3.2: `h_j = [→h_j; ←h_j]`) as one op:
//! the two directions run at the same time, one per thread, each over the whole batch.
//!
//! Input `gi (B, S, 6H)`: `[x W_f + b_f | x W_b + b_b]`, from one GEMM for both directions.
//! Weights `w (2, H+1, 3H)`: `[U_f; b_hf]` then `[U_b; b_hb]`, as in `gru.rs`.
//! Output `(B, S, 2H)`: the annotations, forward state first.
//!
//! Compared with two `gru_sequence` ops and a `cat`: the per-step GEMMs run on all `B` rows
//! (`m = 32` multiplies faster than two chunks of 16), there is no synchronisation at all
//! between the threads, the forward pass's `h_{t-1} U + b_h` is kept for the backward pass,
//! and candle's graph has one node instead of four. With one thread the directions run in turn.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor, WithDType};

use super::gemm::Real;
use super::gru::{backward_serial, forward_chunk, GruDims};
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slice};
use crate::simd_dispatch;

/// Runs both directions over `gi (B, S, 6H)` with `w (2, H+1, 3H)`; returns `(B, S, 2H)`.
pub fn bigru_sequence(gi: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (batch, len, h6) = gi.dims3()?;
    let hidden = h6 / 6;
    if h6 % 6 != 0 || w.dims() != [2, hidden + 1, 3 * hidden] {
        candle_core::bail!("bigru_sequence: gi {:?} and w {:?} do not fit", gi.dims(), w.dims());
    }
    let d = GruDims { batch, len, hidden, reverse: false };
    gi.contiguous()?.apply_op2(&w.contiguous()?, BiGru(d, Mutex::new(None)))
}

/// Per direction: its `gi (B, S, 3H)` and the forward pass's `GH (B, S, 3H)`.
struct Saved<T> {
    gi: [Vec<T>; 2],
    gh: [Vec<T>; 2],
}

enum Cached {
    F32(Saved<f32>),
    F64(Saved<f64>),
}

struct BiGru(GruDims, Mutex<Option<Cached>>);

fn dims(d: GruDims, dir: usize) -> GruDims {
    GruDims { reverse: dir == 1, ..d }
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

fn forward<T: Real>(d: GruDims, gi: &[T], w: &[T]) -> (Vec<T>, Saved<T>) {
    let (n, h) = (d.batch * d.len, d.hidden);
    let gis = split_dirs(gi, 3 * h);
    let run = |dir: usize| {
        let mut out = vec![T::ZERO; n * h];
        let mut gh = vec![T::ZERO; n * 3 * h];
        let wd = &w[dir * (h + 1) * 3 * h..(dir + 1) * (h + 1) * 3 * h];
        simd_dispatch!(forward_chunk(dims(d, dir), d.batch, &gis[dir], wd, &mut out, &mut gh));
        (out, gh)
    };
    let ((hf, ghf), (hb, ghb)) = rayon::join(|| run(0), || run(1));
    (join_dirs(&hf, &hb, h), Saved { gi: gis, gh: [ghf, ghb] })
}

fn backward<T: Real>(d: GruDims, saved: Saved<T>, w: &[T], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>) {
    let h = d.hidden;
    let hs = split_dirs(hs, h);
    let dh = split_dirs(dh, h);
    let run = |dir: usize| {
        let wd = &w[dir * (h + 1) * 3 * h..(dir + 1) * (h + 1) * 3 * h];
        backward_serial(dims(d, dir), &saved.gi[dir], wd, &hs[dir], &dh[dir], &saved.gh[dir])
    };
    let ((dgf, dwf), (dgb, mut dwb)) = rayon::join(|| run(0), || run(1));
    let mut dw = dwf;
    dw.append(&mut dwb);
    (join_dirs(&dgf, &dgb, 3 * h), dw)
}

impl CustomOp2 for BiGru {
    fn name(&self) -> &'static str {
        "fused-bidirectional-gru"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        let d = self.0;
        let shape = Shape::from((d.batch, d.len, 2 * d.hidden));
        let (out, cached) = match float_dtype(&[s1.dtype(), s2.dtype()])? {
            DType::F32 => {
                let (gi, w) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?);
                let (out, saved) = super::profile::timed(0, || forward::<f32>(d, gi, w));
                (CpuStorage::F32(out), Cached::F32(saved))
            }
            _ => {
                let (out, saved) = forward::<f64>(d, cpu_slice(s1, l1)?, cpu_slice(s2, l2)?);
                (CpuStorage::F64(out), Cached::F64(saved))
            }
        };
        if let Ok(mut c) = self.1.lock() {
            *c = Some(cached);
        }
        Ok((out, shape))
    }

    fn bwd(&self, gi: &Tensor, w: &Tensor, res: &Tensor, grad: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        fn go<T: Real + WithDType>(d: GruDims, saved: Option<Saved<T>>, t: [&Tensor; 4]) -> Result<(Tensor, Tensor)> {
            let [gi, w, res, grad] = t;
            with_slice::<T, _>(gi, |gi_s| {
                with_slice::<T, _>(w, |w_s| {
                    with_slice::<T, _>(res, |hs| {
                        with_slice::<T, _>(grad, |g| {
                            // No saved forward pass (a second backward): run it again.
                            let saved = saved.unwrap_or_else(|| forward(d, gi_s, w_s).1);
                            let (dgi, dw) = backward(d, saved, w_s, hs, g);
                            Ok((tensor_from(dgi, gi.shape(), gi)?, tensor_from(dw, w.shape(), w)?))
                        })
                    })
                })
            })
        }
        let cached = self.1.lock().ok().and_then(|mut c| c.take());
        let t = [gi, w, res, grad];
        let (dgi, dw) = match (gi.dtype(), cached) {
            (DType::F32, Some(Cached::F32(s))) => super::profile::timed(1, || go::<f32>(self.0, Some(s), t))?,
            (DType::F32, _) => go::<f32>(self.0, None, t)?,
            (_, Some(Cached::F64(s))) => go::<f64>(self.0, Some(s), t)?,
            _ => go::<f64>(self.0, None, t)?,
        };
        Ok((Some(dgi), Some(dw)))
    }
}
