//! Optimisers over a model's parameters, with global-norm gradient clipping.
//!
//! * Adam (Kingma & Ba 2015), bias-corrected.
//! * Adadelta (Zeiler 2012) as in RNNenc/RNNsearch (ρ = 0.95, ε = 1e-6):
//!   `E[g²] ← ρ E[g²] + (1−ρ) g²`, `Δ = −sqrt(E[Δ²] + ε) / sqrt(E[g²] + ε) · g`,
//!   `E[Δ²] ← ρ E[Δ²] + (1−ρ) Δ²`, `θ ← θ + lr·Δ`.
//!
//! Parameters on the CPU in f32 ([`Backend::host`]) are updated in place by `kernels::cpu::optim_step` (one pass, no
//! temporaries; the clipping scale is applied inside it); `f32` parameters on a GPU
//! ([`Backend::gpu`]) by one kernel each (`kernels::gpu::optim_step`, the same arithmetic). Any
//! other parameter runs the same arithmetic as composed candle ops, the kernels' reference twin. Either way the moments are
//! saved as tensors named after their parameter (`opt.first.NAME`), so the training-state file
//! holds them and a resumed run continues bit for bit.
//!
//! [`Optimizer::update_scaled`] multiplies some parameters' squared gradients by per-word
//! factors (`train.candidates.scale_moments`, `moment_scale.rs`); a GPU's moments of those
//! parameters then take the composed arithmetic for that update.
use std::collections::BTreeMap;

use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};

use super::moment_scale::MomentScale;
use super::schedule;
use crate::config::{Impl, Optimizer as Kind, TrainConfig};
use crate::error::{Error, Result};
use crate::kernels::cpu::optim_step::{sum_squares, update_in_place};
use crate::kernels::shapes::update_rule::Rule;
use crate::model::Backend;

/// A parameter's two moments: Adam's `(m, v)`, Adadelta's `(E[g²], E[Δ²])`.
enum Moments {
    /// Host buffers, updated in place (CPU f32 parameters).
    Host(Vec<f32>, Vec<f32>),
    /// `[m; v]` flat on the GPU, replaced by the update's kernel (`kernels::gpu::optim_step`; an
    /// `f32` parameter on a GPU with `impl = "fused"`).
    Device(Tensor),
    /// Tensors, replaced by composed ops each update.
    Ops(Tensor, Tensor),
}

/// An optimiser with its state.
pub struct Optimizer {
    kind: Kind,
    vars: Vec<(String, Var)>,
    moments: Vec<Moments>,
    /// Updates applied so far (Adam's bias correction uses it).
    pub step: u64,
    /// The clipping factor the next update applies to the gradients (set by [`Optimizer::clip`]).
    grad_scale: f64,
    /// Factor on `cfg.lr` from learning-rate decay (1 until dev BLEU plateaus).
    lr_scale: f64,
    /// The fraction of the run's budget done when the next update is applied, for
    /// `train.lr_cooldown` (the trainer's [`Control::progress`](super::collective::Control)).
    progress: f64,
    cfg: TrainConfig,
}

fn fresh_moments(v: &Var, imp: Impl) -> Result<Moments> {
    let t = v.as_tensor();
    let backend = Backend::new(imp, t.device(), t.dtype());
    if backend.host() {
        Ok(Moments::Host(vec![0.0; t.elem_count()], vec![0.0; t.elem_count()]))
    } else if backend.gpu() {
        Ok(Moments::Device(Tensor::zeros(2 * t.elem_count(), DType::F32, t.device())?))
    } else {
        Ok(Moments::Ops(t.zeros_like()?, t.zeros_like()?))
    }
}

impl Optimizer {
    /// `cfg.imp = ops` keeps the composed-op update everywhere (the kernel's twin).
    pub fn new(vars: Vec<(String, Var)>, cfg: &TrainConfig) -> Result<Self> {
        let moments = vars.iter().map(|(_, v)| fresh_moments(v, cfg.imp)).collect::<Result<Vec<_>>>()?;
        Ok(Optimizer { kind: cfg.optimizer, vars, moments, step: 0, grad_scale: 1.0, lr_scale: 1.0, progress: 0.0, cfg: cfg.clone() })
    }

    /// Global L2 norm of the gradients; when it exceeds `clip_norm`, the next [`Optimizer::update`]
    /// scales them down to it. Returns the norm before clipping. Parameters without a gradient
    /// count as zero. The gradients themselves are not changed.
    pub fn clip(&mut self, grads: &GradStore) -> Result<f64> {
        let mut sq = 0.0f64;
        // Off the CPU, each gradient's sum stays on the device and one number comes back: one
        // wait for the device per update, not one per parameter.
        let mut on_device = Vec::new();
        for (_, v) in &self.vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                match g.device().is_cpu() {
                    true => sq += sum_squares(g)?,
                    false => on_device.push(g.sqr()?.sum_all()?.to_dtype(DType::F64)?),
                }
            }
        }
        if !on_device.is_empty() {
            sq += Tensor::stack(&on_device, 0)?.sum_all()?.to_scalar::<f64>()?;
        }
        let norm = sq.sqrt();
        if !norm.is_finite() {
            return Err(Error::Input(format!("gradient norm is {norm}: training diverged")));
        }
        let max = self.cfg.clip_norm;
        let rescale = max > 0.0 && (norm > max || (self.cfg.normalize_updates && norm > 0.0));
        self.grad_scale = if rescale { max / norm } else { 1.0 };
        Ok(norm)
    }

    /// The factor on the configured learning rate.
    pub fn lr_scale(&self) -> f64 {
        self.lr_scale
    }

    /// Sets the factor on the configured learning rate (decay on a dev-BLEU plateau).
    pub fn set_lr_scale(&mut self, scale: f64) {
        self.lr_scale = scale;
    }

    /// Sets how much of the run's budget is done, in `[0, 1]`, before an update
    /// (`train.lr_cooldown` reads it).
    pub fn set_progress(&mut self, fraction: f64) {
        self.progress = fraction.clamp(0.0, 1.0);
    }

    /// The learning rate the next update applies before its warm-up factor (`schedule.rs`).
    pub fn lr(&self) -> f64 {
        schedule::rate(&self.cfg, self.lr_scale, self.progress)
    }

    fn rule(&self) -> Rule {
        let c = &self.cfg;
        let lr = self.lr() * schedule::warmup(&self.cfg, self.step);
        match self.kind {
            Kind::Adam => Rule::Adam { lr, beta1: c.adam_betas.0, beta2: c.adam_betas.1, eps: c.adam_eps, step: self.step },
            Kind::Adadelta => Rule::Adadelta { lr, rho: c.adadelta_rho, eps: c.adadelta_eps },
        }
    }

    /// Applies one update from `grads` (scaled by the factor [`Optimizer::clip`] chose).
    pub fn update(&mut self, grads: &GradStore) -> Result<()> {
        self.update_scaled(grads, &[])
    }

    /// [`Optimizer::update`] with the squared gradients of the parameters in `scales` times
    /// their factors.
    pub fn update_scaled(&mut self, grads: &GradStore, scales: &[MomentScale]) -> Result<()> {
        if let Some(s) = scales.iter().find(|s| s.factors.is_empty() || s.inner == 0) {
            return Err(Error::Config(format!("moment factors of {:?} are empty", s.param)));
        }
        self.step += 1;
        let (rule, scale) = (self.rule(), self.grad_scale);
        self.grad_scale = 1.0;
        for ((_, var), mom) in self.vars.iter().zip(self.moments.iter_mut()) {
            let Some(g) = grads.get(var.as_tensor()) else { continue };
            let factors = scales.iter().find(|s| s.param == var.as_tensor().id());
            match mom {
                Moments::Host(m, v) => update_in_place(var.as_tensor(), g, (m, v), rule, scale, factors.map(MomentScale::view))?,
                Moments::Device(mv) if factors.is_some() => {
                    // The kernel has no factors: this parameter's update runs composed.
                    let n = var.elem_count();
                    let (m, v) = (mv.narrow(0, 0, n)?.reshape(var.shape())?, mv.narrow(0, n, n)?.reshape(var.shape())?);
                    let f = factors.map(|s| s.tensor(var)).transpose()?;
                    let (m2, v2) = composed_update(var, &(g.detach() * scale)?, (&m, &v), rule, f.as_ref())?;
                    *mv = Tensor::cat(&[m2.flatten_all()?, v2.flatten_all()?], 0)?.detach();
                }
                Moments::Device(mv) => {
                    let n = var.elem_count();
                    let out = crate::kernels::gpu::optim_step::update(var.as_tensor(), &g.detach(), mv, rule, scale)?;
                    var.set(&out.narrow(0, 0, n)?.reshape(var.shape())?)?;
                    *mv = out.narrow(0, n, 2 * n)?;
                }
                Moments::Ops(m, v) => {
                    // Detached: moments must not keep the step's autodiff graph alive.
                    let g = (g.detach() * scale)?;
                    let f = factors.map(|s| s.tensor(var)).transpose()?;
                    let (m2, v2) = composed_update(var, &g, (m, v), rule, f.as_ref())?;
                    *m = m2.detach();
                    *v = v2.detach();
                }
            }
        }
        Ok(())
    }

    /// The moments by name, for the training-state file.
    pub fn state_tensors(&self) -> Result<Vec<(String, Tensor)>> {
        let mut out = Vec::with_capacity(2 * self.vars.len());
        for ((name, var), mom) in self.vars.iter().zip(&self.moments) {
            let (m, v) = match mom {
                Moments::Host(m, v) => {
                    let t = |x: &Vec<f32>| Tensor::from_slice(x, var.shape(), var.device());
                    (t(m)?, t(v)?)
                }
                Moments::Ops(m, v) => (m.clone(), v.clone()),
                Moments::Device(mv) => {
                    let n = var.elem_count();
                    (mv.narrow(0, 0, n)?.reshape(var.shape())?, mv.narrow(0, n, n)?.reshape(var.shape())?)
                }
            };
            out.push((format!("opt.first.{name}"), m));
            out.push((format!("opt.second.{name}"), v));
        }
        Ok(out)
    }

    /// Restores the moments written by [`Optimizer::state_tensors`].
    pub fn load_state(&mut self, tensors: &BTreeMap<String, Tensor>, step: u64) -> Result<()> {
        for ((name, var), mom) in self.vars.iter().zip(self.moments.iter_mut()) {
            let get = |key: String| -> Result<Tensor> {
                let t = tensors.get(&key).ok_or_else(|| Error::Config(format!("training state lacks {key}")))?;
                let t = t.to_dtype(var.dtype())?;
                if t.dims() != var.dims() {
                    return Err(Error::Config(format!("training state {key} has the wrong shape")));
                }
                Ok(t)
            };
            let (m, v) = (get(format!("opt.first.{name}"))?, get(format!("opt.second.{name}"))?);
            *mom = match mom {
                Moments::Host(..) => {
                    let host = |t: Tensor| t.flatten_all()?.to_vec1::<f32>();
                    Moments::Host(host(m)?, host(v)?)
                }
                Moments::Ops(..) => Moments::Ops(m, v),
                Moments::Device(..) => Moments::Device(Tensor::cat(&[m.flatten_all()?, v.flatten_all()?], 0)?),
            };
        }
        self.step = step;
        Ok(())
    }
}

/// The composed-op update of one parameter, its squared terms times `factors` (element by
/// element) when given; returns the new moments.
fn composed_update(var: &Var, g: &Tensor, moments: (&Tensor, &Tensor), rule: Rule, factors: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
    let (first, second) = moments;
    let times = |x: Tensor| -> Result<Tensor> {
        Ok(match factors {
            Some(f) => (x * f)?,
            None => x,
        })
    };
    match rule {
        Rule::Adam { lr, beta1: b1, beta2: b2, eps, step } => {
            let m = ((first * b1)? + (g * (1.0 - b1))?)?;
            let v = ((second * b2)? + (times(g.sqr()?)? * (1.0 - b2))?)?;
            let t = step as i32;
            let lr_t = lr * (1.0 - b2.powi(t)).sqrt() / (1.0 - b1.powi(t));
            let eps_t = eps * (1.0 - b2.powi(t)).sqrt();
            let delta = (m.clone() / (v.sqrt()? + eps_t)?)?;
            var.set(&(var.as_tensor() - (delta * lr_t)?)?)?;
            Ok((m, v))
        }
        Rule::Adadelta { lr, rho, eps } => {
            let eg = ((first * rho)? + (times(g.sqr()?)? * (1.0 - rho))?)?;
            let delta = (((second + eps)?.sqrt()? / (&eg + eps)?.sqrt()?)? * g)?;
            let ed = ((second * rho)? + (times(delta.sqr()?)? * (1.0 - rho))?)?;
            var.set(&(var.as_tensor() - (delta * lr)?)?)?;
            Ok((eg, ed))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// One Adam update of a single parameter from gradient `g`, under `cfg`, with `progress` of
    /// the budget done; the change.
    fn first_delta(cfg: &TrainConfig, g: f32, progress: f64) -> (f32, f64) {
        let var = Var::from_tensor(&Tensor::new(&[1f32], &Device::Cpu).unwrap()).unwrap();
        let mut opt = Optimizer::new(vec![("w".into(), var.clone())], cfg).unwrap();
        opt.set_progress(progress);
        let loss = (var.as_tensor() * f64::from(g)).unwrap().sum_all().unwrap();
        let grads = loss.backward().unwrap();
        let norm = opt.clip(&grads).unwrap();
        let scale = opt.grad_scale;
        opt.update(&grads).unwrap();
        (1.0 - var.as_tensor().to_vec1::<f32>().unwrap()[0], norm * scale)
    }

    #[test]
    fn warmup_scales_the_first_updates_learning_rate() {
        let plain = TrainConfig { lr: 0.1, ..TrainConfig::default() };
        let warm = TrainConfig { warmup: 4, ..plain.clone() };
        let (d_plain, _) = first_delta(&plain, 0.5, 0.0);
        let (d_warm, _) = first_delta(&warm, 0.5, 0.0);
        // Adam's first step is lr · sign(g) whatever |g|: a quarter of it under warm-up 4.
        assert!((d_plain - 0.1).abs() < 1e-5, "{d_plain}");
        assert!((d_warm - 0.025).abs() < 1e-5, "{d_warm}");
    }

    /// The cooldown reaches Adam's step: its first step is lr · sign(g), a quarter of it with
    /// three quarters of a linear cooldown done (the factors themselves: `schedule.rs`).
    #[test]
    fn the_cooldown_scales_adams_step() {
        let linear = TrainConfig { lr: 0.1, max_steps: 10, lr_cooldown: 1.0, ..TrainConfig::default() };
        assert!((first_delta(&linear, 0.5, 0.75).0 - 0.025).abs() < 1e-5);
        assert!((first_delta(&TrainConfig { lr_cooldown: 0.0, ..linear }, 0.5, 0.75).0 - 0.1).abs() < 1e-5);
    }

    #[test]
    fn normalize_updates_rescales_small_gradients_to_clip_norm() {
        let clip = TrainConfig { clip_norm: 1.0, ..TrainConfig::default() };
        let unit = TrainConfig { normalize_updates: true, ..clip.clone() };
        // A gradient of norm 0.25: clipping leaves it, normalising scales it to 1.
        assert!((first_delta(&clip, 0.25, 0.0).1 - 0.25).abs() < 1e-9);
        assert!((first_delta(&unit, 0.25, 0.0).1 - 1.0).abs() < 1e-9);
        // Above the norm both scale it down.
        assert!((first_delta(&clip, 4.0, 0.0).1 - 1.0).abs() < 1e-9);
        assert!(TrainConfig { normalize_updates: true, clip_norm: 0.0, ..TrainConfig::default() }.validate().is_err());
    }

    /// Moment factors (`update_scaled`) on a `(3, 4)` parameter read by rows (`inner = 4`) and
    /// by columns (`inner = 1`), Adam and Adadelta: the in-place kernel against the composed
    /// twin and the GPU moments' path after three updates; factors of one give the plain update
    /// bit for bit, others change it; Adam's first `v` is `(1−β₂) f g²`.
    #[test]
    fn scaled_moments_follow_the_composed_twin() {
        let cases = [
            (Kind::Adam, 4, vec![1.0f32, 0.25, 0.1]),
            (Kind::Adam, 1, vec![0.5, 1.0, 0.2, 0.9]),
            (Kind::Adadelta, 1, vec![0.5, 1.0, 0.2, 0.9]),
        ];
        for (kind, inner, factors) in cases {
            let cfg = TrainConfig { optimizer: kind, lr: 0.01, clip_norm: 0.0, ..TrainConfig::default() };
            let run = |form: u8, factors: Option<&[f32]>, updates: usize| -> (Vec<f32>, Vec<f32>) {
                let w0 = [[0.5f32, -1.0, 2.0, 0.3], [0.25, 0.0, -0.75, 1.5], [0.1, 0.2, 0.3, -0.4]];
                let var = Var::from_tensor(&Tensor::new(&w0, &Device::Cpu).unwrap()).unwrap();
                let mut opt = Optimizer::new(vec![("w".into(), var.clone())], &cfg).unwrap();
                let zeros = var.as_tensor().zeros_like().unwrap();
                match form {
                    1 => opt.moments = vec![Moments::Ops(zeros.clone(), zeros)],
                    2 => opt.moments = vec![Moments::Device(Tensor::zeros(24, DType::F32, &Device::Cpu).unwrap())],
                    _ => {}
                }
                let scales: Vec<MomentScale> =
                    factors.map(|f| MomentScale { param: var.as_tensor().id(), factors: f.to_vec(), inner }).into_iter().collect();
                for k in 0..updates {
                    let loss = (var.as_tensor().sqr().unwrap() * (1.0 + k as f64)).unwrap().sum_all().unwrap();
                    opt.update_scaled(&loss.backward().unwrap(), &scales).unwrap();
                }
                let state = opt.state_tensors().unwrap();
                let f = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                (f(var.as_tensor()), f(&state[1].1))
            };
            // The composed twin takes `1 − β₂` in f64, the kernels in f32 (`1 − 0.999` is 4.7e-5
            // off in f32): agreement to 1e-4 of a value.
            let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * (1e-3 + y.abs()));
            let host = run(0, Some(factors.as_slice()), 3);
            for form in [1, 2] {
                let other = run(form, Some(factors.as_slice()), 3);
                assert!(close(&other.0, &host.0) && close(&other.1, &host.1), "{kind:?} {inner} form {form}: {other:?} vs {host:?}");
            }
            let ones = vec![1.0; factors.len()];
            assert_eq!(run(0, Some(ones.as_slice()), 3), run(0, None, 3), "{kind:?}: factors of one");
            assert_ne!(host.0, run(0, None, 3).0, "{kind:?}: the factors change the update");
            if kind == Kind::Adam {
                let (_, v) = run(0, Some(factors.as_slice()), 1);
                let w0 = [0.5f32, -1.0, 2.0, 0.3, 0.25, 0.0, -0.75, 1.5, 0.1, 0.2, 0.3, -0.4];
                for (i, (&vi, &w)) in v.iter().zip(&w0).enumerate() {
                    let want = 0.001 * factors[(i / inner) % factors.len()] * (2.0 * w) * (2.0 * w);
                    assert!((vi - want).abs() <= 1e-4 * want.abs().max(1e-9), "v[{i}] = {vi}, want {want}");
                }
            }
        }
    }

    /// The GPU's moments (`Moments::Device`, the update's kernel emulated on the CPU) against
    /// the CPU's in-place update: the same weights after three clipped Adam updates, and the
    /// same moments through the training-state file's tensors and back.
    #[test]
    fn device_moments_update_as_the_host_moments_do() {
        let cfg = TrainConfig { lr: 0.01, clip_norm: 0.5, ..TrainConfig::default() };
        let run = |device: bool| -> (Vec<f32>, Vec<(String, Tensor)>) {
            let var = Var::from_tensor(&Tensor::new(&[[0.5f32, -1.0, 2.0], [0.25, 0.0, -0.75]], &Device::Cpu).unwrap()).unwrap();
            let mut opt = Optimizer::new(vec![("w".into(), var.clone())], &cfg).unwrap();
            if device {
                opt.moments = vec![Moments::Device(Tensor::zeros(12, DType::F32, &Device::Cpu).unwrap())];
            }
            for k in 0..3 {
                let loss = (var.as_tensor().sqr().unwrap() * (1.0 + k as f64)).unwrap().sum_all().unwrap();
                let grads = loss.backward().unwrap();
                opt.clip(&grads).unwrap();
                opt.update(&grads).unwrap();
            }
            let state = opt.state_tensors().unwrap();
            let map = state.iter().cloned().collect();
            opt.load_state(&map, opt.step).unwrap();
            assert_eq!(opt.state_tensors().unwrap().len(), state.len());
            (var.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap(), state)
        };
        let ((wh, sh), (wd, sd)) = (run(false), run(true));
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6 * (1.0 + y.abs()));
        assert!(close(&wd, &wh), "{wd:?} vs {wh:?}");
        for ((kh, th), (kd, td)) in sh.iter().zip(&sd) {
            assert_eq!(kh, kd);
            let f = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert!(close(&f(td), &f(th)), "{kd}");
        }
    }
}
