//! The pointer/copy mixture for rare words (the lecture notes' pointer idea, docs/MODELS.md#copy;
//! See et al. 2017's pointer-generator gate), for RNNsearch:
//!
//! ```text
//! g_i      = σ([s_i; c_i; E y_{i-1}] w_g + b_g)                 (rows, 1)
//! p_copy(w) = Σ_{j : x_j = w} α_ij                              attention over source positions
//! p(w)     = g_i · p_vocab(w) + (1 − g_i) · p_copy(w)           over K_y + n_ext ids
//! ```
//! `s_i` is the state the deep output reads (`s_{i-1}` or `s_i`). Words are compared in the
//! extended target space of `nmt_data::copy`: a source word outside the target vocabulary has
//! id `K_y + k` and can only be copied; `p_vocab` gives it nothing.
//!
//! Training runs on either path: the fused one recomputes the attention for all steps at once
//! beside the fused decoder (`Attention::weights_all`, one op on the CPU), which keeps its own
//! inside, and reads the vocabulary's logits only through [`logit_stats`] (`proj_stats`, the
//! projection op's second mode, on the CPU); the mixture itself is composed. Search
//! runs on either: `decode_step` on candle ops, and [`HostCopy`] below on host slices (the
//! fused search): each row's best tokens of the mixture from the vocabulary pass's best tokens
//! and the source's words. Only source words gain mass, so the mixture's best `k` are among the
//! vocabulary's best `k` (scaled by `g`) and the source's words: those are scored exactly and
//! ranked, and the step's result is rewritten as log-probabilities (normaliser 0).
//!
//! Shapes: `R` rows (target positions or hypotheses), `S` source positions, `K_y` vocabulary.
use candle_core::{DType, Tensor, D};

use super::attention::logsumexp_last;
use super::params::{Init, ParamBuilder};
use crate::error::Result;
use crate::kernels::cpu::projection::Projection;
use crate::kernels::cpu::row_best::RowBest;
use crate::model::dense::host;

/// Smallest probability a copy model's `log` sees: a target neither the vocabulary nor the
/// source can produce (an `<unk>` the source lacks under `g → 0`) stays finite.
const FLOOR: f64 = 1e-20;

/// The gate's weights.
#[derive(Clone, Debug)]
pub struct CopyGate {
    /// `w_g (n + 2n + m, 1)` and `b_g (1)`.
    pub(crate) w: Tensor,
    pub(crate) b: Tensor,
}

impl CopyGate {
    pub fn new(input: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(CopyGate { w: pb.get("w_g", &[input, 1], Init::Normal)?, b: pb.get("b_g", &[1], Init::Zeros)? })
    }

    /// `g (R, 1)` from the deep output's state `s (R, n)`, context `c (R, 2n)` and previous
    /// word's embedding `ey (R, m)`.
    pub fn gate(&self, s: &Tensor, c: &Tensor, ey: &Tensor) -> Result<Tensor> {
        let x = Tensor::cat(&[s, c, ey], D::Minus1)?;
        Ok(candle_nn::ops::sigmoid(&x.matmul(&self.w)?.broadcast_add(&self.b)?)?)
    }
}

/// What the mixture reads for `R` rows.
pub struct Mixture<'a> {
    /// Vocabulary logits `(R, K_y)`.
    pub(crate) logits: &'a Tensor,
    /// Attention `(R, S)`.
    pub(crate) alpha: &'a Tensor,
    /// Gate `(R, 1)`.
    pub(crate) gate: &'a Tensor,
    /// Each row's source in the extended space `(R, S)` u32.
    pub(crate) src_ext: &'a Tensor,
}

/// What the training loss reads of the vocabulary's logits `z (R, K_y)` for targets `y (R)` u32
/// in the extended space: `[lse(z_r), z_r[y_r], mean(z_r)]` `(R, 3)`, `z_r[y_r] = 0` for a
/// target past `K_y`. The composed twin of `kernels::cpu::proj_nll::proj_stats`, which the
/// fused forms run without building `z` as a graph node (`DeepOutput::stats`).
pub fn logit_stats(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let k_y = logits.dim(1)? as u32;
    let in_vocab = targets.lt(k_y)?;
    let safe = in_vocab.where_cond(targets, &targets.zeros_like()?)?;
    let picked = (logits.gather(&safe.unsqueeze(1)?, 1)? * in_vocab.to_dtype(logits.dtype())?.unsqueeze(1)?)?;
    Ok(Tensor::cat(&[&logsumexp_last(logits)?, &picked, &logits.mean_keepdim(D::Minus1)?], 1)?)
}

/// Teacher-forced `−log p(y)` per row for targets `y (R)` u32 in the extended space, from the
/// vocabulary's [`logit_stats`] over `k_y` words and the mixture's `alpha (R, S)`, `gate (R, 1)`
/// and `src_ext (R, S)`; label smoothing `eps` spreads over the vocabulary distribution, as
/// without copying.
pub fn copy_nll(stats: &Tensor, k_y: usize, alpha: &Tensor, gate: &Tensor, src_ext: &Tensor, targets: &Tensor, eps: f64) -> Result<Tensor> {
    let (lse, picked, mean) = (stats.narrow(1, 0, 1)?, stats.narrow(1, 1, 1)?, stats.narrow(1, 2, 1)?);
    let in_vocab = targets.lt(k_y as u32)?.to_dtype(stats.dtype())?.unsqueeze(1)?;
    let p_vocab = ((picked - &lse)?.exp()? * in_vocab)?;
    let same = src_ext.broadcast_eq(&targets.unsqueeze(1)?)?.to_dtype(alpha.dtype())?;
    let p_copy = (alpha * same)?.sum_keepdim(1)?;
    let p = ((gate * p_vocab)? + ((1.0 - gate)? * p_copy)?)?;
    let nll = p.clamp(FLOOR, 1.0)?.log()?.neg()?.squeeze(1)?;
    if eps > 0.0 {
        let smooth = (lse - mean)?.squeeze(1)?;
        Ok(((nll * (1.0 - eps))? + (smooth * eps)?)?)
    } else {
        Ok(nll)
    }
}

/// `log p(w)` over the extended space `(R, K_y + n_ext)`, for search.
pub fn copy_log_probs(m: &Mixture<'_>, n_ext: usize) -> Result<Tensor> {
    let (r, k_y) = m.logits.dims2()?;
    let p_vocab = m.logits.broadcast_sub(&logsumexp_last(m.logits)?)?.exp()?;
    let p_vocab = Tensor::cat(&[p_vocab, Tensor::zeros((r, n_ext), m.logits.dtype(), m.logits.device())?], 1)?;
    let zeros = Tensor::zeros((r, k_y + n_ext), m.alpha.dtype(), m.alpha.device())?;
    let p_copy = zeros.scatter_add(&m.src_ext.contiguous()?, &m.alpha.contiguous()?, 1)?;
    let p = (p_vocab.broadcast_mul(m.gate)? + p_copy.broadcast_mul(&(1.0 - m.gate)?)?)?;
    Ok(p.clamp(FLOOR, 1.0)?.log()?)
}

/// Ids of the extended space as the decoder's inputs: anything past the vocabulary is `<unk>`
/// (a copied word has no embedding of its own).
pub fn vocab_ids(ids: &Tensor, k_y: usize) -> Result<Tensor> {
    let unk = Tensor::full(nmt_data::UNK, ids.shape(), ids.device())?;
    Ok(ids.lt(k_y as u32)?.where_cond(ids, &unk)?)
}

/// [`vocab_ids`] on host ids (the host step's twin).
pub fn host_vocab_ids(ids: &[u32], k_y: usize) -> Vec<u32> {
    ids.iter().map(|&w| if (w as usize) < k_y { w } else { nmt_data::UNK }).collect()
}

/// The number of extended ids a batch's `src_ext (B, S)` uses past `K_y`.
pub fn extended_count(src_ext: &Tensor, k_y: usize) -> Result<usize> {
    let max = src_ext.to_dtype(DType::F64)?.max_all()?.to_scalar::<f64>()? as usize;
    Ok((max + 1).saturating_sub(k_y))
}

/// What the host mixture reads for `R` rows.
pub struct MixIn<'a> {
    /// The deep output's features `t (R, l)`.
    pub(crate) t: &'a [f32],
    /// The deep output's state `(R, n)`, contexts `(R, 2n)`, previous words' embeddings `(R, m)`.
    pub(crate) s_out: &'a [f32],
    pub(crate) ctx: &'a [f32],
    pub(crate) ey: &'a [f32],
    /// Attention `(R, S)`.
    pub(crate) alpha: &'a [f32],
    /// Each row's sentence in the encoded batch.
    pub(crate) rows: &'a [usize],
    pub(crate) want: &'a [usize],
    pub(crate) skip: &'a [u32],
    /// The encoded batch's sources.
    pub(crate) src: CopySource<'a>,
}

/// The encoded batch's sources in the extended space: `ext (B, S)` ids, true lengths (`</s>`
/// included) and the padded length `S`.
#[derive(Clone, Copy)]
pub struct CopySource<'a> {
    pub(crate) ext: &'a [u32],
    pub(crate) lens: &'a [usize],
    pub(crate) len: usize,
}

/// The copy gate on the host: `w_g (n + 2n + m)`, `b_g`.
pub struct HostCopy {
    pub(crate) w: Vec<f32>,
    pub(crate) b: f32,
}

impl HostCopy {
    /// Copies the gate's parameters to the host.
    pub fn new(gate: &CopyGate) -> Result<Self> {
        Ok(HostCopy { w: host(&gate.w)?, b: host(&gate.b)?.first().copied().unwrap_or(0.0) })
    }

    /// `best` (over the vocabulary of `proj`, the output projection) → the mixture's best
    /// tokens per row, as log-probabilities.
    pub fn mix(&self, proj: &Projection, best: &RowBest, x: &MixIn<'_>) -> RowBest {
        let r_n = x.rows.len();
        let l = x.t.len() / r_n.max(1);
        let k_y = proj.vocab_size() as u32;
        let mut out = RowBest { lse: vec![0.0; r_n], top: Vec::with_capacity(r_n) };
        for r in 0..r_n {
            let g = self.gate(x, r);
            let copy = copy_mass(x, r);
            let lse = best.lse[r];
            let tr = &x.t[r * l..(r + 1) * l];
            let p_vocab = |w: u32, z: Option<f32>| if w < k_y { (z.unwrap_or_else(|| proj.score(tr, w)) - lse).exp() } else { 0.0 };
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
    pub fn full(&self, lp: &[f32], width: usize, x: &MixIn<'_>) -> Vec<f32> {
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
            for (w, a) in copy_mass(x, r) {
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
fn copy_mass(x: &MixIn<'_>, r: usize) -> Vec<(u32, f32)> {
    let s = x.src.len;
    let ext = &x.src.ext[x.rows[r] * s..(x.rows[r] + 1) * s];
    let mut copy: Vec<(u32, f32)> = Vec::new();
    for (j, &w) in ext.iter().enumerate().take(x.src.lens[x.rows[r]]) {
        let a = x.alpha[r * s + j];
        match copy.iter_mut().find(|(id, _)| *id == w) {
            Some(c) => c.1 += a,
            None => copy.push((w, a)),
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::twin_support::{assert_close, randn, random_layer, values};
    use candle_core::Device;

    /// The host mixture gives the composed mixture's distribution over the extended space
    /// (the vocabulary, then a source word past it), its gate read from the same inputs.
    #[test]
    fn host_mixture_is_the_composed_mixture() {
        let (n, m, v, s, r) = (4, 3, 9, 5, 4);
        let gate = random_layer(9, |pb| CopyGate::new(n + 2 * n + m, pb));
        let ((st, sv), (ctx, ctxv), (ey, eyv), (logits, _)) =
            (randn(10, &[r, n]), randn(11, &[r, 2 * n]), randn(12, &[r, m]), randn(13, &[r, v]));
        // Two sentences (rows 0, 1 read the first, rows 2, 3 the second, 3 words long).
        let sent = [0usize, 0, 1, 1];
        let lens = [5usize, 3];
        let ext: Vec<u32> = vec![4, 9, 4, 2, 1, 7, 10, 2, 0, 0];
        let alpha: Vec<f32> = sent
            .iter()
            .enumerate()
            .flat_map(|(k, &b)| {
                let raw: Vec<f32> = (0..s).map(|j| if j < lens[b] { 1.0 + ((k + j) % 3) as f32 } else { 0.0 }).collect();
                let z: f32 = raw.iter().sum();
                raw.into_iter().map(move |a| a / z)
            })
            .collect();
        let rows_ext: Vec<u32> = sent.iter().flat_map(|&b| ext[b * s..(b + 1) * s].iter().copied()).collect();
        let g = gate.gate(&st, &ctx, &ey).unwrap();
        let alpha_t = Tensor::from_vec(alpha.clone(), (r, s), &Device::Cpu).unwrap();
        let src_ext = Tensor::from_vec(rows_ext, (r, s), &Device::Cpu).unwrap();
        let mix = Mixture { logits: &logits, alpha: &alpha_t, gate: &g, src_ext: &src_ext };
        let want = values(&copy_log_probs(&mix, 2).unwrap());
        let lp = values(&logits.broadcast_sub(&logsumexp_last(&logits).unwrap()).unwrap());
        let src = CopySource { ext: &ext, lens: &lens, len: s };
        let x = MixIn { t: &[], s_out: &sv, ctx: &ctxv, ey: &eyv, alpha: &alpha, rows: &sent, want: &[], skip: &[], src };
        let got = HostCopy::new(&gate).unwrap().full(&lp, v + 2, &x);
        // The composed form floors a word no one gives mass at `ln FLOOR`; the host form at −∞.
        let floor = (FLOOR as f32).ln();
        let got: Vec<f32> = got.iter().map(|&p| if p == f32::NEG_INFINITY { floor } else { p }).collect();
        assert_close("log p", &got, &want, 1e-5);
    }

    /// The fused projection statistics (`kernels::cpu::proj_nll::proj_stats`) against
    /// [`logit_stats`], values and gradients under a random weighting, both weight layouts (`G`,
    /// and the tied `E`), f64 and f32, a target past the vocabulary every fourth row (it picks 0
    /// and passes no gradient to a word).
    #[test]
    fn fused_projection_stats_are_the_composed_ones() {
        use crate::kernels::cpu::proj_nll::proj_stats;
        use crate::kernels::shapes::proj_weight::ProjWeight;
        use candle_core::{DType, Var};
        let (n, k, v) = (19, 7, 29);
        // Absolute, on values read back as f32: f64's agree to the last f32 bit or so.
        for (dtype, tol) in [(DType::F64, 1e-6), (DType::F32, 1e-4)] {
            for tied in [false, true] {
                let var = |seed, shape: &[usize]| Var::from_tensor(&randn(seed, shape).0.to_dtype(dtype).unwrap()).unwrap();
                let (x, b, probe) = (var(20, &[n, k]), var(21, &[v]), var(22, &[n, 3]));
                let shape = if tied { [v, k] } else { [k, v] };
                let w = var(23, &shape);
                let targets: Vec<u32> = (0..n as u32).map(|r| if r % 4 == 1 { v as u32 + r } else { (r * 7) % v as u32 }).collect();
                let tt = Tensor::from_vec(targets.clone(), n, &Device::Cpu).unwrap();
                let fused = proj_stats(
                    x.as_tensor(),
                    if tied { ProjWeight::Vk(&w) } else { ProjWeight::Kv(&w) },
                    &b,
                    &targets,
                    crate::config::Precision::F32,
                )
                .unwrap();
                let g = if tied { w.as_tensor().t().unwrap() } else { w.as_tensor().clone() };
                let composed = logit_stats(&x.as_tensor().matmul(&g).unwrap().broadcast_add(&b).unwrap(), &tt).unwrap();
                let grads = |y: &Tensor| {
                    let gs = (y * probe.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
                    [&x, &w, &b].map(|p| values(gs.get(p.as_tensor()).expect("a gradient")))
                };
                let what = format!("{dtype:?} tied {tied}");
                let (vf, vc) = (values(&fused), values(&composed));
                assert!(vc.iter().step_by(3).all(|&l| l.abs() > 0.1), "{what}: the statistics could not tell a difference");
                assert_close(&format!("{what}: statistics"), &vf, &vc, tol);
                for (i, (a, c)) in grads(&fused).iter().zip(grads(&composed).iter()).enumerate() {
                    assert_close(&format!("{what}: gradient {i}"), a, c, tol);
                }
            }
        }
    }
}
