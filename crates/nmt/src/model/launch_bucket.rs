//! A batch for the recorded GPU step (`launch_step.rs`), and a bucket: the step recorded once
//! for one batch shape `(B, S, T)` and replayed for every later batch of that shape, each staged
//! into the bucket's buffers first (`kernels/gpu/recording.rs`).
use candle_core::Result;
use nmt_data::Batch;

use super::launch_step::{LaunchStep, StepBatch, StepInputs};
pub use super::launch_tape::MaskSizes;
use super::regularizer::Dropout;
use super::rnnsearch::Rnnsearch;
use crate::kernels::gpu::launch::{Launch, Staged};
use crate::kernels::gpu::recording::{Recording, Slot};

/// `batch`'s host data for the step, with `dropout`'s masks drawn by the layers
/// (`Rnnsearch::launch_masks`) at the sites the composed model draws them at.
pub fn host_batch(batch: &Batch, z: MaskSizes, dropout: Option<&mut Dropout>) -> StepBatch<Vec<i64>, Vec<f32>> {
    let (b, s, t) = (batch.size, batch.src_len, batch.tgt_len);
    let ids = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
    let tokens = batch.tgt_out.iter().filter(|&&y| y != nmt_data::PAD).count().max(1);
    let weights = batch.tgt_out.iter().map(|&y| if y == nmt_data::PAD { 0.0 } else { 1.0 / tokens as f32 }).collect();
    let masks = Rnnsearch::launch_masks(dropout, (b, s, t), z);
    let ints = StepInputs {
        src: ids(&batch.src),
        tgt_in: ids(&batch.tgt_in),
        tgt_out: ids(&batch.tgt_out),
        src_lens: batch.src_lengths.iter().map(|&l| l.max(1) as i64).collect(),
        all: vec![t as i64; b],
    };
    StepBatch { shape: (b, s, t), ints, weights, masks }
}

/// A batch as host values the ops upload (an eager step).
pub fn uploaded(x: &StepBatch<Vec<i64>, Vec<f32>>) -> StepBatch<Staged<i64>, Staged<f32>> {
    let i = &x.ints;
    let ints = StepInputs {
        src: Staged::Host(i.src.clone()),
        tgt_in: Staged::Host(i.tgt_in.clone()),
        tgt_out: Staged::Host(i.tgt_out.clone()),
        src_lens: Staged::Host(i.src_lens.clone()),
        all: Staged::Host(i.all.clone()),
    };
    StepBatch {
        shape: x.shape,
        ints,
        weights: Staged::Host(x.weights.clone()),
        masks: x.masks.iter().map(|m| m.clone().map(Staged::Host)).collect(),
    }
}

/// The step recorded for one batch shape, and its buffers.
pub struct Bucket<'l, L: Launch> {
    rec: Recording<'l, L>,
    bufs: StepBatch<Slot, Slot>,
    /// Whether the step has been recorded (the first [`Bucket::step`]).
    recorded: std::cell::Cell<bool>,
}

impl<'l, L: Launch> Bucket<'l, L> {
    /// The buffers for batches shaped like `like` (which masks are on, too), before any step.
    pub fn new(l: &'l L, like: &StepBatch<Vec<i64>, Vec<f32>>) -> Result<Self> {
        let rec = Recording::new(l);
        let i = &like.ints;
        let int = |v: &Vec<i64>| rec.int_buffer(v.len());
        let ints = StepInputs {
            src: int(&i.src)?,
            tgt_in: int(&i.tgt_in)?,
            tgt_out: int(&i.tgt_out)?,
            src_lens: int(&i.src_lens)?,
            all: int(&i.all)?,
        };
        let weights = rec.buffer(like.weights.len())?;
        let masks = like.masks.iter().map(|m| m.as_ref().map(|v| rec.buffer(v.len())).transpose()).collect::<Result<Vec<_>>>()?;
        Ok(Bucket { rec, bufs: StepBatch { shape: like.shape, ints, weights, masks }, recorded: std::cell::Cell::new(false) })
    }

    /// Writes `x` into the buffers (outside the recorded step).
    pub fn stage(&self, x: &StepBatch<Vec<i64>, Vec<f32>>) -> Result<()> {
        let b = &self.bufs;
        let same_masks =
            b.masks.len() == x.masks.len() && b.masks.iter().zip(&x.masks).all(|(a, m)| a.map(|s| s.len) == m.as_ref().map(Vec::len));
        if x.shape != b.shape || !same_masks {
            candle_core::bail!("a batch of shape {:?} staged into the bucket of {:?}", x.shape, b.shape);
        }
        let (i, bi) = (&x.ints, &b.ints);
        for (dst, src) in [(bi.src, &i.src), (bi.tgt_in, &i.tgt_in), (bi.tgt_out, &i.tgt_out), (bi.src_lens, &i.src_lens), (bi.all, &i.all)]
        {
            self.rec.stage_ints(dst, src)?;
        }
        self.rec.stage(b.weights, &x.weights)?;
        for (dst, src) in b.masks.iter().zip(&x.masks) {
            if let (Some(d), Some(v)) = (dst, src) {
                self.rec.stage(*d, v)?;
            }
        }
        Ok(())
    }

    /// The staged batch as the step reads it: device buffers, nothing to upload.
    fn staged(&self) -> StepBatch<Staged<i64>, Staged<f32>> {
        let b = &self.bufs;
        let (dev, devf) = (|s: Slot| Staged::<i64>::Device(s.addr), |s: Slot| Staged::<f32>::Device(s.addr));
        let i = &b.ints;
        let ints =
            StepInputs { src: dev(i.src), tgt_in: dev(i.tgt_in), tgt_out: dev(i.tgt_out), src_lens: dev(i.src_lens), all: dev(i.all) };
        StepBatch { shape: b.shape, ints, weights: devf(b.weights), masks: b.masks.iter().map(|m| m.map(devf)).collect() }
    }

    /// One step of `step` on the staged batch: recorded the first time, replayed after.
    pub fn step<F, I>(&self, step: &LaunchStep<F, I>, update: bool) -> Result<()> {
        if self.recorded.get() {
            return self.rec.replay();
        }
        let x = self.staged();
        self.rec.record(|r| step.run(r, &x, update))?;
        self.recorded.set(true);
        Ok(())
    }

    /// The recording (the capture glue replays it on a capturing stream).
    pub fn recording(&self) -> &Recording<'l, L> {
        &self.rec
    }
}
