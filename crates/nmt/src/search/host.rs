//! The host snapshot (`HostModel`, `model/snapshot.rs`) as a [`Scorer`]: the fused CPU search.
//! States are row-major `(R, w)` host rows (`w` = [`HostModel::state_width`]); this file only
//! shares a step's live rows among the threads and lays out the survivors' states: the encoder
//! pass and the step, from the embeddings to the scores, are the model's.
use nmt_data::batch::Batch;
use rayon::prelude::*;

use super::scorer::{Pick, Rows, Scored, ScoredFull, Scorer};
use crate::error::Result;
use crate::kernels::cpu::row_best::RowBest;
use crate::model::decoder::HostEncoded;
use crate::model::snapshot::{HostModel, LiveRows};

/// The fewest rows a thread's share of a step gets: below it, one share runs on all threads.
const MIN_SHARE: usize = 8;

impl Scorer for HostModel {
    type Encoded = HostEncoded;
    type States = Vec<f32>;

    fn reads_reversed(&self) -> bool {
        self.cfg.reverse_source
    }

    fn has_attention(&self) -> bool {
        HostModel::has_attention(self)
    }

    fn vocab_size(&self) -> usize {
        HostModel::vocab_size(self)
    }

    fn encode(&self, batch: &Batch, shortlist: Option<&[u32]>) -> Result<HostEncoded> {
        HostModel::encode(self, &batch.src, &batch.src_lengths, batch.src_ext.clone(), shortlist, rayon::current_num_threads())
    }

    fn start(&self, enc: &HostEncoded, sent: &[usize]) -> Result<Vec<f32>> {
        Ok(enc.start_states(sent, self.state_width()))
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
            let o = HostModel::step(self, enc, &r, &pick.want[rr], pick.skip, pick.alpha, t);
            Scored { states: o.state, best: o.best, alpha: o.alpha }
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
        let r = LiveRows { s: states, y: rows.y, sent: rows.sent };
        let (states, log_probs, alpha) = HostModel::step_full(self, enc, &r, width, alpha, rayon::current_num_threads());
        Ok(ScoredFull { states, log_probs, alpha })
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
