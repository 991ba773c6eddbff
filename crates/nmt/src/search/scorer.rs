//! What the one beam loop (`beam.rs`) asks of a model: Marian's scorer interface. A scorer
//! encodes a batch once, then advances any set of live hypotheses ("rows") by one decoder step
//! and reports, per row, the best next tokens as log-probabilities.
//!
//! Two scorers implement it: the candle model (`candle.rs`: the reference, any device and
//! dtype) and its host snapshot (`host.rs`: the fused CPU search). An ensemble of
//! scorers is a scorer too (`ensemble.rs`), so the loop never knows how many models it runs.
//!
//! Row layout: the loop keeps only live rows; row `r` belongs to sentence `rows.sent[r]` of the
//! encoded batch, and [`Scorer::gather`] lays out the survivors' states for the next step.
use nmt_data::batch::Batch;
use nmt_data::{BOS, PAD, UNK};

use crate::error::Result;
use crate::kernels::cpu::row_best::{Fold, RowBest};

/// The live rows of a step: each row's previous word `y (R)` and its sentence in the batch.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    pub y: &'a [u32],
    pub sent: &'a [usize],
}

/// What a step must choose: `want[r]` best tokens for row `r`, never one of `skip`
/// ([`skipped_tokens`]), and whether to report attention weights.
#[derive(Clone, Copy, Debug)]
pub struct Pick<'a> {
    pub want: &'a [usize],
    pub skip: &'a [u32],
    pub alpha: bool,
}

/// One step's result for `R` rows.
pub struct Scored<S> {
    /// The new decoder states, row `r` the child of input row `r`.
    pub states: S,
    /// Per row, the best tokens: `log p(y | row) = z − lse[r]`.
    pub best: RowBest,
    /// Attention weights `(R, S)` row-major, zero at padding (when asked for and the scorer
    /// attends).
    pub alpha: Option<Vec<f32>>,
}

/// One step's whole distribution, for ensembles: the best tokens of an average need not be
/// among any member's best.
pub struct ScoredFull<S> {
    pub states: S,
    /// `log p(y | row)` over `width` columns `(R, width)`: the vocabulary, then a copy model's
    /// extended ids (−∞ where the scorer gives a column no mass).
    pub log_probs: Vec<f32>,
    /// Attention weights `(R, S)`, as in [`Scored::alpha`].
    pub alpha: Option<Vec<f32>>,
}

/// A model as the search sees it.
pub trait Scorer: Sync {
    /// An encoded batch.
    type Encoded;
    /// Decoder states of a set of rows.
    type States;

    /// Whether the encoder reads the source reversed (`model.reverse_source`).
    fn reads_reversed(&self) -> bool;
    /// Whether the decoder attends (and so can report alignments).
    fn has_attention(&self) -> bool;
    /// The target vocabulary size `K_y`.
    fn vocab_size(&self) -> usize;
    /// Encodes the batch's sources (in this scorer's reading order), with a copy model's
    /// extended ids (`batch.src_ext`). `shortlist`, the batch's lexical shortlist (sorted target
    /// ids), restricts every step of this batch to those tokens, normalised over them.
    fn encode(&self, batch: &Batch, shortlist: Option<&[u32]>) -> Result<Self::Encoded>;
    /// The start states of one row per sentence in `sent`.
    fn start(&self, enc: &Self::Encoded, sent: &[usize]) -> Result<Self::States>;
    /// One decoder step for `rows` with `states`, choosing as `pick` says.
    fn step(&self, enc: &Self::Encoded, states: &Self::States, rows: &Rows<'_>, pick: &Pick<'_>) -> Result<Scored<Self::States>>;
    /// One decoder step with the whole distribution over `width ≥ vocab_size()` columns.
    fn step_full(
        &self,
        enc: &Self::Encoded,
        states: &Self::States,
        rows: &Rows<'_>,
        width: usize,
        alpha: bool,
    ) -> Result<ScoredFull<Self::States>>;
    /// The states of rows `idx`, in that order.
    fn gather(&self, states: &Self::States, idx: &[usize]) -> Result<Self::States>;
}

/// The tokens search never emits: `<pad>` and `<s>` (not targets; a `<pad>` in an output would
/// be masked out of its teacher-forced score), and `<unk>` with `--no-unk`.
pub fn skipped_tokens(no_unk: bool) -> Vec<u32> {
    if no_unk {
        vec![PAD, BOS, UNK]
    } else {
        vec![PAD, BOS]
    }
}

/// Per row of full log-probabilities `(R, width)`, the `want[r]` best columns outside `skip`,
/// best first (equal values in column order), as a [`RowBest`] of log-probabilities
/// (normaliser 0). Columns at −∞ are never chosen.
///
/// One pass per row behind the row's admission threshold (`row_best::Fold::rows`, the host
/// search's), rows split across the threads: the candle search (a GPU's) runs this on every
/// step's whole `(R, V)` distribution. Before (2026-11-28), each row's columns were collected
/// into a vector of `(value, column)` and partially sorted, at least 18 ms a step for 320 rows
/// of 8 000 (docs/GPU.md, "The search's per-step pick").
pub fn best_of_full(lp: &[f32], width: usize, want: &[usize], skip: &[u32]) -> RowBest {
    use rayon::prelude::*;
    let r_n = want.len();
    if width == 0 {
        return RowBest { lse: vec![0.0; r_n], top: vec![Vec::new(); r_n] };
    }
    // Enough rows per task that a task is worth its scheduling (a row is `width` compares).
    let rows = (1usize << 16).div_ceil(width).max(1);
    let top = lp[..r_n * width]
        .par_chunks(rows * width)
        .zip(want.par_chunks(rows))
        .flat_map_iter(|(z, w)| {
            let mut f = Fold::new(w);
            crate::kernels::cpu::engine::isa::simd_dispatch!(f.rows(z, width, 0, w, skip));
            f.into_top()
        })
        .collect();
    RowBest { lse: vec![0.0; r_n], top }
}

#[cfg(test)]
mod tests {
    use super::RowBest;
    use rand::{Rng, SeedableRng};

    /// The reference: every column collected and sorted (`best_of_full` before 2026-11-28).
    fn sorted(lp: &[f32], width: usize, want: &[usize], skip: &[u32]) -> RowBest {
        let r_n = want.len();
        let mut top = Vec::with_capacity(r_n);
        for (r, &k) in want.iter().enumerate() {
            let row = &lp[r * width..(r + 1) * width];
            let mut cands: Vec<(f32, u32)> = row
                .iter()
                .enumerate()
                .filter(|&(j, &a)| a > f32::NEG_INFINITY && !skip.contains(&(j as u32)))
                .map(|(j, &a)| (a, j as u32))
                .collect();
            let k = k.min(cands.len());
            if k > 0 && k < cands.len() {
                cands.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            }
            cands.truncate(k);
            cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            top.push(cands);
        }
        RowBest { lse: vec![0.0; r_n], top }
    }

    /// The one-pass pick against sorting every column: the same lists, on rows with many equal
    /// values, −∞ columns, skipped tokens, and rows wanting 0 to more than they have.
    #[test]
    fn best_of_full_equals_sorting_every_column() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let skip = [0u32, 1, 5];
        for (r, v) in [(1usize, 3usize), (9, 40), (70, 1000), (3, 70_000)] {
            let lp: Vec<f32> = (0..r * v)
                .map(|_| if rng.gen_bool(0.2) { f32::NEG_INFINITY } else { (rng.gen_range(-80.0f32..0.0)).round() / 8.0 })
                .collect();
            let want: Vec<usize> = (0..r).map(|i| [0, 1, 5, 12, v + 3][i % 5]).collect();
            assert_eq!(super::best_of_full(&lp, v, &want, &skip).top, sorted(&lp, v, &want, &skip).top, "r {r} v {v}");
        }
    }
}
