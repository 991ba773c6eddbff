//! Additive (MLP) attention, RNNsearch appendix A.1.2:
//!
//! ```text
//! e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)
//! α_ij = exp(e_ij) / Σ_k exp(e_ik)        (padding masked out)
//! c_i  = Σ_j α_ij h_j
//! ```
//! `U_a h_j` does not depend on `i`, so [`Attention::precompute`] does it once per sentence.
//! With layer normalisation (Marian's `s2s`, `layer_norm.rs`) the two products are normalised
//! and `b_a` moves to the keys' side: `e_ij = v_a^T tanh(LN(s W_a)·γ_w + LN(h_j U_a)·γ_u + b_a)`
//! (without it, where `b_a` is added makes no difference).
use candle_core::{Tensor, D};

use super::layer_norm::layer_norm;
use super::params::{Init, ParamBuilder};
use crate::error::Result;
use crate::kernels::cpu::attention_weights;

/// The attention's layer-normalisation gains: `γ_w (n')` on `s W_a`, `γ_u (n')` on `h U_a`.
#[derive(Clone, Debug)]
pub struct AttentionNorm {
    pub(crate) w: Tensor,
    pub(crate) u: Tensor,
}

#[derive(Clone, Debug)]
pub struct Attention {
    /// `(n, n')`, bias `(n')`.
    pub(crate) w_a: Tensor,
    pub(crate) b_a: Tensor,
    /// `(2n, n')`.
    pub(crate) u_a: Tensor,
    /// `(n', 1)`.
    pub(crate) v_a: Tensor,
    /// Layer normalisation's gains (`ln_w`, `ln_u`), when the model has it.
    pub(crate) norm: Option<AttentionNorm>,
}

impl Attention {
    /// `norm`: with layer normalisation.
    pub fn new(state: usize, annot: usize, att: usize, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        Ok(Attention {
            w_a: pb.get("w_a", &[state, att], Init::Normal)?,
            b_a: pb.get("b_a", &[att], Init::Zeros)?,
            u_a: pb.get("u_a", &[annot, att], Init::Normal)?,
            v_a: pb.get("v_a", &[att, 1], Init::Normal)?,
            norm: match norm {
                true => Some(AttentionNorm { w: pb.get("ln_w", &[att], Init::Ones)?, u: pb.get("ln_u", &[att], Init::Ones)? }),
                false => None,
            },
        })
    }

    /// The keys' term for all `j`, `U_a h_j` (or `LN(h_j U_a)·γ_u + b_a`):
    /// `(batch, src_len, 2n)` → `(batch, src_len, n')`.
    pub fn precompute(&self, annotations: &Tensor) -> Result<Tensor> {
        let (b, s, d) = annotations.dims3()?;
        let att = self.u_a.dim(1)?;
        let uh = annotations.reshape((b * s, d))?.matmul(&self.u_a)?;
        let uh = match &self.norm {
            Some(g) => layer_norm(&uh, &g.u)?.broadcast_add(&self.b_a)?,
            None => uh,
        };
        Ok(uh.reshape((b, s, att))?)
    }

    /// The query's term `s W_a + b_a` (or `LN(s W_a)·γ_w`): `(rows, n)` → `(rows, n')`.
    pub fn query(&self, states: &Tensor) -> Result<Tensor> {
        let ws = states.matmul(&self.w_a)?;
        match &self.norm {
            Some(g) => layer_norm(&ws, &g.w),
            None => Ok(ws.broadcast_add(&self.b_a)?),
        }
    }

    /// The weights of every target step at once: `states (B, T, n)` the `s_{i-1}`, `uh` from
    /// [`Attention::precompute`], `mask_bias (B, S)` (or, for the fused op, each sentence's
    /// length `lens`) → `α (B, T, S)`. The copy mixture on the kernels' paths reads them this way
    /// (the fused decoders keep their own inside): with `fused` (the caller runs the CPU
    /// kernels, `Backend::fused`) as one op (`kernels::cpu::attention_weights`), else (a GPU)
    /// on composed ops, the twin.
    pub fn weights_all(&self, states: &Tensor, uh: &Tensor, (mask_bias, lens): (&Tensor, &[usize]), fused: bool) -> Result<Tensor> {
        let (b, t, n) = states.dims3()?;
        let (_, s, att) = uh.dims3()?;
        if fused {
            let ws = self.query(&states.reshape((b * t, n))?)?.reshape((b, t, att))?;
            return Ok(attention_weights::attention_weights_all(&ws, uh, &self.v_a, lens)?);
        }
        let ws = self.query(&states.reshape((b * t, n))?)?.reshape((b, t, 1, att))?;
        let hidden = uh.unsqueeze(1)?.broadcast_add(&ws)?.tanh()?;
        let e = hidden.reshape((b * t * s, att))?.matmul(&self.v_a)?.reshape((b, t, s))?;
        softmax_last(&e.broadcast_add(&mask_bias.unsqueeze(1)?)?)
    }

    /// One decoder step. `state: (batch, n)` is `s_{i-1}`, `uh` from [`Attention::precompute`],
    /// `mask_bias: (batch, src_len)` is 0 at words and a large negative number at padding.
    /// Returns the context `c_i: (batch, 2n)` and the weights `α_i: (batch, src_len)`.
    pub fn attend(&self, state: &Tensor, annotations: &Tensor, uh: &Tensor, mask_bias: &Tensor) -> Result<(Tensor, Tensor)> {
        let (b, s, att) = uh.dims3()?;
        let ws = self.query(state)?.unsqueeze(1)?;
        let hidden = uh.broadcast_add(&ws)?.tanh()?;
        let e = hidden.reshape((b * s, att))?.matmul(&self.v_a)?.reshape((b, s))?;
        let alpha = softmax_last(&(e + mask_bias)?)?;
        let ctx = alpha.unsqueeze(1)?.matmul(annotations)?.squeeze(1)?;
        Ok((ctx, alpha))
    }
}

/// Softmax over the last axis. The max is detached: it only keeps `exp` in range and its
/// gradient contributions cancel exactly, so there is no need to differentiate through it.
pub fn softmax_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    let sum = e.sum_keepdim(D::Minus1)?;
    Ok(e.broadcast_div(&sum)?)
}

/// `log Σ exp` over the last axis, keeping the axis: `(…, k)` → `(…, 1)`.
pub fn logsumexp_last(x: &Tensor) -> Result<Tensor> {
    let max = x.max_keepdim(D::Minus1)?.detach();
    let s = x.broadcast_sub(&max)?.exp()?.sum_keepdim(D::Minus1)?.log()?;
    Ok((s + max)?)
}

/// `−log p(y)` per row of `logits (rows, V)`, label-smoothed by `eps` (the composed twin of
/// `proj_nll`): `lse − (1−ε) z_y − ε mean(z)`; no `(rows, V)` log-softmax tensor is built.
pub(crate) fn composed_nll(logits: &Tensor, targets: &Tensor, eps: f64) -> Result<Tensor> {
    let picked = logits.gather(&targets.unsqueeze(1)?, 1)?.squeeze(1)?;
    let lse = logsumexp_last(logits)?.squeeze(D::Minus1)?;
    if eps > 0.0 {
        let mean = logits.mean(D::Minus1)?;
        return Ok(((lse - (picked * (1.0 - eps))?)? - (mean * eps)?)?);
    }
    Ok((lse - picked)?)
}
