//! The encoder pass on the host (`Seq2Seq::encode` is the candle twin): the source
//! embeddings, then the architecture's own host encoder (`HostArchitecture::encode`,
//! `model/rnnsearch.rs`, `model/rnnenc.rs`), then the decoder's start states.
use super::sub_vocab::SubVocab;
use super::weights::HostModel;
use crate::error::Result;
use crate::kernels::dense::embed;
use crate::model::copy::CopySource;
use crate::model::decoder::HostMemory;
use crate::model::rnn::HostBatch;

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
/// encoder's snapshot does not fit the batch (`kernels::feedback_op::feedback_host`).
pub fn encode(model: &HostModel, src: &[u32], lens: &[usize], threads: usize) -> Result<HostEncoded> {
    let cfg = &model.cfg;
    let (b, n, m) = (lens.len(), cfg.hidden_dim, cfg.emb_dim);
    let s = src.len() / b.max(1);
    let x = embed(&model.src_emb, src, m);
    // An empty source still has its `</s>`; the kernels need lengths of at least 1.
    let kernel_lens: Vec<usize> = lens.iter().map(|&l| l.max(1)).collect();
    let at = HostBatch { batch: b, len: s, lens: &kernel_lens, kind: cfg.cell_kind(), hidden: n };
    let (memory, h0) = model.net.encode(cfg, &x, &at, threads)?;
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
