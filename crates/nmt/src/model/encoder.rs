//! Encoders: what the decoder reads of the source. Either cell (`model.cell`, `rnn.rs`), one
//! or more layers (`model.enc_layers`).
//!
//! * [`BiRnnEncoder`] (RNNsearch appendix A.2.1): a forward and a backward layer over the
//!   shared source embeddings; annotation `h_j = [→h_j ; ←h_j]`, `(batch, src_len, 2n)`.
//!   Upper layers are bidirectional too and read the annotations below.
//! * [`RnnEncoder`] (RNNenc appendix A): one layer (or a stack); the top's last output
//!   `h^(T)`, `(batch, n)`. With `model.stack = "gated-feedback"` its layers above the first
//!   form a gated-feedback stack (Chung et al. 2015, `feedback.rs`). RNNsearch's encoder
//!   stays plain: each bidirectional layer reads both directions below at `t`, so forwards
//!   layer `j` at `t` needs backward layer `j − 1` at `t`, which through feedback needs
//!   backward layer `j` at `t + 1`, which needs forwards layer `j − 1` at `t + 1`, which
//!   needs forwards layer `j` at `t`: a cycle once `j − 1` has feedback (three layers on).
//!
//! Between layers: unit dropout on the upper layer's input (`model.dropout`) and, with
//! `model.residual`, the upper layer's output plus its input (Wu et al. 2016).
//!
//! Each encoder has one `forward`: it draws its layers' masks at their own sites
//! (`regularizer::stack_masks`: `Site::Input` and `State`, one per direction) and runs its
//! fused form (`crate::kernels`, lengths inside the ops) or its composed candle form, as
//! [`Backend`] says; both forms read the same masks.
use candle_core::Tensor;

use super::backend::Backend;
use super::feedback::{Feedback, FeedbackStack};
use super::grconv::GrConv;
use super::layer_norm::layer_norm_as;
use super::params::ParamBuilder;
use super::regularizer::{masked, stack_masks, state_tensor, Dropout, LayerMasks, Side, StackShape};
use super::rnn::Rnn;
use crate::config::{CellKind, StackKind};
use crate::error::{Error, Result};
use crate::kernels::cpu::birnn;
use crate::kernels::gpu;
use crate::kernels::shapes::rnn_dims::RnnSpec;

/// The checkpoint name of a layer of this cell (`gru` keeps the files of GRU models as they were).
pub(crate) fn cell_name(kind: CellKind) -> &'static str {
    match kind {
        CellKind::Gru(_) => "gru",
        CellKind::Lstm => "lstm",
    }
}

/// The parameters of stacked layer `k` (0-based): the first keeps the single-layer names,
/// the others live under `layer2`, `layer3`, ….
pub(crate) fn layer_scope<'a>(pb: &ParamBuilder<'a>, k: usize) -> ParamBuilder<'a> {
    if k == 0 {
        pb.clone()
    } else {
        pb.pp(&format!("layer{}", k + 1))
    }
}

/// How stacked layers connect.
#[derive(Clone, Copy, Debug)]
pub struct Stack {
    pub(crate) layers: usize,
    pub(crate) residual: bool,
    /// Plain, or gated feedback between the layers above the first (`feedback.rs`): the
    /// decoder's and RNNenc's recurrent encoder's; RNNsearch's encoder ignores it.
    pub(crate) kind: StackKind,
}

/// A padded source batch as the encoders read it.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    /// `(B, S)`, 1 at words, 0 at padding (the composed forms').
    pub(crate) mask: &'a Tensor,
    /// Each sentence's length, at least 1: an empty source still has its `</s>` (the kernels').
    pub(crate) lens: &'a [usize],
}

/// The masks of an encoder stack of `layers` layers of `dirs` directions over `x (B, S, ·)`.
fn encoder_masks(dropout: Option<&mut Dropout>, x: &Tensor, layers: usize, hidden: usize, dirs: usize) -> Result<Vec<LayerMasks>> {
    let (b, s, _) = x.dims3()?;
    let shape = StackShape { side: Side::Encoder, first: 0, layers, input_len: b * s * dirs * hidden, rows: b, hidden, dirs };
    Ok(stack_masks(dropout, shape))
}

/// One bidirectional layer.
#[derive(Clone, Debug)]
pub struct BiLayer {
    pub(crate) fwd: Rnn,
    pub(crate) bwd: Rnn,
}

/// Bidirectional encoder.
#[derive(Clone, Debug)]
pub struct BiRnnEncoder {
    pub(crate) layers: Vec<BiLayer>,
    pub(crate) residual: bool,
}

impl BiRnnEncoder {
    /// `norm`: layer-normalised GRUs (`layer_norm.rs`).
    pub fn new(emb: usize, hidden: usize, kind: CellKind, stack: Stack, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        let layers = (0..stack.layers)
            .map(|k| {
                let (pk, input) = (layer_scope(pb, k), if k == 0 { emb } else { 2 * hidden });
                Ok(BiLayer {
                    fwd: Rnn::new(input, hidden, kind, norm, &pk.pp("fwd"))?,
                    bwd: Rnn::new(input, hidden, kind, norm, &pk.pp("bwd"))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(BiRnnEncoder { layers, residual: stack.residual })
    }

    /// `x (B, S, m)` the embedded source → the top layer's annotations `(B, S, 2n)`, with each
    /// layer's masks drawn from `dropout` (training), in the form `backend` says.
    pub fn forward(&self, x: &Tensor, src: Source, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let n = self.layers[0].fwd.hidden();
        let masks = encoder_masks(dropout, x, self.layers.len(), n, 2)?;
        // Every layer has a GPU form (`kernels/gpu/birnn.rs`: GRUs, LSTMs, layer normalisation).
        match backend.fused() || backend.gpu() {
            true => self.forward_fused(x, src.lens, &masks, backend),
            false => self.forward_composed(x, src.mask, &masks),
        }
    }

    /// The composed form: each direction's recurrence step by step (`rnn.rs`).
    fn forward_composed(&self, x: &Tensor, mask: &Tensor, masks: &[LayerMasks]) -> Result<Tensor> {
        let b = x.dim(0)?;
        let mut input = x.clone();
        for (k, layer) in self.layers.iter().enumerate() {
            let mk = &masks[k];
            let x_k = if k == 0 { input.clone() } else { masked(&input, &mk.input)? };
            let n = layer.fwd.hidden();
            let (m0, m1) = match &mk.state {
                Some(m) => (state_tensor(Some(&m[..b * n]), b, n, x)?, state_tensor(Some(&m[b * n..]), b, n, x)?),
                None => (None, None),
            };
            let (fwd, _) = layer.fwd.run(&layer.fwd.project(&x_k)?, mask, false, m0.as_ref(), None)?;
            let (bwd, _) = layer.bwd.run(&layer.bwd.project(&x_k)?, mask, true, m1.as_ref(), None)?;
            let out = Tensor::cat(&[fwd, bwd], 2)?;
            input = if k > 0 && self.residual { (out + &input)? } else { out };
        }
        Ok(input)
    }

    /// The fused form (`kernels::cpu::birnn`): both directions' input projections are one GEMM.
    /// With layer normalisation each direction's half is normalised on composed ops
    /// (`LN(x W)·γ_x + b`, over the whole sequence at once) and the op is given each
    /// direction's `[b_h | γ_h]`. On a GPU (`backend`): the GPU form instead
    /// (`kernels::gpu::birnn::birnn_sequence`), the input projections on candle's ops (cuBLAS; the
    /// normalisation of `x W` composed).
    fn forward_fused(&self, x: &Tensor, lens: &[usize], masks: &[LayerMasks], backend: Backend) -> Result<Tensor> {
        let (b, s, m) = x.dims3()?;
        let n = self.layers[0].fwd.hidden();
        let x = x.reshape((b * s, m))?;
        let mut ann = x.clone();
        for (k, (layer, mk)) in self.layers.iter().zip(masks).enumerate() {
            let ((wf, bf), (wb, bb)) = (layer.fwd.input_weights(), layer.bwd.input_weights());
            let input = if k == 0 { x.clone() } else { masked(&ann, &mk.input)?.reshape((b * s, 2 * n))? };
            let (gi, bh) = match (layer.fwd.norm(), layer.bwd.norm()) {
                (Some(nf), Some(nb)) => {
                    let xw = input.matmul(&Tensor::cat(&[wf, wb], 1)?)?;
                    let g = xw.dim(1)? / 2;
                    let half = |k: usize, gx: &Tensor, b: &Tensor| -> Result<Tensor> {
                        Ok(layer_norm_as(&xw.narrow(1, k * g, g)?, gx, backend)?.broadcast_add(b)?)
                    };
                    let gi = Tensor::cat(&[half(0, &nf.x, bf)?, half(1, &nb.x, bb)?], 1)?;
                    let rows =
                        [Tensor::cat(&[layer.fwd.bias_h()?, nf.h.clone()], 0)?, Tensor::cat(&[layer.bwd.bias_h()?, nb.h.clone()], 0)?];
                    (gi, Tensor::stack(&rows, 0)?)
                }
                _ => {
                    let (w, b) = (Tensor::cat(&[wf, wb], 1)?, Tensor::cat(&[bf, bb], 0)?);
                    let gi = backend.linear(&input, &w, &b)?;
                    (gi, Tensor::stack(&[layer.fwd.bias_h()?, layer.bwd.bias_h()?], 0)?)
                }
            };
            let u = Tensor::stack(&[layer.fwd.u_cat()?, layer.bwd.u_cat()?], 0)?;
            let spec = RnnSpec { kind: layer.fwd.kind(), lens, state_mask: mk.state.as_deref(), products: backend.products() };
            let out =
                if backend.gpu() { gpu::birnn::birnn_sequence(&gi, &u, &bh, spec)? } else { birnn::birnn_sequence(&gi, &u, &bh, spec)? };
            ann = if k > 0 && self.residual { (out + ann)? } else { out };
        }
        Ok(ann)
    }
}

/// Unidirectional encoder (RNNenc).
#[derive(Clone, Debug)]
pub struct RnnEncoder {
    pub(crate) layers: Vec<Rnn>,
    pub(crate) residual: bool,
    /// The upper layers' gated-feedback weights (`model.stack = "gated-feedback"`), or empty.
    pub(crate) feedback: Vec<Feedback>,
}

impl RnnEncoder {
    pub fn new(emb: usize, hidden: usize, kind: CellKind, stack: Stack, pb: &ParamBuilder) -> Result<Self> {
        let layers = (0..stack.layers)
            .map(|k| Rnn::new(if k == 0 { emb } else { hidden }, hidden, kind, false, &layer_scope(pb, k).pp(cell_name(kind))))
            .collect::<Result<_>>()?;
        let feedback = match stack.kind {
            StackKind::GatedFeedback if stack.layers > 1 => (1..stack.layers)
                .map(|k| Feedback::new(hidden, stack.layers, k, &layer_scope(pb, k).pp("feedback")))
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        Ok(RnnEncoder { layers, residual: stack.residual, feedback })
    }

    /// The layers above the first as a gated-feedback stack, if they are one.
    pub fn feedback_stack(&self) -> Option<FeedbackStack<'_>> {
        (!self.feedback.is_empty()).then_some(FeedbackStack {
            layers: &self.layers[1..],
            feedback: &self.feedback,
            residual: self.residual,
        })
    }

    /// `x (B, S, m)` → `h^(T) (B, n)`, each sentence's top output at its last word, in the
    /// form `backend` says. A gated-feedback stack runs over the first layer's outputs from
    /// zero states, as the decoder's does over its first layer's (`feedback.rs`).
    pub fn forward(&self, x: &Tensor, src: Source, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let masks = encoder_masks(dropout, x, self.layers.len(), self.layers[0].hidden(), 1)?;
        let plain = if self.feedback.is_empty() { self.layers.len() } else { 1 };
        // Its layers have no layer normalisation: on a GPU they all have GPU kernels.
        let out = match backend.fused() || backend.gpu() {
            true => self.forward_fused(x, src.lens, &masks[..plain], backend)?,
            false => self.forward_composed(x, src.mask, &masks[..plain])?,
        };
        let out = match self.feedback_stack() {
            Some(stack) => {
                let zeros = Tensor::zeros((out.dim(0)?, out.dim(2)?), out.dtype(), out.device())?;
                match backend.fused() || backend.gpu() {
                    true => stack.run_fused(&out, &zeros, &masks[1..], backend)?,
                    false => stack.run(&out, &zeros, &masks[1..])?,
                }
            }
            None => out,
        };
        last_outputs(&out, src.lens)
    }

    /// The composed form of the first `masks.len()` layers: `(B, S, n)`.
    fn forward_composed(&self, x: &Tensor, mask: &Tensor, masks: &[LayerMasks]) -> Result<Tensor> {
        let b = x.dim(0)?;
        let mut input = x.clone();
        for (k, (rnn, mk)) in self.layers.iter().zip(masks).enumerate() {
            let x_k = if k == 0 { input.clone() } else { masked(&input, &mk.input)? };
            let state_mask = state_tensor(mk.state.as_deref(), b, rnn.hidden(), x)?;
            let (out, _) = rnn.run(&rnn.project(&x_k)?, mask, false, state_mask.as_ref(), None)?;
            input = if k > 0 && self.residual { (out + &input)? } else { out };
        }
        Ok(input)
    }

    /// The fused form of the first `masks.len()` layers (`kernels::cpu::rnn_sequence`, lengths inside the
    /// op; on a GPU its twin, [`Backend::rnn_sequence`]): `(B, S, n)`.
    fn forward_fused(&self, x: &Tensor, lens: &[usize], masks: &[LayerMasks], backend: Backend) -> Result<Tensor> {
        let (b, s, m) = x.dims3()?;
        let n = self.layers[0].hidden();
        let x = x.reshape((b * s, m))?;
        let zeros = Tensor::zeros((b, n), x.dtype(), x.device())?;
        let mut hs = x.clone();
        for (k, (g, mk)) in self.layers.iter().zip(masks).enumerate() {
            let gw = g.kind().gates() * n;
            let input = if k == 0 { x.clone() } else { masked(&hs, &mk.input)?.reshape((b * s, n))? };
            let (w, bias) = g.input_weights();
            let gi = backend.linear(&input, w, bias)?.reshape((b, s, gw))?;
            let rows = Tensor::cat(&[&g.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, &zeros], 1)?;
            let spec = RnnSpec { kind: g.kind(), lens, state_mask: mk.state.as_deref(), products: backend.products() };
            let out = backend.rnn_sequence(&gi, &g.u_cat()?, &rows, false, spec)?;
            hs = if k > 0 && self.residual { (out + hs)? } else { out };
        }
        Ok(hs)
    }
}

/// Each sentence's output at its last word, `(B, n)`, of `out (B, S, n)` and the lengths. A
/// plain stack carries its states through the padding, so this is also its last position; a
/// gated-feedback stack does not (its kernel has no lengths), and nothing reads its outputs
/// past a sentence's end: the recurrence runs forwards, so they never reach the earlier ones.
fn last_outputs(out: &Tensor, lens: &[usize]) -> Result<Tensor> {
    let (b, s, n) = out.dims3()?;
    let rows: Vec<u32> = lens.iter().enumerate().map(|(r, &l)| (r * s + l.clamp(1, s) - 1) as u32).collect();
    if rows.len() != b {
        return Err(Error::Config(format!("{} source lengths for a batch of {b}", rows.len())));
    }
    let idx = Tensor::from_vec(rows, b, out.device())?;
    Ok(out.reshape((b * s, n))?.index_select(&idx, 0)?)
}

/// RNNenc's encoder: recurrent layers or grConv (`model.encoder`).
#[derive(Clone, Debug)]
pub enum SummaryEncoder {
    Rnn(RnnEncoder),
    GrConv(GrConv),
}

impl SummaryEncoder {
    /// `x (B, S, m)` → the summary input `h^(T) (B, n)`. grConv has no dropout; its tree runs
    /// fused on the CPU, composed elsewhere (`grconv.rs`).
    pub fn forward(&self, x: &Tensor, src: Source, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        match self {
            SummaryEncoder::Rnn(e) => e.forward(x, src, dropout, backend),
            SummaryEncoder::GrConv(g) => g.forward(x, src.lens, backend),
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::config::GruForm;

    /// The encoder's GPU form (`BiRnnEncoder::forward` with `Backend::Gpu`, the kernels emulated
    /// here) against its fused CPU form: a two-layer residual stack, both GRU forms, padded
    /// sentences; the annotations and every parameter's gradient.
    #[test]
    fn the_encoders_gpu_form_equals_its_fused_form() {
        use crate::model::params::Params;
        let (b, s, m, h) = (3usize, 5usize, 4usize, 6usize);
        let lens = [5usize, 2, 3];
        let mask: Vec<f32> = (0..b * s).map(|i| if i % s < lens[i / s] { 1.0 } else { 0.0 }).collect();
        let mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let x = Tensor::from_vec((0..b * s * m).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), (b, s, m), &Device::Cpu).unwrap();
        let w = Tensor::from_vec((0..b * s * 2 * h).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>(), (b, s, 2 * h), &Device::Cpu)
            .unwrap();
        for form in [GruForm::Paper, GruForm::ResetAfter] {
            let run = |backend: Backend| -> Vec<Vec<f32>> {
                let params = Params::fresh(3, 0.4, false, candle_core::DType::F32, &Device::Cpu);
                let stack = Stack { layers: 2, residual: true, kind: StackKind::Plain };
                let enc = BiRnnEncoder::new(m, h, CellKind::Gru(form), stack, false, &params.builder()).unwrap();
                let out = enc.forward(&x, Source { mask: &mask, lens: &lens }, None, backend).unwrap();
                let grads = (&out * &w).unwrap().sum_all().unwrap().backward().unwrap();
                let mut all = vec![out.flatten_all().unwrap().to_vec1::<f32>().unwrap()];
                for (_, v) in params.named_vars() {
                    all.push(grads.get(v.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap());
                }
                all
            };
            let (want, got) = (run(Backend::FusedF32(crate::config::Precision::F32)), run(Backend::Gpu(crate::config::Precision::F32)));
            assert_eq!(want.len(), got.len());
            for (k, (a, e)) in got.iter().zip(&want).enumerate() {
                for (x, y) in a.iter().zip(e) {
                    assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{form:?}: tensor {k}: gpu {x}, fused {y}");
                }
            }
        }
    }
}
