//! The optimiser's update on the GPU (`update.cu`): one kernel reads `θ`, `g` and the moments
//! `m`, `v` and writes `θ'`, `m'`, `v'`, where the composed update (`train/optim.rs`) launches 14
//! candle ops a parameter (docs/GPU.md). The same arithmetic as the CPU's in-place update
//! (`kernels::cpu::optim_step`), which the emulated kernel is tested against.
//!
//! Two callers. The candle path ([`update`]) computes the step's scalars on the host and
//! uploads them. A recorded training step ([`DeviceUpdate`]) keeps every scalar that changes from
//! one update to the next on the device: the update count, the gradients' squared norm (two
//! launches, no atomics), the clipping factor and Adam's bias-corrected `lr_t`, `eps_t` are
//! computed there by `nmt_step_scalars`, so that the step replays as a CUDA graph
//! (`recording.rs`); the host reads the norm back after the step.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, SqPartial, StepScalars, Update};
use super::launch::{Addr, Launch, Staged};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::shapes::update_rule::Rule;

/// `[θ'; m'; v'] (3n)` from `param` (`n` elements), `grad · scale` and `mv = [m; v] (2n)`, all
/// `f32` on one device.
pub fn update(param: &Tensor, grad: &Tensor, mv: &Tensor, rule: Rule, scale: f64) -> Result<Tensor> {
    let n = param.elem_count();
    if grad.elem_count() != n || mv.elem_count() != 2 * n || [param.dtype(), grad.dtype(), mv.dtype()] != [DType::F32; 3] {
        bail!("gpu update: parameter {:?}, gradient {:?}, moments {:?}: f32, n, n and 2n", param.dims(), grad.dims(), mv.dims());
    }
    let op = UpdateOp { n, rule: Constants::of(rule), scal: Staged::Host(host_scalars(rule, scale).to_vec()) };
    super::op::apply_no_bwd(op, &param.flatten_all()?, &grad.flatten_all()?, &mv.flatten_all()?)
}

/// What the kernel reads that does not change between updates: the rule and its betas.
#[derive(Clone, Copy, Debug)]
struct Constants {
    adam: i64,
    beta: f64,
    beta2: f64,
}

impl Constants {
    fn of(rule: Rule) -> Self {
        match rule {
            Rule::Adam { beta1, beta2, .. } => Constants { adam: 1, beta: beta1, beta2 },
            Rule::Adadelta { rho, .. } => Constants { adam: 0, beta: rho, beta2: 0.0 },
        }
    }
}

/// `[lr_t, eps_t, scale, skip]` as the kernel reads them: Adam's bias corrections folded into
/// `lr` and `eps`, rounded to `f32` as the CPU's update rounds them.
fn host_scalars(rule: Rule, scale: f64) -> [f32; 4] {
    match rule {
        Rule::Adam { lr, beta1, beta2, eps, step } => {
            let t = step.max(1) as i32;
            let bc2 = (1.0 - beta2.powi(t)).sqrt();
            [(lr * bc2 / (1.0 - beta1.powi(t))) as f32, (eps * bc2) as f32, scale as f32, 0.0]
        }
        Rule::Adadelta { lr, eps, .. } => [lr as f32, eps as f32, scale as f32, 0.0],
    }
}

/// The update of `n` parameters in place or into `[θ'; m'; v']`.
fn launch_update<L: Launch>(l: &L, c: Constants, out: [Addr; 3], [p, m, v, g]: [Addr; 4], scal: Addr, n: usize) -> Result<()> {
    let Constants { adam, beta, beta2 } = c;
    let [p_out, m_out, v_out] = out;
    let a = Update { p_out, m_out, v_out, p, m, v, g, scal, n: n as i64, adam, beta, beta2 };
    l.launch(&args::UPDATE, n, a)
}

struct UpdateOp {
    n: usize,
    rule: Constants,
    scal: Staged<f32>,
}

impl<L: Launch> FusedOp<L> for UpdateOp {
    const NAME: &'static str = "gpu-optimiser-update";
    type Saved = ();

    fn out_shape(&self) -> Shape {
        Shape::from(3 * self.n)
    }

    fn forward(&self, l: &L, [p, g, mv]: [Addr; 3]) -> Result<(L::Floats, ())> {
        let n = self.n;
        let out = l.scratch(3 * n)?;
        let (scal, _held) = self.scal.addr(l)?;
        let o = l.addr(&out);
        launch_update(l, self.rule, [o, o.at(n), o.at(2 * n)], [p, mv, mv.at(n), g], scal, n)?;
        Ok((out, ()))
    }

    /// Never called: the update runs outside the autodiff graph (`op::apply_no_bwd`).
    fn backward(&self, _: &L, _: [Addr; 3], _: (), _: Addr, _: Addr) -> Result<[L::Floats; 3]> {
        bail!("the optimiser's update has no gradient")
    }
}

/// Gradient values per partial sum of the squared norm.
const CHUNK: usize = 4096;

/// The optimiser's settings a device update reads (`train.*`).
#[derive(Clone, Copy, Debug)]
pub struct UpdateConfig {
    pub adam: bool,
    pub beta: f64,
    pub beta2: f64,
    pub eps: f64,
    pub warmup: usize,
    pub clip: f64,
    pub normalize: bool,
}

/// The update of a whole parameter arena `θ (n)` with moments `m`, `v` and gradients `g`, its
/// scalars on the device: 3 launches, whatever the update count. Its buffers live as long as the
/// parameters (on the launcher that made them); each step may run on another launcher of the
/// same device (a bucket's recording).
pub struct DeviceUpdate<F, I> {
    cfg: UpdateConfig,
    n: usize,
    /// `[k, bits(lr), bits(norm)]` (`update.cu`'s `nmt_step_scalars`), the partial squared
    /// sums (`f64` in an integer buffer) and `[lr_t, eps_t, scale, skip]`: kept alive here,
    /// used through `at`.
    _held: (I, I, F),
    /// Their addresses.
    at: [Addr; 3],
}

impl<F, I> DeviceUpdate<F, I> {
    /// The update of `n` parameters, starting at update count 0 with learning rate `lr`.
    pub fn new<L: Launch<Floats = F, Ints = I>>(l: &L, cfg: UpdateConfig, n: usize, lr: f64) -> Result<Self> {
        let state = l.upload_ints(&[0, lr.to_bits() as i64, 0])?;
        let part = l.upload_ints(&vec![0; n.div_ceil(CHUNK).max(1)])?;
        let scal = l.zeros(4)?;
        let at = [l.ints_addr(&state), l.ints_addr(&part), l.addr(&scal)];
        Ok(DeviceUpdate { cfg, n, _held: (state, part, scal), at })
    }

    /// Sets the learning rate (a plateau's decay), between steps.
    pub fn set_lr(&self, l: &impl Launch, lr: f64) -> Result<()> {
        l.write_ints(self.at[0].at_i64(1), &[lr.to_bits() as i64])
    }

    /// Sets the count of updates applied so far (a resumed run's), between steps.
    pub fn set_count(&self, l: &impl Launch, k: u64) -> Result<()> {
        l.write_ints(self.at[0], &[k as i64])
    }

    /// The last update's gradient norm (before clipping), after the step.
    pub fn norm(&self, l: &impl Launch) -> Result<f64> {
        let v = l.read(self.at[0].at_i64(2), 2)?;
        let bits = u64::from(v[0].to_bits()) | (u64::from(v[1].to_bits()) << 32);
        Ok(f64::from_bits(bits))
    }

    /// One update of `params` from `grads`, moments `m`, `v` (each `n`), in place.
    pub fn step(&self, l: &impl Launch, params: Addr, [m, v]: [Addr; 2], grads: Addr) -> Result<()> {
        let (c, n, [state, part, scal]) = (self.cfg, self.n, self.at);
        let parts = n.div_ceil(CHUNK);
        l.launch(&args::SQ_PARTIAL, parts, SqPartial { part, g: grads, n: n as i64, chunk: CHUNK as i64 })?;
        let (adam, warmup, normalize) = (c.adam.into(), c.warmup as i64, c.normalize.into());
        let (beta, beta2, eps, clip) = (c.beta, c.beta2, c.eps, c.clip);
        let s = StepScalars { state, part, scal, parts: parts as i64, adam, warmup, normalize, beta, beta2, eps, clip };
        l.launch(&args::STEP_SCALARS, 1, s)?;
        launch_update(l, Constants { adam, beta, beta2 }, [params, m, v], [params, m, v, grads], scal, n)
    }
}
