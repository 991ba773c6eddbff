//! One decoder step on the host for `R` live rows (`Seq2Seq::decode_step` is the candle twin):
//! the wiring of the layers' host forms. The first layer's step is its decoder's
//! (`model/attention_decoder.rs`, `model/summary_decoder.rs`), the layers above are
//! `model/upper.rs`'s, the scores `model/output.rs`'s projection and the copy mixture
//! `model/copy.rs`'s.
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

use super::dense::embed;
use super::encode::HostEncoded;
use super::weights::{HostCore, HostModel};
use crate::config::OutputState;
use crate::kernels::gemm::Mat;
use crate::kernels::profile;
use crate::kernels::projection::RowBest;
use crate::model::copy::MixIn;
use crate::model::decoder::{HostMemory, HostStepIn, HostStepOut};

/// The live rows of a step: previous states `s (R, w)` (`w = n`, or the LSTM's `2n`),
/// previous words `y (R)`, and each row's sentence in the encoded batch.
pub struct LiveRows<'a> {
    pub s: &'a [f32],
    pub y: &'a [u32],
    pub sent: &'a [usize],
}

pub struct StepOut {
    /// The new states `(R, w)`.
    pub state: Vec<f32>,
    /// Each row's normaliser and best tokens.
    pub best: RowBest,
    /// Attention weights `(R, S)`, zero at padding (RNNsearch, when asked for).
    pub alpha: Option<Vec<f32>>,
}

/// One step for `rows`; `want_alpha` keeps the attention weights.
/// `want[r]` is how many best tokens row `r` needs; tokens in `skip` are never chosen.
pub fn step(
    model: &HostModel,
    enc: &HostEncoded,
    rows: &LiveRows<'_>,
    want: &[usize],
    skip: &[u32],
    want_alpha: bool,
    threads: usize,
) -> StepOut {
    let f = features(model, enc, rows, want_alpha, threads);
    let r_n = rows.y.len();
    let mut best = profile::timed(profile::SEARCH_SCORES, || match &enc.vocab {
        None => model.out.proj.best(&f.t, r_n, want, skip, threads),
        Some(v) => v.best(&f.t, r_n, want, skip, threads),
    });
    if let (Some(copy), Some(al)) = (&model.copy, &f.alpha) {
        let x = MixIn { t: &f.t, s_out: &f.s_out, ctx: &f.ctx, ey: &f.ey, alpha: al, rows: rows.sent, want, skip, src: enc.copy_source() };
        best = copy.mix(&model.out.proj, &best, &x);
    }
    StepOut { state: f.state, best, alpha: f.alpha }
}

/// A step up to the output layer's features: what [`step`] scores, and what an ensemble
/// (`search/ensemble.rs`, through `Scorer::step_full`) turns into full distributions.
pub struct Features {
    /// The new states `(R, w)`.
    pub state: Vec<f32>,
    /// The deep output's maxout features `t (R, l)`.
    pub t: Vec<f32>,
    /// Attention weights `(R, S)` (RNNsearch, when asked for, and always for a copy model).
    pub alpha: Option<Vec<f32>>,
    /// What the copy gate reads (a copy model; empty otherwise): the deep output's state
    /// `(R, n)`, the contexts `(R, 2n)` and the previous words' embeddings `(R, m)`.
    pub s_out: Vec<f32>,
    pub ctx: Vec<f32>,
    pub ey: Vec<f32>,
}

/// The decoder step for `rows` up to the maxout features: the first layer's step by its
/// decoder's host form (`HostAttention::step`, `HostSummary::step`), the upper layers
/// (`HostUpper::step`), and the deep output's state term and maxout.
pub fn features(model: &HostModel, enc: &HostEncoded, rows: &LiveRows<'_>, want_alpha: bool, threads: usize) -> Features {
    let cfg = &model.cfg;
    let (r_n, n, m) = (rows.y.len(), cfg.hidden_dim, cfg.emb_dim);
    let sw = model.state_width();
    let stacked = !model.upper.is_empty();
    let l2 = model.out.b.len();
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
        out_state: (!stacked).then_some(cfg.output_state),
        threads,
    };
    let first = match (&model.core, &enc.memory) {
        // The copy mixture reads the attention weights whether or not they are reported.
        (HostCore::Search { dec, .. }, HostMemory::Attention { mem }) => {
            dec.step(mem, &enc.lens, &x, &model.out, want_alpha || model.copy.is_some())
        }
        (HostCore::Enc { dec, .. }, HostMemory::Summary { gate_ctx, out_ctx }) => dec.step(gate_ctx, out_ctx, &x, &model.out),
        _ => unreachable!("`encode` builds the memory of the model's own decoder"),
    };
    let HostStepOut { mut state, mut pre, ctx, alpha } = first;
    // The state the deep output read (the copy gate reads it too).
    let s_out: Vec<f32> = if stacked {
        let (full, top) = model.upper.step(rows.s, &state, threads);
        let s_out = match cfg.output_state {
            OutputState::Previous => model.upper.top_output(rows.s),
            OutputState::Current => top,
        };
        model.out.o_h.mul_add(&mut pre, 0, l2, Mat::new(&s_out, r_n, n), threads);
        state = full;
        s_out
    } else if model.copy.is_some() {
        match cfg.output_state {
            OutputState::Previous => s_prev.to_vec(),
            OutputState::Current => state.chunks_exact(model.layer_width()).flat_map(|r| r[..n].iter().copied()).collect(),
        }
    } else {
        Vec::new()
    };
    let t: Vec<f32> = pre.chunks_exact(2).map(|p| p[0].max(p[1])).collect();
    Features { state, t, alpha, s_out, ctx, ey }
}
