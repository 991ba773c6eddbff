//! The pointer/copy mixture for rare words (the lecture notes' pointer idea, `shared/SPEC.md`
//! "Rare and unknown words"; See et al. 2017's pointer-generator gate), for RNNsearch:
//!
//! ```text
//! g_i      = σ([s_i; c_i; E y_{i-1}] w_g + b_g)                 (rows, 1)
//! p_copy(w) = Σ_{j : x_j = w} α_ij                              attention over source positions
//! p(w)     = g_i · p_vocab(w) + (1 − g_i) · p_copy(w)           over K_y + n_ext ids
//! ```
//! `s_i` is the state the deep output reads (`s_{i-1}` or `s_i`). Words are compared in the
//! extended target space of `nmt_data::copy`: a source word outside the target vocabulary has
//! id `K_y + k` and can only be copied; `p_vocab` gives it nothing.
//!
//! Training runs on either path: the fused one recomputes the attention for all steps at once
//! beside the fused decoder (`Attention::weights_all`), which keeps its own inside. Search
//! runs on either: `decode_step` here, `infer/copy.rs` on the host.
//!
//! Shapes: `R` rows (target positions or hypotheses), `S` source positions, `K_y` vocabulary.
use candle_core::{DType, Tensor, D};

use super::attention::logsumexp_last;
use super::params::{Init, ParamBuilder};
use crate::error::Result;

/// Smallest probability a copy model's `log` sees: a target neither the vocabulary nor the
/// source can produce (an `<unk>` the source lacks under `g → 0`) stays finite.
const FLOOR: f64 = 1e-20;

/// The gate's weights.
#[derive(Clone, Debug)]
pub struct CopyGate {
    /// `w_g (n + 2n + m, 1)` and `b_g (1)`.
    pub w: Tensor,
    pub b: Tensor,
}

impl CopyGate {
    pub fn new(input: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(CopyGate { w: pb.get("w_g", &[input, 1], Init::Normal)?, b: pb.get("b_g", &[1], Init::Zeros)? })
    }

    /// `g (R, 1)` from the deep output's state `s (R, n)`, context `c (R, 2n)` and previous
    /// word's embedding `ey (R, m)`.
    pub fn gate(&self, s: &Tensor, c: &Tensor, ey: &Tensor) -> Result<Tensor> {
        let x = Tensor::cat(&[s, c, ey], D::Minus1)?;
        Ok(candle_nn::ops::sigmoid(&x.matmul(&self.w)?.broadcast_add(&self.b)?)?)
    }
}

/// What the mixture reads for `R` rows.
pub struct Mixture<'a> {
    /// Vocabulary logits `(R, K_y)`.
    pub logits: &'a Tensor,
    /// Attention `(R, S)`.
    pub alpha: &'a Tensor,
    /// Gate `(R, 1)`.
    pub gate: &'a Tensor,
    /// Each row's source in the extended space `(R, S)` u32.
    pub src_ext: &'a Tensor,
}

/// Teacher-forced `−log p(y)` per row for targets `y (R)` u32 in the extended space;
/// label smoothing `eps` spreads over the vocabulary distribution, as without copying.
pub fn copy_nll(m: &Mixture<'_>, targets: &Tensor, eps: f64) -> Result<Tensor> {
    let k_y = m.logits.dim(1)? as u32;
    let lse = logsumexp_last(m.logits)?; // (R, 1)
    let in_vocab = targets.lt(k_y)?;
    let safe = in_vocab.where_cond(targets, &targets.zeros_like()?)?;
    let picked = m.logits.gather(&safe.unsqueeze(1)?, 1)?; // (R, 1)
    let p_vocab = ((picked - &lse)?.exp()? * in_vocab.to_dtype(m.logits.dtype())?.unsqueeze(1)?)?;
    let same = m.src_ext.broadcast_eq(&targets.unsqueeze(1)?)?.to_dtype(m.alpha.dtype())?;
    let p_copy = (m.alpha * same)?.sum_keepdim(1)?;
    let p = ((m.gate * p_vocab)? + ((1.0 - m.gate)? * p_copy)?)?;
    let nll = p.clamp(FLOOR, 1.0)?.log()?.neg()?.squeeze(1)?;
    if eps > 0.0 {
        let smooth = (lse - m.logits.mean_keepdim(D::Minus1)?)?.squeeze(1)?;
        Ok(((nll * (1.0 - eps))? + (smooth * eps)?)?)
    } else {
        Ok(nll)
    }
}

/// `log p(w)` over the extended space `(R, K_y + n_ext)`, for search.
pub fn copy_log_probs(m: &Mixture<'_>, n_ext: usize) -> Result<Tensor> {
    let (r, k_y) = m.logits.dims2()?;
    let p_vocab = m.logits.broadcast_sub(&logsumexp_last(m.logits)?)?.exp()?;
    let p_vocab = Tensor::cat(&[p_vocab, Tensor::zeros((r, n_ext), m.logits.dtype(), m.logits.device())?], 1)?;
    let zeros = Tensor::zeros((r, k_y + n_ext), m.alpha.dtype(), m.alpha.device())?;
    let p_copy = zeros.scatter_add(&m.src_ext.contiguous()?, &m.alpha.contiguous()?, 1)?;
    let p = (p_vocab.broadcast_mul(m.gate)? + p_copy.broadcast_mul(&(1.0 - m.gate)?)?)?;
    Ok(p.clamp(FLOOR, 1.0)?.log()?)
}

/// Ids of the extended space as the decoder's inputs: anything past the vocabulary is `<unk>`
/// (a copied word has no embedding of its own).
pub fn vocab_ids(ids: &Tensor, k_y: usize) -> Result<Tensor> {
    let unk = Tensor::full(nmt_data::UNK, ids.shape(), ids.device())?;
    Ok(ids.lt(k_y as u32)?.where_cond(ids, &unk)?)
}

/// The number of extended ids a batch's `src_ext (B, S)` uses past `K_y`.
pub fn extended_count(src_ext: &Tensor, k_y: usize) -> Result<usize> {
    let max = src_ext.to_dtype(DType::F64)?.max_all()?.to_scalar::<f64>()? as usize;
    Ok((max + 1).saturating_sub(k_y))
}
