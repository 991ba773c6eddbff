//! The encoders' forward pass on the host (model/encoder.rs and `Seq2Seq::encode` are the
//! candle twins): embeddings, then the recurrent layer(s) over the padded batch by the training
//! kernels' own forward pass (`kernels::birnn`, `kernels::rnn`: either cell, each sentence's
//! state carried through its padding), and what the decoder reads.
use super::dense::{affine, embed, tanh_in_place};
use super::shortlist::SubVocab;
use super::weights::{HostCore, HostModel};
use crate::kernels::birnn;
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::rnn::{self, RnnDims};
use crate::model::copy::CopySource;

/// The encoded batch of `B` sentences, padded to `S` positions.
pub struct HostEncoded {
    /// RNNsearch: `(B, S, 2n + A)`, position `j` of sentence `b` holds `[h_j ; U_a h_j]`
    /// (the layout `attend_row` reads). Empty for RNNenc.
    pub mem: Vec<f32>,
    /// RNNenc: `C c` `(B, G)` and `O_c c` `(B, 2l)`. Empty for RNNsearch.
    pub gate_ctx: Vec<f32>,
    pub out_ctx: Vec<f32>,
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

/// Encodes `src (B, S)` ids with true lengths `lens`.
pub fn encode(model: &HostModel, src: &[u32], lens: &[usize], threads: usize) -> HostEncoded {
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
        let width = if k == 0 { m } else { dirs * n };
        let gi = affine(&out, b * s, width, &layer.w, &layer.b, threads);
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
    match &model.core {
        HostCore::Search { dec, .. } => {
            let ann = out;
            let a = cfg.att_dim;
            let ew = 2 * n + a;
            let mut mem = vec![0f32; b * s * ew];
            for (row, h) in mem.chunks_exact_mut(ew).zip(ann.chunks_exact(2 * n)) {
                row[..2 * n].copy_from_slice(h);
            }
            // ←h_1: the backward direction's state at each sentence's first position.
            let back_first: Vec<f32> = (0..b).flat_map(|r| ann[r * s * 2 * n + n..r * s * 2 * n + 2 * n].iter().copied()).collect();
            // U_a h_j for every position, written next to h_j.
            let annotations = Mat::strided(&mem, 0, b * s, 2 * n, ew);
            let mut uh = vec![0f32; b * s * a];
            matmul(&mut uh, 0, a, annotations, Mat::new(&dec.u_a, 2 * n, a), false, threads);
            for (row, u) in mem.chunks_exact_mut(ew).zip(uh.chunks_exact(a)) {
                row[2 * n..].copy_from_slice(u);
            }
            let mut init = affine(&back_first, b, n, &dec.w_s, &dec.b_s, threads);
            tanh_in_place(&mut init);
            let init = start_states(init, n, model.layer_width(), cfg.dec_layers);
            HostEncoded {
                mem,
                gate_ctx: Vec::new(),
                out_ctx: Vec::new(),
                init,
                src_ext: Vec::new(),
                lens: lens.to_vec(),
                src_len: s,
                vocab: None,
            }
        }
        HostCore::Enc { dec, .. } => {
            let last: Vec<f32> = match &model.grconv {
                Some(g) => g.summaries(&x, &dims.lens, threads),
                // The state carried to the last position is each sentence's h_T.
                None => (0..b).flat_map(|r| out[((r + 1) * s - 1) * n..(r + 1) * s * n].iter().copied()).collect(),
            };
            let mut c = affine(&last, b, n, &dec.v, &dec.b_v, threads);
            tanh_in_place(&mut c);
            let mut init = affine(&c, b, n, &dec.v_init, &dec.b_init, threads);
            tanh_in_place(&mut init);
            let init = start_states(init, n, model.layer_width(), cfg.dec_layers);
            // C c (+ b_h for the reset-after form): the recurrent term the reset multiplies.
            let gate_ctx = affine(&c, b, n, &dec.c, &dec.b_h, threads);
            let l2 = model.out.b.len();
            let out_ctx = affine(&c, b, n, &model.out.o_c, &vec![0f32; l2], threads);
            HostEncoded { mem: Vec::new(), gate_ctx, out_ctx, init, src_ext: Vec::new(), lens: lens.to_vec(), src_len: s, vocab: None }
        }
    }
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
