//! The encoders' forward pass on the host (model/encoder.rs and `Seq2Seq::encode` are the
//! candle twins): embeddings, then the recurrent layer(s) over the padded batch by the training
//! kernels' own forward pass (`kernels::birnn`, `kernels::rnn`: either cell, each sentence's
//! state carried through its padding; a gated-feedback stack by `kernels::feedback`'s), then
//! what the decoder reads, by the decoder's host form
//! (`HostAttention::memory`, `HostSummary::memory`).
use super::dense::embed;
use super::shortlist::SubVocab;
use super::weights::{HostCore, HostModel};
use crate::error::Result;
use crate::kernels::birnn;
use crate::kernels::gemm::fill_rows;
use crate::kernels::rnn::{self, RnnDims};
use crate::model::copy::CopySource;
use crate::model::decoder::HostMemory;

/// The encoded batch of `B` sentences, padded to `S` positions.
pub struct HostEncoded {
    /// What the decoder reads of the sources (its architecture's form).
    pub memory: HostMemory,
    /// The decoder's start state `(B, w)`: `s_0`, or the LSTM's `[s_0; 0]` ([`HostModel::state_width`]).
    pub init: Vec<f32>,
    /// A copy model's extended source ids `(B, S)` (`Batch::src_ext`; empty otherwise).
    pub src_ext: Vec<u32>,
    /// True source lengths (`</s>` included) and the padded length `S`.
    pub lens: Vec<usize>,
    pub src_len: usize,
    /// The batch's lexical shortlist (`None`: the whole vocabulary is scored).
    pub vocab: Option<SubVocab>,
}

impl HostEncoded {
    /// The sources as the copy mixture reads them.
    pub fn copy_source(&self) -> CopySource<'_> {
        CopySource { ext: &self.src_ext, lens: &self.lens, len: self.src_len }
    }
}

/// Encodes `src (B, S)` ids with true lengths `lens`. Fails only if a gated-feedback
/// encoder's snapshot does not fit the batch (`kernels::feedback::feedback_host`).
pub fn encode(model: &HostModel, src: &[u32], lens: &[usize], threads: usize) -> Result<HostEncoded> {
    let cfg = &model.cfg;
    let (b, n, m) = (lens.len(), cfg.hidden_dim, cfg.emb_dim);
    let s = src.len() / b.max(1);
    let x = embed(&model.src_emb, src, m);
    // An empty source still has its `</s>`; the kernels need lengths of at least 1.
    let kernel_lens = lens.iter().map(|&l| l.max(1)).collect();
    let dirs = if matches!(model.core, HostCore::Search { .. }) { 2 } else { 1 };
    let kind = cfg.cell_kind();
    let g = kind.gates() * n;
    let gi_stride = g * dirs;
    let dims = RnnDims { batch: b, len: s, hidden: n, reverse: false, kind, lens: kernel_lens, mask: None, gi_stride, gi_off: 0 };
    // Each layer's outputs `(B, S, dirs·n)`, bottom up; upper layers read the one below and,
    // with residual connections, add it (model/encoder.rs).
    let layers = match &model.core {
        HostCore::Search { enc, .. } | HostCore::Enc { enc, .. } => enc,
    };
    let mut out = x.clone();
    for (k, layer) in layers.iter().enumerate() {
        let gi = layer.w.affine(&out, b * s, &layer.b, threads);
        let h = if dirs == 2 {
            // Both directions at once, one per thread (kernels/birnn.rs).
            birnn::annotations(&dims, &gi, &layer.u, &layer.bh)
        } else {
            let mut row = layer.bh.clone();
            row.resize(g + n, 0.0); // [b_h; h_0 = 0]
            rnn::forward(&dims, &gi, &layer.u, &fill_rows(&row, b)).0
        };
        out = if k > 0 && cfg.residual { h.iter().zip(&out).map(|(a, b)| a + b).collect() } else { h };
    }
    if let HostCore::Enc { feedback: Some(stack), .. } = &model.core {
        out = stack.run(&out, b)?;
    }
    let (memory, h0) = match &model.core {
        HostCore::Search { dec, .. } => dec.memory(&out, b, s, threads),
        HostCore::Enc { dec, .. } => {
            let last: Vec<f32> = match &model.grconv {
                Some(g) => g.summaries(&x, &dims.lens, threads),
                // Each sentence's top output at its last word (`encoder::last_outputs`).
                None => dims.lens.iter().enumerate().flat_map(|(r, &l)| out[(r * s + l.min(s) - 1) * n..][..n].iter().copied()).collect(),
            };
            dec.memory(&last, &model.out, threads)
        }
    };
    let init = start_states(h0, n, model.layer_width(), cfg.dec_layers);
    Ok(HostEncoded { memory, init, src_ext: Vec::new(), lens: lens.to_vec(), src_len: s, vocab: None })
}

/// Start states `(B, L·w)` from each sentence's `h_0 (B, n)`: every one of the `L` decoder
/// layers starts from `h_0`, the LSTM's with a zero cell state after it (`model/rnn.rs`,
/// `start_state`; `model/upper.rs`).
fn start_states(h0: Vec<f32>, n: usize, width: usize, layers: usize) -> Vec<f32> {
    if width == n && layers == 1 {
        return h0;
    }
    let layer = |r: &[f32]| r.iter().copied().chain(std::iter::repeat_n(0.0, width - n)).collect::<Vec<f32>>();
    h0.chunks_exact(n).flat_map(|r| layer(r).repeat(layers)).collect()
}
