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
use crate::kernels::gemm::Real;
use crate::kernels::math::lanes;

/// The four `H` blocks `[i | f | g | o]` of a `4H` row. The loops below index these, not the
/// whole row: indexed at `g[3H + j]`, the bounds checks kept them scalar (as the GRU's rows,
/// `gru_cell.rs`). Sliced, the forward row runs in 16 lanes with the same floats; the backward
/// row, writing five blocks, runs through [`lanes`] (scalar until then, `perf annotate`).
#[inline(always)]
fn blocks<T>(x: &[T], h: usize) -> [&[T]; 4] {
    [&x[..h], &x[h..2 * h], &x[2 * h..3 * h], &x[3 * h..4 * h]]
}

/// The four gates of one unit `j` from the pre-activations `a = gi + hh` (`4H`, in blocks).
#[inline(always)]
fn gates<T: Real>(g: &[&[T]; 4], hh: &[&[T]; 4], j: usize) -> (T, T, T, T) {
    activate([g[0][j] + hh[0][j], g[1][j] + hh[1][j], g[2][j] + hh[2][j], g[3][j] + hh[3][j]])
}

/// The gates `(i, f, g, o)` of one unit from its four pre-activations.
#[inline(always)]
fn activate<T: Real>([a_i, a_f, a_g, a_o]: [T; 4]) -> (T, T, T, T) {
    (a_i.sigmoid_fast(), a_f.sigmoid_fast(), a_g.tanh_fast(), a_o.sigmoid_fast())
}

/// One row forward: input term `g (4H)`, recurrent term `hh (4H)`, previous cell state
/// `cp (H)` → the new cell state `c (H)` and hidden state `ht (H)`.
#[inline(always)]
pub(crate) fn update_row<T: Real>(g: &[T], hh: &[T], cp: &[T], c: &mut [T], ht: &mut [T]) {
    let h = ht.len();
    let (g, hh, cp, c) = (blocks(g, h), blocks(hh, h), &cp[..h], &mut c[..h]);
    for j in 0..h {
        let (i, f, gg, o) = gates(&g, &hh, j);
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
    let (g, hh) = (blocks(g, h), blocks(hh, h));
    let (da_i, da) = da[..4 * h].split_at_mut(h);
    let (da_f, da) = da.split_at_mut(h);
    let (da_g, da_o) = da.split_at_mut(h);
    let ins = [g[0], g[1], g[2], g[3], hh[0], hh[1], hh[2], hh[3], cp, dh];
    // `dc` is read (from later steps) and written (for `cp`) in place: the last output row.
    lanes(
        ins,
        [da_i, da_f, da_g, da_o, dc],
        #[inline(always)]
        |[g_i, g_f, g_g, g_o, hh_i, hh_f, hh_g, hh_o, cp, dh], [.., dc]| {
            let (i, f, gg, o) = activate([g_i + hh_i, g_f + hh_f, g_g + hh_g, g_o + hh_o]);
            let tc = (f * cp + i * gg).tanh_fast();
            let dcj = dc + dh * o * (T::ONE - tc * tc);
            [dcj * gg * i * (T::ONE - i), dcj * cp * f * (T::ONE - f), dcj * i * (T::ONE - gg * gg), dh * tc * o * (T::ONE - o), dcj * f]
        },
    );
}
