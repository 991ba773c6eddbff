//! The gated recurrent unit of Cho et al. 2014 (RNNenc §2.3), reset gate applied before `U`:
//!
//! ```text
//! r  = σ(W_r x + U_r h_prev + b_r)
//! z  = σ(W_z x + U_z h_prev + b_z)
//! h~ = tanh(W x + U (r ⊙ h_prev) + b)
//! h  = z ⊙ h_prev + (1 − z) ⊙ h~
//! ```
//! (RNNsearch writes `(1 − z) ⊙ h_prev + z ⊙ h~`: the same cell with `z` relabelled.)
//! `model.gru = "reset-after"` selects cuDNN's cell instead, `h~ = tanh(W x + b + r ⊙ (U h + b_h))`.
//! With `model.layer_norm` (reset-after only) the two products are normalised before their
//! biases, as Marian's GRU does: `LN(x W)·γ_x + b` and `LN(h U)·γ_h + b_h`, each over its
//! whole `3n` row (`layer_norm.rs`).
//!
//! Speed by shape (Marian): the input projection `W x + b` of a whole sequence is one matmul,
//! done by the caller (`Rnn::project`, `rnn.rs`, which also runs a layer over a sequence); the per-step work is `h U_rz`, `(r ⊙ h) U` and
//! element-wise gate arithmetic. Matrices are stored `(in, out)` so a row-vector batch multiplies
//! on the left; gate blocks are ordered `[r | z | candidate]`.
use candle_core::{Tensor, D};

use super::layer_norm::{layer_norm, maybe_norm};
use super::params::{Init, ParamBuilder};
use crate::config::GruForm;
use crate::error::{Error, Result};

/// A GRU's layer-normalisation gains: `γ_x (3n)` on `x W`, `γ_h (3n)` on `h U`.
#[derive(Clone, Debug)]
pub struct GruNorm {
    pub(crate) x: Tensor,
    pub(crate) h: Tensor,
}

/// One GRU layer's weights.
#[derive(Clone, Debug)]
pub struct Gru {
    /// `(in, 3n)`: `[W_r | W_z | W]`.
    pub(crate) w: Tensor,
    /// `(3n)`.
    pub(crate) b: Tensor,
    /// `(n, 2n)`: `[U_r | U_z]`.
    pub(crate) u_rz: Tensor,
    /// `(n, n)`: `U` of the candidate.
    pub(crate) u: Tensor,
    /// `(3n)`: the reset-after cell's recurrent bias `b_h` (none for the paper's cell).
    pub(crate) b_h: Option<Tensor>,
    pub(crate) form: GruForm,
    pub(crate) hidden: usize,
    /// Layer normalisation's gains (`ln_x`, `ln_h`), when the model has it.
    pub(crate) norm: Option<GruNorm>,
}

impl Gru {
    /// `norm`: with layer normalisation (the reset-after form only).
    pub fn new(input: usize, hidden: usize, form: GruForm, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        if norm && form != GruForm::ResetAfter {
            return Err(Error::Config("a layer-normalised GRU is the reset-after form (model.gru = \"reset-after\")".into()));
        }
        Ok(Gru {
            w: pb.get("w", &[input, 3 * hidden], Init::Normal)?,
            b: pb.get("b", &[3 * hidden], Init::Zeros)?,
            u_rz: pb.get("u_rz", &[hidden, 2 * hidden], Init::OrthogonalBlocks)?,
            u: pb.get("u", &[hidden, hidden], Init::OrthogonalBlocks)?,
            b_h: match form {
                GruForm::Paper => None,
                GruForm::ResetAfter => Some(pb.get("b_h", &[3 * hidden], Init::Zeros)?),
            },
            form,
            hidden,
            norm: match norm {
                true => Some(GruNorm { x: pb.get("ln_x", &[3 * hidden], Init::Ones)?, h: pb.get("ln_h", &[3 * hidden], Init::Ones)? }),
                false => None,
            },
        })
    }

    /// Input projections of a whole batch of sequences, `LN(x W)·γ_x + b` with layer
    /// normalisation: `(batch, len, in)` → `(batch, len, 3n)`.
    pub fn project(&self, x: &Tensor) -> Result<Tensor> {
        project_sequence(x, &self.w, &self.b, self.norm.as_ref().map(|g| &g.x))
    }

    /// `[U_r | U_z | U] (n, 3n)`, the fused kernels' layout.
    pub fn u_cat(&self) -> Result<Tensor> {
        Ok(Tensor::cat(&[&self.u_rz, &self.u], 1)?)
    }

    /// The recurrent bias `(3n)`: `b_h`, or zeros for the paper's cell.
    pub fn bias_h(&self) -> Result<Tensor> {
        match &self.b_h {
            Some(b) => Ok(b.clone()),
            None => Ok(Tensor::zeros(3 * self.hidden, self.w.dtype(), self.w.device())?),
        }
    }

    /// One step. `gi: (batch, 3n)` is the input's projection (plus any extra input term such as
    /// RNNsearch's `C c_i`), `h: (batch, n)` → new `h: (batch, n)`; `state_mask (batch, n)`
    /// is recurrent dropout's mask (training only).
    pub fn step(&self, gi: &Tensor, h: &Tensor, state_mask: Option<&Tensor>) -> Result<Tensor> {
        let rec = Recurrent { u_rz: &self.u_rz, u_n: &self.u, ghb: self.b_h.as_ref(), state_mask, norm: self.norm.as_ref().map(|g| &g.h) };
        cell_step(self.form, gi, h, &rec)
    }
}

/// The recurrent side of a GRU step: `U_rz (n, 2n)`, `U (n, n)`; `ghb`, a recurrent term
/// broadcastable to `(batch, 3n)` (`b_h`, RNNenc's `C c`, or none); and `state_mask`, recurrent
/// dropout's `(batch, n)` mask on the state where it enters `U` (Gal & Ghahramani 2016).
pub struct Recurrent<'a> {
    pub u_rz: &'a Tensor,
    pub u_n: &'a Tensor,
    pub ghb: Option<&'a Tensor>,
    pub state_mask: Option<&'a Tensor>,
    /// Layer normalisation's `γ_h (3n)` on the whole `h U` (the reset-after form only).
    pub norm: Option<&'a Tensor>,
}

/// One GRU step from composed candle ops, either form (`kernels/cpu/rnn_cell.rs` is its fused twin):
/// `gi (batch, 3n)`, `h (batch, n)`. Under recurrent dropout `U` reads `hu = m ⊙ h`; the
/// update `h~ + z ⊙ (h − h~)` keeps `h`.
pub fn cell_step(form: GruForm, gi: &Tensor, h: &Tensor, rec: &Recurrent<'_>) -> Result<Tensor> {
    let n = h.dim(D::Minus1)?;
    let part = |x: Tensor, at: usize, len: usize| -> Result<Tensor> {
        match rec.ghb {
            Some(g) => Ok(x.broadcast_add(&g.narrow(D::Minus1, at, len)?)?),
            None => Ok(x),
        }
    };
    let hu = match rec.state_mask {
        Some(m) => (h * m)?,
        // `h` may be a view of a stacked state: row-strided, which candle's CUDA matmul refuses.
        None => h.contiguous()?,
    };
    // The recurrent terms: `h U_rz (+ ghb)`, and for the reset-after candidate `h U (+ ghb)`;
    // with layer normalisation (reset-after only) both from `LN(h U)·γ_h + ghb`, one 3n row.
    let (gh_rz, gh_n) = match rec.norm {
        Some(gamma) => {
            let gh = part(layer_norm(&hu.matmul(&Tensor::cat(&[rec.u_rz, rec.u_n], 1)?)?, gamma)?, 0, 3 * n)?;
            (gh.narrow(D::Minus1, 0, 2 * n)?, Some(gh.narrow(D::Minus1, 2 * n, n)?))
        }
        None => (part(hu.matmul(rec.u_rz)?, 0, 2 * n)?, None),
    };
    let rz = candle_nn::ops::sigmoid(&(gi.narrow(D::Minus1, 0, 2 * n)? + gh_rz)?)?;
    let r = rz.narrow(D::Minus1, 0, n)?;
    let z = rz.narrow(D::Minus1, n, n)?;
    let gi_c = gi.narrow(D::Minus1, 2 * n, n)?;
    let cand = match (form, gh_n) {
        (GruForm::ResetAfter, Some(gh_n)) => (gi_c + (r * gh_n)?)?.tanh()?,
        (GruForm::Paper, _) => (gi_c + part((r * &hu)?.matmul(rec.u_n)?, 2 * n, n)?)?.tanh()?,
        (GruForm::ResetAfter, None) => (gi_c + (r * part(hu.matmul(rec.u_n)?, 2 * n, n)?)?)?.tanh()?,
    };
    // z ⊙ h + (1 − z) ⊙ h~  =  h~ + z ⊙ (h − h~)
    Ok((&cand + (z * (h - &cand)?)?)?)
}

/// `x W + b` for every position as one matmul, `LN(x W)·γ + b` with a `γ`: `(batch, len, in)`
/// → `(batch, len, out)`.
pub fn project_sequence(x: &Tensor, w: &Tensor, b: &Tensor, gamma: Option<&Tensor>) -> Result<Tensor> {
    let (n, t, i) = x.dims3()?;
    let out = w.dim(1)?;
    Ok(maybe_norm(x.reshape((n * t, i))?.matmul(w)?, gamma)?.broadcast_add(b)?.reshape((n, t, out))?)
}
