//! The host snapshot as a [`Scorer`]: the fused CPU search. States are row-major `(R, w)`
//! host rows (`w` = [`HostModel::state_width`]); the encoder runs on `encode.rs`, a step on
//! `step.rs`, and only the best tokens are normalised ([`Projection::best`]) except where an
//! ensemble asks for the whole distribution.
//!
//! [`Projection::best`]: crate::kernels::projection::Projection::best
use nmt_data::batch::Batch;
use rayon::prelude::*;

use super::scorer::{Pick, Rows, Scored, ScoredFull, Scorer};
use crate::error::Result;
use crate::infer::encode::{encode, HostEncoded};
use crate::infer::step::{features, LiveRows};
use crate::infer::sub_vocab::SubVocab;
use crate::infer::weights::HostModel;
use crate::kernels::profile;
use crate::kernels::row_best::RowBest;
use crate::model::copy::MixIn;

/// The fewest rows a thread's share of a step gets: below it, one share runs on all threads.
const MIN_SHARE: usize = 8;

impl Scorer for HostModel {
    type Encoded = HostEncoded;
    type States = Vec<f32>;

    fn reads_reversed(&self) -> bool {
        self.cfg.reverse_source
    }

    fn attends(&self) -> bool {
        self.net.attends()
    }

    fn vocab(&self) -> usize {
        self.net.output().proj.vocab()
    }

    fn encode(&self, batch: &Batch, vocab: Option<&[u32]>) -> Result<HostEncoded> {
        let mut enc = encode(self, &batch.src, &batch.src_lengths, rayon::current_num_threads())?;
        enc.src_ext = batch.src_ext.clone();
        enc.vocab = vocab.map(|ids| SubVocab::new(&self.net.output().proj, ids.to_vec()));
        Ok(enc)
    }

    fn start(&self, enc: &HostEncoded, sent: &[usize]) -> Result<Vec<f32>> {
        let w = self.state_width();
        Ok(sent.iter().flat_map(|&b| enc.init[b * w..(b + 1) * w].iter().copied()).collect())
    }

    /// The live rows split into one contiguous share per thread, each share's whole step (its
    /// products, attention, cells and scores) on its own thread: one fork per step instead of
    /// one per product, and the row-wise work (cells, maxout, quantising activations) shared
    /// too. Rows are independent, and no row's numbers depend on the split: a GEMM's row does
    /// not depend on the other rows (`kernels::gemm`'s test) and the vocabulary is scored in
    /// fixed parts whatever the thread count (`Projection::best`), so the hypotheses are the
    /// same on any number of threads, to the bit (`tests/shortlist.rs`, `nmt-cli/tests/oversubscribe.rs`).
    /// Ensembles (`step_full`) are not split.
    fn step(&self, enc: &HostEncoded, states: &Vec<f32>, rows: &Rows<'_>, pick: &Pick<'_>) -> Result<Scored<Vec<f32>>> {
        let threads = rayon::current_num_threads();
        let r_n = rows.y.len();
        let w = self.state_width();
        let shares = if r_n >= MIN_SHARE * threads { threads } else { 1 };
        let per = r_n.div_ceil(shares).max(1);
        let run = |c: usize, t: usize| {
            let rr = c * per..((c + 1) * per).min(r_n);
            let r = LiveRows { s: &states[rr.start * w..rr.end * w], y: &rows.y[rr.clone()], sent: &rows.sent[rr.clone()] };
            step(self, enc, &r, &pick.want[rr], pick.skip, pick.alpha, t)
        };
        if shares == 1 {
            return Ok(run(0, threads));
        }
        let outs: Vec<Scored<Vec<f32>>> = (0..r_n.div_ceil(per)).into_par_iter().map(|c| run(c, 1)).collect();
        let mut all = Scored { states: Vec::with_capacity(r_n * w), best: RowBest { lse: Vec::new(), top: Vec::new() }, alpha: None };
        for o in outs {
            all.states.extend(o.states);
            all.best.lse.extend(o.best.lse);
            all.best.top.extend(o.best.top);
            if let Some(a) = o.alpha {
                all.alpha.get_or_insert_with(Vec::new).extend(a);
            }
        }
        Ok(all)
    }

    fn step_full(&self, enc: &HostEncoded, states: &Vec<f32>, rows: &Rows<'_>, width: usize, alpha: bool) -> Result<ScoredFull<Vec<f32>>> {
        let r_n = rows.y.len();
        let vocab = self.vocab();
        let (f, ey) = features(self, enc, &LiveRows { s: states, y: rows.y, sent: rows.sent }, alpha, rayon::current_num_threads());
        let lp = match &enc.vocab {
            None => self.net.output().proj.log_probs(&f.t, r_n),
            Some(v) => v.log_probs(&f.t, r_n, vocab),
        };
        let log_probs = match (self.net.copy(), &f.alpha) {
            (Some(copy), Some(al)) => {
                let x = MixIn {
                    t: &f.t,
                    s_out: &f.s_out,
                    ctx: &f.ctx,
                    ey: &ey,
                    alpha: al,
                    rows: rows.sent,
                    want: &[],
                    skip: &[],
                    src: enc.copy_source(),
                };
                copy.full(&lp, width, &x)
            }
            _ => lp
                .chunks_exact(vocab)
                .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(f32::NEG_INFINITY, width - vocab)))
                .collect(),
        };
        Ok(ScoredFull { states: f.state, log_probs, alpha: f.alpha })
    }

    fn gather(&self, states: &Vec<f32>, idx: &[usize]) -> Result<Vec<f32>> {
        let w = self.state_width();
        let mut out = Vec::with_capacity(idx.len() * w);
        for &r in idx {
            out.extend_from_slice(&states[r * w..(r + 1) * w]);
        }
        Ok(out)
    }
}

/// One step for `rows`; `want_alpha` keeps the attention weights.
/// `want[r]` is how many best tokens row `r` needs; tokens in `skip` are never chosen.
fn step(
    model: &HostModel,
    enc: &HostEncoded,
    rows: &LiveRows<'_>,
    want: &[usize],
    skip: &[u32],
    want_alpha: bool,
    threads: usize,
) -> Scored<Vec<f32>> {
    let (f, ey) = features(model, enc, rows, want_alpha, threads);
    let r_n = rows.y.len();
    let proj = &model.net.output().proj;
    let mut best = profile::timed(profile::SEARCH_SCORES, || match &enc.vocab {
        None => proj.best(&f.t, r_n, want, skip, threads),
        Some(v) => v.best(&f.t, r_n, want, skip, threads),
    });
    if let (Some(copy), Some(al)) = (model.net.copy(), &f.alpha) {
        let x = MixIn { t: &f.t, s_out: &f.s_out, ctx: &f.ctx, ey: &ey, alpha: al, rows: rows.sent, want, skip, src: enc.copy_source() };
        best = copy.mix(proj, &best, &x);
    }
    Scored { states: f.state, best, alpha: f.alpha }
}
