//! A batch's lexical shortlist on the host (`nmt_data::shortlist`): the output projection
//! restricted to the batch's candidate tokens, so a step scores `|C|` rows instead of `K_y`,
//! and the distribution is normalised over `C` (Marian's shortlist does the same).
use crate::kernels::projection::Projection;
use crate::kernels::row_best::RowBest;

/// The candidates `ids` (sorted target ids) and the projection onto them.
pub struct SubVocab {
    ids: Vec<u32>,
    proj: Projection,
}

impl SubVocab {
    pub fn new(full: &Projection, ids: Vec<u32>) -> Self {
        SubVocab { proj: full.subset(&ids), ids }
    }

    /// [`Projection::best`] over the candidates, with target ids in the result.
    pub fn best(&self, t: &[f32], n: usize, want: &[usize], skip: &[u32], threads: usize) -> RowBest {
        let skip: Vec<u32> = skip.iter().filter_map(|w| self.ids.binary_search(w).ok()).map(|i| i as u32).collect();
        let mut best = self.proj.best(t, n, want, &skip, threads);
        for row in &mut best.top {
            for (_, w) in row.iter_mut() {
                *w = self.ids[*w as usize];
            }
        }
        best
    }

    /// [`Projection::log_probs`] over the candidates, laid out over all `vocab` columns
    /// (`(n, vocab)`, −∞ outside the shortlist).
    pub fn log_probs(&self, t: &[f32], n: usize, vocab: usize) -> Vec<f32> {
        let sub = self.proj.log_probs(t, n);
        let mut out = vec![f32::NEG_INFINITY; n * vocab];
        for (row, lp) in out.chunks_exact_mut(vocab).zip(sub.chunks_exact(self.ids.len().max(1))) {
            for (&w, &v) in self.ids.iter().zip(lp) {
                row[w as usize] = v;
            }
        }
        out
    }
}
