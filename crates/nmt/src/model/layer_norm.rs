//! Layer normalisation (Ba, Kiros & Hinton 2016, eq. 4) in the form and places Marian's `s2s`
//! model uses it (`--layer-normalization`, `model.layer_norm`):
//!
//! ```text
//! LN(a) = γ ⊙ (a − μ) / σ,   μ = mean(a),  σ = √(mean((a − μ)²) + ε)      over a row of a
//! ```
//! applied to a product *before* its bias, which then acts as LN's shift `β`:
//! - each GRU (encoder and both cells of the conditional decoder, `gru.rs`):
//!   `LN(x W)·γ_x + b` and `LN(h U)·γ_h + b_h`, each normalised as one `3n` row;
//! - the attention (`attention.rs`): `LN(h_j U_a)·γ_u + b_a` and `LN(s' W_a)·γ_w`;
//! - the start state (`attention_memory.rs`): `tanh(LN(p W_s)·γ_s + b_s)`;
//! - the deep output (`output.rs`): `LN(E y O_y)·γ_y + LN(s O_h)·γ_h + LN(c O_c)·γ_c + b`.
//!
//! `ε = 1e-9` is Marian's (its layer normalisation accumulates in f32, as the host form here
//! does). A row is `(…, k)`; `γ` is `(k)`.
//!
//! Three forms, as every layer: the composed one ([`layer_norm`], differentiated by candle: the
//! reference twin); the fused ones, with hand-written backward passes (`kernels::cpu::norm_rows`):
//! one op over a whole sequence's products ([`layer_norm_as`]) and the normalisations inside
//! the recurrent kernels (`kernels::cpu::birnn`, `kernels::cpu::conditional`, `kernels::cpu::attention_op`); and
//! the host search's, in place on its rows (`kernels::cpu::norm_rows::ln_rows`).
use candle_core::{Tensor, D};

use super::backend::Backend;
use crate::error::Result;
use crate::kernels::cpu::norm_rows::layer_norm_op;
pub use crate::kernels::cpu::norm_rows::{ln_rows, LN_EPS};

/// `LN(x)·γ` over the last axis of `x (…, k)`, `γ (k)`; composed candle ops.
pub fn layer_norm(x: &Tensor, gamma: &Tensor) -> Result<Tensor> {
    let mu = x.mean_keepdim(D::Minus1)?;
    let centred = x.broadcast_sub(&mu)?;
    let sigma = (centred.sqr()?.mean_keepdim(D::Minus1)? + LN_EPS)?.sqrt()?;
    Ok(centred.broadcast_div(&sigma)?.broadcast_mul(gamma)?)
}

/// `LN(x)·γ` in the form `backend` says: one fused op (`kernels::cpu::norm_rows`) or composed.
pub fn layer_norm_as(x: &Tensor, gamma: &Tensor, backend: Backend) -> Result<Tensor> {
    match backend.fused() {
        true => Ok(layer_norm_op(x, gamma)?),
        false => layer_norm(x, gamma),
    }
}

/// `x ↦ LN(x)·γ` for `x (…, k)`, or `x` itself without a `γ`; composed.
pub fn maybe_norm(x: Tensor, gamma: Option<&Tensor>) -> Result<Tensor> {
    maybe_norm_as(x, gamma, Backend::Composed)
}

/// [`maybe_norm`] in the form `backend` says.
pub fn maybe_norm_as(x: Tensor, gamma: Option<&Tensor>, backend: Backend) -> Result<Tensor> {
    match gamma {
        Some(g) => layer_norm_as(&x, g, backend),
        None => Ok(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    /// The fused op (`kernels::cpu::norm_rows::layer_norm_op`) gives the composed form's values and
    /// gradients (of `x` and `γ`), in f64, over more rows than one parallel task holds.
    #[test]
    fn fused_op_is_the_composed_form() {
        let dev = Device::Cpu;
        let (rows, k) = (150, 6);
        let xs: Vec<f64> = (0..rows * k).map(|i| ((i * 37 % 23) as f64 - 11.0) * 0.17).collect();
        let gs: Vec<f64> = (0..k).map(|j| 0.6 + 0.15 * j as f64).collect();
        let ws: Vec<f64> = (0..rows * k).map(|i| ((i * 13 % 7) as f64 - 3.0) * 0.2).collect();
        let w = Tensor::from_vec(ws, (rows, k), &dev).unwrap();
        let run = |fused: bool| {
            let x = candle_core::Var::from_vec(xs.clone(), (rows, k), &dev).unwrap();
            let g = candle_core::Var::from_vec(gs.clone(), k, &dev).unwrap();
            let y = match fused {
                true => crate::kernels::cpu::norm_rows::layer_norm_op(x.as_tensor(), g.as_tensor()).unwrap(),
                false => layer_norm(x.as_tensor(), g.as_tensor()).unwrap(),
            };
            let grads = (&y * &w).unwrap().sum_all().unwrap().backward().unwrap();
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f64>().unwrap();
            [flat(&y), flat(grads.get(x.as_tensor()).unwrap()), flat(grads.get(g.as_tensor()).unwrap())]
        };
        let (f, c) = (run(true), run(false));
        for (what, (a, b)) in ["y", "dx", "dγ"].iter().zip(f.iter().zip(&c)) {
            let worst = a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-12, "{what}: {worst:e}");
        }
    }

    /// The host form gives the composed form's rows, with and without `β`, at an offset.
    #[test]
    fn host_rows_are_the_composed_rows() {
        let dev = Device::Cpu;
        let (rows, k, stride, off) = (3, 7, 10, 2);
        let buf: Vec<f32> = (0..rows * stride).map(|i| ((i * 37 % 11) as f32 - 5.0) * 0.3).collect();
        let gamma: Vec<f32> = (0..k).map(|j| 0.5 + 0.1 * j as f32).collect();
        let beta: Vec<f32> = (0..k).map(|j| 0.05 * j as f32 - 0.1).collect();
        let block: Vec<f32> = (0..rows).flat_map(|r| buf[r * stride + off..][..k].to_vec()).collect();
        let x = Tensor::from_vec(block, (rows, k), &dev).unwrap().to_dtype(DType::F64).unwrap();
        let g = Tensor::from_vec(gamma.clone(), k, &dev).unwrap().to_dtype(DType::F64).unwrap();
        let want: Vec<f64> = layer_norm(&x, &g).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        for b in [None, Some(&beta[..])] {
            let mut got = buf.clone();
            ln_rows(&mut got, rows, (stride, off), &gamma, b);
            for r in 0..rows {
                for j in 0..k {
                    let shift = b.map_or(0.0, |b| b[j]);
                    let d = f64::from(got[r * stride + off + j] - shift) - want[r * k + j];
                    assert!(d.abs() < 1e-5, "row {r} col {j}: {d}");
                }
                // Outside the block nothing moved.
                assert_eq!(got[r * stride], buf[r * stride]);
            }
        }
    }
}
