//! Deep output with one hidden layer, the papers' maxout (RNNenc appendix A; RNNsearch appendix
//! A.2.2) or Nematus' and Marian's tanh (`model.output_layer`, `config/output.rs`):
//!
//! ```text
//! t~ = O_h s + O_y E y_{i-1} + O_c c + b      (2l for maxout, l for tanh)
//! t_k = max(t~_{2k-1}, t~_{2k})                 (l)   maxout
//! t   = tanh(t~)                                (l)   tanh
//! p(y_i | …) = softmax(G t + b_G)               (K_y)
//! ```
//! It runs on all target steps of a batch at once in training: `(batch·tgt_len, ·)` rows.
//! With layer normalisation (Marian's `s2s`, `layer_norm.rs`) each of the three products is
//! normalised on its own before the bias: `t~ = LN(O_h s)·γ_h + LN(O_y E y)·γ_y + LN(O_c c)·γ_c + b`.
use candle_core::{Tensor, D};

use super::attention::composed_nll;
use super::backend::Backend;
use super::candidates::Candidates;
use super::layer_norm::maybe_norm_as;
use super::params::{Init, ParamBuilder};
use super::regularizer::{times_mask, Dropout, Site};
use crate::config::OutputLayer;
use crate::error::Result;
use crate::kernels::cpu::projection::Projection;
use crate::kernels::cpu::row_best::RowBest;
use crate::kernels::cpu::{linear, maxout, proj_nll};
use crate::kernels::math::tanh_f32;
use crate::kernels::profile;
use crate::kernels::shapes::proj_weight::ProjWeight;
use crate::model::dense::{host, Dense};

/// Shape of the deep output: decoder state `n`, embedding `m`, context, hidden units `l`, `K_y`,
/// and the hidden layer's activation.
#[derive(Clone, Copy, Debug)]
pub struct OutputDims {
    pub(crate) state: usize,
    pub(crate) emb: usize,
    pub(crate) ctx: usize,
    pub(crate) maxout: usize,
    pub(crate) vocab: usize,
    pub(crate) layer: OutputLayer,
    /// With layer normalisation.
    pub(crate) norm: bool,
}

/// The deep output's layer-normalisation gains `(w)` each: on `O_h s`, `O_y E y`, `O_c c`.
#[derive(Clone, Debug)]
pub struct OutputNorm {
    pub(crate) h: Tensor,
    pub(crate) y: Tensor,
    pub(crate) c: Tensor,
}

/// What the deep output reads of the decoder in teacher forcing.
pub enum Context<'a> {
    /// RNNsearch: `[s; c] (B·T, n + 2n)`, the top states and the contexts `c_i` side by side.
    PerStep(&'a Tensor),
    /// RNNenc: the top states `(B, T, n)` and the summary `c (B, n)`.
    PerSentence { states: &'a Tensor, c: &'a Tensor },
}

#[derive(Clone, Debug)]
pub struct DeepOutput {
    /// `(n, w)`, `(m, w)`, `(ctx, w)`, bias `(w)`: `w = 2l` for maxout, `l` for tanh.
    pub(crate) o_h: Tensor,
    pub(crate) o_y: Tensor,
    pub(crate) o_c: Tensor,
    pub(crate) b: Tensor,
    /// `(l, K_y)`, bias `(K_y)`. With tied embeddings `G` is the target embedding's
    /// transpose `Eᵀ` (a view, not a parameter of its own).
    pub(crate) g: Tensor,
    pub(crate) b_g: Tensor,
    /// Hidden units `l`.
    pub(crate) maxout: usize,
    pub(crate) layer: OutputLayer,
    /// The tied target embedding `E (K_y, l)` itself (`g` is its transpose).
    tied: Option<Tensor>,
    /// Layer normalisation's gains (`ln_h`, `ln_y`, `ln_c`), when the model has it.
    pub(crate) norm: Option<OutputNorm>,
}

impl DeepOutput {
    /// `tied`: the target embedding `E (K_y, l)` to use as `Gᵀ` instead of a separate `G`.
    pub fn new(d: OutputDims, tied: Option<&Tensor>, pb: &ParamBuilder) -> Result<Self> {
        let OutputDims { state, emb, ctx, maxout, vocab, layer, norm } = d;
        let w = layer.pre_width(maxout);
        // Created in field order: a seed gives the same model as before `tied` existed.
        let o_h = pb.get("o_h", &[state, w], Init::Normal)?;
        let o_y = pb.get("o_y", &[emb, w], Init::Normal)?;
        let o_c = pb.get("o_c", &[ctx, w], Init::Normal)?;
        let b = pb.get("b", &[w], Init::Zeros)?;
        let g = match tied {
            Some(e) => e.t()?,
            None => pb.get("g", &[maxout, vocab], Init::Normal)?,
        };
        let b_g = pb.get("b_g", &[vocab], Init::Zeros)?;
        let norm = match norm {
            true => Some(OutputNorm {
                h: pb.get("ln_h", &[w], Init::Ones)?,
                y: pb.get("ln_y", &[w], Init::Ones)?,
                c: pb.get("ln_c", &[w], Init::Ones)?,
            }),
            false => None,
        };
        Ok(DeepOutput { o_h, o_y, o_c, b, g, b_g, maxout, layer, tied: tied.cloned(), norm })
    }

    /// The parameters holding one slice per target word, each with the stride `inner` that
    /// reads its slices (`kernels::shapes::update_rule::MomentFactors`): `G (l, K_y)` by
    /// columns (`inner = 1`), or the tied `E (K_y, l)` by rows (`inner = l`), and `b_G (K_y)`.
    pub(crate) fn word_params(&self) -> Result<[(&Tensor, usize); 2]> {
        Ok(match &self.tied {
            Some(e) => [(e, e.dim(1)?), (&self.b_g, 1)],
            None => [(&self.g, 1), (&self.b_g, 1)],
        })
    }

    /// `G` as the fused projection reads it: `G (l, K_y)`, or `E (K_y, l)` itself when tied.
    pub fn projection(&self) -> ProjWeight<'_> {
        match &self.tied {
            Some(e) => ProjWeight::Vk(e),
            None => ProjWeight::Kv(&self.g),
        }
    }

    /// `O_c c` (or `LN(O_c c)·γ_c`): `(rows, ctx)` → `(rows, w)`; for RNNenc done once per sentence.
    pub fn project_context(&self, ctx: &Tensor) -> Result<Tensor> {
        self.project_context_as(ctx, Backend::Composed)
    }

    /// [`DeepOutput::project_context`] with its normalisation in the form `backend` says.
    fn project_context_as(&self, ctx: &Tensor, backend: Backend) -> Result<Tensor> {
        maybe_norm_as(ctx.matmul(&self.o_c)?, self.norm.as_ref().map(|g| &g.c), backend)
    }

    /// The hidden layer `t`: `state (rows, n)`, `emb (rows, m)`, `ctx_proj` from
    /// [`DeepOutput::project_context`] broadcastable to `(rows, w)` → `(rows, l)`.
    pub fn hidden(&self, state: &Tensor, emb: &Tensor, ctx_proj: &Tensor) -> Result<Tensor> {
        self.hidden_as(state, emb, ctx_proj, Backend::Composed)
    }

    /// [`DeepOutput::hidden`] with its normalisations in the form `backend` says.
    fn hidden_as(&self, state: &Tensor, emb: &Tensor, ctx_proj: &Tensor, backend: Backend) -> Result<Tensor> {
        let (gh, gy) = (self.norm.as_ref().map(|g| &g.h), self.norm.as_ref().map(|g| &g.y));
        let pre = (maybe_norm_as(state.matmul(&self.o_h)?, gh, backend)? + maybe_norm_as(emb.matmul(&self.o_y)?, gy, backend)?)?
            .broadcast_add(ctx_proj)?
            .broadcast_add(&self.b)?;
        let rows = pre.dim(0)?;
        Ok(match self.layer {
            OutputLayer::Maxout => pre.reshape((rows, self.maxout, 2))?.max(D::Minus1)?,
            OutputLayer::Tanh => pre.tanh()?,
        })
    }

    /// Teacher forcing's hidden layer `t (B·T, l)` from the decoder's top states and the
    /// context, `ey (B·T, m)` the previous words' embeddings; the units' dropout mask drawn
    /// from `dropout` at `Site::Maxout`; in the form `backend` says.
    pub fn forward(&self, ctx: Context, ey: &Tensor, dropout: Option<&mut Dropout>, backend: Backend) -> Result<Tensor> {
        let rows = ey.dim(0)?;
        let mask = dropout.and_then(|d| d.units_mask(Site::Maxout, rows * self.maxout));
        // With layer normalisation the hidden layer stays composed (three normalised products
        // over all rows at once; `kernels::cpu::deep_output` has no normalisation).
        // On a GPU, RNNsearch's per-step context runs the deep output's twin; RNNenc's
        // per-sentence context stays composed there (`hidden_summary` is CPU ops).
        if self.norm.is_none() {
            match ctx {
                Context::PerStep(state_ctx) if backend.kernels() => return self.hidden_fused(state_ctx, ey, mask.as_deref(), backend),
                Context::PerSentence { states, c } if backend.fused() => return self.hidden_summary(states, ey, c, mask, backend),
                _ => {}
            }
        }
        let hidden = match ctx {
            Context::PerStep(state_ctx) => {
                let (d, n) = (self.o_c.dim(0)?, self.o_h.dim(0)?);
                // Column blocks of `[s; c]` are row-strided views, which candle's CUDA matmul
                // refuses (the first GPU training update failed here, 2026-11-27): copied.
                let ctx_proj = self.project_context_as(&state_ctx.narrow(1, n, d)?.contiguous()?, backend)?;
                self.hidden_as(&state_ctx.narrow(1, 0, n)?.contiguous()?, ey, &ctx_proj, backend)?
            }
            Context::PerSentence { states, c } => {
                let (b, t, n) = states.dims3()?;
                let c = self.project_context_as(c, backend)?;
                let per_row = c.unsqueeze(1)?.broadcast_as((b, t, c.dim(1)?))?.reshape((b * t, c.dim(1)?))?;
                self.hidden_as(&states.reshape((b * t, n))?, ey, &per_row, backend)?
            }
        };
        match mask {
            Some(mk) => times_mask(&hidden, mk),
            None => Ok(hidden),
        }
    }

    /// The fused form for RNNsearch (`kernels::cpu::deep_output`, one op, no concatenation of
    /// activations; on a GPU its twin, as `backend` says).
    fn hidden_fused(&self, state_ctx: &Tensor, emb: &Tensor, mask: Option<&[f32]>, backend: Backend) -> Result<Tensor> {
        let wb = Tensor::cat(&[&self.o_h, &self.o_c, &self.o_y, &self.b.unsqueeze(0)?], 0)?;
        Ok(backend.deep_output(state_ctx, emb, &wb, self.layer, mask)?)
    }

    /// The fused form for RNNenc, whose context is one per sentence.
    fn hidden_summary(&self, states: &Tensor, emb: &Tensor, c: &Tensor, mask: Option<Vec<f32>>, backend: Backend) -> Result<Tensor> {
        let (b, t, n) = states.dims3()?;
        let m = emb.dim(1)?;
        let rows = Tensor::cat(&[states, &emb.reshape((b, t, m))?], 2)?.reshape((b * t, n + m))?;
        let pre = linear::linear(&rows, &Tensor::cat(&[&self.o_h, &self.o_y], 0)?, &self.b, backend.products())?;
        let ctx = self.project_context(c)?.unsqueeze(1)?; // (B, 1, w)
        let w = self.layer.pre_width(self.maxout);
        let pre = pre.reshape((b, t, w))?.broadcast_add(&ctx)?.reshape((b * t, w))?;
        let hidden = match self.layer {
            OutputLayer::Maxout => maxout::maxout_pairs(&pre)?,
            OutputLayer::Tanh => pre.tanh()?,
        };
        match mask {
            Some(mk) => times_mask(&hidden, mk),
            None => Ok(hidden),
        }
    }

    /// Teacher forcing's `−log p(y) (rows)` from `t (rows, l)` and the `targets (rows)` u32,
    /// label-smoothed by `eps`, normalised over the vocabulary or over the training step's
    /// candidate list `cands` (`candidates.rs`: `V′`'s columns gathered, targets remapped): the
    /// fused projection, log-softmax and NLL (`kernels::cpu::proj_nll`, which never
    /// materialises the `(rows, K_y)` gradient twice) or the composed
    /// `logsumexp(G t + b_G) − (G t + b_G)_y`.
    pub fn nll(&self, t: &Tensor, targets: &Tensor, eps: f64, cands: Option<&Candidates>, backend: Backend) -> Result<Tensor> {
        if let Some(c) = cands {
            return c.nll(t, self.tied.as_ref().unwrap_or(&self.g), self.tied.is_some(), &self.b_g, targets, eps, backend);
        }
        if backend.kernels() {
            return Ok(backend.proj_nll(t, self.projection(), &self.b_g, &targets.to_vec1::<u32>()?, eps)?);
        }
        composed_nll(&self.logits(t)?, targets, eps)
    }

    /// `[lse(z), z[y], mean(z)] (rows, 3)` of `z = G t + b_G` for the copy mixture's loss
    /// (`copy::logit_stats`, a target past `K_y` picking 0): the fused op
    /// (`kernels::cpu::proj_nll::proj_stats`) on the CPU kernels, composed elsewhere (a GPU too).
    pub fn stats(&self, t: &Tensor, targets: &Tensor, backend: Backend) -> Result<Tensor> {
        if backend.fused() {
            return Ok(proj_nll::proj_stats(t, self.projection(), &self.b_g, &targets.to_vec1::<u32>()?, backend.products())?);
        }
        super::copy::logit_stats(&self.logits(t)?, targets)
    }

    /// Unnormalised scores `G t + b_G`: `(rows, l)` → `(rows, K_y)`.
    pub fn logits(&self, t: &Tensor) -> Result<Tensor> {
        Ok(t.matmul(&self.g)?.broadcast_add(&self.b_g)?)
    }
}

/// The host form of [`DeepOutput`]: `O_h (n, w)`, `O_y (m, w)`, `O_c (ctx, w)`, `b (w)`,
/// and `G`, `b_G` as a column-major [`Projection`].
pub struct HostOutput {
    /// The deep output's state and word terms (a search step's products).
    pub(crate) o_h: Dense,
    pub(crate) o_y: Dense,
    pub(crate) o_c: Vec<f32>,
    pub(crate) b: Vec<f32>,
    pub(crate) proj: Projection,
    layer: OutputLayer,
    /// Layer normalisation's gains `[γ_h, γ_y, γ_c]`, when the layer has them.
    pub(crate) norm: Option<[Vec<f32>; 3]>,
}

impl HostOutput {
    /// `G` comes from the layer: with tied embeddings it is the view `Eᵀ`.
    pub fn new(o: &DeepOutput) -> Result<Self> {
        Ok(HostOutput {
            o_h: Dense::new(host(&o.o_h)?, o.o_h.dim(0)?),
            o_y: Dense::new(host(&o.o_y)?, o.o_y.dim(0)?),
            o_c: host(&o.o_c)?,
            b: host(&o.b)?,
            proj: Projection::new(&host(&o.g)?, &host(&o.b_g)?),
            layer: o.layer,
            norm: match &o.norm {
                Some(g) => Some([host(&g.h)?, host(&g.y)?, host(&g.c)?]),
                None => None,
            },
        })
    }

    /// From now on the search's products in int8: the output projection, `O_h` and `O_y`.
    pub fn quantize(&mut self) {
        let proj = std::mem::replace(&mut self.proj, Projection::new(&[], &[]));
        self.proj = proj.quantized();
        self.o_h.quantize();
        self.o_y.quantize();
    }

    /// Per row of the features `t (R, l)`, the `want[r]` best tokens outside `skip`, over the
    /// vocabulary or the batch's `shortlist` ([`Projection::best`]).
    pub fn best(&self, shortlist: Option<&BatchShortlist>, t: &[f32], want: &[usize], skip: &[u32], threads: usize) -> RowBest {
        let r_n = want.len();
        profile::timed(profile::SEARCH_SCORES, || match shortlist {
            None => self.proj.best(t, r_n, want, skip, threads),
            Some(v) => v.best(t, r_n, want, skip, threads),
        })
    }

    /// `log p(y)` over the vocabulary `(R, K_y)` for `r_n` rows of features `t` (−∞ outside
    /// the batch's `shortlist`).
    pub fn log_probs(&self, shortlist: Option<&BatchShortlist>, t: &[f32], r_n: usize) -> Vec<f32> {
        match shortlist {
            None => self.proj.log_probs(t, r_n),
            Some(v) => v.log_probs(t, r_n, self.proj.vocab_size()),
        }
    }

    /// The hidden features `t (R, l)` of the pre-activation `t~ (R, w)`: the larger of each
    /// pair (maxout), or `tanh`.
    pub fn activate(&self, pre: &[f32]) -> Vec<f32> {
        match self.layer {
            OutputLayer::Maxout => pre.chunks_exact(2).map(|p| p[0].max(p[1])).collect(),
            OutputLayer::Tanh => pre.iter().map(|&x| tanh_f32(x)).collect(),
        }
    }
}

/// A batch's lexical shortlist on the host (`nmt_data::shortlist`): the output projection
/// restricted to the batch's candidate tokens, so a step scores `|C|` rows instead of `K_y`,
/// and the distribution is normalised over `C` (Marian's shortlist does the same).
pub struct BatchShortlist {
    /// The candidates: sorted target ids.
    ids: Vec<u32>,
    proj: Projection,
}

impl BatchShortlist {
    pub fn new(full: &Projection, ids: Vec<u32>) -> Self {
        BatchShortlist { proj: full.subset(&ids), ids }
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

    /// [`Projection::log_probs`] over the candidates, laid out over all `vocab_size` columns
    /// (`(n, vocab_size)`, −∞ outside the shortlist).
    pub fn log_probs(&self, t: &[f32], n: usize, vocab_size: usize) -> Vec<f32> {
        let sub = self.proj.log_probs(t, n);
        let mut out = vec![f32::NEG_INFINITY; n * vocab_size];
        for (row, lp) in out.chunks_exact_mut(vocab_size).zip(sub.chunks_exact(self.ids.len().max(1))) {
            for (&w, &v) in self.ids.iter().zip(lp) {
                row[w as usize] = v;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::attention::logsumexp_last;
    use crate::model::dense::affine;
    use crate::model::twin_support::{assert_close, randn, random_layer, values};

    /// The host form scores as the composed layer: `t~ = O_h s + O_y E y + O_c c + b`,
    /// maxout or tanh, and the column-major projection's log-probabilities.
    #[test]
    fn host_output_scores_as_the_composed_layer() {
        let (n, m, c, l, v, r) = (4, 3, 8, 5, 11, 6);
        for layer in [OutputLayer::Maxout, OutputLayer::Tanh] {
            let dims = OutputDims { state: n, emb: m, ctx: c, maxout: l, vocab: v, layer, norm: false };
            let out = random_layer(3, |pb| DeepOutput::new(dims, None, pb));
            let ((s, sv), (ey, eyv), (ctx, ctxv)) = (randn(4, &[r, n]), randn(5, &[r, m]), randn(6, &[r, c]));
            let logits = out.logits(&out.hidden(&s, &ey, &out.project_context(&ctx).unwrap()).unwrap()).unwrap();
            let want = values(&logits.broadcast_sub(&logsumexp_last(&logits).unwrap()).unwrap());
            let host = HostOutput::new(&out).unwrap();
            let zeros = vec![0.0; layer.pre_width(l)];
            let mut pre = host.o_h.affine(&sv, r, &host.b, 1);
            let (y, cc) = (host.o_y.affine(&eyv, r, &zeros, 1), affine(&ctxv, r, c, &host.o_c, &zeros, 1));
            for (p, (a, b)) in pre.iter_mut().zip(y.iter().zip(cc)) {
                *p += a + b;
            }
            let got = host.proj.log_probs(&host.activate(&pre), r);
            assert_close(&format!("log p ({layer:?})"), &got, &want, 1e-5);
        }
    }
}
