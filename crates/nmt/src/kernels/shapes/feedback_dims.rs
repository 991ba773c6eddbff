//! The gated-feedback stack's shape (Chung et al. 2015 eq. 12–15; `model/feedback.rs`), shared
//! by its CPU op (`kernels/cpu/feedback_op.rs`) and its GPU twin (`kernels/gpu/feedback_op.rs`):
//! what a caller passes ([`FeedbackSpec`], with each upper layer's [`LayerDropout`]), the
//! dimensions of one call ([`FeedbackDims`]) and the layout of one upper layer's weights in the
//! flat parameter vector ([`LayerOffsets`]), which both devices read.
use candle_core::Result;

use crate::config::{CellKind, GruForm};

/// An upper layer's dropout masks: its input's `(B, T, n)` and its state's `(B, n)`, each
/// `0` or `1/(1−p)` (`model/regularizer.rs`), or none.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerDropout<'a> {
    pub input: Option<&'a [f32]>,
    pub state: Option<&'a [f32]>,
}

/// How the stack runs: its cell, the decoder's layer count `L` (the first layer included),
/// residual connections (`o = h + x`), and each upper layer's masks.
#[derive(Clone, Debug)]
pub struct FeedbackSpec<'a> {
    pub kind: CellKind,
    pub layers: usize,
    pub residual: bool,
    pub dropout: &'a [LayerDropout<'a>],
}

/// The number of weights of one upper layer in the flat parameter vector.
#[inline]
pub fn param_len(kind: CellKind, hidden: usize, layers: usize) -> usize {
    LayerOffsets::new(kind, hidden, layers).len
}

/// A call's [`FeedbackDims`] for inputs of `(B, T, n)` and `params` weights, if they fit the spec.
#[inline]
pub(crate) fn dims((batch, len, hidden): (usize, usize, usize), params: usize, spec: &FeedbackSpec<'_>) -> Result<FeedbackDims> {
    let ups = spec.layers.saturating_sub(1);
    let fits = ups >= 1
        && spec.dropout.len() == ups
        && params == ups * param_len(spec.kind, hidden, spec.layers)
        && spec
            .dropout
            .iter()
            .all(|m| m.input.is_none_or(|v| v.len() == batch * len * hidden) && m.state.is_none_or(|v| v.len() == batch * hidden));
    if !fits {
        candle_core::bail!(
            "gated-feedback stack: {params} weights, {} layers or the masks do not fit ({batch}, {len}, {hidden})",
            spec.layers
        );
    }
    Ok(FeedbackDims {
        batch,
        len,
        hidden,
        layers: spec.layers,
        kind: spec.kind,
        residual: spec.residual,
        input_masks: spec.dropout.iter().map(|m| m.input.map(<[f32]>::to_vec)).collect(),
        state_masks: spec.dropout.iter().map(|m| m.state.map(<[f32]>::to_vec)).collect(),
    })
}

/// The dimensions of one call, with the masks in `f32` (converted per call in the kernel).
#[derive(Clone, Debug)]
pub struct FeedbackDims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub layers: usize,
    pub kind: CellKind,
    pub residual: bool,
    pub input_masks: Vec<Option<Vec<f32>>>,
    pub state_masks: Vec<Option<Vec<f32>>>,
}

impl FeedbackDims {
    #[inline]
    pub fn gates(&self) -> usize {
        self.kind.gates() * self.hidden
    }
    #[inline]
    pub fn uppers(&self) -> usize {
        self.layers - 1
    }
    #[inline]
    pub fn offsets(&self) -> LayerOffsets {
        LayerOffsets::new(self.kind, self.hidden, self.layers)
    }
    /// `ρ'` applies (the paper's GRU resets the sources before `U`).
    #[inline]
    pub fn reset_before(&self) -> bool {
        self.kind == CellKind::Gru(GruForm::Paper)
    }
    /// `ρ` applies (the reset-after GRU resets the recurrent sum).
    #[inline]
    pub fn reset_after(&self) -> bool {
        self.kind == CellKind::Gru(GruForm::ResetAfter)
    }
}

/// Where each weight of one upper layer starts in its block of the flat parameter vector.
#[derive(Clone, Copy, Debug)]
pub struct LayerOffsets {
    /// `W (n, G)`, `b (G)`, `U (n, G)` (`[U_r | U_z | U_n]` or `[U_i | U_f | U_g | U_o]`), `b_h (G)`.
    pub w: usize,
    pub b: usize,
    pub u: usize,
    pub bh: usize,
    /// `w_g (n, L)`, `u_g (L·n, L)`, `u_other ((L−1)·n, n)`.
    pub wg: usize,
    pub ug: usize,
    pub uo: usize,
    /// The block's length (`feedback::param_len`).
    pub len: usize,
}

impl LayerOffsets {
    #[inline]
    pub fn new(kind: CellKind, hidden: usize, layers: usize) -> Self {
        let (n, l, g) = (hidden, layers, kind.gates() * hidden);
        let (w, b, u, bh) = (0, n * g, n * g + g, 2 * n * g + g);
        let wg = bh + g;
        let ug = wg + n * l;
        let uo = ug + l * n * l;
        LayerOffsets { w, b, u, bh, wg, ug, uo, len: uo + (l - 1) * n * n }
    }
}
