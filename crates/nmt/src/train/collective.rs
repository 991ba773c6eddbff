//! Data-parallel training's communication: one small interface, [`Collective`], with the
//! single-process implementation here and MPI's in the `nmt` binary (feature `mpi`), so that
//! the library needs no MPI to build.
//!
//! How a step runs on `N` ranks (`train::trainer`):
//! - every rank builds the same batches (a pure function of seed and epoch) and takes its rows,
//!   [`nmt_data::batch::RowShare::of`], keeping the batch's padded lengths;
//! - dropout masks are drawn for the whole batch and cut to the share's rows, so they are the
//!   same functions of seed and update as in one process;
//! - each rank's loss is its token sum divided by the **whole** batch's token count, so the sum
//!   of the ranks' gradients is the one-process gradient;
//! - one all-reduce sums the gradients, flattened into one buffer with a few control values
//!   appended ([`Control`]); every rank then clips and applies the same update;
//! - rank 0 alone validates and writes files, then broadcasts what the others must follow (the
//!   learning-rate scale and whether patience ran out).
use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};

use crate::error::{Error, Result};

/// Collective operations over the ranks of one training run. Every rank must call the same
/// operations in the same order with buffers of the same length.
pub trait Collective {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Element-wise sum over the ranks, in place: every rank ends with the sum.
    fn all_reduce_sum(&self, buf: &mut [f32]) -> Result<()>;
    /// Rank 0's `buf` to every rank, in place.
    fn broadcast(&self, buf: &mut [f32]) -> Result<()>;
    /// Rank 0's bytes to every rank, in place.
    fn broadcast_bytes(&self, buf: &mut [u8]) -> Result<()>;
    /// Waits until every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// Ends every rank's process, after a rank met an error the others cannot see (they would
    /// wait in the next collective for ever). One process: nothing to do, the error returns.
    fn abort(&self, _code: i32) {}
}

/// One process: every operation is the identity.
#[derive(Clone, Copy, Debug, Default)]
pub struct Single;

impl Collective for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_reduce_sum(&self, _buf: &mut [f32]) -> Result<()> {
        Ok(())
    }
    fn broadcast(&self, _buf: &mut [f32]) -> Result<()> {
        Ok(())
    }
    fn broadcast_bytes(&self, _buf: &mut [u8]) -> Result<()> {
        Ok(())
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
}

/// Values summed with the gradients in the same all-reduce (no second call per update).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Control {
    /// The token-weighted loss sum of this rank's rows (for the log and the divergence check).
    pub loss_sum: f64,
    /// A rank was interrupted (Ctrl-C): all stop after this update and save a checkpoint.
    pub interrupted: bool,
    /// Rank 0's clock passed `train.max_minutes`: only rank 0's clock counts, so all agree.
    pub out_of_time: bool,
    /// The fraction of the run's budget done, by rank 0's clock (every other rank sends 0), so
    /// that every rank's `train.lr_cooldown` applies the same rate to the same update.
    pub progress: f64,
}

const CONTROL_LEN: usize = 4;

impl Control {
    fn write(&self, out: &mut [f32]) {
        out[0] = self.loss_sum as f32;
        out[1] = f32::from(u8::from(self.interrupted));
        out[2] = f32::from(u8::from(self.out_of_time));
        out[3] = self.progress as f32;
    }

    /// The summed values; the loss sum is for the log and the divergence check, where f32
    /// precision is enough.
    fn read(sums: &[f32]) -> Control {
        Control { loss_sum: f64::from(sums[0]), interrupted: sums[1] > 0.0, out_of_time: sums[2] > 0.0, progress: f64::from(sums[3]) }
    }
}

/// Sums every parameter's gradient over the ranks, and `control` with them, in **one**
/// all-reduce of one flat f32 buffer (parameters in `vars` order; a parameter without a gradient
/// counts as zeros). With one rank nothing is copied and `control` is returned as it is.
pub fn all_reduce_grads(c: &dyn Collective, vars: &[(String, Var)], grads: &mut GradStore, control: Control) -> Result<Control> {
    if c.size() == 1 {
        return Ok(control);
    }
    let total: usize = vars.iter().map(|(_, v)| v.elem_count()).sum();
    let mut buf = Vec::with_capacity(total + CONTROL_LEN);
    for (_, v) in vars {
        match grads.get(v.as_tensor()) {
            Some(g) => buf.extend(g.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?),
            None => buf.resize(buf.len() + v.elem_count(), 0.0),
        }
    }
    buf.resize(total + CONTROL_LEN, 0.0);
    control.write(&mut buf[total..]);
    c.all_reduce_sum(&mut buf)?;
    let mut offset = 0;
    for (_, v) in vars {
        let t = v.as_tensor();
        let n = t.elem_count();
        let g = Tensor::from_slice(&buf[offset..offset + n], t.shape(), t.device())?.to_dtype(t.dtype())?;
        grads.insert(t, g);
        offset += n;
    }
    Ok(Control::read(&buf[total..]))
}

/// Gives every rank rank 0's weights (one broadcast of one flat buffer). Fails clearly when the
/// ranks' models differ in size (different configs or vocabularies).
pub fn broadcast_params(c: &dyn Collective, vars: &[(String, Var)]) -> Result<()> {
    if c.size() == 1 {
        return Ok(());
    }
    let total: usize = vars.iter().map(|(_, v)| v.elem_count()).sum();
    agree_on(c, "the number of parameters", total as u64)?;
    let mut buf = Vec::with_capacity(total);
    for (_, v) in vars {
        buf.extend(v.as_tensor().flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?);
    }
    c.broadcast(&mut buf)?;
    let mut offset = 0;
    for (_, v) in vars {
        let t = v.as_tensor();
        let n = t.elem_count();
        v.set(&Tensor::from_slice(&buf[offset..offset + n], t.shape(), t.device())?.to_dtype(t.dtype())?)?;
        offset += n;
    }
    Ok(())
}

/// Checks that every rank has rank 0's `value` of `what`; a clear error on the ranks that differ.
pub fn agree_on(c: &dyn Collective, what: &str, value: u64) -> Result<()> {
    let mut bytes = value.to_le_bytes();
    c.broadcast_bytes(&mut bytes)?;
    let root = u64::from_le_bytes(bytes);
    if root != value {
        return Err(Error::Collective(format!(
            "rank {} has {value} as {what}, rank 0 has {root}: every rank needs the same config, data and model directory",
            c.rank()
        )));
    }
    Ok(())
}

/// What rank 0 decides at a validation and the others follow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub lr_scale: f64,
    pub out_of_patience: bool,
}

/// Rank 0's `decision` to every rank (one byte broadcast; exact, f64 bits).
pub fn broadcast_decision(c: &dyn Collective, decision: Decision) -> Result<Decision> {
    if c.size() == 1 {
        return Ok(decision);
    }
    let mut bytes = [0u8; 9];
    bytes[..8].copy_from_slice(&decision.lr_scale.to_le_bytes());
    bytes[8] = u8::from(decision.out_of_patience);
    c.broadcast_bytes(&mut bytes)?;
    let mut scale = [0u8; 8];
    scale.copy_from_slice(&bytes[..8]);
    Ok(Decision { lr_scale: f64::from_le_bytes(scale), out_of_patience: bytes[8] != 0 })
}
