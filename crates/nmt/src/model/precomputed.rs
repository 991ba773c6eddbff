//! Two products of a decoder's search step that need not be computed at every step
//! (`HostAttention::step`, `HostConditional::step`; the word terms also `HostSummary::step`):
//!
//! - [`WordTerms`]: `E y_{i-1} · [W | O_y] + [b | b_o]` depends only on the previous word, so
//!   the search reads it from a table of the whole target vocabulary `(K_y, G + 2l)`, computed
//!   once per snapshot by the same product. A row of that product does not depend on the other
//!   rows or on the thread count (`kernels::gemm`'s and `kernels::cpu::engine::int8`'s tests), so a table
//!   row is bit for bit the row the step would compute. The table is kept only up to
//!   [`TABLE_BYTES`]; above it, the step multiplies as before.
//! - [`ContextTerms`]: `c_i · [C | O_c]` with `c_i = Σ_j α_ij h_j` is computed as
//!   `Σ_j α_ij (h_j · [C | O_c])` (Bahdanau et al. 2015, eq. (5), with the product moved inside
//!   the sum): `h_j · [C | O_c]` `(B, S, G + 2l)` once per batch, then per step only the
//!   weighted sum over the `S` positions. A step's `R × 2n × (G + 2l)` product becomes
//!   `R × S × (G + 2l)`; with beam 5 and as many target steps as source positions that is a
//!   fifth of the work, for greedy search about the same. The sum is re-associated, so the
//!   terms differ from the composed step's (`c_i` first) in the last bits (`twins.rs` compares
//!   them within its tolerance). It is used at every beam size, so a hypothesis' score does
//!   not depend on the beam. Measured in docs/PERF.md, "AVX2: two of the search step's products
//!   moved out".
//!
//! Shapes: `K_y` target words, `m` embedding, `B` sentences padded to `S` positions, `2n` the
//! annotations, `R` live rows, `w` a term's width (`G + 2l`).
use crate::kernels::gemm::{matmul, Mat};
use crate::model::dense::{gather_rows, Dense};

/// The largest word table kept (64 MiB, 8 000 words × 2 048 terms of `f32`). The shipped
/// recipe's conditional decoder (8 000 words, 256 units: `G + 2l` = 768 + 512) needs 41 MB; the
/// papers' sizes (30 004 words, `G + 2l` = 3 000 + 1 000) would need 480 MB, and multiply at
/// each step instead.
pub const TABLE_BYTES: usize = 64 << 20;

/// `E y · [W | O_y] + bias` `(m, w)`, with its table over the vocabulary when it fits.
pub struct WordTerms {
    pub(crate) dense: Dense,
    bias: Vec<f32>,
    table: Option<Vec<f32>>,
}

impl WordTerms {
    pub fn new(dense: Dense, bias: Vec<f32>) -> Self {
        WordTerms { dense, bias, table: None }
    }

    /// Multiplies in int8 from now on; the table, if any, is dropped ([`WordTerms::tabulate`]
    /// builds it again from the quantised product).
    pub fn quantize(&mut self) {
        self.dense.quantize();
        self.table = None;
    }

    /// Computes the table from the target embeddings `emb (K_y, m)`, if it fits in
    /// [`TABLE_BYTES`].
    pub fn tabulate(&mut self, emb: &[f32], threads: usize) {
        let (m, w) = (self.dense.inner_dim(), self.dense.cols());
        let words = emb.len() / m.max(1);
        self.table = (words * w * 4 <= TABLE_BYTES).then(|| self.dense.affine(emb, words, &self.bias, threads));
    }

    /// The terms `(R, w)` of the rows' previous words: their ids `y` (in the vocabulary) and
    /// embeddings `ey (R, m)`.
    pub fn rows(&self, ey: &[f32], y: &[u32], threads: usize) -> Vec<f32> {
        match &self.table {
            Some(t) => gather_rows(t, y, self.dense.cols()),
            None => self.dense.affine(ey, y.len(), &self.bias, threads),
        }
    }
}

/// `c · [C | O_c]` `(2n, w)`, applied to the annotations once per batch.
pub struct ContextTerms {
    pub(crate) dense: Dense,
}

impl ContextTerms {
    pub fn new(dense: Dense) -> Self {
        ContextTerms { dense }
    }

    pub fn quantize(&mut self) {
        self.dense.quantize();
    }

    /// `h_j · [C | O_c]` `(B·S, w)` for annotations `ann (B·S, 2n)`.
    pub fn per_position(&self, ann: &[f32], threads: usize) -> Vec<f32> {
        let (k, w) = (self.dense.inner_dim(), self.dense.cols());
        let positions = ann.len() / k.max(1);
        let mut out = vec![0f32; positions * w];
        self.dense.mul_add(&mut out, 0, w, Mat::new(ann, positions, k), threads);
        out
    }

    /// `dst[r] += Σ_{j < lens[b]} α_rj · terms[b, j]` for each row `r` of sentence `b = sent[r]`:
    /// `dst (R, rs)` from column 0, `alpha (R, S)`, `terms (B, S, w)` ([`Self::per_position`]).
    /// Consecutive rows of one sentence are one small product (`(k, len) · (len, w)`).
    pub fn add_rows(&self, dst: &mut [f32], rs: usize, alpha: &[f32], sent: &[usize], lens: &[usize], terms: &[f32]) {
        let w = self.dense.cols();
        let s_len = alpha.len() / sent.len().max(1);
        let mut r0 = 0;
        while r0 < sent.len() {
            let b = sent[r0];
            let r1 = r0 + sent[r0..].iter().take_while(|&&x| x == b).count();
            let len = lens[b].clamp(1, s_len);
            let a = Mat::strided(alpha, r0 * s_len, r1 - r0, len, s_len);
            matmul(dst, r0 * rs, rs, a, Mat::strided(terms, b * s_len * w, len, w, w), true, 1);
            r0 = r1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn uniform(rng: &mut rand_chacha::ChaCha8Rng, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
    }

    /// A table row is the step's own product row, to the bit, in `f32` and in int8, on any
    /// number of threads.
    #[test]
    fn word_table_rows_are_the_step_products() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (words, m, w) = (300, 24, 40);
        let (emb, wts, bias) = (uniform(&mut rng, words * m), uniform(&mut rng, m * w), uniform(&mut rng, w));
        let y: Vec<u32> = (0..37).map(|_| rng.gen_range(0..words as u32)).collect();
        let ey = gather_rows(&emb, &y, m);
        for int8 in [false, true] {
            let mut plain = WordTerms::new(Dense::new(wts.clone(), m), bias.clone());
            if int8 {
                plain.quantize();
            }
            let want = plain.rows(&ey, &y, 1);
            for threads in [1, 2, 4] {
                let mut tabled = WordTerms::new(Dense::new(wts.clone(), m), bias.clone());
                if int8 {
                    tabled.quantize();
                }
                tabled.tabulate(&emb, threads);
                assert!(tabled.table.is_some());
                assert_eq!(tabled.rows(&ey, &y, threads), want, "int8 {int8}, {threads} threads");
            }
        }
    }

    /// `Σ_j α_rj (h_j W)` against `(Σ_j α_rj h_j) W` in f64, rows of one sentence together or
    /// apart, with padded positions.
    #[test]
    fn context_terms_are_the_context_product() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let (b, s, c, w) = (3, 7, 16, 40);
        let lens = [7usize, 4, 1];
        let (ann, wts) = (uniform(&mut rng, b * s * c), uniform(&mut rng, c * w));
        let sent = [0usize, 0, 1, 2, 2, 0, 1];
        let mut alpha = vec![0f32; sent.len() * s];
        for (r, &sb) in sent.iter().enumerate() {
            let e: Vec<f32> = (0..lens[sb]).map(|_| rng.gen_range(0.0..1.0)).collect();
            let z: f32 = e.iter().sum();
            for (j, v) in e.iter().enumerate() {
                alpha[r * s + j] = v / z;
            }
        }
        let terms = ContextTerms::new(Dense::new(wts.clone(), c));
        let per = terms.per_position(&ann, 2);
        let rs = w + 3;
        let mut got = vec![0.5f32; sent.len() * rs];
        terms.add_rows(&mut got, rs, &alpha, &sent, &lens, &per);
        for (r, &sb) in sent.iter().enumerate() {
            let ctx: Vec<f64> = (0..c).map(|k| (0..s).map(|j| alpha[r * s + j] as f64 * ann[(sb * s + j) * c + k] as f64).sum()).collect();
            for col in 0..w {
                let want = 0.5 + (0..c).map(|k| ctx[k] * wts[k * w + col] as f64).sum::<f64>();
                assert!((got[r * rs + col] as f64 - want).abs() < 1e-5, "row {r} column {col}");
            }
            assert!(got[r * rs + w..(r + 1) * rs].iter().all(|&v| v == 0.5), "row {r}: past the terms");
        }
    }
}
