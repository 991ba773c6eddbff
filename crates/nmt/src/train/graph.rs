//! `train.cuda_graph = true`: each update runs RNNsearch's recorded step (`model/launch_step.rs`)
//! instead of candle's loss, backward pass and optimiser, as a CUDA graph replayed per batch shape
//! (`kernels::gpu::recording::Replay`), where [`Backend::training_step`](crate::model::Backend::training_step) chose it. The first batch of a shape is recorded, a real update run
//! eagerly, then captured; every later batch of that shape is staged into the bucket's buffers and
//! the graph launched. The step's masks are drawn at the sites the candle path draws them at, so
//! the run is the same training (its gradients agree to rounding: `model::launch_tests`).
//!
//! The parameters and the optimiser's moments live on the device between validations: before each
//! validation, average or checkpoint they are written back into the model and the [`Optimizer`]
//! ([`GraphUpdater::sync`]), and a resumed run's moments are loaded into the step at the start.
//! One process only (no data-parallel ranks), and up to [`BUCKETS`] shapes recorded at a time:
//! a shape beyond them evicts the oldest, whose buffers are freed. Batches are not padded to shape
//! classes, so a corpus of many shapes records often: each recording is one eager update.
use std::collections::BTreeMap;

use nmt_data::batch::Batch;

use super::collective::Control;
use super::optim::Optimizer;
use super::update::Updated;
use crate::config::{Optimizer as Kind, TrainConfig};
use crate::error::{Error, Result};
use crate::kernels::gpu::optim_step::UpdateConfig;
use crate::kernels::gpu::recording::Replay;
use crate::model::backend::TrainStep;
use crate::model::launch_arena::pack_named;
use crate::model::launch_bucket::{host_batch, Bucket, MaskSizes};
use crate::model::launch_step::LaunchStep;
use crate::model::regularizer::Regularizer;
use crate::model::seq2seq::Seq2Seq;

/// The launcher `train.cuda_graph` runs on: the GPU; in a build without CUDA the emulation's
/// type stands in, never made (`launcher` refuses first).
#[cfg(feature = "cuda")]
pub type GraphLauncher = crate::kernels::gpu::cuda::Cuda;
/// The launcher `train.cuda_graph` runs on: the GPU; in a build without CUDA the emulation's
/// type stands in, never made (`launcher` refuses first).
#[cfg(not(feature = "cuda"))]
pub type GraphLauncher = crate::kernels::gpu::emulated::Emulated;

/// The launcher of a run whose updates are `step` ([`Backend::training_step`](crate::model::Backend::training_step) decided, before the
/// corpus was read), or `None` for candle's step.
pub fn launcher(step: TrainStep, model: &Seq2Seq) -> Result<Option<GraphLauncher>> {
    if step == TrainStep::Layers {
        return Ok(None);
    }
    #[cfg(feature = "cuda")]
    if let candle_core::Device::Cuda(cd) = model.device() {
        crate::model::launch_arena::supported(model)?;
        return Ok(Some(crate::kernels::gpu::cuda::Cuda::new(cd)));
    }
    let _ = model;
    Err(Error::Config("train.cuda_graph needs a GPU: `nmt train --gpu`, built with --features cuda".into()))
}

/// Batch shapes recorded at a time.
pub const BUCKETS: usize = 8;

/// A recorded shape: its key `(B, S, T)` and which masks are on, the bucket and its graph.
struct Held<'l, L: Replay> {
    key: ((usize, usize, usize), Vec<bool>),
    bucket: Bucket<'l, L>,
    graph: L::Graph,
}

/// The updates of a run on launcher `L`.
pub struct GraphUpdater<'l, L: Replay> {
    l: &'l L,
    step: LaunchStep<L::Floats, L::Ints>,
    sizes: MaskSizes,
    /// Most recently used last.
    held: Vec<Held<'l, L>>,
    /// Updates applied (the optimiser's count, on the host too).
    count: u64,
}

/// The optimiser's settings as the device update reads them.
fn update_config(t: &TrainConfig) -> UpdateConfig {
    let adam = t.optimizer == Kind::Adam;
    let (beta, beta2, eps) = if adam { (t.adam_betas.0, t.adam_betas.1, t.adam_eps) } else { (t.adadelta_rho, 0.0, t.adadelta_eps) };
    UpdateConfig { adam, beta, beta2, eps, warmup: t.warmup as usize, clip: t.clip_norm, normalize: t.normalize_updates }
}

impl<'l, L: Replay> GraphUpdater<'l, L> {
    /// The updater of `model` on `l`, from `opt`'s moments and count (zero in a fresh run).
    pub fn new(l: &'l L, model: &Seq2Seq, opt: &Optimizer, t: &TrainConfig) -> Result<Self> {
        let step = LaunchStep::new(l, model, update_config(t), opt.lr(), t.label_smoothing)?;
        let state: BTreeMap<String, candle_core::Tensor> = opt.state_tensors()?.into_iter().collect();
        let moments = |which: &str| -> Result<Vec<f32>> {
            let named = model.params.named_vars().into_iter().map(|(n, v)| {
                let t = state.get(&format!("opt.{which}.{n}")).cloned().map_or_else(|| v.as_tensor().zeros_like(), Ok)?;
                Ok((n, t))
            });
            pack_named(model, &named.collect::<Result<_>>()?)
        };
        step.set_state(l, (&moments("first")?, &moments("second")?), opt.step)?;
        let c = &model.cfg;
        Ok(GraphUpdater {
            l,
            step,
            sizes: MaskSizes { emb: c.emb_dim, hidden: c.hidden_dim, units: c.maxout_dim },
            held: Vec::new(),
            count: opt.step,
        })
    }

    /// One update on `batch` (the whole batch: one process) with `reg`'s masks; `tokens` its
    /// target tokens, `local` the process's stop flags.
    pub fn update(&mut self, batch: &Batch, mut reg: Regularizer, tokens: usize, local: Control) -> Result<Updated> {
        let x = host_batch(batch, self.sizes, Some(&mut reg.dropout));
        let key = (x.shape, x.masks.iter().map(Option::is_some).collect::<Vec<_>>());
        match self.held.iter().position(|h| h.key == key) {
            Some(i) => {
                let h = self.held.remove(i);
                h.bucket.stage(&x)?;
                self.l.replay(h.bucket.recording(), &h.graph)?;
                self.held.push(h);
            }
            None => {
                if self.held.len() >= BUCKETS {
                    self.held.remove(0);
                }
                let bucket = Bucket::new(self.l, &x)?;
                bucket.stage(&x)?;
                bucket.step(&self.step, true)?;
                let graph = self.l.capture(bucket.recording())?;
                self.held.push(Held { key, bucket, graph });
            }
        }
        self.count += 1;
        let (loss, grad_norm) = self.step.loss_and_norm(self.l)?;
        let loss = f64::from(loss);
        if !loss.is_finite() || !grad_norm.is_finite() {
            return Err(Error::Input(format!("loss {loss}, gradient norm {grad_norm} at update {}: training diverged", self.count)));
        }
        Ok(Updated { loss, tokens, grad_norm, control: Control { loss_sum: loss * tokens as f64, ..local } })
    }

    /// Writes the parameters into `model` and the moments and count into `opt` (before a
    /// validation, an average or a checkpoint).
    pub fn sync(&self, model: &Seq2Seq, opt: &mut Optimizer) -> Result<()> {
        self.step.write_back(self.l, model)?;
        let (m, v) = self.step.moments(self.l)?;
        let mut state = BTreeMap::new();
        for (which, arena) in [("first", &m), ("second", &v)] {
            for (name, t) in self.step.unpacked(model, arena)? {
                state.insert(format!("opt.{which}.{name}"), t);
            }
        }
        opt.load_state(&state, self.count)
    }

    /// The learning rate `opt` applies next (after a plateau's decay, in `train.lr_cooldown`).
    pub fn set_lr(&self, opt: &Optimizer) -> Result<()> {
        Ok(self.step.set_lr(self.l, opt.lr())?)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use nmt_data::Batch;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::config::{Config, Impl, ModelConfig, WeightInit};
    use crate::kernels::gpu::emulated::Emulated;
    use crate::model::launch_tests::batch;
    use crate::model::regularizer::DropoutRates;
    use crate::model::BatchTensors;

    /// The recipe's model at test size, its training settings (a short warm-up) and batches of
    /// two shapes, alternating, so that buckets are recorded and replayed.
    fn setup() -> (ModelConfig, TrainConfig, Vec<Batch>) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/rnnsearch-s2s.toml");
        let c = Config::from_file(&root, &[]).unwrap();
        let m = ModelConfig {
            emb_dim: 6,
            hidden_dim: 5,
            maxout_dim: 6,
            src_vocab: 23,
            tgt_vocab: 19,
            init: WeightInit::Paper,
            init_std: 0.3,
            ..c.model
        };
        let t = TrainConfig { warmup: 2, imp: Impl::Composed, ..c.train };
        let mut rng = ChaCha8Rng::seed_from_u64(71);
        let batches = (0..6).map(|k| batch(&mut rng, &m, if k % 2 == 0 { (3, 5, 4) } else { (2, 6, 3) })).collect();
        (m, t, batches)
    }

    fn rates(m: &ModelConfig) -> DropoutRates {
        DropoutRates { units: m.dropout, src_words: 0.0, tgt_words: 0.0, recurrent: m.recurrent_dropout }
    }

    fn params(model: &Seq2Seq) -> Vec<f32> {
        model.params.named_vars().iter().flat_map(|(_, v)| v.flatten_all().unwrap().to_vec1::<f32>().unwrap()).collect()
    }

    /// Four updates of candle's step and of the recorded one (emulated) on `batches[..4]` from
    /// the same weights, each told `progress(k)` of the budget before update `k` (the trainer's
    /// order: the optimiser's fraction, then the recorded step's rate); asserts the same losses
    /// and returns candle's model, the recorded step's, its optimiser and its updater.
    fn four_updates<'l>(
        l: &'l Emulated,
        (m, t, batches): &(ModelConfig, TrainConfig, Vec<Batch>),
        progress: impl Fn(usize) -> f64,
    ) -> (Seq2Seq, Seq2Seq, Optimizer, GraphUpdater<'l, Emulated>) {
        let (mut cpu, dev) =
            (Seq2Seq::fresh(m, 3, DType::F32, &Device::Cpu).unwrap(), Seq2Seq::fresh(m, 3, DType::F32, &Device::Cpu).unwrap());
        cpu.set_impl(Impl::Composed);
        let mut opt_cpu = Optimizer::new(cpu.params.named_vars(), t).unwrap();
        let mut opt_dev = Optimizer::new(dev.params.named_vars(), t).unwrap();
        let mut g = GraphUpdater::new(l, &dev, &opt_dev, t).unwrap();
        let reg = |step: u64| Regularizer::new(rates(m), t.label_smoothing, t.seed, step);
        for (k, b) in batches[..4].iter().enumerate() {
            let tokens = b.tgt_out.iter().filter(|&&y| y != nmt_data::PAD).count();
            let bt = BatchTensors::new(b, DType::F32, &Device::Cpu).unwrap();
            let loss = cpu.loss(&bt, Some(&mut reg(k as u64))).unwrap().mean;
            let grads = loss.backward().unwrap();
            opt_cpu.set_progress(progress(k));
            opt_cpu.clip(&grads).unwrap();
            opt_cpu.update(&grads).unwrap();
            let want = f64::from(loss.to_scalar::<f32>().unwrap());
            opt_dev.set_progress(progress(k));
            g.set_lr(&opt_dev).unwrap();
            let got = g.update(b, reg(k as u64), tokens, Control::default()).unwrap();
            assert!((got.loss - want).abs() <= 1e-5 * want.abs(), "update {k}: loss {} against candle's {want}", got.loss);
        }
        g.sync(&dev, &mut opt_dev).unwrap();
        assert_eq!(opt_dev.step, 4);
        (cpu, dev, opt_dev, g)
    }

    /// The largest difference of two models' parameters.
    fn worst(a: &Seq2Seq, b: &Seq2Seq) -> f32 {
        params(a).iter().zip(&params(b)).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
    }

    /// `train.cuda_graph`'s updates (emulated) against candle's: the same losses, and the
    /// parameters, moments and count written back after four updates are candle's up to rounding.
    /// Then a resumed updater (from the written-back state) continues as the first would have,
    /// bit for bit: nothing of the state is lost between the device and a checkpoint.
    #[test]
    fn graph_updates_are_candles_and_resume_bit_for_bit() {
        let l = Emulated;
        let setup = setup();
        let (m, t, batches) = &setup;
        let (cpu, dev, mut opt_dev, mut g) = four_updates(&l, &setup, |_| 0.0);
        let reg = |step: u64| Regularizer::new(rates(m), t.label_smoothing, t.seed, step);
        // Adam's first updates move each parameter by about lr·sign(g): 2e-3 per update here.
        let w = worst(&cpu, &dev);
        assert!(w <= 1e-4, "parameters after 4 updates differ from candle's by {w}");
        let mut resumed = GraphUpdater::new(&l, &dev, &opt_dev, t).unwrap();
        for (k, b) in batches[4..].iter().enumerate() {
            let step = 4 + k as u64;
            let tokens = b.tgt_out.iter().filter(|&&y| y != nmt_data::PAD).count();
            let (a, r) = (
                g.update(b, reg(step), tokens, Control::default()).unwrap(),
                resumed.update(b, reg(step), tokens, Control::default()).unwrap(),
            );
            assert_eq!((a.loss.to_bits(), a.grad_norm.to_bits()), (r.loss.to_bits(), r.grad_norm.to_bits()), "update {step}");
        }
        let (other, mut opt_other) =
            (Seq2Seq::fresh(m, 9, DType::F32, &Device::Cpu).unwrap(), Optimizer::new(dev.params.named_vars(), t).unwrap());
        g.sync(&dev, &mut opt_dev).unwrap();
        resumed.sync(&other, &mut opt_other).unwrap();
        assert_eq!(params(&dev), params(&other), "the resumed run's parameters");
    }

    /// `train.lr_cooldown = 1` (linear to zero): the recorded step takes the host's rate before each
    /// update (`GraphUpdater::set_lr`) and ends where candle's step ends; the same four updates
    /// at the constant rate end elsewhere (each moves a parameter by about lr·sign(g)).
    #[test]
    fn the_recorded_step_follows_the_cooldown() {
        let (m, t, batches) = setup();
        let linear = (m, TrainConfig { lr_cooldown: 1.0, max_steps: 4, ..t }, batches);
        let l = Emulated;
        let (cpu, dev, _, _) = four_updates(&l, &linear, |k| k as f64 / 4.0);
        let w = worst(&cpu, &dev);
        assert!(w <= 1e-4, "parameters after 4 scheduled updates differ from candle's by {w}");
        let (constant, _, _, _) = four_updates(&l, &linear, |_| 0.0);
        assert!(worst(&constant, &cpu) > 1e-3, "the schedule changed nothing");
    }

    /// A run whose updates are candle's has no launcher; a recorded step without a GPU is an
    /// error here too (the refusals themselves are `Backend::training_step`'s, tested there).
    #[test]
    fn candles_step_has_no_launcher_and_the_recorded_one_needs_a_gpu() {
        let (m, _, _) = setup();
        let model = Seq2Seq::fresh(&m, 3, DType::F32, &Device::Cpu).unwrap();
        assert!(launcher(TrainStep::Layers, &model).unwrap().is_none());
        let cpu = launcher(TrainStep::Recorded, &model).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(cpu.contains("needs a GPU"), "{cpu}");
    }
}
