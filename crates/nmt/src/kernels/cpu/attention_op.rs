//! The RNNsearch decoder as one candle op: the decoder's start state, the attention keys, the
//! whole step loop (Bahdanau's: `bahdanau.rs`, `bahdanau_backward.rs`; the conditional GRU's:
//! `conditional.rs`, its weights `[U₁; b_h1; b₂]` after `b_h`) and the choice of output state.
//!
//! Inputs, each a plain graph node (no `cat` or `reshape` of large activations in front of
//! the op: each such node costs candle a zero-filled gradient buffer and an add per update):
//! - `gie (B·T, G)`: `E y_{i-1} W + b` for every target position, from one GEMM (`G` is the
//!   cell's gate width: `3H` for the GRU, `4H` for the LSTM);
//! - `ann (B, S, C)`: the annotations `h_j` (`C = 2H` for the bidirectional encoder);
//! - `w`: flat `[W_a (H, A); b_a (A); v_a (A); W_c (C, G); U (H, G); b_h (G); U_a (C, A);
//!   W_s (P, H); b_s (H)]` (`P = H` for `←h_1`; see `start_pool.rs`).
//!
//! Prologue (RNNsearch appendix A.2.2): `s_0 = tanh(←h_1 W_s + b_s)`, where `←h_1` is the
//! last `H` columns of `h_1` (the backward GRU's state after reading the whole sentence), or
//! another summary of the annotations (`AttnDims::start`, `start_pool.rs`), and
//! the keys `U_a h_j` for all positions in one GEMM. Output `(B·T, H + C)`: `[s; c_i]` per
//! target position, with `s = s_i` or `s_{i-1}` ([`OutputState`]).
//!
//! With layer normalisation (`AttnDims::norm`, the conditional GRU; `model/layer_norm.rs`)
//! `s_0 = tanh(LN(p W_s)·γ_s + b_s)` and the keys are `LN(h_j U_a)·γ_u + b_a`; the gains
//! follow `b_s` in `w` (`AttnDims::woff`), and the backward pass recomputes the two products.
use candle_core::{Result, Shape, Tensor};

use super::bahdanau::{forward, Steps};
use super::norm_rows::{ln_backward_product, ln_rows, Product};
use super::op::apply;
use super::start_pool;
use crate::config::{OutputState, StartState};
use crate::kernels::cpu::engine::products::{matmul_wide, Precision};
use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::{matmul, transpose, Mat, Real};
use crate::kernels::shapes::attn_dims::AttnDims;

/// Runs the decoder; see the module docs. Returns `(B·T, H + C)`.
pub fn attention_decoder(gie: &Tensor, ann: &Tensor, w: &Tensor, dims: AttnDims) -> Result<Tensor> {
    let d = &dims;
    let ok = gie.elem_count() == d.batch * d.tgt_len * d.g()
        && ann.dims() == [d.batch, d.src_len, d.ctx]
        && d.ctx >= d.hidden
        && w.dims1()? == d.woff().total
        && d.lens.len() == d.batch
        && d.lens.iter().all(|&l| l >= 1 && l <= d.src_len)
        && d.state_mask.as_ref().is_none_or(|m| m.len() == d.batch * d.hidden)
        && !(d.conditional && d.kind == crate::config::CellKind::Lstm)
        && !(d.norm && (!d.conditional || d.kind != crate::config::CellKind::Gru(crate::config::GruForm::ResetAfter)));
    if !ok {
        candle_core::bail!("attention_decoder: inputs {:?} {:?} {:?} do not fit {d:?}", gie.dims(), ann.dims(), w.dims());
    }
    apply(AttnDecoder(dims), gie, ann, w)
}

/// The loop's internal inputs (`seq = [gie; s_0]`, `enc = [h_j; U_a h_j]`) and its steps.
struct Prepared<T> {
    seq: Vec<T>,
    enc: Vec<T>,
    steps: Steps<T>,
}

/// The op; its forward pass leaves what the backward pass needs (taken once; a second
/// backward recomputes it).
struct AttnDecoder(AttnDims);

/// Builds `seq` and `enc` from the op's inputs.
fn prologue<T: Real>(d: &AttnDims, gie: &[T], ann: &[T], w: &[T]) -> (Vec<T>, Vec<T>) {
    let (b, s, h, c, a) = (d.batch, d.src_len, d.hidden, d.ctx, d.att);
    let o = d.woff();
    let threads = rayon::current_num_threads();
    let mut seq = Vec::with_capacity(gie.len() + b * h);
    seq.extend_from_slice(gie);
    // s_0 = tanh(←h_1 W_s + b_s): ←h_1 is row b's position 0, last H columns.
    let bs = &w[o.bs..o.gu];
    let pooled = pooled_start(d, ann);
    let mut s0 = if d.norm { vec![T::ZERO; b * h] } else { crate::kernels::gemm::fill_rows(bs, b) };
    matmul(&mut s0, 0, h, start_input(d, ann, pooled.as_deref()), Mat::new(&w[o.ws..o.bs], d.start_width(), h), true, threads);
    if d.norm {
        ln_rows(&mut s0, b, (h, 0), &w[o.gs..o.total], Some(bs));
    }
    seq.extend(s0.iter().map(|&x| x.tanh_fast()));
    // enc = [h_j; U_a h_j] per position.
    let ew = c + a;
    let mut enc = vec![T::ZERO; b * s * ew];
    for (dst, src) in enc.chunks_mut(ew).zip(ann.chunks(c)) {
        dst[..c].copy_from_slice(src);
    }
    matmul_wide(d.products, &mut enc, c, ew, Mat::new(ann, b * s, c), Mat::new(&w[o.ua..o.ws], c, a), false, threads);
    if d.norm {
        ln_rows(&mut enc, b * s, (ew, c), &w[o.gu..o.gs], Some(&w[o.ba..o.va]));
    }
    (seq, enc)
}

/// The summary `p` that `s_0` starts from, when it is not `←h_1` (read in place).
fn pooled_start<T: Real>(d: &AttnDims, ann: &[T]) -> Option<Vec<T>> {
    match d.start {
        StartState::FirstBackward => None,
        kind => Some(start_pool::pool(kind, ann, d.src_len, d.ctx, &d.lens)),
    }
}

/// `p (B, P)`: `←h_1`, the last `H` columns of each sentence's position 0, or `pooled`.
fn start_input<'a, T: Real>(d: &AttnDims, ann: &'a [T], pooled: Option<&'a [T]>) -> Mat<'a, T> {
    let (b, s, h, c) = (d.batch, d.src_len, d.hidden, d.ctx);
    pooled.map_or(Mat::strided(ann, c - h, b, h, s * c), |p| Mat::new(p, b, d.start_width()))
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
    let loop_w = &w[..d.woff().end];
    let (mut out, steps) = match d.conditional {
        true => super::conditional::forward(d, &seq, &enc, loop_w),
        false => forward(d, &seq, &enc, loop_w),
    };
    shift_out(d, &mut out, &seq[d.batch * d.tgt_len * d.g()..]);
    (out, Prepared { seq, enc, steps })
}

/// Gradients of `(gie, ann, w)` from the op's output `res` and its gradient `g`.
fn backward<T: Real>(d: &AttnDims, p: Prepared<T>, ann: &[T], w: &[T], res: &[T], g: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (b, tl, s, h, c, a) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.ctx, d.att);
    let (ow, o, bt, gw) = (d.out_w(), d.woff(), b * tl, d.g());
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
    let backward_loop = match d.conditional {
        true => super::conditional::backward,
        false => super::bahdanau_backward::backward,
    };
    let (mut dseq, mut denc, mut dw) = backward_loop(d, Some(p.steps), &p.seq, &p.enc, &w[..o.end], out, dout);
    dw.resize(o.total, T::ZERO);
    // s_0: the loop's gradient plus the output's, through tanh into W_s, b_s and ←h_1.
    let s0 = &p.seq[bt * gw..];
    let mut dpre = vec![T::ZERO; b * h];
    for (i, dp) in dpre.iter_mut().enumerate() {
        *dp = (dseq[bt * gw + i] + ds0_out[i]) * (T::ONE - s0[i] * s0[i]);
    }
    let pooled = pooled_start(d, ann);
    let (pw, p) = (d.start_width(), start_input(d, ann, pooled.as_deref()));
    for row in dpre.chunks(h) {
        for (acc, &x) in dw[o.bs..o.gu].iter_mut().zip(row) {
            *acc += x;
        }
    }
    let ew = c + a;
    if d.norm {
        // Back through the normalisations of `p W_s` and of the keys `h_j U_a` (whose shift is `b_a`).
        let mut dgs = vec![T::ZERO; h];
        // As the prologue multiplied them: `p W_s` in f32, the keys by `matmul_wide`.
        let start = Product { x: p, w: Mat::new(&w[o.ws..o.bs], pw, h), products: Precision::F32, threads };
        ln_backward_product(start, (&mut dpre, h, 0), &w[o.gs..o.total], (&mut dgs, None));
        dw[o.gs..o.total].copy_from_slice(&dgs);
        for row in denc.chunks(ew) {
            for (acc, &x) in dw[o.ba..o.va].iter_mut().zip(&row[c..]) {
                *acc += x;
            }
        }
        let mut dgu = vec![T::ZERO; a];
        let keys = Product { x: Mat::new(ann, b * s, c), w: Mat::new(&w[o.ua..o.ws], c, a), products: d.products, threads };
        ln_backward_product(keys, (&mut denc, ew, c), &w[o.gu..o.gs], (&mut dgu, None));
        dw[o.gu..o.gs].copy_from_slice(&dgu);
    }
    matmul(&mut dw, o.ws, h, p.t(), Mat::new(&dpre, b, h), false, threads);
    // The keys: dU_a = annᵀ dUH, d ann = dH + dUH U_aᵀ (+ d←h_1 at position 0).
    let duh = Mat::strided(&denc, c, b * s, a, ew);
    matmul_wide(d.products, &mut dw, o.ua, a, Mat::new(ann, b * s, c).t(), duh, false, threads);
    let mut dann = vec![T::ZERO; b * s * c];
    for (dst, src) in dann.chunks_mut(c).zip(denc.chunks(ew)) {
        dst.copy_from_slice(&src[..c]);
    }
    let uat = transpose(&w[o.ua..o.ws], c, a);
    matmul_wide(d.products, &mut dann, 0, c, duh, Mat::new(&uat, a, c), true, threads);
    let wst = transpose(&w[o.ws..o.bs], pw, h);
    match d.start {
        StartState::FirstBackward => matmul(&mut dann, c - h, s * c, Mat::new(&dpre, b, h), Mat::new(&wst, h, h), true, 1),
        kind => {
            let mut dp = vec![T::ZERO; b * pw];
            matmul(&mut dp, 0, pw, Mat::new(&dpre, b, h), Mat::new(&wst, h, pw), false, 1);
            start_pool::pool_backward(kind, &dp, &mut dann, s, c, &d.lens);
        }
    }
    dseq.truncate(bt * gw);
    (dseq, dann, dw)
}

impl<T: Real> FusedOp<Host<T>> for AttnDecoder {
    type Saved = Prepared<T>;
    const NAME: &'static str = "fused-attention-decoder";
    const SLOTS: Option<(usize, usize)> = Some((2, 3));

    fn out_shape(&self) -> Shape {
        Shape::from((self.0.batch * self.0.tgt_len, self.0.out_w()))
    }

    fn forward(&self, _: &Host<T>, [gie, ann, w]: [&[T]; 3]) -> Result<(Vec<T>, Prepared<T>)> {
        Ok(run_forward(&self.0, gie, ann, w))
    }

    fn backward(&self, _: &Host<T>, [_, ann, w]: [&[T]; 3], p: Prepared<T>, out: &[T], g: &[T]) -> Result<[Vec<T>; 3]> {
        let (dg, da, dw) = backward(&self.0, p, ann, w, out, g);
        Ok([dg, da, dw])
    }
}
