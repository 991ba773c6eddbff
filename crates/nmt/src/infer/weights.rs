//! A [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call, laid out for
//! the search kernels: matrices stay `(in, out)` row-major (the per-step products `x W` read
//! them as they are), and the output projection is pre-transposed for column-major scores.
//! The weights are read from the model's typed layers ([`Seq2Seq::layers`]), never by name.
use candle_core::{DType, Tensor};

use crate::config::{ModelConfig, OutputState};
use crate::error::{Error, Result};
use crate::kernels::scores::Projection;
use crate::model::decoder::AttentionDecoder;
use crate::model::gru::Gru;
use crate::model::{Layers, Seq2Seq};

/// A tensor's elements as host `f32` (a transposed view is laid out row-major first).
fn host(t: &Tensor) -> Result<Vec<f32>> {
    Ok(t.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?)
}

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
    fn new(dec: &AttentionDecoder, cfg: &ModelConfig, out: &HostOutput) -> Result<Self> {
        let (n, m, a, l2) = (cfg.hidden_dim, cfg.emb_dim, cfg.att_dim, out.b.len());
        let gru = HostGru::new(&dec.gru)?;
        let (w_a, b_a, c) = (host(&dec.att.w_a)?, host(&dec.att.b_a)?, host(&dec.c)?);
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
            w_s: host(&dec.w_s)?,
            b_s: host(&dec.b_s)?,
            u_a: host(&dec.att.u_a)?,
            v_a: host(&dec.att.v_a)?,
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

impl HostGru {
    fn new(g: &Gru) -> Result<Self> {
        Ok(HostGru { w: host(&g.w)?, b: host(&g.b)?, u_rz: host(&g.u_rz)?, u: host(&g.u)? })
    }
}

impl HostModel {
    /// Copies `model`'s parameters. Only `f32` CPU models are supported; the caller falls back
    /// to the candle search for anything else (see [`HostModel::supports`]).
    pub fn new(model: &Seq2Seq) -> Result<Self> {
        if !Self::supports(model) {
            return Err(Error::Config("fused search needs an f32 model on the CPU".into()));
        }
        let cfg = model.cfg.clone();
        let o = model.output();
        // `G` comes from the layer: with tied embeddings it is the view `Eᵀ`.
        let out = HostOutput {
            o_h: host(&o.o_h)?,
            o_y: host(&o.o_y)?,
            o_c: host(&o.o_c)?,
            b: host(&o.b)?,
            proj: Projection::new(&host(&o.g)?, &host(&o.b_g)?),
        };
        let core = match model.layers() {
            Layers::Search { enc, dec } => HostCore::Search {
                fwd: HostGru::new(&enc.fwd)?,
                bwd: HostGru::new(&enc.bwd)?,
                dec: Box::new(HostAttention::new(dec, &cfg, &out)?),
            },
            Layers::Enc { enc, dec } => HostCore::Enc {
                gru: HostGru::new(&enc.gru)?,
                dec: HostSummary {
                    w: host(&dec.w)?,
                    b: host(&dec.b)?,
                    u: host(&dec.u)?,
                    c: host(&dec.c)?,
                    v: host(&dec.v)?,
                    b_v: host(&dec.b_v)?,
                    v_init: host(&dec.v_init)?,
                    b_init: host(&dec.b_init)?,
                },
            },
        };
        let (src_emb, tgt_emb) = model.embeddings();
        Ok(HostModel { src_emb: host(src_emb)?, tgt_emb: host(tgt_emb)?, cfg, core, out })
    }

    /// Whether the fused search can run `model`: `f32` parameters in host memory, and the
    /// paper's GRU (the host cells do not yet read the reset-after form's `b_h`; such models
    /// are searched with the candle ops, which do).
    pub fn supports(model: &Seq2Seq) -> bool {
        model.dtype() == DType::F32 && model.device().is_cpu() && model.cfg.gru == crate::config::GruForm::Paper
    }
}
