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
//! The composed form ([`layer_norm`]) is differentiated by candle and is what trains; the host
//! search normalises its products in place (`kernels::layer_norm::ln_rows`, also inside the
//! recurrence of `kernels::rnn_cell`). The fused training kernels have no
//! layer normalisation: a model with it trains on the composed form (`backend.rs`).
use candle_core::{Tensor, D};

use crate::error::Result;
pub use crate::kernels::layer_norm::{ln_rows, LN_EPS};

/// `LN(x)·γ` over the last axis of `x (…, k)`, `γ (k)`; composed candle ops.
pub fn layer_norm(x: &Tensor, gamma: &Tensor) -> Result<Tensor> {
    let mu = x.mean_keepdim(D::Minus1)?;
    let centred = x.broadcast_sub(&mu)?;
    let sigma = (centred.sqr()?.mean_keepdim(D::Minus1)? + LN_EPS)?.sqrt()?;
    Ok(centred.broadcast_div(&sigma)?.broadcast_mul(gamma)?)
}

/// `x ↦ LN(x)·γ` for `x (…, k)`, or `x` itself without a `γ`.
pub fn maybe_norm(x: Tensor, gamma: Option<&Tensor>) -> Result<Tensor> {
    match gamma {
        Some(g) => layer_norm(&x, g),
        None => Ok(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

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
