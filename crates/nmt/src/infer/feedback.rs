//! The gated-feedback stack's search step on host slices: `model/feedback.rs` is its composed
//! twin and holds the equations (Chung et al. 2015, eq. 12–15). Upper layer `j` reads its input
//! `x (R, n)`, its own state and every decoder layer's output at `t − 1`, `h* (R, L·n)`:
//! `g = σ(x W_g + h* U_g) (R, L)`, then the cell with the candidate's recurrent term
//! `Σ_i g_i · v_i U^{i→j}` (`v_i = r ⊙ h_i` for the paper's GRU, `h_i` otherwise; `U^{j→j}`
//! the cell's own candidate block; the reset-after GRU applies `r` to the sum and its bias).
//! No dropout: search only.
use super::dense::affine;
use crate::config::{CellKind, GruForm};
use crate::error::Result;
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::math::FastMath;
use crate::model::feedback::Feedback;

/// One upper layer's feedback weights, row-major `(in, out)`.
pub struct HostFeedback {
    /// `(n, L)`.
    pub w_g: Vec<f32>,
    /// `(L·n, L)`.
    pub u_g: Vec<f32>,
    /// `((L−1)·n, n)`: the other layers' candidate blocks.
    pub u_other: Vec<f32>,
    /// This layer's index among the sources (`j − 1`).
    pub own: usize,
}

impl HostFeedback {
    pub fn new(fb: &Feedback) -> Result<Self> {
        use super::dense::host;
        Ok(HostFeedback { w_g: host(&fb.w_g)?, u_g: host(&fb.u_g)?, u_other: host(&fb.u_other)?, own: fb.own })
    }
}

/// What one layer's step reads: `x (R, n)` its input, `sources` every decoder layer's output
/// at `t − 1` side by side `(R, L·n)`, `hp (R, n)` and `cp (R, n)` (the LSTM's cell; empty for
/// the GRU) its own state.
pub struct FeedbackIn<'a> {
    pub hidden: usize,
    pub x: &'a [f32],
    pub sources: &'a [f32],
    pub hp: &'a [f32],
    pub cp: &'a [f32],
}

/// An upper layer's cell weights in the kernels' layout (`weights::HostEncoder`'s): `W (n, G)`,
/// `b (G)`, `U (n, G)` (`[U_r | U_z | U]` or the LSTM's `[U_i | U_f | U_g | U_o]`) and the
/// recurrent bias `b_h (G)`.
pub struct HostCell<'a> {
    pub kind: CellKind,
    pub w: &'a [f32],
    pub b: &'a [f32],
    pub u: &'a [f32],
    pub bh: &'a [f32],
}

/// One step of upper layer `cell` with feedback `fb`: writes `h (R, n)` and, for the LSTM,
/// `c (R, n)`.
pub fn layer_step(cell: &HostCell<'_>, fb: &HostFeedback, at: &FeedbackIn<'_>, h: &mut [f32], c: &mut [f32], threads: usize) {
    let n = at.hidden;
    let r_n = at.x.len() / n.max(1);
    if r_n == 0 {
        return;
    }
    let layers = at.sources.len() / (r_n * n);
    let gw = cell.kind.gates() * n;
    let gi = affine(at.x, r_n, n, cell.w, cell.b, threads);
    // g = σ(x W_g + h* U_g), one scalar per source layer and row.
    let mut g = vec![0f32; r_n * layers];
    matmul(&mut g, 0, layers, Mat::new(at.x, r_n, n), Mat::new(&fb.w_g, n, layers), false, threads);
    matmul(&mut g, 0, layers, Mat::new(at.sources, r_n, layers * n), Mat::new(&fb.u_g, layers * n, layers), true, threads);
    g.iter_mut().for_each(|v| *v = v.sigmoid_fast());
    // The other layers' rows, each times its gate (and, for the paper's GRU, the reset gate).
    let others = |reset: Option<&[f32]>| -> Vec<f32> {
        let mut rows = Vec::with_capacity(r_n * (layers - 1) * n);
        for r in 0..r_n {
            for i in (0..layers).filter(|&i| i != fb.own) {
                let gi_r = g[r * layers + i];
                let src = &at.sources[(r * layers + i) * n..(r * layers + i + 1) * n];
                match reset {
                    Some(rr) => rows.extend(src.iter().zip(&rr[r * n..(r + 1) * n]).map(|(v, q)| gi_r * q * v)),
                    None => rows.extend(src.iter().map(|v| gi_r * v)),
                }
            }
        }
        let mut out = vec![0f32; r_n * n];
        matmul(&mut out, 0, n, Mat::new(&rows, r_n, (layers - 1) * n), Mat::new(&fb.u_other, (layers - 1) * n, n), false, threads);
        out
    };
    let own_gate = |r: usize| g[r * layers + fb.own];
    match cell.kind {
        CellKind::Gru(form) => {
            // r, z = σ(gi + h U_rz + b_h).
            let mut rz = fill_rows(&cell.bh[..2 * n], r_n);
            matmul(&mut rz, 0, 2 * n, Mat::new(at.hp, r_n, n), Mat::strided(cell.u, 0, n, 2 * n, gw), true, threads);
            for r in 0..r_n {
                for k in 0..2 * n {
                    rz[r * 2 * n + k] = (rz[r * 2 * n + k] + gi[r * gw + k]).sigmoid_fast();
                }
            }
            let reset: Vec<f32> = rz.chunks_exact(2 * n).flat_map(|row| row[..n].iter().copied()).collect();
            let u_c = Mat::strided(cell.u, 2 * n, n, n, gw);
            let mut own = vec![0f32; r_n * n];
            let rec: Vec<f32> = match form {
                GruForm::Paper => {
                    let rh: Vec<f32> = at.hp.iter().zip(&reset).map(|(v, q)| v * q).collect();
                    matmul(&mut own, 0, n, Mat::new(&rh, r_n, n), u_c, false, threads);
                    let oth = others(Some(&reset));
                    (0..r_n * n).map(|i| own_gate(i / n) * own[i] + oth[i]).collect()
                }
                GruForm::ResetAfter => {
                    matmul(&mut own, 0, n, Mat::new(at.hp, r_n, n), u_c, false, threads);
                    let oth = others(None);
                    (0..r_n * n).map(|i| reset[i] * (own_gate(i / n) * own[i] + oth[i] + cell.bh[2 * n + i % n])).collect()
                }
            };
            for r in 0..r_n {
                for k in 0..n {
                    let i = r * n + k;
                    let cand = (gi[r * gw + 2 * n + k] + rec[i]).tanh_fast();
                    let z = rz[r * 2 * n + n + k];
                    h[i] = cand + z * (at.hp[i] - cand);
                }
            }
        }
        CellKind::Lstm => {
            let mut a = gi.clone();
            matmul(&mut a, 0, gw, Mat::new(at.hp, r_n, n), Mat::new(cell.u, n, gw), true, threads);
            let oth = others(None);
            for r in 0..r_n {
                for k in 0..n {
                    let i = r * n + k;
                    let row = &a[r * gw..(r + 1) * gw];
                    let (ig, fg, og) = (row[k].sigmoid_fast(), row[n + k].sigmoid_fast(), row[3 * n + k].sigmoid_fast());
                    // The candidate's own recurrent term gated, the others added.
                    let own = row[2 * n + k] - gi[r * gw + 2 * n + k];
                    let cand = (gi[r * gw + 2 * n + k] + own_gate(r) * own + oth[i]).tanh_fast();
                    c[i] = fg * at.cp[i] + ig * cand;
                    h[i] = og * c[i].tanh_fast();
                }
            }
        }
    }
}
