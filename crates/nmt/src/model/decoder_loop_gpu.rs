//! What the GPU's RNNsearch decoder loop (`kernels::gpu::attention_op::attention_loop`) reads of a decoder,
//! shared by teacher forcing (`decoder_gpu.rs`) and the search: the packed weights, the sizes,
//! and [`StepMemory`], the search's per-batch memory and its GPU step. On a GPU the candle
//! search (`search/candle.rs`) steps the first decoder layer here: the loop's launches for one
//! step (docs/GPU.md) instead of a composed step's one kernel per op; the deep output and the
//! layers above stay composed.
use candle_core::Tensor;

use super::attention::Attention;
use super::rnn::Rnn;
use crate::config::{CellKind, OutputState, Precision, StartState};
use crate::error::{Error, Result};
use crate::kernels::gpu;
use crate::kernels::shapes::attn_dims::AttnDims;

/// A decoder's weights as the loop packs them (`kernels/gpu/attention_kernels.rs`).
pub(crate) struct LoopWeights<'a> {
    pub att: &'a Attention,
    /// The cell that reads the context: Bahdanau's only cell, the conditional GRU's second.
    pub cell: &'a Rnn,
    /// `W_c (C, G)`: Bahdanau's `C`, the conditional GRU's second cell's input weights (whose
    /// bias, `b₂`, the loop reads from `cell`).
    pub wc: &'a Tensor,
    /// The conditional GRU's first cell (reads `E y`), or `None` for Bahdanau's.
    pub first: Option<&'a Rnn>,
}

impl LoopWeights<'_> {
    /// The loop's sizes for a context of width `ctx` (the annotations').
    pub(crate) fn dims(&self, ctx: usize) -> Result<LoopDims> {
        let reads_ey = self.first.unwrap_or(self.cell);
        let att = self.att.u_a.dim(1)?;
        let (hidden, kind, conditional, norm) = (reads_ey.hidden(), reads_ey.kind(), self.first.is_some(), self.att.norm.is_some());
        Ok(LoopDims { hidden, ctx, att, kind, conditional, norm })
    }

    /// The loop's packed weights (`kernels/gpu/attention_kernels.rs`'s `w`): with layer normalisation
    /// (the conditional GRU's) its gains follow, as `AttnDims::woff` places them.
    pub(crate) fn packed(&self) -> Result<Tensor> {
        let att = self.att;
        let mut parts = vec![att.w_a.clone(), att.b_a.clone(), att.v_a.clone(), self.wc.clone(), self.cell.u_cat()?, self.cell.bias_h()?];
        if let Some(first) = self.first {
            parts.extend([first.u_cat()?, first.bias_h()?, self.cell.input_weights().1.clone()]);
            match (first.norm(), self.cell.norm(), &att.norm) {
                (Some(g1), Some(g2), Some(ga)) => parts.extend([g1.h.clone(), g2.x.clone(), g2.h.clone(), ga.w.clone()]),
                (None, None, None) => {}
                _ => return Err(Error::Config("layer normalisation in some of the conditional decoder's layers only".into())),
            }
        }
        let parts = parts.iter().map(|p| p.flatten_all()).collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }
}

/// The loop's sizes that do not depend on the batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopDims {
    hidden: usize,
    ctx: usize,
    att: usize,
    kind: CellKind,
    conditional: bool,
    norm: bool,
}

impl LoopDims {
    /// The CPU op's sizes for `b` sentences of `t` target and `s` source positions; `output`
    /// and `start` are the callers' (the loop ignores them), no dropout. The loop itself refuses
    /// the conditional GRU with LSTM cells (`kernels::gpu::attention_op::attention_loop`).
    pub(crate) fn at(self, b: usize, t: usize, s: usize, lens: &[usize]) -> AttnDims {
        let LoopDims { hidden, ctx, att, kind, conditional, norm } = self;
        let (output, start, lens) = (OutputState::Current, StartState::FirstBackward, lens.to_vec());
        // The GPU loop multiplies in f32 (its products' precision is the CPU op's only).
        let products = Precision::F32;
        AttnDims {
            batch: b,
            tgt_len: t,
            src_len: s,
            hidden,
            ctx,
            att,
            lens,
            kind,
            output,
            state_mask: None,
            conditional,
            start,
            norm,
            products,
        }
    }
}

/// What the search's GPU step reads of a batch (`decoder::AttentionMemory::gpu`): each source
/// position's `[h_j; U_a h_j]` `(B, S, C + A)`, the sentences' lengths, the packed weights
/// (once per batch, not per step) and the sizes.
#[derive(Clone, Debug)]
pub(crate) struct StepMemory {
    enc: Tensor,
    lens: Vec<usize>,
    w: Tensor,
    dims: LoopDims,
}

impl StepMemory {
    /// From the annotations `ann (B, S, C)`, the keys `uh (B, S, A)` (`Attention::precompute`:
    /// `U_a h_j`, or with layer normalisation `LN(h_j U_a)·γ_u + b_a`) and the lengths.
    pub(crate) fn new(w: LoopWeights<'_>, ann: &Tensor, uh: &Tensor, lens: &[usize]) -> Result<Self> {
        let dims = w.dims(ann.dim(2)?)?;
        Ok(StepMemory { enc: Tensor::cat(&[ann, uh], 2)?, lens: lens.to_vec(), w: w.packed()?, dims })
    }

    /// Rows `rows` (`idx` on the device).
    pub(crate) fn select(&self, idx: &Tensor, rows: &[usize]) -> Result<Self> {
        let lens = rows
            .iter()
            .map(|&r| self.lens.get(r).copied().ok_or_else(|| Error::Input(format!("row {r} of a batch of {}", self.lens.len()))))
            .collect::<Result<_>>()?;
        Ok(StepMemory { enc: self.enc.index_select(idx, 0)?, lens, w: self.w.clone(), dims: self.dims })
    }

    /// One decoder step on the GPU (`kernels::gpu::attention_op::attention_step`) for the memory's rows
    /// from `gi = E y_{i-1} W + b (R, G)` and the state `(R, H)` (an LSTM's `[s_{i-1};
    /// m_{i-1}] (R, 2H)`): the new state, `c_i (R, C)`, `α_i (R, S)`, as the decoder's composed
    /// `step` gives them.
    pub(crate) fn step(&self, gi: &Tensor, s: &Tensor) -> Result<[Tensor; 3]> {
        let (r, src_len, _) = self.enc.dims3()?;
        let (h, c, lstm) = (self.dims.hidden, self.dims.ctx, self.dims.kind == CellKind::Lstm);
        // `[h; m]` row by row becomes `[h…; m…]`, as the step reads it.
        let states = match lstm {
            true => vec![s.narrow(1, 0, h)?.flatten_all()?, s.narrow(1, h, h)?.flatten_all()?],
            false => vec![s.flatten_all()?],
        };
        let seq = Tensor::cat(&[&[gi.flatten_all()?], &states[..]].concat(), 0)?;
        let out = gpu::attention_op::attention_step(&seq, &self.enc, &self.w, self.dims.at(r, 1, src_len, &self.lens))?;
        // Contiguous: candle's CUDA product refuses a narrowed view (`tests/gpu_layouts.rs`).
        let part = |at: usize, w: usize| out.narrow(1, at, w)?.contiguous();
        let state = match lstm {
            true => Tensor::cat(&[part(0, h)?, part(h + c + src_len, h)?], 1)?,
            false => part(0, h)?,
        };
        Ok([state, part(h, c)?, part(h + c, src_len)?])
    }
}
