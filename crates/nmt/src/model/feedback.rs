//! The gated-feedback stack (Chung et al. 2015, "Gated Feedback Recurrent Neural Networks",
//! §3, eq. 12–15; `model.stack = "gated-feedback"`): the decoder's layers above the first each
//! read **every** decoder layer's state at `t − 1`, each through a scalar global reset gate.
//! RNNenc's recurrent encoder runs the same stack over its first layer's outputs, from zero
//! states (`encoder.rs`); "decoder" below reads "stack" there.
//!
//! For upper layer `j` (2 ≤ j ≤ L), its input `x = x^j_t` (the layer below at `t`, after unit
//! dropout) and `h* = [h^1_{t−1}; …; h^L_{t−1}]` (every layer's output `h`, `(rows, L·n)`):
//!
//! ```text
//! g^{i→j} = σ(x w_g^{i→j} + h* u_g^{i→j})                      eq. 12; g (rows, L) = σ(x W_g + h* U_g)
//! GRU, paper form:  h~ = tanh(W x + Σ_i g^{i→j} (r ⊙ h^i) U^{i→j})                         eq. 15
//! GRU, reset-after: h~ = tanh(W x + b + r ⊙ (Σ_i g^{i→j} h^i U^{i→j} + b_h))
//! LSTM:             c~ = tanh(W_c x + Σ_i g^{i→j} h^i U_c^{i→j})                             eq. 14
//! ```
//! The other gates (`r`, `z`; `i`, `f`, `o`) read the layer's own state only, as in the paper.
//! `U^{j→j}` is the cell's own candidate block (`U`, or the LSTM's `U_g`), so with every
//! `g = 1` and the other blocks zero the layer is the plain cell. Recurrent dropout's mask
//! applies to the layer's own state where it enters `U`, as in a plain layer; the other
//! layers' states enter unmasked. The first layer (the source-conditioned decoder) keeps its
//! own recurrence: it is computed before the stack, so it takes no feedback (the paper's
//! stacks have no conditioned layer). The encoder's first layer stays plain too, so that one
//! stack and one kernel serve both (the paper gives its first layer feedback as well).
//!
//! Because layer `j` at `t` reads layers above it at `t − 1`, the stack runs step by step over
//! all its layers at once (not layer by layer over whole sequences as `upper.rs` does).
//!
//! The file holds the layer's forms: the composed one on candle ops ([`Feedback::step`],
//! [`FeedbackStack::run`]; autodiff, any device; the reference twin) and the host step that
//! search runs on `f32` slices ([`HostFeedback`], [`layer_step`]; no dropout). Its kernel
//! forms, for fused training and the host encoder, are in `feedback_fused.rs`.
//! `tests/gradcheck.rs`, `tests/fused_model.rs` and `tests/infer.rs` hold them to each other
//! and to finite differences.
//!
//! Shapes: `rows` sentences or hypotheses, `T` target positions, `n` hidden, `L` decoder
//! layers, a layer's state width `w` (`n`, or the LSTM's `[h; c]`, `2n`).
use candle_core::{Tensor, D};

use super::params::{Init, ParamBuilder};
use super::regularizer::LayerMasks;
use super::rnn::Rnn;
use crate::config::{CellKind, GruForm};
use crate::error::Result;
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::math::FastMath;
use crate::model::dense::{affine, host};

/// The feedback weights of one upper layer `j` of an `L`-layer decoder.
#[derive(Clone, Debug)]
pub struct Feedback {
    /// `(n, L)`: `w_g^{i→j}` for `i = 1…L`, read from the layer's input.
    pub(crate) w_g: Tensor,
    /// `(L·n, L)`: `u_g^{i→j}`, read from `h*`.
    pub(crate) u_g: Tensor,
    /// `((L−1)·n, n)`: the candidate's `U^{i→j}` for every other layer `i`, in layer order.
    pub(crate) u_other: Tensor,
    /// This layer's index among the sources `0…L−1` (`j − 1`).
    pub(crate) own: usize,
}

impl Feedback {
    /// Layer `own + 1` of a decoder of `layers` layers of `hidden` units.
    pub fn new(hidden: usize, layers: usize, own: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(Feedback {
            w_g: pb.get("w_g", &[hidden, layers], Init::Normal)?,
            u_g: pb.get("u_g", &[layers * hidden, layers], Init::Normal)?,
            u_other: pb.get("u_other", &[(layers - 1) * hidden, hidden], Init::Normal)?,
            own,
        })
    }

    /// One step of layer `rnn` with these feedback weights: `x (rows, n)` its input,
    /// `gi (rows, G) = x W + b`, `state (rows, w)` its own state, `sources` every decoder
    /// layer's output `h (rows, n)` at `t − 1` (its own included), `state_mask (rows, n)`.
    pub fn step(
        &self,
        rnn: &Rnn,
        x: &Tensor,
        gi: &Tensor,
        state: &Tensor,
        sources: &[Tensor],
        state_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let hstar = Tensor::cat(sources, D::Minus1)?;
        let g = candle_nn::ops::sigmoid(&(x.matmul(&self.w_g)? + hstar.matmul(&self.u_g)?)?)?;
        let gate = |i: usize| g.narrow(D::Minus1, i, 1);
        let g_own = gate(self.own)?;
        let n = rnn.hidden();
        let h = state.narrow(D::Minus1, 0, n)?;
        let hu = match state_mask {
            Some(m) => (&h * m)?,
            // `h` is a view of the state: row-strided, which candle's CUDA matmul refuses.
            None => h.contiguous()?,
        };
        // Σ_{i≠j} g^{i→j} (v_i) U^{i→j} as one matmul over the other layers' gated rows.
        let others = |reset: Option<&Tensor>| -> Result<Tensor> {
            let rows = (0..sources.len())
                .filter(|&i| i != self.own)
                .map(|i| {
                    let v = match reset {
                        Some(r) => (r * &sources[i])?,
                        None => sources[i].clone(),
                    };
                    Ok(v.broadcast_mul(&gate(i)?)?)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Tensor::cat(&rows, D::Minus1)?.matmul(&self.u_other)?)
        };
        match rnn {
            Rnn::Gru(c) => {
                let bias = |at: usize, len: usize| c.b_h.as_ref().map(|b| b.narrow(0, at, len)).transpose();
                let mut gh_rz = hu.matmul(&c.u_rz)?;
                if let Some(b) = bias(0, 2 * n)? {
                    gh_rz = gh_rz.broadcast_add(&b)?;
                }
                let rz = candle_nn::ops::sigmoid(&(gi.narrow(D::Minus1, 0, 2 * n)? + gh_rz)?)?;
                let (r, z) = (rz.narrow(D::Minus1, 0, n)?, rz.narrow(D::Minus1, n, n)?);
                let rec = match c.form {
                    GruForm::Paper => ((&r * &hu)?.matmul(&c.u)?.broadcast_mul(&g_own)? + others(Some(&r))?)?,
                    GruForm::ResetAfter => {
                        let mut sum = (hu.matmul(&c.u)?.broadcast_mul(&g_own)? + others(None)?)?;
                        if let Some(b) = bias(2 * n, n)? {
                            sum = sum.broadcast_add(&b)?;
                        }
                        (r * sum)?
                    }
                };
                let cand = (gi.narrow(D::Minus1, 2 * n, n)? + rec)?.tanh()?;
                Ok((&cand + (z * (h - &cand)?)?)?)
            }
            Rnn::Lstm(l) => {
                let a = (gi + hu.matmul(&l.u)?)?;
                let sig = |k: usize| -> Result<Tensor> { Ok(candle_nn::ops::sigmoid(&a.narrow(D::Minus1, k * n, n)?)?) };
                let (i, f, o) = (sig(0)?, sig(1)?, sig(3)?);
                // The candidate block again, its own recurrent term gated and the others added.
                // The candidate's column block of `U`, copied: a column view is row-strided,
                // which candle's CUDA matmul refuses.
                let own_rec = hu.matmul(&l.u.narrow(1, 2 * n, n)?.contiguous()?)?;
                let cand = ((gi.narrow(D::Minus1, 2 * n, n)? + own_rec.broadcast_mul(&g_own)?)? + others(None)?)?.tanh()?;
                let c_new = ((f * state.narrow(D::Minus1, n, n)?)? + (i * cand)?)?;
                let h_new = (o * c_new.tanh()?)?;
                Ok(Tensor::cat(&[h_new, c_new], D::Minus1)?)
            }
        }
    }
}

/// One upper layer's dropout masks at one step, as tensors: its input's `(rows, n)` and its
/// own state's `(rows, n)`.
#[derive(Clone, Default)]
struct StepMasks {
    input: Option<Tensor>,
    state: Option<Tensor>,
}

/// The decoder's upper layers with their feedback weights (borrowed from `UpperLayers`).
pub struct FeedbackStack<'a> {
    pub(crate) layers: &'a [Rnn],
    pub(crate) feedback: &'a [Feedback],
    /// A layer's output adds its input (`model.residual`).
    pub(crate) residual: bool,
}

impl FeedbackStack<'_> {
    /// One search step from `x`, the first layer's new output `(rows, n)`: `h1_prev` is its
    /// output at `t − 1`, `states` each upper layer's state. Returns the new states and the
    /// top output.
    pub fn step(&self, x: &Tensor, h1_prev: &Tensor, states: &[Tensor]) -> Result<(Vec<Tensor>, Tensor)> {
        self.step_masked(x, h1_prev, states, &[])
    }

    fn step_masked(&self, x: &Tensor, h1_prev: &Tensor, states: &[Tensor], masks: &[StepMasks]) -> Result<(Vec<Tensor>, Tensor)> {
        let mut sources = Vec::with_capacity(self.layers.len() + 1);
        sources.push(h1_prev.clone());
        for (rnn, st) in self.layers.iter().zip(states) {
            sources.push(rnn.output(st)?);
        }
        let none = StepMasks::default();
        let mut x = x.clone();
        let mut new = Vec::with_capacity(self.layers.len());
        for (k, ((rnn, fb), st)) in self.layers.iter().zip(self.feedback).zip(states).enumerate() {
            let mk = masks.get(k).unwrap_or(&none);
            let x_in = match &mk.input {
                Some(m) => (&x * m)?,
                // A time step's view of the input: row-strided, which candle's CUDA matmul refuses.
                None => x.contiguous()?,
            };
            let (w, b) = rnn.input_weights();
            let gi = x_in.matmul(w)?.broadcast_add(b)?;
            let s = fb.step(rnn, &x_in, &gi, st, &sources, mk.state.as_ref())?;
            let h = rnn.output(&s)?;
            x = if self.residual { (h + &x)? } else { h };
            new.push(s);
        }
        Ok((new, x))
    }

    /// Teacher-forced: the first layer's outputs `s1 (B, T, n)`, every layer starting from
    /// `h0 (B, n)`, each layer's dropout masks (`regularizer::stack_masks`) → the top outputs
    /// `(B, T, n)`.
    pub fn run(&self, s1: &Tensor, h0: &Tensor, masks: &[LayerMasks]) -> Result<Tensor> {
        let (b, t, n) = s1.dims3()?;
        let tensor = |m: &Option<Vec<f32>>, dims: &[usize]| -> Result<Option<Tensor>> {
            m.as_ref().map(|v| Ok(Tensor::from_vec(v.clone(), dims, s1.device())?.to_dtype(s1.dtype())?)).transpose()
        };
        let masks = masks
            .iter()
            .map(|mk| Ok(StepMasks { input: tensor(&mk.input, &[b, t, n])?, state: tensor(&mk.state, &[b, n])? }))
            .collect::<Result<Vec<_>>>()?;
        let mut states = self.layers.iter().map(|r| r.start(h0)).collect::<Result<Vec<_>>>()?;
        let mut h1_prev = h0.clone();
        let mut outs = Vec::with_capacity(t);
        for i in 0..t {
            let x = s1.narrow(1, i, 1)?.squeeze(1)?;
            let at_step = masks
                .iter()
                .map(|m| {
                    let input = m.input.as_ref().map(|x| x.narrow(1, i, 1)?.squeeze(1)).transpose()?;
                    Ok(StepMasks { input, state: m.state.clone() })
                })
                .collect::<Result<Vec<_>>>()?;
            let (new, top) = self.step_masked(&x, &h1_prev, &states, &at_step)?;
            states = new;
            outs.push(top);
            h1_prev = x;
        }
        Ok(Tensor::stack(&outs, 1)?)
    }
}

/// The host form: one upper layer's feedback weights, row-major `(in, out)`.
pub struct HostFeedback {
    /// `(n, L)`.
    pub(crate) w_g: Vec<f32>,
    /// `(L·n, L)`.
    pub(crate) u_g: Vec<f32>,
    /// `((L−1)·n, n)`: the other layers' candidate blocks.
    pub(crate) u_other: Vec<f32>,
    /// This layer's index among the sources (`j − 1`).
    pub(crate) own: usize,
}

impl HostFeedback {
    pub fn new(fb: &Feedback) -> Result<Self> {
        Ok(HostFeedback { w_g: host(&fb.w_g)?, u_g: host(&fb.u_g)?, u_other: host(&fb.u_other)?, own: fb.own })
    }
}

/// What one layer's step reads: `x (R, n)` its input, `sources` every decoder layer's output
/// at `t − 1` side by side `(R, L·n)`, `hp (R, n)` and `cp (R, n)` (the LSTM's cell; empty for
/// the GRU) its own state.
pub struct FeedbackIn<'a> {
    pub(crate) hidden: usize,
    pub(crate) x: &'a [f32],
    pub(crate) sources: &'a [f32],
    pub(crate) hp: &'a [f32],
    pub(crate) cp: &'a [f32],
}

/// An upper layer's cell weights in the kernels' layout (`rnn::HostRnn`'s): `W (n, G)`,
/// `b (G)`, `U (n, G)` (`[U_r | U_z | U]` or the LSTM's `[U_i | U_f | U_g | U_o]`) and the
/// recurrent bias `b_h (G)`.
pub struct HostCell<'a> {
    pub(crate) kind: CellKind,
    pub(crate) w: &'a [f32],
    pub(crate) b: &'a [f32],
    pub(crate) u: &'a [f32],
    pub(crate) bh: &'a [f32],
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

#[cfg(test)]
mod tests {
    use crate::config::{CellKind, GruForm, StackKind};
    use crate::model::encoder::Stack;
    use crate::model::twin_support::check_upper_step;

    /// A gated-feedback stack's host step (`layer_step`) against its composed step, every cell.
    #[test]
    fn host_feedback_stack_steps_as_the_composed_one() {
        for (i, kind) in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm].into_iter().enumerate() {
            check_upper_step(kind, Stack { layers: 3, residual: false, kind: StackKind::GatedFeedback }, 30 + i as u64);
        }
    }
}
