//! Deep output with one maxout layer (RNNenc appendix A; RNNsearch appendix A.2.2):
//!
//! ```text
//! t~ = O_h s + O_y E y_{i-1} + O_c c + b      (2l)
//! t_k = max(t~_{2k-1}, t~_{2k})                 (l)
//! p(y_i | …) = softmax(G t + b_G)               (K_y)
//! ```
//! It runs on all target steps of a batch at once in training: `(batch·tgt_len, ·)` rows.
use candle_core::{Tensor, D};

use super::params::{Init, ParamBuilder};
use super::regularizer::times_mask;
use crate::error::Result;
use crate::infer::dense::host;
use crate::kernels::proj_nll::{self, ProjWeight};
use crate::kernels::projection::Projection;
use crate::kernels::{deep_output, linear, maxout};

/// Sizes of the deep output: decoder state `n`, embedding `m`, context, maxout units `l`, `K_y`.
#[derive(Clone, Copy, Debug)]
pub struct OutputDims {
    pub state: usize,
    pub emb: usize,
    pub ctx: usize,
    pub maxout: usize,
    pub vocab: usize,
}

#[derive(Clone, Debug)]
pub struct DeepOutput {
    /// `(n, 2l)`, `(m, 2l)`, `(ctx, 2l)`, bias `(2l)`.
    pub o_h: Tensor,
    pub o_y: Tensor,
    pub o_c: Tensor,
    pub b: Tensor,
    /// `(l, K_y)`, bias `(K_y)`. With tied embeddings `G` is the target embedding's
    /// transpose `Eᵀ` (a view, not a parameter of its own).
    pub g: Tensor,
    pub b_g: Tensor,
    pub maxout: usize,
    /// The tied target embedding `E (K_y, l)` itself (`g` is its transpose).
    tied: Option<Tensor>,
}

impl DeepOutput {
    /// `tied`: the target embedding `E (K_y, l)` to use as `Gᵀ` instead of a separate `G`.
    pub fn new(d: OutputDims, tied: Option<&Tensor>, pb: &ParamBuilder) -> Result<Self> {
        let OutputDims { state, emb, ctx, maxout, vocab } = d;
        // Created in field order: a seed gives the same model as before `tied` existed.
        let o_h = pb.get("o_h", &[state, 2 * maxout], Init::Normal)?;
        let o_y = pb.get("o_y", &[emb, 2 * maxout], Init::Normal)?;
        let o_c = pb.get("o_c", &[ctx, 2 * maxout], Init::Normal)?;
        let b = pb.get("b", &[2 * maxout], Init::Zeros)?;
        let g = match tied {
            Some(e) => e.t()?,
            None => pb.get("g", &[maxout, vocab], Init::Normal)?,
        };
        let b_g = pb.get("b_g", &[vocab], Init::Zeros)?;
        Ok(DeepOutput { o_h, o_y, o_c, b, g, b_g, maxout, tied: tied.cloned() })
    }

    /// `G` as the fused projection reads it: `G (l, K_y)`, or `E (K_y, l)` itself when tied.
    pub fn projection(&self) -> ProjWeight<'_> {
        match &self.tied {
            Some(e) => ProjWeight::Vk(e),
            None => ProjWeight::Kv(&self.g),
        }
    }

    /// `O_c c`: `(rows, ctx)` → `(rows, 2l)`; for RNNenc done once per sentence.
    pub fn project_context(&self, ctx: &Tensor) -> Result<Tensor> {
        Ok(ctx.matmul(&self.o_c)?)
    }

    /// Maxout hidden layer `t`: `state (rows, n)`, `emb (rows, m)`, `ctx_proj` from
    /// [`DeepOutput::project_context`] broadcastable to `(rows, 2l)` → `(rows, l)`.
    pub fn hidden(&self, state: &Tensor, emb: &Tensor, ctx_proj: &Tensor) -> Result<Tensor> {
        let pre = (state.matmul(&self.o_h)? + emb.matmul(&self.o_y)?)?.broadcast_add(ctx_proj)?.broadcast_add(&self.b)?;
        let rows = pre.dim(0)?;
        Ok(pre.reshape((rows, self.maxout, 2))?.max(D::Minus1)?)
    }

    /// The fused form of [`Self::hidden`] for RNNsearch (`kernels::deep_output`, one op):
    /// `state_ctx (rows, n + ctx)` `[s; c]` side by side, `emb (rows, m)`, maxout dropout's
    /// mask → `t (rows, l)`.
    pub fn hidden_fused(&self, state_ctx: &Tensor, emb: &Tensor, mask: Option<&[f32]>) -> Result<Tensor> {
        let wb = Tensor::cat(&[&self.o_h, &self.o_c, &self.o_y, &self.b.unsqueeze(0)?], 0)?;
        Ok(deep_output::deep_output(state_ctx, emb, &wb, mask)?)
    }

    /// The fused form of [`Self::hidden`] for RNNenc, whose context is one per sentence:
    /// `states (B, T, n)`, `emb (B·T, m)`, the summary `c (B, ctx)`, maxout dropout's mask →
    /// `t (B·T, l)`.
    pub fn hidden_fused_summary(&self, states: &Tensor, emb: &Tensor, c: &Tensor, mask: Option<Vec<f32>>) -> Result<Tensor> {
        let (b, t, n) = states.dims3()?;
        let m = emb.dim(1)?;
        let rows = Tensor::cat(&[states, &emb.reshape((b, t, m))?], 2)?.reshape((b * t, n + m))?;
        let pre = linear::linear(&rows, &Tensor::cat(&[&self.o_h, &self.o_y], 0)?, &self.b)?;
        let ctx = self.project_context(c)?.unsqueeze(1)?; // (B, 1, 2l)
        let l2 = 2 * self.maxout;
        let hidden = maxout::maxout_pairs(&pre.reshape((b, t, l2))?.broadcast_add(&ctx)?.reshape((b * t, l2))?)?;
        match mask {
            Some(mk) => times_mask(&hidden, mk),
            None => Ok(hidden),
        }
    }

    /// The fused output projection, log-softmax and NLL (`kernels::proj_nll`): `t (rows, l)`,
    /// `targets` one per row, label smoothing `eps` → `−log p(y) (rows)`.
    pub fn nll_fused(&self, t: &Tensor, targets: &[u32], eps: f64) -> Result<Tensor> {
        Ok(proj_nll::proj_nll(t, self.projection(), &self.b_g, targets, eps)?)
    }

    /// Unnormalised scores `G t + b_G`: `(rows, l)` → `(rows, K_y)`.
    pub fn logits(&self, t: &Tensor) -> Result<Tensor> {
        Ok(t.matmul(&self.g)?.broadcast_add(&self.b_g)?)
    }
}

/// The host form of [`DeepOutput`]: `O_h (n, 2l)`, `O_y (m, 2l)`, `O_c (ctx, 2l)`, `b (2l)`,
/// and `G`, `b_G` as a column-major [`Projection`].
pub struct HostOutput {
    pub o_h: Vec<f32>,
    pub o_y: Vec<f32>,
    pub o_c: Vec<f32>,
    pub b: Vec<f32>,
    pub proj: Projection,
}

impl HostOutput {
    /// `G` comes from the layer: with tied embeddings it is the view `Eᵀ`.
    pub fn new(o: &DeepOutput) -> Result<Self> {
        Ok(HostOutput {
            o_h: host(&o.o_h)?,
            o_y: host(&o.o_y)?,
            o_c: host(&o.o_c)?,
            b: host(&o.b)?,
            proj: Projection::new(&host(&o.g)?, &host(&o.b_g)?),
        })
    }
}
