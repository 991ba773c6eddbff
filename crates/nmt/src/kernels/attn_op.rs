//! The RNNsearch decoder as one candle op: the decoder's start state, the attention keys, the
//! whole step loop (`attn_decoder.rs`, `attn_backward.rs`) and the choice of output state.
//!
//! Inputs, each a plain graph node (no `cat` or `reshape` of large activations in front of
//! the op: each such node costs candle a zero-filled gradient buffer and an add per update):
//! - `gie (B·T, 3H)`: `E y_{i-1} W + b` for every target position, from one GEMM;
//! - `ann (B, S, C)`: the annotations `h_j` (`C = 2H` for the bidirectional encoder);
//! - `w`: flat `[W_a (H, A); b_a (A); v_a (A); W_c (C, 3H); U (H, 3H); b_h (3H); U_a (C, A);
//!   W_s (H, H); b_s (H)]`.
//!
//! Prologue (RNNsearch appendix A.2.2): `s_0 = tanh(←h_1 W_s + b_s)`, where `←h_1` is the
//! last `H` columns of `h_1` (the backward GRU's state after reading the whole sentence), and
//! the keys `U_a h_j` for all positions in one GEMM. Output `(B·T, H + C)`: `[s; c_i]` per
//! target position, with `s = s_i` or `s_{i-1}` ([`OutputState`]).
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};

use super::attn_decoder::{forward, AttnDims, Steps};
use super::gemm::{matmul, transpose, Mat, Real};
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slices};
use crate::config::OutputState;

/// Runs the decoder; see the module docs. Returns `(B·T, H + C)`.
pub fn attention_decoder(gie: &Tensor, ann: &Tensor, w: &Tensor, dims: AttnDims) -> Result<Tensor> {
    let d = &dims;
    let ok = gie.elem_count() == d.batch * d.tgt_len * 3 * d.hidden
        && ann.dims() == [d.batch, d.src_len, d.ctx]
        && d.ctx >= d.hidden
        && w.dims1()? == d.woff().total
        && d.lens.len() == d.batch
        && d.lens.iter().all(|&l| l >= 1 && l <= d.src_len);
    if !ok {
        candle_core::bail!("attention_decoder: inputs {:?} {:?} {:?} do not fit {d:?}", gie.dims(), ann.dims(), w.dims());
    }
    gie.contiguous()?.apply_op3(&ann.contiguous()?, &w.contiguous()?, AttnDecoder(dims, Mutex::new(None)))
}

/// The loop's internal inputs (`seq = [gie; s_0]`, `enc = [h_j; U_a h_j]`) and its steps.
struct Prepared<T> {
    seq: Vec<T>,
    enc: Vec<T>,
    steps: Steps<T>,
}

enum Cached {
    F32(Prepared<f32>),
    F64(Prepared<f64>),
}

/// The op; its forward pass leaves what the backward pass needs (taken once; a second
/// backward recomputes it).
struct AttnDecoder(AttnDims, Mutex<Option<Cached>>);

/// Builds `seq` and `enc` from the op's inputs.
fn prologue<T: Real>(d: &AttnDims, gie: &[T], ann: &[T], w: &[T]) -> (Vec<T>, Vec<T>) {
    let (b, s, h, c, a) = (d.batch, d.src_len, d.hidden, d.ctx, d.att);
    let o = d.woff();
    let threads = rayon::current_num_threads();
    let mut seq = Vec::with_capacity(gie.len() + b * h);
    seq.extend_from_slice(gie);
    // s_0 = tanh(←h_1 W_s + b_s): ←h_1 is row b's position 0, last H columns.
    let mut s0 = super::gemm::fill_rows(&w[o.bs..o.total], b);
    matmul(&mut s0, 0, h, Mat::strided(ann, c - h, b, h, s * c), Mat::new(&w[o.ws..o.bs], h, h), true, threads);
    seq.extend(s0.iter().map(|&x| x.tanh_fast()));
    // enc = [h_j; U_a h_j] per position.
    let ew = c + a;
    let mut enc = vec![T::ZERO; b * s * ew];
    for (dst, src) in enc.chunks_mut(ew).zip(ann.chunks(c)) {
        dst[..c].copy_from_slice(src);
    }
    matmul(&mut enc, c, ew, Mat::new(ann, b * s, c), Mat::new(&w[o.ua..o.ws], c, a), false, threads);
    (seq, enc)
}

/// The loop's `[s_i; c_i]` rows → the op's output rows.
fn shift_out<T: Real>(d: &AttnDims, out: &mut [T], s0: &[T]) {
    if d.output == OutputState::Current {
        return;
    }
    let (tl, h, ow) = (d.tgt_len, d.hidden, d.out_w());
    for b in 0..d.batch {
        for i in (0..tl).rev() {
            let row = (b * tl + i) * ow;
            if i == 0 {
                out[row..row + h].copy_from_slice(&s0[b * h..(b + 1) * h]);
            } else {
                out.copy_within(row - ow..row - ow + h, row);
            }
        }
    }
}

fn run_forward<T: Real>(d: &AttnDims, gie: &[T], ann: &[T], w: &[T]) -> (Vec<T>, Prepared<T>) {
    let (seq, enc) = prologue(d, gie, ann, w);
    let (mut out, steps) = forward(d, &seq, &enc, &w[..d.woff().end]);
    shift_out(d, &mut out, &seq[d.batch * d.tgt_len * 3 * d.hidden..]);
    (out, Prepared { seq, enc, steps })
}

/// Gradients of `(gie, ann, w)` from the op's output `res` and its gradient `g`.
fn backward<T: Real>(d: &AttnDims, p: Prepared<T>, ann: &[T], w: &[T], res: &[T], g: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (b, tl, s, h, c, a) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.ctx, d.att);
    let (ow, o, bt) = (d.out_w(), d.woff(), b * tl);
    let threads = rayon::current_num_threads();
    // Back to the loop's layout: rows [s_i; c_i] and their gradients. For `previous`, the
    // state of row i came from row i+1's output; s_T itself reaches no output (zeros).
    let mut ds0_out = vec![T::ZERO; b * h];
    let shifted = (d.output == OutputState::Previous).then(|| {
        let (mut out, mut dout) = (res.to_vec(), g.to_vec());
        for bi in 0..b {
            for i in 0..tl {
                let row = (bi * tl + i) * ow;
                if i == 0 {
                    ds0_out[bi * h..(bi + 1) * h].copy_from_slice(&g[row..row + h]);
                }
                let next = (i + 1 < tl).then_some(row + ow);
                match next {
                    Some(nx) => {
                        out[row..row + h].copy_from_slice(&res[nx..nx + h]);
                        dout[row..row + h].copy_from_slice(&g[nx..nx + h]);
                    }
                    None => {
                        out[row..row + h].fill(T::ZERO);
                        dout[row..row + h].fill(T::ZERO);
                    }
                }
            }
        }
        (out, dout)
    });
    let (out, dout) = shifted.as_ref().map_or((res, g), |(o, dg)| (o.as_slice(), dg.as_slice()));
    let (mut dseq, denc, mut dw) = super::attn_backward::backward(d, Some(p.steps), &p.seq, &p.enc, &w[..o.end], out, dout);
    dw.resize(o.total, T::ZERO);
    // s_0: the loop's gradient plus the output's, through tanh into W_s, b_s and ←h_1.
    let s0 = &p.seq[bt * 3 * h..];
    let mut dpre = vec![T::ZERO; b * h];
    for (i, dp) in dpre.iter_mut().enumerate() {
        *dp = (dseq[bt * 3 * h + i] + ds0_out[i]) * (T::ONE - s0[i] * s0[i]);
    }
    let back_first = Mat::strided(ann, c - h, b, h, s * c);
    matmul(&mut dw, o.ws, h, back_first.t(), Mat::new(&dpre, b, h), false, threads);
    for row in dpre.chunks(h) {
        for (acc, &x) in dw[o.bs..o.total].iter_mut().zip(row) {
            *acc += x;
        }
    }
    // The keys: dU_a = annᵀ dUH, d ann = dH + dUH U_aᵀ (+ d←h_1 at position 0).
    let ew = c + a;
    let duh = Mat::strided(&denc, c, b * s, a, ew);
    matmul(&mut dw, o.ua, a, Mat::new(ann, b * s, c).t(), duh, false, threads);
    let mut dann = vec![T::ZERO; b * s * c];
    for (dst, src) in dann.chunks_mut(c).zip(denc.chunks(ew)) {
        dst.copy_from_slice(&src[..c]);
    }
    let uat = transpose(&w[o.ua..o.ws], c, a);
    matmul(&mut dann, 0, c, duh, Mat::new(&uat, a, c), true, threads);
    let wst = transpose(&w[o.ws..o.bs], h, h);
    matmul(&mut dann, c - h, s * c, Mat::new(&dpre, b, h), Mat::new(&wst, h, h), true, 1);
    dseq.truncate(bt * 3 * h);
    (dseq, dann, dw)
}

impl CustomOp3 for AttnDecoder {
    fn name(&self) -> &'static str {
        "fused-attention-decoder"
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
        let shape = Shape::from((d.batch * d.tgt_len, d.out_w()));
        let (out, cached) = match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let (a, b, c) = (cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                let (out, p) = super::profile::timed(2, || run_forward::<f32>(d, a, b, c));
                (CpuStorage::F32(out), Cached::F32(p))
            }
            _ => {
                let (out, p) = run_forward::<f64>(d, cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?);
                (CpuStorage::F64(out), Cached::F64(p))
            }
        };
        if let Ok(mut c) = self.1.lock() {
            *c = Some(cached);
        }
        Ok((out, shape))
    }

    fn bwd(
        &self,
        gie: &Tensor,
        ann: &Tensor,
        w: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        fn go<T: Real + WithDType>(d: &AttnDims, p: Option<Prepared<T>>, t: [&Tensor; 5]) -> Result<(Tensor, Tensor, Tensor)> {
            let [gie, ann, w, _, _] = t;
            with_slices::<T, _, 5>(t, |[gie_s, ann_s, w_s, out_s, g_s]| {
                // No saved forward pass (a second backward): run it again.
                let p = p.unwrap_or_else(|| run_forward(d, gie_s, ann_s, w_s).1);
                let (dg, da, dw) = backward(d, p, ann_s, w_s, out_s, g_s);
                Ok((tensor_from(dg, gie.shape(), gie)?, tensor_from(da, ann.shape(), ann)?, tensor_from(dw, w.shape(), w)?))
            })
        }
        let cached = self.1.lock().ok().and_then(|mut c| c.take());
        let t = [gie, ann, w, res, grad];
        let (a, b, c) = match (gie.dtype(), cached) {
            (DType::F32, Some(Cached::F32(p))) => super::profile::timed(3, || go::<f32>(&self.0, Some(p), t))?,
            (DType::F32, _) => super::profile::timed(3, || go::<f32>(&self.0, None, t))?,
            (_, Some(Cached::F64(p))) => go::<f64>(&self.0, Some(p), t)?,
            _ => go::<f64>(&self.0, None, t)?,
        };
        Ok((Some(a), Some(b), Some(c)))
    }
}
