//! The attention decoder's shape, shared by its CPU op (`kernels/cpu/attention_op.rs`, the loop
//! in `cpu/bahdanau.rs` and `cpu/conditional.rs`) and its GPU twin (`kernels/gpu/attention_op.rs`):
//! the dimensions of one call and the layout of the packed weights `w` both read. Bahdanau et al.
//! (2014), appendix A.2.2; the conditional GRU of Sennrich et al. (2017); the summary `p` that
//! `s_0 = tanh(p W_s + b_s)` starts from (`start_pool.rs` on either device).
use crate::config::{CellKind, OutputState, Precision, StartState};

/// The width `P` of the summary `p` of annotations of width `c`: `←h_1` or `→h_S` (`c / 2`),
/// or their mean over the positions (`c`).
#[inline]
pub fn summary_width(kind: StartState, c: usize) -> usize {
    match kind {
        StartState::FirstBackward | StartState::LastForward => c / 2,
        StartState::Mean => c,
    }
}

/// Dimensions of the attention decoder op.
#[derive(Clone, Debug)]
pub struct AttnDims {
    pub batch: usize,
    pub tgt_len: usize,
    pub src_len: usize,
    pub hidden: usize,
    pub ctx: usize,
    pub att: usize,
    /// Source length of each sentence, `<= src_len`.
    pub lens: Vec<usize>,
    /// The decoder's cell (`rnn_cell.rs`); `b_h` is zero for the paper's GRU and the LSTM.
    pub kind: CellKind,
    /// Which state each output row carries: `s_i`, or `s_{i-1}` (RNNsearch's deep output).
    pub output: OutputState,
    /// Recurrent dropout on `s_{i-1}` where it enters `U` (`rnn_cell.rs`): a mask `(B, H)`
    /// of `0` or `1/(1−p)`, the same at every step. The attention reads the undropped state.
    /// (The conditional GRU: where `s_{i-1}` enters its first cell's `U₁`.)
    pub state_mask: Option<Vec<f32>>,
    /// The conditional GRU (`conditional.rs`) instead of Bahdanau's step: its first cell's
    /// `U₁`, `b_h1` and the second cell's input bias `b₂` join the packed weights.
    pub conditional: bool,
    /// What `s_0` summarises of the annotations (`start_pool.rs`; `W_s` is `(P, H)`).
    pub start: StartState,
    /// Layer normalisation (the conditional GRU only, `model/layer_norm.rs`): its gains join
    /// the packed weights ([`WOff`]) and `b_a` moves from the query to the keys.
    pub norm: bool,
    /// The precision of the CPU op's large products: the keys `U_a h_j` and the backward
    /// pass's `dW_a`, `dW_c`, `dU` (`cpu::engine::products`; the model's `Backend::products`).
    /// The GPU twin multiplies in f32 whatever it says.
    pub products: Precision,
}

/// Offsets of the parameters inside the packed `w`.
#[derive(Clone, Copy)]
pub(crate) struct WOff {
    pub wa: usize,
    pub ba: usize,
    pub va: usize,
    pub wc: usize,
    pub u: usize,
    pub bh: usize,
    /// The conditional GRU's `U₁ (H, G)`, `b_h1 (G)`, `b₂ (G)` (empty for Bahdanau's).
    pub u1: usize,
    pub bh1: usize,
    pub b2: usize,
    /// Layer normalisation's gains on the loop's products (empty without it): `γ (G)` on
    /// `s U₁`, on `c W_c`, on `s' U₂`, and `γ_w (A)` on `s' W_a`.
    pub g1h: usize,
    pub g2x: usize,
    pub g2h: usize,
    pub gw: usize,
    /// The loop's own weights end here; the prologue's `U_a`, `W_s`, `b_s` follow, then with
    /// layer normalisation `γ_u (A)` on `h U_a` and `γ_s (H)` on `p W_s`.
    pub end: usize,
    pub ua: usize,
    pub ws: usize,
    pub bs: usize,
    pub gu: usize,
    pub gs: usize,
    pub total: usize,
}

impl AttnDims {
    /// The cell's gate width `G`.
    #[inline]
    pub(crate) fn g(&self) -> usize {
        self.kind.gates() * self.hidden
    }

    /// Length of the op's packed weights `w` (`attention_op.rs`).
    #[inline]
    pub fn weights_len(&self) -> usize {
        self.woff().total
    }

    #[inline]
    pub(crate) fn woff(&self) -> WOff {
        let (h, c, a, g) = (self.hidden, self.ctx, self.att, self.g());
        let ba = h * a;
        let va = ba + a;
        let wc = va + a;
        let u = wc + c * g;
        let bh = u + h * g;
        let u1 = bh + g;
        let (bh1, b2, g1h) = match self.conditional {
            true => (u1 + h * g, u1 + h * g + g, u1 + h * g + 2 * g),
            false => (u1, u1, u1),
        };
        let (ng, na, nh) = match self.norm {
            true => (g, a, h),
            false => (0, 0, 0),
        };
        let (g2x, g2h, gw) = (g1h + ng, g1h + 2 * ng, g1h + 3 * ng);
        let end = gw + na;
        let ws = end + c * a;
        let bs = ws + self.start_width() * h;
        let (gu, gs) = (bs + h, bs + h + na);
        WOff { wa: 0, ba, va, wc, u, bh, u1, bh1, b2, g1h, g2x, g2h, gw, end, ua: end, ws, bs, gu, gs, total: gs + nh }
    }
    /// The width `P` of `s_0`'s summary `p`: `H` for `←h_1` (the columns `[C − H, C)` of
    /// position 0), else [`summary_width`].
    #[inline]
    pub(crate) fn start_width(&self) -> usize {
        match self.start {
            StartState::FirstBackward => self.hidden,
            kind => summary_width(kind, self.ctx),
        }
    }
    #[inline]
    pub(crate) fn out_w(&self) -> usize {
        self.hidden + self.ctx
    }
    #[inline]
    pub(crate) fn enc_w(&self) -> usize {
        self.ctx + self.att
    }
}
