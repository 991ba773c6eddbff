//! [`HostModel`]: a [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call,
//! and its encoder pass and decoder step on them, no autodiff graph: the twin of
//! `Seq2Seq::encode` and `Seq2Seq::decode_step`, which the fused CPU search runs on (the
//! `Scorer` over it is `search/host.rs`). This file holds what the model adds to its
//! architecture: the embeddings (a copy model's extended ids read as `<unk>`,
//! `copy::host_vocab_ids`); everything between the embeddings and the scores (the start
//! states, the layers' steps, the output state a stack reads, the copy mixture) is the
//! architecture's own host form (`HostArchitecture`, `rnnsearch.rs`, `rnnenc.rs`).
//!
//! Matrices stay `(in, out)` row-major (the per-step products `x W` read them as they are),
//! and the output projection is pre-transposed for column-major scores
//! (`kernels/cpu/projection.rs`). What makes this faster than the candle search
//! (docs/PERF-HISTORY.md, "Translation speed on real data"): no per-op tensor allocation or
//! graph bookkeeping; scores never normalised in full (the normaliser and a thresholded top-k
//! read them once); only live hypotheses computed; the encoder directions on a thread each.
//! `tests/infer.rs` checks both searches give the same hypotheses and scores, for every
//! architecture, greedy and beam, with alignments.
//!
//! Shapes: `B` sentences, `S` padded source length, `R` live rows, `m` embedding, `n` hidden,
//! `w` one decoder layer's state (`n`, or the LSTM's `[s; cell]`, `2n`), `L` decoder layers.
use super::copy::host_vocab_ids;
use super::decoder::{HostEncoded, HostRows};
use super::layers::HostLayers;
use super::output::BatchShortlist;
use super::rnn::HostBatch;
use super::{Backend, Seq2Seq};
use crate::config::{Impl, ModelConfig};
use crate::error::{Error, Result};
use crate::kernels::cpu::row_best::RowBest;
use crate::model::dense::{gather_rows, host};

/// Everything search needs, on the host.
pub struct HostModel {
    pub(crate) cfg: ModelConfig,
    src_emb: Vec<f32>,
    tgt_emb: Vec<f32>,
    /// The architecture's layers, in their host forms.
    net: HostLayers,
}

/// The live rows of a step: previous states `(R, L·w)`, previous words `y (R)`, and each
/// row's sentence in the encoded batch.
pub struct LiveRows<'a> {
    pub s: &'a [f32],
    pub y: &'a [u32],
    pub sent: &'a [usize],
}

/// One host step's result for `R` rows (the search's `Scored`).
pub struct HostScored {
    /// The new states `(R, L·w)`.
    pub state: Vec<f32>,
    /// Per row, the best tokens: `log p = z − lse[r]`.
    pub best: RowBest,
    /// Attention weights `(R, S)`, zero at padding (when asked for and the model attends).
    pub alpha: Option<Vec<f32>>,
}

impl HostModel {
    /// Copies `model`'s parameters. Only `f32` CPU models are supported; the caller falls back
    /// to the candle search for anything else (see [`HostModel::supports`]).
    ///
    /// With `int8`, the step's products multiply in int8 (`kernels/cpu/engine/int8.rs`,
    /// `model::dense::Dense`): the output projection, the decoder's and the deep output's, and
    /// the recurrent layers' input products. `f32` stay: the recurrent products inside the
    /// training kernels that run the encoder (`kernels::cpu::birnn`, `kernels::cpu::rnn_sequence`), the
    /// encoder-side attention `U_a h` and summaries (once per batch), grConv, the gated-feedback
    /// step and the copy gate. The word tables (`precomputed.rs`) are built once, after that
    /// choice, from the products the step would use.
    pub fn new(model: &Seq2Seq, int8: bool) -> Result<Self> {
        if !Self::supports(model) {
            return Err(Error::Config("fused search needs an f32 model on the CPU".into()));
        }
        let (src_emb, tgt_emb) = model.embeddings();
        let mut m = HostModel { src_emb: host(src_emb)?, tgt_emb: host(tgt_emb)?, cfg: model.cfg.clone(), net: model.host_layers()? };
        if int8 {
            m.net.quantize();
        }
        m.net.tabulate(&m.tgt_emb, rayon::current_num_threads());
        Ok(m)
    }

    /// Whether the fused search can run `model`: `f32` parameters in host memory (every
    /// architecture, cell, encoder and stack), as [`Backend`] decides.
    pub fn supports(model: &Seq2Seq) -> bool {
        Backend::new(Impl::Fused, model.device(), model.dtype()).host()
    }

    /// The width of a decoder state row: every layer's state side by side, `L·w`.
    pub fn state_width(&self) -> usize {
        self.cfg.dec_layers * self.cfg.layer_state_width()
    }

    /// The target vocabulary size `K_y`.
    pub fn vocab_size(&self) -> usize {
        self.net.output().proj.vocab_size()
    }

    /// Whether the decoder attends (and so can report alignments).
    pub fn has_attention(&self) -> bool {
        self.net.has_attention()
    }

    /// Encodes `src (B, S)` ids with true lengths `lens`, a copy model's extended ids
    /// `src_ext (B, S)` (empty otherwise) and the batch's `shortlist` (sorted target ids).
    /// Fails only if a gated-feedback encoder's snapshot does not fit the batch
    /// (`kernels::cpu::feedback_op::feedback_host`).
    pub fn encode(&self, src: &[u32], lens: &[usize], src_ext: Vec<u32>, shortlist: Option<&[u32]>, threads: usize) -> Result<HostEncoded> {
        let cfg = &self.cfg;
        let b = lens.len();
        let s = src.len() / b.max(1);
        let x = gather_rows(&self.src_emb, src, cfg.emb_dim);
        // An empty source still has its `</s>`; the kernels need lengths of at least 1.
        let kernel_lens: Vec<usize> = lens.iter().map(|&l| l.max(1)).collect();
        let at = HostBatch { batch: b, len: s, lens: &kernel_lens, kind: cfg.cell_kind(), hidden: cfg.hidden_dim };
        let (memory, init) = self.net.encode(cfg, &x, &at, threads)?;
        let shortlist = shortlist.map(|ids| BatchShortlist::new(&self.net.output().proj, ids.to_vec()));
        Ok(HostEncoded { memory, init, src_ext, lens: lens.to_vec(), src_len: s, shortlist })
    }

    /// One decoder step for `rows`: per row the `want[r]` best tokens outside `skip`;
    /// `want_alpha` keeps the attention weights.
    pub fn step(
        &self,
        enc: &HostEncoded,
        rows: &LiveRows<'_>,
        want: &[usize],
        skip: &[u32],
        want_alpha: bool,
        threads: usize,
    ) -> HostScored {
        let y = host_vocab_ids(rows.y, self.cfg.tgt_vocab);
        let ey = gather_rows(&self.tgt_emb, &y, self.cfg.emb_dim);
        let r = HostRows { state: rows.s, y: &y, ey: &ey, sent: rows.sent, threads };
        let f = self.net.features(&self.cfg, enc, &r, want_alpha);
        let best = self.net.best(enc, &f, &r, want, skip);
        HostScored { state: f.state, best, alpha: f.alpha }
    }

    /// One decoder step with the whole distribution `log p (R, width)`, `width ≥ K_y` (an
    /// ensemble's): the new states, the distribution and the attention weights.
    pub fn step_full(
        &self,
        enc: &HostEncoded,
        rows: &LiveRows<'_>,
        width: usize,
        want_alpha: bool,
        threads: usize,
    ) -> (Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
        let y = host_vocab_ids(rows.y, self.cfg.tgt_vocab);
        let ey = gather_rows(&self.tgt_emb, &y, self.cfg.emb_dim);
        let r = HostRows { state: rows.s, y: &y, ey: &ey, sent: rows.sent, threads };
        let f = self.net.features(&self.cfg, enc, &r, want_alpha);
        let log_probs = self.net.full(enc, &f, &r, width);
        (f.state, log_probs, f.alpha)
    }
}
