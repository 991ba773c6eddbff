//! Encoders: what the decoder reads of the source. Either cell (`model.cell`, `rnn.rs`), one
//! or more layers (`model.enc_layers`).
//!
//! * [`BiRnnEncoder`] (RNNsearch appendix A.2.1): a forward and a backward layer over the
//!   shared source embeddings; annotation `h_j = [→h_j ; ←h_j]`, `(batch, src_len, 2n)`.
//!   Upper layers are bidirectional too and read the annotations below.
//! * [`RnnEncoder`] (RNNenc appendix A): one layer (or a stack); the top's last output
//!   `h^(T)`, `(batch, n)`.
//!
//! Between layers: unit dropout on the upper layer's input (`model.dropout`) and, with
//! `model.residual`, the upper layer's output plus its input (Wu et al. 2016).
//! Each layer's masks are drawn at its own sites (`regularizer::Site::Input` and `State`, one
//! per direction), which `regularizer::stack_masks` also draws for the fused forms
//! (`forward_fused`, on `crate::kernels`): both forms get the same masks.
use candle_core::Tensor;

use super::grconv::GrConv;
use super::params::ParamBuilder;
use super::regularizer::{masked, Dropout, LayerMasks, Side, Site};
use super::rnn::Rnn;
use crate::config::{CellKind, StackKind};
use crate::error::Result;
use crate::kernels::{birnn, linear, rnn};

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
    pub layers: usize,
    pub residual: bool,
    /// Plain, or gated feedback between the decoder's layers (`feedback.rs`; encoders are plain).
    pub kind: StackKind,
}

/// Layer `layer`'s input (above the first): `x` with unit dropout (training).
fn layer_input(x: &Tensor, layer: usize, dropout: Option<&mut Dropout>) -> Result<Tensor> {
    match dropout {
        Some(d) => d.apply(Site::Input { side: Side::Encoder, layer }, x),
        None => Ok(x.clone()),
    }
}

/// One bidirectional layer.
#[derive(Clone, Debug)]
pub struct BiLayer {
    pub fwd: Rnn,
    pub bwd: Rnn,
}

/// Bidirectional encoder.
#[derive(Clone, Debug)]
pub struct BiRnnEncoder {
    pub layers: Vec<BiLayer>,
    pub residual: bool,
}

impl BiRnnEncoder {
    pub fn new(emb: usize, hidden: usize, kind: CellKind, stack: Stack, pb: &ParamBuilder) -> Result<Self> {
        let layers = (0..stack.layers)
            .map(|k| {
                let (pk, input) = (layer_scope(pb, k), if k == 0 { emb } else { 2 * hidden });
                Ok(BiLayer { fwd: Rnn::new(input, hidden, kind, &pk.pp("fwd"))?, bwd: Rnn::new(input, hidden, kind, &pk.pp("bwd"))? })
            })
            .collect::<Result<_>>()?;
        Ok(BiRnnEncoder { layers, residual: stack.residual })
    }

    /// `x: (batch, src_len, m)`, `mask: (batch, src_len)` → the top layer's annotations
    /// `(batch, src_len, 2n)` and `←h_1`, their backward half at the first word `(batch, n)`
    /// (it has read the whole sentence; RNNsearch initialises the decoder from it).
    pub fn forward(&self, x: &Tensor, mask: &Tensor, mut dropout: Option<&mut Dropout>) -> Result<(Tensor, Tensor)> {
        let b = x.dim(0)?;
        let mut input = x.clone();
        for (k, layer) in self.layers.iter().enumerate() {
            let x_k = if k == 0 { input.clone() } else { layer_input(&input, k, dropout.as_deref_mut())? };
            let n = layer.fwd.hidden();
            let mut masks = [None, None];
            if let Some(d) = dropout.as_deref_mut() {
                let site = |dir| Site::State { side: Side::Encoder, layer: k, dir };
                masks = [d.recurrent_tensor(site(0), b, n, x)?, d.recurrent_tensor(site(1), b, n, x)?];
            }
            let (fwd, _) = layer.fwd.run(&layer.fwd.project(&x_k)?, mask, false, masks[0].as_ref(), None)?;
            let (bwd, _) = layer.bwd.run(&layer.bwd.project(&x_k)?, mask, true, masks[1].as_ref(), None)?;
            let out = Tensor::cat(&[fwd, bwd], 2)?;
            input = if k > 0 && self.residual { (out + &input)? } else { out };
        }
        let n = self.layers[0].fwd.hidden();
        let back_first = input.narrow(1, 0, 1)?.squeeze(1)?.narrow(1, n, n)?.contiguous()?;
        Ok((input, back_first))
    }

    /// The fused form of [`Self::forward`] (`kernels::birnn`): `x (B·S, m)` the embedded
    /// source, `lens` each sentence's length, `masks` each layer's (drawn by the caller) →
    /// the annotations `(B, S, 2n)`. Both directions' input projections are one GEMM.
    pub fn forward_fused(&self, x: &Tensor, lens: &[usize], masks: &[LayerMasks]) -> Result<Tensor> {
        let (b, n) = (lens.len(), self.layers[0].fwd.hidden());
        let s = x.dim(0)? / b.max(1);
        let mut ann = x.clone();
        for (k, (layer, mk)) in self.layers.iter().zip(masks).enumerate() {
            let ((wf, bf), (wb, bb)) = (layer.fwd.input_weights(), layer.bwd.input_weights());
            let input = if k == 0 { x.clone() } else { masked(&ann, &mk.input)?.reshape((b * s, 2 * n))? };
            let gi = linear::linear(&input, &Tensor::cat(&[wf, wb], 1)?, &Tensor::cat(&[bf, bb], 0)?)?;
            let u = Tensor::stack(&[layer.fwd.u_cat()?, layer.bwd.u_cat()?], 0)?;
            let bh = Tensor::stack(&[layer.fwd.bias_h()?, layer.bwd.bias_h()?], 0)?;
            let spec = rnn::RnnSpec { kind: layer.fwd.kind(), lens, state_mask: mk.state.as_deref() };
            let out = birnn::birnn_sequence(&gi, &u, &bh, spec)?;
            ann = if k > 0 && self.residual { (out + ann)? } else { out };
        }
        Ok(ann)
    }
}

/// Unidirectional encoder (RNNenc).
#[derive(Clone, Debug)]
pub struct RnnEncoder {
    pub layers: Vec<Rnn>,
    pub residual: bool,
}

impl RnnEncoder {
    pub fn new(emb: usize, hidden: usize, kind: CellKind, stack: Stack, pb: &ParamBuilder) -> Result<Self> {
        let layers = (0..stack.layers)
            .map(|k| Rnn::new(if k == 0 { emb } else { hidden }, hidden, kind, &layer_scope(pb, k).pp(cell_name(kind))))
            .collect::<Result<_>>()?;
        Ok(RnnEncoder { layers, residual: stack.residual })
    }

    /// `x: (batch, src_len, m)` → `h^(T)` `(batch, n)`, each sentence's top output after its
    /// last word (padding carries every layer's state, so the last position holds it).
    pub fn forward(&self, x: &Tensor, mask: &Tensor, mut dropout: Option<&mut Dropout>) -> Result<Tensor> {
        let (b, s, _) = x.dims3()?;
        let mut input = x.clone();
        for (k, rnn) in self.layers.iter().enumerate() {
            let x_k = if k == 0 { input.clone() } else { layer_input(&input, k, dropout.as_deref_mut())? };
            let state_mask = match dropout.as_deref_mut() {
                Some(d) => d.recurrent_tensor(Site::State { side: Side::Encoder, layer: k, dir: 0 }, b, rnn.hidden(), x)?,
                None => None,
            };
            let (out, _) = rnn.run(&rnn.project(&x_k)?, mask, false, state_mask.as_ref(), None)?;
            input = if k > 0 && self.residual { (out + &input)? } else { out };
        }
        Ok(input.narrow(1, s - 1, 1)?.squeeze(1)?)
    }

    /// The fused form of [`Self::forward`] (`kernels::rnn`, lengths inside the op): `x (B·S, m)`,
    /// `lens`, `masks` each layer's → `h^(T) (B, n)`.
    pub fn forward_fused(&self, x: &Tensor, lens: &[usize], masks: &[LayerMasks]) -> Result<Tensor> {
        let (b, n) = (lens.len(), self.layers[0].hidden());
        let s = x.dim(0)? / b.max(1);
        let zeros = Tensor::zeros((b, n), x.dtype(), x.device())?;
        let mut hs = x.clone();
        for (k, (g, mk)) in self.layers.iter().zip(masks).enumerate() {
            let gw = g.kind().gates() * n;
            let input = if k == 0 { x.clone() } else { masked(&hs, &mk.input)?.reshape((b * s, n))? };
            let (w, bias) = g.input_weights();
            let gi = linear::linear(&input, w, bias)?.reshape((b, s, gw))?;
            let rows = Tensor::cat(&[&g.bias_h()?.unsqueeze(0)?.broadcast_as((b, gw))?, &zeros], 1)?;
            let spec = rnn::RnnSpec { kind: g.kind(), lens, state_mask: mk.state.as_deref() };
            let out = rnn::rnn_sequence(&gi, &g.u_cat()?, &rows, false, spec)?;
            hs = if k > 0 && self.residual { (out + hs)? } else { out };
        }
        Ok(hs.narrow(1, s - 1, 1)?.squeeze(1)?)
    }
}

/// RNNenc's encoder: recurrent layers or grConv (`model.encoder`).
#[derive(Clone, Debug)]
pub enum SummaryEncoder {
    Rnn(RnnEncoder),
    GrConv(GrConv),
}

impl SummaryEncoder {
    /// `x: (batch, src_len, m)`, `mask: (batch, src_len)` → the summary input `h^(T)` `(batch, n)`.
    pub fn forward(&self, x: &Tensor, mask: &Tensor, dropout: Option<&mut Dropout>) -> Result<Tensor> {
        match self {
            SummaryEncoder::Rnn(e) => e.forward(x, mask, dropout),
            SummaryEncoder::GrConv(g) => {
                let lens: Vec<usize> =
                    mask.sum(1)?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?.iter().map(|&l| (l as usize).max(1)).collect();
                g.forward(x, &lens)
            }
        }
    }

    /// The fused form: `x (B·S, m)`, `lens`, `masks` → `h^(T) (B, n)`. grConv runs level by
    /// level on composed ops (`grconv.rs`): it has no recurrence to fuse.
    pub fn forward_fused(&self, x: &Tensor, lens: &[usize], masks: &[LayerMasks]) -> Result<Tensor> {
        match self {
            SummaryEncoder::Rnn(e) => e.forward_fused(x, lens, masks),
            SummaryEncoder::GrConv(g) => {
                let (b, m) = (lens.len(), x.dim(1)?);
                g.forward(&x.reshape((b, x.dim(0)? / b.max(1), m))?, lens)
            }
        }
    }
}
