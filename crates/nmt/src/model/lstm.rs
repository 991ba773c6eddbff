//! The LSTM cell from composed candle ops: the reference twin of `kernels/cpu/lstm_cell.rs`
//! (Hochreiter & Schmidhuber 1997 with the forget gate of Gers et al. 2000; the lecture notes'
//! LSTM, docs/MODELS.md#lstm; Sutskever et al. 2014's cell):
//!
//! ```text
//! [i | f | g | o] = gi + (m ⊙ h) U + ghb        gi = W x + b, per sequence (Marian's layout)
//! i, f, o = σ(·),  g = tanh(·)
//! c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')
//! ```
//! A layer's state is `[h; c]`, `(batch, 2n)`, so that search and padding treat it as one row
//! (reordering beams, carrying a sentence's state through its padding); the layers above read
//! `h`, its first `n` columns.
use candle_core::{Tensor, D};

use super::params::{Init, ParamBuilder};
use crate::error::Result;

/// One step: `gi (batch, 4n)` the input term, `state (batch, 2n) = [h; c]`, `u (n, 4n)`, an
/// optional recurrent term `ghb` broadcastable to `(batch, 4n)` (RNNenc's `C c`) and
/// recurrent dropout's `(batch, n)` mask on `h` where it enters `U`. Returns `[h'; c']`.
pub fn lstm_step(gi: &Tensor, state: &Tensor, u: &Tensor, ghb: Option<&Tensor>, state_mask: Option<&Tensor>) -> Result<Tensor> {
    let n = u.dim(0)?;
    let h = state.narrow(D::Minus1, 0, n)?;
    let c = state.narrow(D::Minus1, n, n)?;
    let hu = match state_mask {
        Some(m) => (&h * m)?,
        // `h` is a view of `[h; c]`: row-strided, which candle's CUDA matmul refuses.
        None => h.contiguous()?,
    };
    let mut a = (gi + hu.matmul(u)?)?;
    if let Some(g) = ghb {
        a = a.broadcast_add(g)?;
    }
    let sig = |k: usize| -> Result<Tensor> { Ok(candle_nn::ops::sigmoid(&a.narrow(D::Minus1, k * n, n)?)?) };
    let (i, f, o) = (sig(0)?, sig(1)?, sig(3)?);
    let g = a.narrow(D::Minus1, 2 * n, n)?.tanh()?;
    let c_new = ((f * c)? + (i * g)?)?;
    let h_new = (o * c_new.tanh()?)?;
    Ok(Tensor::cat(&[h_new, c_new], D::Minus1)?)
}

/// One LSTM layer's weights. The input projection is the caller's, once per sequence.
#[derive(Clone, Debug)]
pub struct Lstm {
    /// `(in, 4n)`: `[W_i | W_f | W_g | W_o]`.
    pub(crate) w: Tensor,
    /// `(4n)`.
    pub(crate) b: Tensor,
    /// `(n, 4n)`: `[U_i | U_f | U_g | U_o]`, each block orthogonal at initialisation.
    pub(crate) u: Tensor,
    pub(crate) hidden: usize,
}

impl Lstm {
    pub fn new(input: usize, hidden: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(Lstm {
            w: pb.get("w", &[input, 4 * hidden], Init::Normal)?,
            b: pb.get("b", &[4 * hidden], Init::Zeros)?,
            u: pb.get("u", &[hidden, 4 * hidden], Init::OrthogonalBlocks)?,
            hidden,
        })
    }
}
