//! One GRU step's row arithmetic, forward and backward (Cho et al. 2014, eq. 5–8, in either
//! form of [`GruForm`]; the equations are in `rnn_cell.rs`'s doc, which holds the GEMMs,
//! padding and recurrent dropout around these rows). The training ops and the host search both
//! step with these functions, as `lstm_cell.rs` for the LSTM.
//!
//! Every operand is sliced to its `H` columns before a loop: indexed into the longer `3H`
//! rows (`g[2H + j]`), the bounds checks kept these loops scalar. `perf annotate` of an int8
//! beam search (`nmt bench --int8 --only beam5`, 2026-11-27) showed the search's forward row
//! in `vmulss`/`vaddss` at 9 % of the cycles, the training step's rows alike (`birnn::forward`,
//! `attn_decoder::forward`, `birnn::backward_dir`). Sliced, the forward rows run in 16 lanes,
//! with the same floats (the same operations per element, in the same order). The backward
//! row stayed scalar even sliced (it writes seven blocks split from two rows); it runs through
//! [`lanes`], which computes 16 units at a time in arrays on the stack (docs/PERF.md, "The
//! recurrent rows vectorised" and "The backward rows vectorised").
use crate::config::GruForm;
use crate::kernels::gemm::Real;
use crate::kernels::math::lanes;

/// The paper form's reset for one row: `q = σ(g_r + hh_r) ⊙ h`, with `g_r` the input term's
/// and `hh_r` the recurrent term's reset block (`H` each).
#[inline(always)]
pub(crate) fn reset_row<T: Real>(g_r: &[T], hh_r: &[T], hp: &[T], q: &mut [T]) {
    let h = q.len();
    let (g_r, hh_r, hp) = (&g_r[..h], &hh_r[..h], &hp[..h]);
    for j in 0..h {
        q[j] = (g_r[j] + hh_r[j]).sigmoid_fast() * hp[j];
    }
}

/// One row's new state from its pre-activations: `g = gi (3H)`, `hh_rz = h U_rz + ghb_rz (2H)`
/// and `hh_n (H)`, which is `q U_n + ghb_n` (paper) or `h U_n + ghb_n` (reset-after):
/// `h' = n + z ⊙ (h − n)`.
#[inline(always)]
pub(crate) fn update_row<T: Real>(form: GruForm, g: &[T], hh_rz: &[T], hh_n: &[T], hp: &[T], ht: &mut [T]) {
    let h = ht.len();
    let (g_r, g_z, g_n) = (&g[..h], &g[h..2 * h], &g[2 * h..3 * h]);
    let (hh_r, hh_z, hh_n, hp) = (&hh_rz[..h], &hh_rz[h..2 * h], &hh_n[..h], &hp[..h]);
    match form {
        GruForm::Paper => {
            for j in 0..h {
                let z = (g_z[j] + hh_z[j]).sigmoid_fast();
                let n = (g_n[j] + hh_n[j]).tanh_fast();
                ht[j] = n + z * (hp[j] - n);
            }
        }
        GruForm::ResetAfter => {
            for j in 0..h {
                let z = (g_z[j] + hh_z[j]).sigmoid_fast();
                let r = (g_r[j] + hh_r[j]).sigmoid_fast();
                let n = (g_n[j] + r * hh_n[j]).tanh_fast();
                ht[j] = n + z * (hp[j] - n);
            }
        }
    }
}

/// One row's backward through the gates, its pre-activations `gates = (g, hh)` (`3H` each,
/// `hh` as [`update_row`] read it) recomputed, for the gradient `dh (H)` reaching `h'`:
/// writes `dgi`'s and `dgh`'s `z` and `n` blocks (and, reset-after, their `r` blocks, which
/// the paper form fills later from `dq = dGH_n U_nᵀ`) and `carry = dh ⊙ z`, the part of
/// `h`'s gradient that skips `U`.
///
/// ```text
/// dpn = dh (1 − z)(1 − n²),  dpz = dh (h − n) z (1 − z)
/// reset-after: dpr = dpn (h U_n + ghb_n) r (1 − r),  dGH_n = dpn r;   paper: dGH_n = dpn
/// ```
#[inline(always)]
pub(crate) fn backward_row<T: Real>(form: GruForm, gates: (&[T], &[T]), hp: &[T], dh: &[T], dgi: &mut [T], dgh: &mut [T], carry: &mut [T]) {
    let h = dh.len();
    let (g, hh) = gates;
    let (g_r, g_z, g_n) = (&g[..h], &g[h..2 * h], &g[2 * h..3 * h]);
    let (hh_r, hh_z, hh_n) = (&hh[..h], &hh[h..2 * h], &hh[2 * h..3 * h]);
    let (dgi_r, dgi) = dgi[..3 * h].split_at_mut(h);
    let (dgi_z, dgi_n) = dgi.split_at_mut(h);
    let (dgh_r, dgh) = dgh[..3 * h].split_at_mut(h);
    let (dgh_z, dgh_n) = dgh.split_at_mut(h);
    let ins = [g_r, g_z, g_n, hh_r, hh_z, hh_n, hp, dh];
    match form {
        GruForm::Paper => lanes(
            ins,
            [dgi_z, dgh_z, dgi_n, dgh_n, carry],
            #[inline(always)]
            |[_, g_z, g_n, _, hh_z, hh_n, hp, d], _| {
                let z = (g_z + hh_z).sigmoid_fast();
                let n = (g_n + hh_n).tanh_fast();
                let dpn = d * (T::ONE - z) * (T::ONE - n * n);
                let dpz = d * (hp - n) * z * (T::ONE - z);
                [dpz, dpz, dpn, dpn, d * z]
            },
        ),
        GruForm::ResetAfter => lanes(
            ins,
            [dgi_r, dgh_r, dgi_z, dgh_z, dgi_n, dgh_n, carry],
            #[inline(always)]
            |[g_r, g_z, g_n, hh_r, hh_z, hh_n, hp, d], _| {
                let r = (g_r + hh_r).sigmoid_fast();
                let z = (g_z + hh_z).sigmoid_fast();
                let n = (g_n + r * hh_n).tanh_fast();
                let dpn = d * (T::ONE - z) * (T::ONE - n * n);
                let dpz = d * (hp - n) * z * (T::ONE - z);
                let dpr = dpn * hh_n * r * (T::ONE - r);
                [dpr, dpr, dpz, dpz, dpn, dpn * r, d * z]
            },
        ),
    }
}
