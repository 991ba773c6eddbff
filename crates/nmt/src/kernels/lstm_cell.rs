//! One LSTM step's row arithmetic, forward and backward (Hochreiter & Schmidhuber 1997, with
//! the forget gate of Gers et al. 2000; the lecture notes' LSTM, docs/MODELS.md#lstm). The
//! GEMMs around it, and padding and recurrent dropout, are shared with the GRU through
//! [`super::rnn_cell::CellKernel`]; this file is what differs.
//!
//! Gate blocks are ordered `[i | f | g | o]` (PyTorch's order); `U (H, 4H)`. Per row, with
//! `gi = W x + b (+ C c)` the input term and `hh = h U + ghb` the recurrent one:
//!
//! ```text
//! i = σ(gi_i + hh_i),  f = σ(gi_f + hh_f),  g = tanh(gi_g + hh_g),  o = σ(gi_o + hh_o)
//! c' = f ⊙ c + i ⊙ g
//! h' = o ⊙ tanh(c')
//! ```
//! The cell state `c` is the step's second state: the sequence ops keep it where the GRU's
//! paper form keeps `q = r ⊙ h` (one `(·, H)` row per step), and the backward pass carries
//! its gradient from step to step beside `h`'s. A decoder's `c_0` is zero; its `h_0` is the
//! bridge's, as for the GRU.
use super::gemm::Real;

/// The four gates of one unit `j` from the pre-activations `a = gi + hh` (`4H`).
#[inline(always)]
fn gates<T: Real>(g: &[T], hh: &[T], j: usize, h: usize) -> (T, T, T, T) {
    let i = (g[j] + hh[j]).sigmoid_fast();
    let f = (g[h + j] + hh[h + j]).sigmoid_fast();
    let gg = (g[2 * h + j] + hh[2 * h + j]).tanh_fast();
    let o = (g[3 * h + j] + hh[3 * h + j]).sigmoid_fast();
    (i, f, gg, o)
}

/// One row forward: input term `g (4H)`, recurrent term `hh (4H)`, previous cell state
/// `cp (H)` → the new cell state `c (H)` and hidden state `ht (H)`.
#[inline(always)]
pub(crate) fn update_row<T: Real>(g: &[T], hh: &[T], cp: &[T], c: &mut [T], ht: &mut [T]) {
    let h = ht.len();
    for j in 0..h {
        let (i, f, gg, o) = gates(g, hh, j, h);
        let cj = f * cp[j] + i * gg;
        c[j] = cj;
        ht[j] = o * cj.tanh_fast();
    }
}

/// One row backward. `dh (H)` is the whole gradient reaching `h'`, `dc (H)` on entry the
/// gradient reaching `c'` from later steps, on exit the gradient of `cp`. Writes the
/// pre-activations' gradient into `da (4H)` (the same for the input and the recurrent term).
#[inline(always)]
pub(crate) fn backward_row<T: Real>(g: &[T], hh: &[T], cp: &[T], dh: &[T], dc: &mut [T], da: &mut [T]) {
    let h = dh.len();
    for j in 0..h {
        let (i, f, gg, o) = gates(g, hh, j, h);
        let tc = (f * cp[j] + i * gg).tanh_fast();
        let dcj = dc[j] + dh[j] * o * (T::ONE - tc * tc);
        da[j] = dcj * gg * i * (T::ONE - i);
        da[h + j] = dcj * cp[j] * f * (T::ONE - f);
        da[2 * h + j] = dcj * i * (T::ONE - gg * gg);
        da[3 * h + j] = dh[j] * tc * o * (T::ONE - o);
        dc[j] = dcj * f;
    }
}
