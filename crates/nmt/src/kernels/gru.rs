//! A GRU layer over a whole batch of sequences as one candle op, with a hand-written backward
//! pass through time.
//!
//! The cell is the "reset after" GRU of cuDNN and PyTorch (the bench-rnnsearch reference,
//! `../shared/bench/pytorch_rnnsearch.py`), gates ordered `[r | z | n]`:
//!
//! ```text
//! gh  = h_{t-1} U + b_h                      (B, 3H)   one GEMM per step
//! r   = σ(gi_r + gh_r),  z = σ(gi_z + gh_z)
//! n   = tanh(gi_n + r ⊙ gh_n)
//! h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}            (Cho et al. 2014, eq. 5–8, with U applied before r)
//! ```
//!
//! `gi = x W + b_i` is computed by the caller for the whole sequence in one GEMM (Marian's
//! layout), so this op sees `gi (B, S, 3H)` and the packed recurrent weights `[U; b_h]`
//! `(H+1, 3H)`, and returns every state `(B, S, H)`, with `h_0 = 0`. `reverse` runs right to left
//! (the backward half of a bidirectional encoder) and still writes state `t` at position `t`.
//!
//! Backward recomputes the gates instead of storing them: `GH = H_prev U + b_h` is one GEMM
//! over all steps, the loop back through time does one `dGH_t Uᵀ` GEMM per step, and
//! `dU = H_prevᵀ dGH` is again one GEMM over all steps. Batch rows are independent, so the
//! loops run in chunks of rows on the rayon pool with no synchronisation between steps.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::gemm::{fill_rows, matmul, transpose, Mat, Real};
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slice};
use crate::simd_dispatch;

/// Dimensions of one GRU sequence op.
#[derive(Clone, Copy, Debug)]
pub struct GruDims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub reverse: bool,
}

impl GruDims {
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
}

/// Runs a GRU over `gi (B, S, 3H)` with packed weights `w = [U; b_h] (H+1, 3H)`; returns the
/// states `(B, S, H)`. Differentiable with respect to both inputs.
pub fn gru_sequence(gi: &Tensor, w: &Tensor, reverse: bool) -> Result<Tensor> {
    let (batch, len, h3) = gi.dims3()?;
    let hidden = h3 / 3;
    if h3 % 3 != 0 || w.dims() != [hidden + 1, h3] {
        candle_core::bail!("gru_sequence: gi {:?} and w {:?} do not fit", gi.dims(), w.dims());
    }
    let op = GruSeq(GruDims { batch, len, hidden, reverse });
    gi.contiguous()?.apply_op2(&w.contiguous()?, op)
}

/// Rows per parallel chunk: one chunk per thread. Smaller chunks would let a free core steal
/// work from a busy one, but the per-step GEMMs lose a quarter of their speed going from 16
/// rows to 8 (measured: 75 → 57 GFLOP/s for `(m, 256)·(256, 768)` on one thread).
pub(crate) fn chunk_rows(batch: usize) -> usize {
    let chunks = rayon::current_num_threads().min(batch).max(1);
    batch.div_ceil(chunks).max(1)
}

/// Splits `buf` into a row to read at `read` and a distinct row to write at `write`.
pub(crate) fn read_write<T>(buf: &mut [T], read: usize, write: usize, len: usize) -> (&[T], &mut [T]) {
    if read < write {
        let (a, b) = buf.split_at_mut(write);
        (&a[read..read + len], &mut b[..len])
    } else {
        let (a, b) = buf.split_at_mut(read);
        (&b[..len], &mut a[write..write + len])
    }
}

struct GruSeq(GruDims);

impl CustomOp2 for GruSeq {
    fn name(&self) -> &'static str {
        "fused-gru-sequence"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<(CpuStorage, Shape)> {
        let d = self.0;
        let shape = Shape::from((d.batch, d.len, d.hidden));
        match float_dtype(&[s1.dtype(), s2.dtype()])? {
            DType::F32 => {
                let (gi, w) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?);
                Ok((CpuStorage::F32(super::profile::timed(0, || forward(d, gi, w))), shape))
            }
            _ => Ok((CpuStorage::F64(forward(d, cpu_slice(s1, l1)?, cpu_slice(s2, l2)?)), shape)),
        }
    }

    fn bwd(&self, gi: &Tensor, w: &Tensor, res: &Tensor, grad: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (dgi, dw) = match gi.dtype() {
            DType::F32 => super::profile::timed(1, || backward_t::<f32>(self.0, gi, w, res, grad))?,
            _ => backward_t::<f64>(self.0, gi, w, res, grad)?,
        };
        Ok((Some(dgi), Some(dw)))
    }
}

fn backward_t<T: Real + WithDType>(d: GruDims, gi: &Tensor, w: &Tensor, res: &Tensor, grad: &Tensor) -> Result<(Tensor, Tensor)> {
    with_slice::<T, _>(gi, |gi_s| {
        with_slice::<T, _>(w, |w_s| {
            with_slice::<T, _>(res, |h_s| {
                with_slice::<T, _>(grad, |g_s| {
                    let (dgi, dw) = backward(d, gi_s, w_s, h_s, g_s);
                    Ok((tensor_from(dgi, gi.shape(), gi)?, tensor_from(dw, w.shape(), w)?))
                })
            })
        })
    })
}

/// Forward pass: the states `(B, S, H)`.
pub fn forward<T: Real>(d: GruDims, gi: &[T], w: &[T]) -> Vec<T> {
    let (s, h) = (d.len, d.hidden);
    let mut out = vec![T::ZERO; d.batch * s * h];
    let mut gh = vec![T::ZERO; d.batch * s * 3 * h];
    let rows = chunk_rows(d.batch);
    out.par_chunks_mut(rows * s * h).zip(gh.par_chunks_mut(rows * s * 3 * h)).enumerate().for_each(|(c, (out_c, gh_c))| {
        let nb = out_c.len() / (s * h);
        let gi_c = &gi[c * rows * s * 3 * h..][..nb * s * 3 * h];
        simd_dispatch!(forward_chunk(d, nb, gi_c, w, out_c, gh_c))
    });
    out
}

/// `H_prev (B, S, H)`: the state each step started from, zero for the first step.
pub(crate) fn prev_states<T: Real>(d: GruDims, hs: &[T]) -> Vec<T> {
    let (s, h) = (d.len, d.hidden);
    let mut hprev = vec![T::ZERO; d.batch * s * h];
    for bi in 0..d.batch {
        for t in 0..s {
            if let Some(tp) = d.prev(t) {
                let src = (bi * s + tp) * h;
                hprev[(bi * s + t) * h..][..h].copy_from_slice(&hs[src..src + h]);
            }
        }
    }
    hprev
}

/// `[dU; db_h] (H+1, 3H)` from `H_prev` and `dGH`, over all steps at once.
pub(crate) fn weight_grads<T: Real>(d: GruDims, hprev: &[T], dgh: &[T], threads: usize) -> Vec<T> {
    let (n, h) = (d.batch * d.len, d.hidden);
    let mut dw = vec![T::ZERO; (h + 1) * 3 * h];
    matmul(&mut dw, 0, 3 * h, Mat::new(hprev, n, h).t(), Mat::new(dgh, n, 3 * h), false, threads);
    let db = &mut dw[h * 3 * h..];
    for row in dgh.chunks(3 * h) {
        for (acc, &x) in db.iter_mut().zip(row) {
            *acc += x;
        }
    }
    dw
}

/// One direction's backward pass on the calling thread: `(dgi, dw)` given the states, their
/// gradient and the forward pass's `GH`.
pub(crate) fn backward_serial<T: Real>(d: GruDims, gi: &[T], w: &[T], hs: &[T], dh: &[T], gh: &[T]) -> (Vec<T>, Vec<T>) {
    let (n, h) = (d.batch * d.len, d.hidden);
    let hprev = prev_states(d, hs);
    let ut = transpose(&w[..h * 3 * h], h, 3 * h);
    let mut dgi = vec![T::ZERO; n * 3 * h];
    let mut dgh = vec![T::ZERO; n * 3 * h];
    let ins = ChunkIn { gi, gh, hprev: &hprev, dh };
    simd_dispatch!(backward_chunk(d, d.batch, &ins, &ut, &mut dgi, &mut dgh));
    let dw = weight_grads(d, &hprev, &dgh, 1);
    (dgi, dw)
}

/// Runs one chunk of `nb` rows through all steps. `gh_all (nb, S, 3H)` receives each step's
/// `h_{t-1} U + b_h`, which the backward pass would otherwise recompute.
#[inline(always)]
pub(crate) fn forward_chunk<T: Real>(d: GruDims, nb: usize, gi: &[T], w: &[T], out: &mut [T], gh_all: &mut [T]) {
    let (s, h) = (d.len, d.hidden);
    let (u, bias) = w.split_at(h * 3 * h);
    let h0 = vec![T::ZERO; h];
    for step in 0..s {
        let t = d.pos(step);
        for b in 0..nb {
            gh_all[(b * s + t) * 3 * h..][..3 * h].copy_from_slice(bias);
        }
        if let Some(tp) = d.prev(t) {
            matmul(gh_all, t * 3 * h, s * 3 * h, Mat::strided(out, tp * h, nb, h, s * h), Mat::new(u, h, 3 * h), true, 1);
        }
        for b in 0..nb {
            let g = &gi[(b * s + t) * 3 * h..][..3 * h];
            let hh = &gh_all[(b * s + t) * 3 * h..][..3 * h];
            let cur = (b * s + t) * h;
            match d.prev(t) {
                Some(tp) => {
                    let (hp, ht) = read_write(out, (b * s + tp) * h, cur, h);
                    cell(g, hh, hp, ht);
                }
                None => cell(g, hh, &h0, &mut out[cur..cur + h]),
            }
        }
    }
}

#[inline(always)]
pub(crate) fn cell<T: Real>(g: &[T], hh: &[T], hp: &[T], ht: &mut [T]) {
    let h = ht.len();
    let (gr, gz, gn) = (&g[..h], &g[h..2 * h], &g[2 * h..3 * h]);
    let (hr, hz, hn) = (&hh[..h], &hh[h..2 * h], &hh[2 * h..3 * h]);
    for j in 0..h {
        let r = (gr[j] + hr[j]).sigmoid_fast();
        let z = (gz[j] + hz[j]).sigmoid_fast();
        let n = (gn[j] + r * hn[j]).tanh_fast();
        ht[j] = n + z * (hp[j] - n);
    }
}

/// Backward pass: `(dgi (B, S, 3H), dw (H+1, 3H))` from the states `hs` and their gradient `dh`.
pub fn backward<T: Real>(d: GruDims, gi: &[T], w: &[T], hs: &[T], dh: &[T]) -> (Vec<T>, Vec<T>) {
    let (b, s, h) = (d.batch, d.len, d.hidden);
    let threads = rayon::current_num_threads();
    let u = &w[..h * 3 * h];
    let hprev = prev_states(d, hs);
    // GH = H_prev U + b_h for all steps in one GEMM.
    let mut gh = fill_rows(&w[h * 3 * h..], b * s);
    matmul(&mut gh, 0, 3 * h, Mat::new(&hprev, b * s, h), Mat::new(u, h, 3 * h), true, threads);

    let mut dgi = vec![T::ZERO; b * s * 3 * h];
    let mut dgh = vec![T::ZERO; b * s * 3 * h];
    let ut = transpose(u, h, 3 * h);
    let rows = chunk_rows(b);
    let n3 = rows * s * 3 * h;
    dgi.par_chunks_mut(n3).zip(dgh.par_chunks_mut(n3)).enumerate().for_each(|(c, (dgi_c, dgh_c))| {
        let nb = dgi_c.len() / (s * 3 * h);
        let at3 = c * n3..c * n3 + nb * s * 3 * h;
        let at1 = c * rows * s * h..(c * rows + nb) * s * h;
        let ins = ChunkIn { gi: &gi[at3.clone()], gh: &gh[at3], hprev: &hprev[at1.clone()], dh: &dh[at1] };
        simd_dispatch!(backward_chunk(d, nb, &ins, &ut, dgi_c, dgh_c))
    });

    (dgi, weight_grads(d, &hprev, &dgh, threads))
}

pub(crate) struct ChunkIn<'a, T> {
    gi: &'a [T],
    gh: &'a [T],
    hprev: &'a [T],
    dh: &'a [T],
}

#[inline(always)]
pub(crate) fn backward_chunk<T: Real>(d: GruDims, nb: usize, x: &ChunkIn<'_, T>, ut: &[T], dgi: &mut [T], dgh: &mut [T]) {
    let (s, h) = (d.len, d.hidden);
    let mut carry = vec![T::ZERO; nb * h];
    for step in (0..s).rev() {
        let t = d.pos(step);
        for b in 0..nb {
            let o3 = (b * s + t) * 3 * h;
            let o1 = (b * s + t) * h;
            let (g, hh) = (&x.gi[o3..o3 + 3 * h], &x.gh[o3..o3 + 3 * h]);
            let (hp, dht) = (&x.hprev[o1..o1 + h], &x.dh[o1..o1 + h]);
            let cr = &mut carry[b * h..(b + 1) * h];
            let (dgi_r, rest) = dgi[o3..o3 + 3 * h].split_at_mut(h);
            let (dgi_z, dgi_n) = rest.split_at_mut(h);
            let (dgh_r, rest) = dgh[o3..o3 + 3 * h].split_at_mut(h);
            let (dgh_z, dgh_n) = rest.split_at_mut(h);
            for j in 0..h {
                let r = (g[j] + hh[j]).sigmoid_fast();
                let z = (g[h + j] + hh[h + j]).sigmoid_fast();
                let n = (g[2 * h + j] + r * hh[2 * h + j]).tanh_fast();
                let dh = dht[j] + cr[j];
                let dn = dh * (T::ONE - z);
                let dz = dh * (hp[j] - n);
                let dpn = dn * (T::ONE - n * n);
                let dpr = dpn * hh[2 * h + j] * r * (T::ONE - r);
                let dpz = dz * z * (T::ONE - z);
                dgi_r[j] = dpr;
                dgi_z[j] = dpz;
                dgi_n[j] = dpn;
                dgh_r[j] = dpr;
                dgh_z[j] = dpz;
                dgh_n[j] = dpn * r;
                cr[j] = dh * z;
            }
        }
        if d.prev(t).is_some() {
            matmul(&mut carry, 0, h, Mat::strided(dgh, t * 3 * h, nb, 3 * h, s * 3 * h), Mat::new(ut, 3 * h, h), true, 1);
        }
    }
}
