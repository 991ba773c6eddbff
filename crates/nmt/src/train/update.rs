//! One update: this rank's share of the batch → loss → backward → all-reduce → clip → update.
//!
//! With one rank the share is the whole batch and the all-reduce does nothing, so a single
//! process runs exactly the arithmetic it always did. With `N` ranks (see `collective`) each
//! rank's objective is its rows' token sum over the whole batch's token count, so the summed
//! gradient is the whole batch's, up to the order of floating-point additions.
use candle_core::backprop::GradStore;
use candle_core::{DType, Var};
use nmt_data::batch::{Batch, RowShare};

use super::collective::{all_reduce_grads, Collective, Control};
use super::moment_scale::MomentScale;
use super::optim::Optimizer;
use crate::error::{Error, Result};
use crate::kernels::profile;
use crate::model::regularizer::Regularizer;
use crate::model::{BatchTensors, Seq2Seq};

/// What one update needs besides the batch.
pub(super) struct Updater<'a> {
    pub model: &'a Seq2Seq,
    pub opt: &'a mut Optimizer,
    /// The model's parameters, in the order the flat gradient buffer uses.
    pub vars: &'a [(String, Var)],
    pub collective: &'a dyn Collective,
    /// Factors on some parameters' squared gradients this update (`moment_scale.rs`).
    pub scales: &'a [MomentScale],
}

/// Which rows of the whole batch this rank holds, and the whole batch's target tokens.
pub(super) struct Share {
    pub rows: RowShare,
    pub tokens: usize,
}

/// The outcome of one update, the same on every rank.
pub(super) struct Updated {
    /// Mean loss per target token over the whole batch.
    pub loss: f64,
    /// The whole batch's target tokens.
    pub tokens: usize,
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    /// The ranks' summed control flags.
    pub control: Control,
}

impl Updater<'_> {
    /// One update on this rank's `part` of a batch (its rows, padded as the whole batch;
    /// numbered `step`, from 1) with `reg`'s masks; `local` carries this rank's stop flags into
    /// the all-reduce.
    pub fn update(&mut self, part: &Batch, share: Share, reg: Regularizer, step: u64, local: Control) -> Result<Updated> {
        let c = self.collective;
        let Share { rows: share, tokens } = share;
        let (mut grads, loss_sum) = if share.len == 0 {
            // More ranks than sentences: this rank contributes zeros.
            (GradStore::default(), 0.0)
        } else {
            let mut reg = match c.size() {
                1 => reg,
                _ => reg.with_share(share),
            };
            let bt = BatchTensors::new(part, self.model.dtype(), self.model.device())?;
            let loss = profile::timed(profile::TRAIN_FORWARD, || self.model.loss(&bt, Some(&mut reg)))?;
            let value = loss.mean.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            let objective = match c.size() {
                1 => loss.mean,
                _ => (loss.mean * (loss.tokens as f64 / tokens.max(1) as f64))?,
            };
            let grads = profile::timed(profile::TRAIN_BACKWARD, || objective.backward())?;
            (grads, value * loss.tokens as f64)
        };
        let control = all_reduce_grads(c, self.vars, &mut grads, Control { loss_sum, ..local })?;
        let loss = control.loss_sum / tokens.max(1) as f64;
        if !loss.is_finite() {
            return Err(Error::Input(format!("loss is {loss} at update {step}: training diverged")));
        }
        self.opt.set_progress(control.progress);
        let grad_norm = profile::timed(profile::TRAIN_UPDATE, || -> Result<f64> {
            let norm = self.opt.clip(&grads)?;
            self.opt.update_scaled(&grads, self.scales)?;
            Ok(norm)
        })?;
        Ok(Updated { loss, tokens, grad_norm, control })
    }
}
