//! The optimiser's update of one parameter on the GPU (`update.cu`): one kernel reads `θ`, `g`
//! and the moments `[m; v]` and writes `[θ'; m'; v']`, where the composed update
//! (`train/optim.rs`) launches 14 candle ops a parameter (docs/GPU.md). The same arithmetic as
//! the CPU's in-place update (`kernels::cpu::optim_step`), which the emulated kernel is tested against.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, Update};
use super::launch::{Addr, Launch};
use crate::kernels::cpu::optim_step::Rule;
use crate::kernels::fused_op::FusedOp;

/// `[θ'; m'; v'] (3n)` from `param` (`n` elements), `grad · scale` and `mv = [m; v] (2n)`, all
/// `f32` on one device.
pub fn update(param: &Tensor, grad: &Tensor, mv: &Tensor, rule: Rule, scale: f64) -> Result<Tensor> {
    let n = param.elem_count();
    if grad.elem_count() != n || mv.elem_count() != 2 * n || [param.dtype(), grad.dtype(), mv.dtype()] != [DType::F32; 3] {
        bail!("gpu update: parameter {:?}, gradient {:?}, moments {:?}: f32, n, n and 2n", param.dims(), grad.dims(), mv.dims());
    }
    let op = UpdateOp { n, args: UpdateArgs::new(rule, scale) };
    super::op::apply_no_bwd(op, &param.flatten_all()?, &grad.flatten_all()?, &mv.flatten_all()?)
}

/// The kernel's scalars.
#[derive(Clone, Copy)]
struct UpdateArgs {
    adam: i64,
    scale: f64,
    lr: f64,
    beta: f64,
    beta2: f64,
    eps: f64,
}

impl UpdateArgs {
    /// Adam's bias corrections folded into `lr` and `eps`, as `kernels::cpu::optim_step` does.
    fn new(rule: Rule, scale: f64) -> Self {
        match rule {
            Rule::Adam { lr, beta1, beta2, eps, step } => {
                let t = step.max(1) as i32;
                let bc2 = (1.0 - beta2.powi(t)).sqrt();
                // Rounded to f32 here, as the CPU's update does, so that both multiply by the same lr_t and eps_t.
                let (lr, eps) = ((lr * bc2 / (1.0 - beta1.powi(t))) as f32, (eps * bc2) as f32);
                UpdateArgs { adam: 1, scale, lr: lr.into(), beta: beta1, beta2, eps: eps.into() }
            }
            Rule::Adadelta { lr, rho, eps } => UpdateArgs { adam: 0, scale, lr, beta: rho, beta2: 0.0, eps },
        }
    }
}

struct UpdateOp {
    n: usize,
    args: UpdateArgs,
}

impl<L: Launch> FusedOp<L> for UpdateOp {
    const NAME: &'static str = "gpu-optimiser-update";
    type Saved = ();

    fn out_shape(&self) -> Shape {
        Shape::from(3 * self.n)
    }

    fn forward(&self, l: &L, [p, g, mv]: [Addr; 3]) -> Result<(L::Floats, ())> {
        let out = l.zeros(3 * self.n)?;
        let UpdateArgs { adam, scale, lr, beta, beta2, eps } = self.args;
        let a = Update { out: l.addr(&out), p, g, mv, n: self.n as i64, adam, scale, lr, beta, beta2, eps };
        l.launch(&args::UPDATE, self.n, a)?;
        Ok((out, ()))
    }

    /// Never called: the update runs outside the autodiff graph (`op::apply_no_bwd`).
    fn backward(&self, _: &L, _: [Addr; 3], _: (), _: Addr, _: Addr) -> Result<[L::Floats; 3]> {
        bail!("the optimiser's update has no gradient")
    }
}
