//! The GPU form of either RNNsearch decoder's teacher forcing (`kernels::gpu::attention_loop`:
//! Bahdanau's step and the conditional GRU, GRUs without layer normalisation). What does not
//! depend on the previous step runs before the loop on candle's ops, so on cuBLAS as a few
//! large products: `E y W + b` for every target position, `s_0` (`attention_memory.rs`), the
//! keys `h_j U_a`; the loop's output `[s_i; c_i]` is shifted to `s_{i-1}` on candle's ops
//! when the deep output reads it.
use candle_core::Tensor;

use super::attention::Attention;
use super::attention_memory::ForcedIn;
use super::decoder::shift_outputs;
use super::rnn::Rnn;
use crate::config::{CellKind, OutputState};
use crate::error::{Error, Result};
use crate::kernels::gpu::{self, attention::AttnLoop};

/// A decoder's weights as the loop packs them (`kernels/gpu/attention.rs`).
pub(crate) struct LoopWeights<'a> {
    pub att: &'a Attention,
    /// The cell that reads the context: Bahdanau's only cell, the conditional GRU's second.
    pub cell: &'a Rnn,
    /// `W_c (C, G)` and, for the conditional GRU, `b₂`: the second cell's input weights.
    pub wc: &'a Tensor,
    /// The conditional GRU's first cell (reads `E y`), or `None` for Bahdanau's.
    pub first: Option<&'a Rnn>,
}

/// Whether `rnn` has the GPU's kernels: a GRU without layer normalisation.
pub(crate) fn has_gpu_cell(rnn: &Rnn) -> bool {
    matches!(rnn.kind(), CellKind::Gru(_)) && rnn.norm().is_none()
}

/// Teacher forcing through the GPU loop from `s_0`: `[s; c] (B·T, H + C)` as `x.output` says.
pub(crate) fn forced_loop(x: &ForcedIn, w: LoopWeights<'_>, s0: &Tensor, state_mask: Option<Vec<f32>>) -> Result<Tensor> {
    let (b, t, m) = x.ey.dims3()?;
    let (s, c) = (x.ann.dim(1)?, x.ann.dim(2)?);
    let reads_ey = w.first.unwrap_or(w.cell);
    let (n, CellKind::Gru(form)) = (reads_ey.hidden(), reads_ey.kind()) else {
        return Err(Error::Config("the GPU's decoder loop runs GRUs only".into()));
    };
    let att = w.att;
    let a = att.u_a.dim(1)?;
    let (dw, db) = reads_ey.input_weights();
    let gie = x.ey.reshape((b * t, m))?.matmul(dw)?.broadcast_add(db)?;
    let keys = x.ann.reshape((b * s, c))?.matmul(&att.u_a)?.reshape((b, s, a))?;
    let enc = Tensor::cat(&[x.ann, &keys], 2)?;
    let seq = Tensor::cat(&[gie.flatten_all()?, s0.flatten_all()?], 0)?;
    let (u, b_h) = (w.cell.u_cat()?, w.cell.bias_h()?);
    let mut parts = vec![att.w_a.clone(), att.b_a.clone(), att.v_a.clone(), w.wc.clone(), u, b_h];
    if let Some(first) = w.first {
        parts.extend([first.u_cat()?, first.bias_h()?, w.cell.input_weights().1.clone()]);
    }
    let parts = parts.iter().map(|p| p.flatten_all()).collect::<candle_core::Result<Vec<_>>>()?;
    let lens = x.src.lens.to_vec();
    let spec =
        AttnLoop { batch: b, tgt_len: t, src_len: s, hidden: n, ctx: c, att: a, form, conditional: w.first.is_some(), lens, state_mask };
    let out = gpu::attention_loop(&seq, &enc, &Tensor::cat(&parts, 0)?, spec)?;
    Ok(match x.output {
        OutputState::Current => out,
        OutputState::Previous => {
            let states = out.narrow(1, 0, n)?.reshape((b, t, n))?;
            let prev = shift_outputs(&states, s0, OutputState::Previous)?.reshape((b * t, n))?;
            Tensor::cat(&[prev, out.narrow(1, n, c)?], 1)?
        }
    })
}
