//! Layer normalisation of a product's rows on a [`Launch`] (Ba et al. 2016, eq. 4, in Marian's
//! `s2s` places: `model/layer_norm.rs`; the equations are `kernels::cpu::norm_rows`'s): the GPU twin
//! of the normalisations inside the fused CPU loops (`kernels::cpu::rnn_cell`'s normalised `h U`,
//! `kernels::cpu::conditional`'s `s' W_a` and `c W_c`). `y = LN(a)·γ + β`, the rows of `y` holding
//! the shift `β` (the product's bias) on entry.
//!
//! Where the CPU recomputes a product in its backward pass, the GPU keeps it: a normalised
//! product is written raw into rows `a` of a buffer of its own (laid out as the rows it feeds),
//! and the backward pass reads them. It writes the product's gradient `da` and `dy ⊙ x̂`
//! (`dyx`), which the caller sums over all rows into the gain's gradient (the shift's is the
//! sum of `dy`, as without normalisation). One thread per row (`recurrence.cu`).
use candle_core::Result;

use super::args::{self, LnBwd, LnFwd};
use super::launch::{Addr, Gemm, Launch, View};

/// `B` rows at `.0` with leading dimension `.1` (`gru_cell.rs`'s `Rows`, which imports this file).
type Rows = (Addr, i64);

fn view(r: Rows) -> View {
    View::new(r.0, r.1 as usize)
}

/// `y += x w` for `x (m, k)`, `w (k, n)`; with layer normalisation (`gamma`, `γ (n)`, not
/// [`Addr::NULL`]) `y += LN(x w)·γ`, the raw product written into the rows `raw` first.
pub(super) fn product<L: Launch>(
    l: &L,
    (m, n, k): (usize, usize, usize),
    (x, w): (View, View),
    gamma: Addr,
    raw: Rows,
    y: Rows,
) -> Result<()> {
    match gamma {
        Addr::NULL => l.gemm(Gemm { m, n, k, a: x, b: w, c: view(y), accumulate: true }),
        gamma => {
            l.gemm(Gemm { m, n, k, a: x, b: w, c: view(raw), accumulate: false })?;
            forward(l, (m, n), gamma, raw, y)
        }
    }
}

/// The gradient of what [`product`] multiplied, from `dy` (the gradient of `y`, `rows ×
/// width`): `dy` itself, or with layer normalisation the raw product's, written into `da`
/// (and `dy ⊙ x̂` into `dyx`).
pub(super) fn product_grad<L: Launch>(
    l: &L,
    shape: (usize, usize),
    gamma: Addr,
    raw: Rows,
    dy: Rows,
    (da, dyx): (Rows, Rows),
) -> Result<Rows> {
    match gamma {
        Addr::NULL => Ok(dy),
        gamma => {
            backward(l, shape, gamma, raw, dy, (da, dyx))?;
            Ok(da)
        }
    }
}

/// `y += LN(a)·γ` for `rows` rows of `width` values; `gamma` is `γ (width)`.
fn forward<L: Launch>(l: &L, (rows, width): (usize, usize), gamma: Addr, a: Rows, y: Rows) -> Result<()> {
    let (n, width) = (rows as i64, width as i64);
    l.launch(&args::LN_FWD, rows, LnFwd { a: a.0, a_ld: a.1, gamma, y: y.0, y_ld: y.1, rows: n, width })
}

/// From `dy`, the gradient of `y`: the gradient of the raw product `a` into `da`, and `dy ⊙
/// x̂` into `dyx`.
fn backward<L: Launch>(l: &L, (rows, width): (usize, usize), gamma: Addr, a: Rows, dy: Rows, (da, dyx): (Rows, Rows)) -> Result<()> {
    let (n, width) = (rows as i64, width as i64);
    let p = LnBwd { a: a.0, a_ld: a.1, gamma, dy: dy.0, dy_ld: dy.1, da: da.0, da_ld: da.1, dyx: dyx.0, dyx_ld: dyx.1, rows: n, width };
    l.launch(&args::LN_BWD, rows, p)
}
