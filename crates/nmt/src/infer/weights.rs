//! A [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call, laid out for
//! the search kernels: matrices stay `(in, out)` row-major (the per-step products `x W` read
//! them as they are), and the output projection is pre-transposed for column-major scores.
use std::collections::BTreeMap;

use candle_core::DType;

use crate::config::{Arch, ModelConfig, OutputState};
use crate::error::{Error, Result};
use crate::kernels::scores::Projection;
use crate::model::Seq2Seq;

/// One GRU layer (model/gru.rs): `W (in, 3n)`, `b (3n)`, `U_rz (n, 2n)`, `U (n, n)`.
pub struct HostGru {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub u_rz: Vec<f32>,
    pub u: Vec<f32>,
}

/// The encoder and decoder of one architecture.
pub enum HostCore {
    /// RNNsearch: forward and backward encoder GRUs, attention decoder.
    Search { fwd: HostGru, bwd: HostGru, dec: Box<HostAttention> },
    /// RNNenc: one encoder GRU, summary decoder.
    Enc { gru: HostGru, dec: HostSummary },
}

/// RNNsearch's attention decoder (model/decoder.rs, model/attention.rs), as the search
/// multiplies it: the step's products that share a left operand sit side by side, so each is
/// one GEMM (Marian's layout: a few wide products instead of many narrow ones).
pub struct HostAttention {
    /// `s_{i-1} · [W_a | U_rz | O_h]` `(n, A + 2n [+ 2l])`, with bias `[b_a | 0 | 0]`; `O_h`
    /// only when the deep output reads `s_{i-1}`.
    pub s_cat: Vec<f32>,
    pub s_cat_b: Vec<f32>,
    /// `E y · [W | O_y]` `(m, 3n + 2l)` plus `c_i · [C | O_c]` `(2n, 3n + 2l)`, with bias
    /// `[b | b_o]`.
    pub y_cat: Vec<f32>,
    pub c_cat: Vec<f32>,
    pub yc_cat_b: Vec<f32>,
    /// The GRU's `U (n, n)` of the candidate (applied to `r ⊙ s_{i-1}`).
    pub u: Vec<f32>,
    /// `W_s (n, n)`, `b_s (n)`: `s_0 = tanh(←h_1 W_s + b_s)`.
    pub w_s: Vec<f32>,
    pub b_s: Vec<f32>,
    /// `U_a (2n, A)` (encoder side) and `v_a (A)`.
    pub u_a: Vec<f32>,
    pub v_a: Vec<f32>,
}

impl HostAttention {
    fn take(t: &mut Take, cfg: &ModelConfig, out: &HostOutput) -> Result<Self> {
        let (n, m, a, l2) = (cfg.hidden_dim, cfg.emb_dim, cfg.att_dim, out.b.len());
        let gru = t.gru("decoder.gru")?;
        let (w_a, b_a, c) = (t.get("decoder.attention.w_a")?, t.get("decoder.attention.b_a")?, t.get("decoder.c")?);
        let prev = cfg.output_state == OutputState::Previous;
        let mut s_blocks = vec![(&w_a[..], a), (&gru.u_rz[..], 2 * n)];
        if prev {
            s_blocks.push((&out.o_h[..], l2));
        }
        Ok(HostAttention {
            s_cat: hcat(&s_blocks, n),
            s_cat_b: b_a.iter().copied().chain(std::iter::repeat_n(0.0, 2 * n + if prev { l2 } else { 0 })).collect(),
            y_cat: hcat(&[(&gru.w[..], 3 * n), (&out.o_y[..], l2)], m),
            c_cat: hcat(&[(&c[..], 3 * n), (&out.o_c[..], l2)], 2 * n),
            yc_cat_b: gru.b.iter().chain(&out.b).copied().collect(),
            u: gru.u,
            w_s: t.get("decoder.w_s")?,
            b_s: t.get("decoder.b_s")?,
            u_a: t.get("decoder.attention.u_a")?,
            v_a: t.get("decoder.attention.v_a")?,
        })
    }
}

/// RNNenc's summary decoder: `W' (m, 3n)`, `b (3n)`, `U' (n, 3n)`, `C (n, 3n)`, `V (n, n)`,
/// `b_v`, `V' (n, n)`, `b'`.
pub struct HostSummary {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub u: Vec<f32>,
    pub c: Vec<f32>,
    pub v: Vec<f32>,
    pub b_v: Vec<f32>,
    pub v_init: Vec<f32>,
    pub b_init: Vec<f32>,
}

/// The deep output (model/output.rs): `O_h (n, 2l)`, `O_y (m, 2l)`, `O_c (ctx, 2l)`, `b (2l)`,
/// and `G`, `b_G` as a column-major [`Projection`].
pub struct HostOutput {
    pub o_h: Vec<f32>,
    pub o_y: Vec<f32>,
    pub o_c: Vec<f32>,
    pub b: Vec<f32>,
    pub proj: Projection,
}

/// Everything search needs, on the host.
pub struct HostModel {
    pub cfg: ModelConfig,
    pub src_emb: Vec<f32>,
    pub tgt_emb: Vec<f32>,
    pub core: HostCore,
    pub out: HostOutput,
}

/// Row-major `(rows, Σ cols)` from row-major `(rows, cols_i)` blocks placed side by side.
fn hcat(blocks: &[(&[f32], usize)], rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * blocks.iter().map(|b| b.1).sum::<usize>());
    for r in 0..rows {
        for &(m, cols) in blocks {
            out.extend_from_slice(&m[r * cols..(r + 1) * cols]);
        }
    }
    out
}

/// The parameters by name, taken one by one; a missing name is a model/config mismatch.
struct Take(BTreeMap<String, Vec<f32>>);

impl Take {
    fn get(&mut self, name: &str) -> Result<Vec<f32>> {
        self.0.remove(name).ok_or_else(|| Error::Config(format!("fused search: the model has no parameter {name}")))
    }

    fn gru(&mut self, prefix: &str) -> Result<HostGru> {
        Ok(HostGru {
            w: self.get(&format!("{prefix}.w"))?,
            b: self.get(&format!("{prefix}.b"))?,
            u_rz: self.get(&format!("{prefix}.u_rz"))?,
            u: self.get(&format!("{prefix}.u"))?,
        })
    }
}

impl HostModel {
    /// Copies `model`'s parameters. Only `f32` CPU models are supported; the caller falls back
    /// to the candle search for anything else (see [`HostModel::supports`]).
    pub fn new(model: &Seq2Seq) -> Result<Self> {
        if !Self::supports(model) {
            return Err(Error::Config("fused search needs an f32 model on the CPU".into()));
        }
        let mut t = Take(
            model
                .params
                .named_vars()
                .into_iter()
                .map(|(name, var)| Ok((name, var.as_tensor().flatten_all()?.to_vec1::<f32>()?)))
                .collect::<Result<_>>()?,
        );
        let cfg = model.cfg.clone();
        let out = HostOutput {
            o_h: t.get("output.o_h")?,
            o_y: t.get("output.o_y")?,
            o_c: t.get("output.o_c")?,
            b: t.get("output.b")?,
            proj: Projection::new(&t.get("output.g")?, &t.get("output.b_g")?),
        };
        let core = match cfg.arch {
            Arch::Rnnsearch => HostCore::Search {
                fwd: t.gru("encoder.fwd")?,
                bwd: t.gru("encoder.bwd")?,
                dec: Box::new(HostAttention::take(&mut t, &cfg, &out)?),
            },
            Arch::Rnnenc => HostCore::Enc {
                gru: t.gru("encoder.gru")?,
                dec: HostSummary {
                    w: t.get("decoder.w")?,
                    b: t.get("decoder.b")?,
                    u: t.get("decoder.u")?,
                    c: t.get("decoder.c")?,
                    v: t.get("decoder.v")?,
                    b_v: t.get("decoder.b_v")?,
                    v_init: t.get("decoder.v_init")?,
                    b_init: t.get("decoder.b_init")?,
                },
            },
        };
        Ok(HostModel { src_emb: t.get("src_emb")?, tgt_emb: t.get("tgt_emb")?, cfg, core, out })
    }

    /// Whether the fused search can run `model`: `f32` parameters in host memory, and the
    /// paper's GRU (the host cells do not yet read the reset-after form's `b_h`; such models
    /// are searched with the candle ops, which do).
    pub fn supports(model: &Seq2Seq) -> bool {
        model.dtype() == DType::F32 && model.device().is_cpu() && model.cfg.gru == crate::config::GruForm::Paper
    }
}
