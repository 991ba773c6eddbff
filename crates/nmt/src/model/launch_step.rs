//! RNNsearch's training step as launches over a parameter arena (`launch_arena.rs`), Marian's way:
//! every op a GPU twin of a CPU op (`kernels::gpu`), driven through `FusedOp::forward` and
//! `backward` on addresses, the step's host data handed as [`Staged`] buffers and every scalar
//! that changes between updates on the device (`optim_step::DeviceUpdate`). So the step can be
//! recorded once per bucket and replayed, or captured as a CUDA graph (`kernels/gpu/recording.rs`,
//! docs/GPU.md), and its loss and gradients are the composed model's (the tests compare them).
//!
//! This file is the tape's mechanics only (issue 77): the arena (parameters, Adam's moments,
//! gradients, the frozen mask, the loss), the optimiser's device state, and the write-back. The
//! layers' launch forms and their order are the model's (`Rnnsearch::launch` in rnnsearch.rs,
//! each layer's in its `<layer>_launch.rs`), on the tape of `launch_tape.rs`.
use candle_core::Result;

use super::launch_arena::{pack_model, pack_named, positions, supported, unpack, unpack_named};
use super::launch_tape::{Layout, Sizes, Tape};
pub use super::launch_tape::{StepBatch, StepInputs};
use super::rnnsearch::{Decoder, Rnnsearch};
use super::seq2seq::Seq2Seq;
use crate::kernels::gpu::args::{self, MaskRows};
use crate::kernels::gpu::launch::{Addr, Launch, Staged};
use crate::kernels::gpu::optim_step::{DeviceUpdate, UpdateConfig};

/// The step of one model: its arena (parameters, moments, gradients, the frozen mask), the
/// optimiser's device state and the loss.
pub struct LaunchStep<F, I> {
    sizes: Sizes,
    layout: Layout,
    /// Each arena value's parameter element (`launch_arena::positions`), for writing back.
    positions: Vec<Option<usize>>,
    smoothing: f64,
    /// `[θ, m, v, g, frozen, loss]`: kept alive here, used through `at`.
    _bufs: [F; 6],
    at: [Addr; 6],
    opt: DeviceUpdate<F, I>,
}

impl<F, I> LaunchStep<F, I> {
    /// The step of `model` on launcher `l`, updating with `cfg` from learning rate `lr`,
    /// label smoothing `smoothing`.
    pub fn new<L: Launch<Floats = F, Ints = I>>(
        l: &L,
        model: &Seq2Seq,
        cfg: UpdateConfig,
        lr: f64,
        smoothing: f64,
    ) -> crate::error::Result<Self> {
        let (flat, layout) = pack_model(model)?;
        // Each arena value's parameter element: the constants of the packing keep a zero gradient.
        let positions = positions(model)?;
        // Every parameter must be in the arena exactly once: one that a layer's slots leave out
        // is refused here, not found at the first write-back.
        unpack_named(model, &positions, &flat)?;
        let frozen: Vec<f32> = positions.iter().map(|p| if p.is_some() { 1.0 } else { 0.0 }).collect();
        let n = layout.len;
        let sizes = sizes(model)?;
        let bufs = [l.upload(&flat)?, l.zeros(n)?, l.zeros(n)?, l.zeros(n)?, l.upload(&frozen)?, l.zeros(1)?];
        let at = [0, 1, 2, 3, 4, 5].map(|k| l.addr(&bufs[k]));
        let opt = DeviceUpdate::new(l, cfg, n, lr)?;
        Ok(LaunchStep { sizes, layout, positions, smoothing, _bufs: bufs, at, opt })
    }

    /// The parameters, after the step.
    pub fn params(&self, l: &impl Launch) -> Result<Vec<f32>> {
        l.read(self.at[0], self.layout.len)
    }

    /// Writes the step's parameters back into `model` (before a validation or a checkpoint).
    pub fn write_back(&self, l: &impl Launch, model: &Seq2Seq) -> crate::error::Result<()> {
        unpack(model, &self.positions, &self.params(l)?)
    }

    /// An arena laid out as the parameters (the moments) as one tensor per parameter, by name.
    pub fn unpacked(&self, model: &Seq2Seq, arena: &[f32]) -> crate::error::Result<Vec<(String, candle_core::Tensor)>> {
        unpack_named(model, &self.positions, arena)
    }

    /// The optimiser's moments `(m, v)`, each laid out as the parameters.
    pub fn moments(&self, l: &impl Launch) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((l.read(self.at[1], self.layout.len)?, l.read(self.at[2], self.layout.len)?))
    }

    /// Sets the optimiser's moments (laid out as the parameters) and its count of updates
    /// applied: a resumed run's state, between steps.
    pub fn set_state(&self, l: &impl Launch, (m, v): (&[f32], &[f32]), count: u64) -> Result<()> {
        if m.len() != self.layout.len || v.len() != self.layout.len {
            candle_core::bail!("moments of {} and {} values for an arena of {}", m.len(), v.len(), self.layout.len);
        }
        l.write(self.at[1], m)?;
        l.write(self.at[2], v)?;
        self.opt.set_count(l, count)
    }

    /// The last step's gradients.
    pub fn grads(&self, l: &impl Launch) -> Result<Vec<f32>> {
        l.read(self.at[3], self.layout.len)
    }

    /// The last step's loss (the mean token NLL) and gradient norm before clipping.
    pub fn loss_and_norm(&self, l: &impl Launch) -> Result<(f32, f64)> {
        Ok((l.read(self.at[5], 1)?[0], self.opt.norm(l)?))
    }

    /// The optimiser's learning rate (a plateau's decay), between steps.
    pub fn set_lr(&self, l: &impl Launch, lr: f64) -> Result<()> {
        self.opt.set_lr(l, lr)
    }

    /// One step on `l`: forward, backward (`Rnnsearch::launch`) and (`update`) the optimiser's
    /// update in place.
    pub fn run<L: Launch>(&self, l: &L, x: &StepBatch<Staged<i64>, Staged<f32>>, update: bool) -> Result<()> {
        let tape = Tape::new(l, self.sizes, self.smoothing, (self.at[0], self.at[3]), &self.layout);
        Rnnsearch::launch(&tape, x, self.at[5])?;
        // Constants of the packing keep a zero gradient, so the update leaves them alone.
        let len = self.layout.len;
        let frz = MaskRows {
            dst: self.at[3],
            dst_ld: len as i64,
            src: self.at[3],
            src_ld: len as i64,
            mask: self.at[4],
            rows: 1,
            width: len as i64,
        };
        l.launch(&args::MASK_ROWS, len, frz)?;
        if update {
            self.opt.step(l, self.at[0], [self.at[1], self.at[2]], self.at[3])?;
        }
        Ok(())
    }
}

/// The sizes the launch forms of `model`'s layers read.
pub(crate) fn sizes(model: &Seq2Seq) -> crate::error::Result<Sizes> {
    let (net, mc) = (supported(model)?, &model.cfg);
    let (looped, start, att) = match &net.dec {
        Decoder::Bahdanau(d) => (d.loop_weights().dims(2 * mc.hidden_dim)?, d.start.kind, d.att.u_a.dim(1)?),
        Decoder::Conditional(d) => (d.loop_weights().dims(2 * mc.hidden_dim)?, d.start.kind, d.att.u_a.dim(1)?),
    };
    Ok(Sizes {
        emb: mc.emb_dim,
        hidden: mc.hidden_dim,
        att,
        src_vocab: mc.src_vocab,
        tgt_vocab: mc.tgt_vocab,
        units: mc.maxout_dim,
        kind: mc.cell_kind(),
        start,
        layer: mc.output_layer,
        tied: mc.tie_target_embeddings,
        looped,
    })
}

/// A slot of the arena: its name, offset and length.
pub type ParamSpan = (String, usize, usize);

/// The arena of `model`'s gradients `grads` (a parameter without one: zeros), laid out as
/// [`LaunchStep::grads`] lays them out, and each slot's `(name, offset, length)`: how the tests,
/// on the CPU and on a GPU, compare the step with the composed model.
#[doc(hidden)]
pub fn packed_gradients(model: &Seq2Seq, grads: &candle_core::backprop::GradStore) -> crate::error::Result<(Vec<f32>, Vec<ParamSpan>)> {
    let mut named = std::collections::BTreeMap::new();
    for (name, v) in model.params.named_vars() {
        let g = match grads.get(v.as_tensor()) {
            Some(g) => g.clone(),
            None => v.as_tensor().zeros_like()?,
        };
        named.insert(name, g);
    }
    let (_, layout) = pack_model(model)?;
    Ok((pack_named(model, &named)?, layout.regions.iter().map(|&(s, at, len)| (format!("{s:?}"), at, len)).collect()))
}
