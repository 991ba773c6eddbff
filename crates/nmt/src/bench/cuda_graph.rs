//! `nmt bench --gpu --only train`'s forms of the recorded training step (`model/launch_step.rs`,
//! every product `f32`), beside candle's step that `run.rs` times: its launches run eagerly
//! (`"form": "launches"`), and the same step recorded once and replayed as one CUDA graph per
//! update (`"form": "cuda-graph"`, `kernels::gpu::cuda::Cuda::capture`), each batch staged into
//! the bucket's buffers first, as training would. Only a `--features cuda` build on a GPU has
//! them; elsewhere nothing is emitted. Their figures are unmeasured until a GPU runs the bench
//! (docs/GPU.md).
use nmt_data::Batch;
use serde_json::Value;

use crate::error::Result;
use crate::model::seq2seq::Seq2Seq;

/// Times `steps` updates of each form on `model`'s GPU and hands `emit` one JSON object per
/// form (which `run.rs` completes with the run's common fields): the form, the milliseconds per
/// update, target tokens per second and the last loss. A model the recorded step does not run
/// gets one object saying why.
#[cfg(feature = "cuda")]
pub fn train_forms(model: &Seq2Seq, batch: &Batch, steps: usize, emit: &mut dyn FnMut(Value) -> Result<()>) -> Result<()> {
    use super::timing::{round, timed};
    use crate::kernels::gpu::cuda::Cuda;
    use crate::kernels::gpu::optim_step::UpdateConfig;
    use crate::model::launch_bucket::{host_batch, uploaded, Bucket, MaskSizes};
    use crate::model::launch_step::LaunchStep;
    use serde_json::json;
    let candle_core::Device::Cuda(cd) = model.device() else { return Ok(()) };
    let l = Cuda::new(cd);
    // PyTorch's Adam defaults and no clipping, as `run.rs`'s optimiser.
    let opt = UpdateConfig { adam: true, beta: 0.9, beta2: 0.999, eps: 1e-8, warmup: 0, clip: 0.0, normalize: false };
    let c = &model.cfg;
    let x = host_batch(batch, MaskSizes { emb: c.emb_dim, hidden: c.hidden_dim, units: c.maxout_dim }, None);
    let tokens = (batch.size * batch.tgt_len) as f64;
    let eager = match LaunchStep::new(&l, model, opt, 1e-3, 0.0) {
        Ok(s) => s,
        Err(e) => return emit(json!({"bench": "train", "form": "launches", "skipped": e.to_string()})),
    };
    let up = uploaded(&x);
    let (ms, mn) = timed(steps, || {
        eager.run(&l, &up, true)?;
        Ok(l.synchronize()?)
    })?;
    let (loss, _) = eager.loss_and_norm(&l)?;
    let v = json!({"bench": "train", "form": "launches", "precision": "f32", "ms_median": round(ms, 2), "ms_min": round(mn, 2), "target_tokens_per_s": round(tokens / (ms / 1e3), 1), "loss_last": round(f64::from(loss), 6)});
    emit(v)?;
    let replayed = LaunchStep::new(&l, model, opt, 1e-3, 0.0)?;
    let bucket = Bucket::new(&l, &x)?;
    bucket.stage(&x)?;
    bucket.step(&replayed, true)?;
    let graph = l.capture(bucket.recording())?;
    let (ms, mn) = timed(steps, || {
        bucket.stage(&x)?;
        graph.launch()?;
        Ok(l.synchronize()?)
    })?;
    let (loss, _) = replayed.loss_and_norm(&l)?;
    let ops = bucket.recording().tape_len();
    let v = json!({"bench": "train", "form": "cuda-graph", "precision": "f32", "graph_operations": ops, "ms_median": round(ms, 2), "ms_min": round(mn, 2), "target_tokens_per_s": round(tokens / (ms / 1e3), 1), "loss_last": round(f64::from(loss), 6)});
    emit(v)
}

/// Without the `cuda` feature there is no GPU to time.
#[cfg(not(feature = "cuda"))]
pub fn train_forms(_: &Seq2Seq, _: &Batch, _: usize, _: &mut dyn FnMut(Value) -> Result<()>) -> Result<()> {
    Ok(())
}
