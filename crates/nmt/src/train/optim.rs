//! Optimisers over a model's parameters, with global-norm gradient clipping.
//!
//! * Adam (Kingma & Ba 2015), bias-corrected.
//! * Adadelta (Zeiler 2012) as in RNNenc/RNNsearch (ρ = 0.95, ε = 1e-6):
//!   `E[g²] ← ρ E[g²] + (1−ρ) g²`, `Δ = −sqrt(E[Δ²] + ε) / sqrt(E[g²] + ε) · g`,
//!   `E[Δ²] ← ρ E[Δ²] + (1−ρ) Δ²`, `θ ← θ + lr·Δ`.
//!
//! The moments are plain tensors named after their parameter (`adam.m.NAME`), so the training
//! state file can hold them and a resumed run continues bit for bit.
use std::collections::BTreeMap;

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};

use crate::config::{Optimizer as Kind, TrainConfig};
use crate::error::{Error, Result};

/// An optimiser with its state.
pub struct Optimizer {
    kind: Kind,
    vars: Vec<(String, Var)>,
    /// Two moments per parameter: Adam's (m, v), Adadelta's (E[g²], E[Δ²]).
    first: Vec<Tensor>,
    second: Vec<Tensor>,
    /// Updates applied so far (Adam's bias correction uses it).
    pub step: u64,
    cfg: TrainConfig,
}

impl Optimizer {
    pub fn new(vars: Vec<(String, Var)>, cfg: &TrainConfig) -> Result<Self> {
        let zeros = |v: &Var| v.as_tensor().zeros_like();
        let first = vars.iter().map(|(_, v)| zeros(v)).collect::<candle_core::Result<Vec<_>>>()?;
        let second = vars.iter().map(|(_, v)| zeros(v)).collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Optimizer { kind: cfg.optimizer, vars, first, second, step: 0, cfg: cfg.clone() })
    }

    /// Global L2 norm of the gradients; scales them down to `clip_norm` when above it.
    /// Returns the norm before clipping. Parameters without a gradient count as zero.
    pub fn clip(&self, grads: &mut GradStore) -> Result<f64> {
        let mut sq = 0.0f64;
        for (_, v) in &self.vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                sq += g.sqr()?.sum_all()?.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?;
            }
        }
        let norm = sq.sqrt();
        if !norm.is_finite() {
            return Err(Error::Input(format!("gradient norm is {norm}: training diverged")));
        }
        let max = self.cfg.clip_norm;
        if max > 0.0 && norm > max {
            let scale = max / norm;
            for (_, v) in &self.vars {
                if let Some(g) = grads.remove(v.as_tensor()) {
                    grads.insert(v.as_tensor(), (g * scale)?);
                }
            }
        }
        Ok(norm)
    }

    /// Applies one update from `grads`.
    pub fn update(&mut self, grads: &GradStore) -> Result<()> {
        self.step += 1;
        let c = &self.cfg;
        for (i, (_, var)) in self.vars.iter().enumerate() {
            // Detached: moments must not keep the step's autodiff graph alive.
            let Some(g) = grads.get(var.as_tensor()).map(|g| g.detach()) else { continue };
            let g = &g;
            match self.kind {
                Kind::Adam => {
                    let (b1, b2) = c.adam_betas;
                    let m = ((&self.first[i] * b1)? + (g * (1.0 - b1))?)?;
                    let v = ((&self.second[i] * b2)? + (g.sqr()? * (1.0 - b2))?)?;
                    let t = self.step as i32;
                    let lr_t = c.lr * (1.0 - b2.powi(t)).sqrt() / (1.0 - b1.powi(t));
                    let eps_t = c.adam_eps * (1.0 - b2.powi(t)).sqrt();
                    let delta = (m.clone() / (v.sqrt()? + eps_t)?)?;
                    var.set(&(var.as_tensor() - (delta * lr_t)?)?)?;
                    self.first[i] = m.detach();
                    self.second[i] = v.detach();
                }
                Kind::Adadelta => {
                    let (rho, eps) = (c.adadelta_rho, c.adadelta_eps);
                    let eg = ((&self.first[i] * rho)? + (g.sqr()? * (1.0 - rho))?)?;
                    let delta = (((&self.second[i] + eps)?.sqrt()? / (&eg + eps)?.sqrt()?)? * g)?;
                    let ed = ((&self.second[i] * rho)? + (delta.sqr()? * (1.0 - rho))?)?;
                    var.set(&(var.as_tensor() - (delta * c.lr)?)?)?;
                    self.first[i] = eg.detach();
                    self.second[i] = ed.detach();
                }
            }
        }
        Ok(())
    }

    /// The moments by name, for the training-state file.
    pub fn state_tensors(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::with_capacity(2 * self.vars.len());
        for (i, (name, _)) in self.vars.iter().enumerate() {
            out.push((format!("opt.first.{name}"), self.first[i].clone()));
            out.push((format!("opt.second.{name}"), self.second[i].clone()));
        }
        out
    }

    /// Restores the moments written by [`Optimizer::state_tensors`].
    pub fn load_state(&mut self, tensors: &BTreeMap<String, Tensor>, step: u64) -> Result<()> {
        for (i, (name, var)) in self.vars.iter().enumerate() {
            for (slot, key) in [(0, format!("opt.first.{name}")), (1, format!("opt.second.{name}"))] {
                let t = tensors.get(&key).ok_or_else(|| {
                    Error::Config(format!("training state lacks {key}"))
                })?;
                let t = t.to_dtype(var.dtype())?;
                if t.dims() != var.dims() {
                    return Err(Error::Config(format!("training state {key} has the wrong shape")));
                }
                if slot == 0 {
                    self.first[i] = t;
                } else {
                    self.second[i] = t;
                }
            }
        }
        self.step = step;
        Ok(())
    }
}
