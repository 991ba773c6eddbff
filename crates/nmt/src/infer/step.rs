//! One decoder step on the host for `R` live rows (`Seq2Seq::decode_step` is the candle twin):
//! the previous words' embeddings, then the architecture's own host step up to the deep
//! output's features (`HostArchitecture::features`: the first layer's step, the layers above,
//! `model/rnnsearch.rs`, `model/rnnenc.rs`). The host scorer (`search/host.rs`) turns them into
//! scores (`model/output.rs`'s projection) and the copy mixture (`model/copy.rs`).
//!
//! RNNsearch (appendix A.2.2), row `r` reading sentence `sent[r]`:
//! ```text
//! c_i  = attention(s_{i-1}, h)                    (R, 2n)   W_a s: one GEMM, the rest per row
//! s_i  = GRU(E y_{i-1} W + b + c_i C, s_{i-1})    (R, n)    two input GEMMs, two in the cell
//! t~_i = s O_h + E y_{i-1} O_y + c_i O_c + b      (R, 2l)   three accumulated GEMMs
//! t_i  = maxout(t~_i)                             (R, l)
//! z    = G t_i + b_G → lse, best tokens per row   (K_y, R)  kernels/projection.rs, never stored
//! ```
//! RNNenc (appendix A) replaces attention by the summary `c` of the row's sentence: its gate
//! term `C c` joins `U' h` before the reset gate, and `O_c c` joins the deep output's bias.
//!
//! With the LSTM (`model.cell`) a state row is `[s; cell]` (`2n`); the products read `s`, the
//! four gates come out of the same GEMMs (`G = 4n` columns instead of `3n`), and the row
//! update is the training kernels' `lstm_cell::update_row`.
use std::borrow::Cow;

use super::encode::HostEncoded;
use super::weights::HostModel;
use crate::kernels::dense::embed;
use crate::model::decoder::{HostFeatures, HostStepIn};

/// The live rows of a step: previous states `s (R, w)` (`w = n`, or the LSTM's `2n`),
/// previous words `y (R)`, and each row's sentence in the encoded batch.
pub struct LiveRows<'a> {
    pub s: &'a [f32],
    pub y: &'a [u32],
    pub sent: &'a [usize],
}

/// The decoder step for `rows` up to the maxout features (the architecture's
/// `HostArchitecture::features`), and the previous words' embeddings `(R, m)` (the copy gate
/// reads them): what the host scorer scores (`search/host.rs`), and what an ensemble (`search/ensemble.rs`, through
/// `Scorer::step_full`) turns into full distributions.
pub fn features(model: &HostModel, enc: &HostEncoded, rows: &LiveRows<'_>, want_alpha: bool, threads: usize) -> (HostFeatures, Vec<f32>) {
    let cfg = &model.cfg;
    let (n, m) = (cfg.hidden_dim, cfg.emb_dim);
    let sw = model.state_width();
    // A copy model's extended ids (past the vocabulary) enter the decoder as `<unk>`.
    let k_y = cfg.tgt_vocab as u32;
    let y: Vec<u32> = rows.y.iter().map(|&w| if w < k_y { w } else { nmt_data::UNK }).collect();
    let ey = embed(&model.tgt_emb, &y, m);
    // The previous outputs `s_{i-1} (R, n)`: the states themselves, or the LSTM's `s` parts.
    let s_prev: Cow<[f32]> =
        if sw == n { Cow::Borrowed(rows.s) } else { Cow::Owned(rows.s.chunks_exact(sw).flat_map(|r| r[..n].iter().copied()).collect()) };
    let x = HostStepIn {
        s_prev: &s_prev,
        state: rows.s,
        width: sw,
        ey: &ey,
        sent: rows.sent,
        out_state: (cfg.dec_layers == 1).then_some(cfg.output_state),
        threads,
    };
    let f = model.net.features(cfg, &enc.memory, &enc.lens, &x, want_alpha);
    (f, ey)
}
