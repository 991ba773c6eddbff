//! The copy mixture in the host search (`model/copy.rs` is the candle twin): each row's best
//! tokens of `p(w) = g·p_vocab(w) + (1−g)·Σ_{x_j = w} α_j` from the vocabulary pass's best
//! tokens and the source's words.
//!
//! Only source words gain mass, so the mixture's best `k` are among the vocabulary's best `k`
//! (scaled by `g`) and the source's words: those are scored exactly and ranked. The step's
//! result is rewritten as log-probabilities (normaliser 0), which the beam reads as before.
use super::encode::HostEncoded;
use super::weights::{HostCopy, HostModel};
use crate::kernels::projection::RowBest;

/// What the mixture reads for `R` rows.
pub struct MixIn<'a> {
    /// The deep output's features `t (R, l)`.
    pub t: &'a [f32],
    /// The deep output's state `(R, n)`, contexts `(R, 2n)`, previous words' embeddings `(R, m)`.
    pub s_out: &'a [f32],
    pub ctx: &'a [f32],
    pub ey: &'a [f32],
    /// Attention `(R, S)`.
    pub alpha: &'a [f32],
    /// Each row's sentence in the encoded batch.
    pub rows: &'a [usize],
    pub want: &'a [usize],
    pub skip: &'a [u32],
}

impl HostCopy {
    /// `best` (over the vocabulary) → the mixture's best tokens per row, as log-probabilities.
    pub fn mix(&self, model: &HostModel, enc: &HostEncoded, best: &RowBest, x: &MixIn<'_>) -> RowBest {
        let r_n = x.rows.len();
        let l = x.t.len() / r_n.max(1);
        let k_y = model.out.proj.vocab() as u32;
        let mut out = RowBest { lse: vec![0.0; r_n], top: Vec::with_capacity(r_n) };
        for r in 0..r_n {
            let g = self.gate(x, r);
            let copy = copy_mass(enc, x, r);
            let lse = best.lse[r];
            let tr = &x.t[r * l..(r + 1) * l];
            let p_vocab =
                |w: u32, z: Option<f32>| if w < k_y { (z.unwrap_or_else(|| model.out.proj.score(tr, w)) - lse).exp() } else { 0.0 };
            let copied = |w: u32| copy.iter().find(|(id, _)| *id == w).map_or(0.0, |c| c.1);
            let mut cands: Vec<(f32, u32)> =
                best.top[r].iter().map(|&(z, w)| ((g * p_vocab(w, Some(z)) + (1.0 - g) * copied(w)).max(1e-20).ln(), w)).collect();
            for &(w, a) in &copy {
                if x.skip.contains(&w) || best.top[r].iter().any(|&(_, t)| t == w) {
                    continue;
                }
                cands.push(((g * p_vocab(w, None) + (1.0 - g) * a).max(1e-20).ln(), w));
            }
            cands.sort_by(|a, b| b.0.total_cmp(&a.0));
            cands.truncate(x.want[r]);
            out.top.push(cands);
        }
        out
    }
}

impl HostCopy {
    /// Row `r`'s gate `g = σ([s; c; E y] w_g + b_g)`.
    fn gate(&self, x: &MixIn<'_>, r: usize) -> f32 {
        let r_n = x.rows.len().max(1);
        let (n, n2, m) = (x.s_out.len() / r_n, x.ctx.len() / r_n, x.ey.len() / r_n);
        let feats = [&x.s_out[r * n..(r + 1) * n], &x.ctx[r * n2..(r + 1) * n2], &x.ey[r * m..(r + 1) * m]];
        let z: f32 = feats.iter().flat_map(|f| f.iter()).zip(&self.w).map(|(a, b)| a * b).sum::<f32>() + self.b;
        1.0 / (1.0 + (-z).exp())
    }

    /// The whole mixture for an ensemble: `lp (R, V)` the vocabulary's log-probabilities →
    /// `log p(w)` over the extended space `(R, width)`, `width ≥ V` covering the batch's
    /// extended ids (−∞ where a row's source has no such word).
    pub fn full(&self, enc: &HostEncoded, lp: &[f32], width: usize, x: &MixIn<'_>) -> Vec<f32> {
        let r_n = x.rows.len();
        let v = lp.len() / r_n.max(1);
        let mut out = vec![0f32; r_n * width];
        for r in 0..r_n {
            let g = self.gate(x, r);
            let row = &mut out[r * width..(r + 1) * width];
            for (o, &p) in row.iter_mut().zip(&lp[r * v..(r + 1) * v]) {
                *o = g * p.exp();
            }
            row[v..].fill(0.0);
            for (w, a) in copy_mass(enc, x, r) {
                if let Some(o) = row.get_mut(w as usize) {
                    *o += (1.0 - g) * a;
                }
            }
            for o in row.iter_mut() {
                *o = if *o > 0.0 { o.ln() } else { f32::NEG_INFINITY };
            }
        }
        out
    }
}

/// Row `r`'s copy mass per word of its source (the source's `</s>` maps to `</s>`):
/// `Σ_{j: x_j = w} α_j`.
fn copy_mass(enc: &HostEncoded, x: &MixIn<'_>, r: usize) -> Vec<(u32, f32)> {
    let s = enc.src_len;
    let ext = &enc.src_ext[x.rows[r] * s..(x.rows[r] + 1) * s];
    let mut copy: Vec<(u32, f32)> = Vec::new();
    for (j, &w) in ext.iter().enumerate().take(enc.lens[x.rows[r]]) {
        let a = x.alpha[r * s + j];
        match copy.iter_mut().find(|(id, _)| *id == w) {
            Some(c) => c.1 += a,
            None => copy.push((w, a)),
        }
    }
    copy
}
