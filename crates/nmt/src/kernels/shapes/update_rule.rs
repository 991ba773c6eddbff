//! One optimiser update's rule, shared by the CPU's fused update (`kernels/cpu/optim_step.rs`) and
//! its GPU twin (`kernels/gpu/optim_step.rs`): Adam (Kingma and Ba 2015, algorithm 1, with its
//! bias corrections at `step`) or Adadelta (Zeiler 2012, algorithm 1, scaled by `lr`), as the
//! optimiser (`train/optim.rs`) chooses each update.

/// One update's rule and hyper-parameters.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// `step` is 1 for the first update.
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        step: u64,
    },
    Adadelta {
        lr: f64,
        rho: f64,
        eps: f64,
    },
}
