//! A recurrent op's shape, shared by the CPU ops (`kernels/cpu/rnn_sequence.rs`, `cpu/birnn.rs`)
//! and their GPU twins (`kernels/gpu/rnn_sequence.rs`, `gpu/birnn.rs`): what a caller passes
//! ([`RnnSpec`]: the cell, the lengths, the recurrent-dropout mask) and the dimensions of one call
//! it is checked into ([`RnnDims`]). The cell's equations are `kernels/cpu/rnn_cell.rs`'s (Cho et
//! al. 2014 eq. 5–8, or the LSTM's); `G` is its gate width, `3H` for a GRU and `4H` for an LSTM.
use candle_core::{Result, Tensor};

use crate::config::{CellKind, Precision};

/// Dimensions and options of one GRU sequence op.
#[derive(Clone, Debug)]
pub struct RnnDims {
    pub batch: usize,
    pub len: usize,
    pub hidden: usize,
    pub reverse: bool,
    pub kind: CellKind,
    /// Each sentence's length, `1..=len`.
    pub lens: Vec<usize>,
    /// Recurrent-dropout mask `(batch, hidden)` (see [`RnnSpec`]).
    pub mask: Option<Vec<f32>>,
    /// Where this layer's `gi` is: position `(b, t)`'s `G` values start at
    /// `(b·len + t)·gi_stride + gi_off` (`gi_stride = G`; the bidirectional op reads each
    /// direction's half of its `(B, S, 2G)` input in place).
    pub gi_stride: usize,
    pub gi_off: usize,
    /// The precision of the backward pass's `dU` products (`cpu::engine::products`).
    pub products: Precision,
}

impl RnnDims {
    /// The gate width `G`.
    #[inline]
    pub(crate) fn g(&self) -> usize {
        self.kind.gates() * self.hidden
    }
}

/// How a recurrent op runs: the cell, each sentence's length `1..=S` (`B = lens.len()`) and
/// an optional recurrent-dropout mask `(B, H)` of `0` or `1/(1−p)` (`rnn_cell.rs`; `(2, B, H)`
/// for the bidirectional op, forward direction first).
#[derive(Clone, Copy, Debug)]
pub struct RnnSpec<'a> {
    pub kind: CellKind,
    pub lens: &'a [usize],
    pub state_mask: Option<&'a [f32]>,
    /// The precision of its large products (the model's `Backend::products`; the GPU twins'
    /// recurrences multiply in f32 whatever it says).
    pub products: Precision,
}

impl RnnSpec<'_> {
    /// The dimensions of an op over `gi` with `dirs · G` columns, after checking `gi`, the
    /// lengths and the mask; `weights_fit` is the caller's check of its other inputs.
    #[inline]
    pub(crate) fn dims(&self, op: &str, gi: &Tensor, hidden: usize, reverse: bool, dirs: usize, weights_fit: bool) -> Result<RnnDims> {
        let (batch, lens) = (self.lens.len(), self.lens);
        let width = self.kind.gates() * hidden * dirs;
        let len = gi.elem_count() / (batch * width).max(1);
        let ok = weights_fit
            && gi.elem_count() == batch * len * width
            && gi.dims().last() == Some(&width)
            && lens.iter().all(|&l| (1..=len).contains(&l))
            && self.state_mask.is_none_or(|m| m.len() == dirs * batch * hidden);
        if !ok {
            candle_core::bail!("{op}: gi {:?}, lens {lens:?}, the weights or the state mask do not fit", gi.dims());
        }
        let mask = self.state_mask.map(<[f32]>::to_vec);
        Ok(RnnDims {
            batch,
            len,
            hidden,
            reverse,
            kind: self.kind,
            lens: lens.to_vec(),
            mask,
            gi_stride: width,
            gi_off: 0,
            products: self.products,
        })
    }
}
