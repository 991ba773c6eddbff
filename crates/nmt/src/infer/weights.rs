//! A [`Seq2Seq`]'s parameters copied to host `f32` slices once per search call, laid out for
//! the search kernels: matrices stay `(in, out)` row-major (the per-step products `x W` read
//! them as they are), and the output projection is pre-transposed for column-major scores.
//! The weights are read from the model's typed layers ([`Seq2Seq::layers`]), never by name.
use candle_core::DType;

use super::dense::host;
use crate::config::{CellKind, GruForm, ModelConfig, OutputState};
use crate::error::{Error, Result};
use crate::kernels::projection::Projection;
use crate::model::decoder::AttentionDecoder;
use crate::model::encoder::SummaryEncoder;
use crate::model::feedback::HostFeedback;
use crate::model::grconv::HostGrConv;
use crate::model::rnn::Rnn;
use crate::model::{Layers, Seq2Seq};

/// An encoder's layer(s) in the training kernels' layout (`kernels::rnn`, `kernels::birnn`),
/// so the search encodes with the very code that trains: `k` directions (2 for RNNsearch's
/// bidirectional encoder, 1 for RNNenc), `W (m, k·G)` and `b (k·G)` side by side,
/// `U (k, n, G)` packed `[U_r | U_z | U_n]` (LSTM: `[U_i | U_f | U_g | U_o]`), recurrent biases
/// `b_h (k, G)` (zero for the paper's GRU and the LSTM).
pub struct HostEncoder {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub u: Vec<f32>,
    pub bh: Vec<f32>,
}

impl HostEncoder {
    fn new(grus: &[&Rnn], emb: usize) -> Result<Self> {
        let n3 = grus.first().map_or(0, |g| g.kind().gates() * g.hidden());
        let ws: Vec<Vec<f32>> = grus.iter().map(|g| host(g.input_weights().0)).collect::<Result<_>>()?;
        let blocks: Vec<(&[f32], usize)> = ws.iter().map(|w| (&w[..], n3)).collect();
        let mut b = Vec::new();
        let (mut u, mut bh) = (Vec::new(), Vec::new());
        for g in grus {
            b.extend(host(g.input_weights().1)?);
            u.extend(host(&g.u_cat()?)?);
            bh.extend(host(&g.bias_h()?)?);
        }
        Ok(HostEncoder { w: hcat(&blocks, emb), b, u, bh })
    }
}

/// The encoder and decoder of one architecture.
pub enum HostCore {
    /// RNNsearch: the bidirectional encoder's layers, attention decoder.
    Search { enc: Vec<HostEncoder>, dec: Box<HostAttention> },
    /// RNNenc: the encoder's layers, summary decoder.
    Enc { enc: Vec<HostEncoder>, dec: Box<HostSummary> },
}

/// RNNsearch's attention decoder (model/decoder.rs, model/attention.rs), as the search
/// multiplies it: the step's products that share a left operand sit side by side, so each is
/// one GEMM (Marian's layout: a few wide products instead of many narrow ones).
pub struct HostAttention {
    /// `s_{i-1} · [W_a | U_rec | O_h]` `(n, A + rec [+ 2l])`, with bias `[b_a | b_h | 0]`: the
    /// recurrent block is `U_rz` (`rec = 2n`, paper cell, `b_h = 0`) or all of `U` with its
    /// bias (`rec = 3n`, reset-after cell; `rec = 4n` and no bias, the LSTM); `O_h` only when
    /// the deep output reads `s_{i-1}`.
    pub s_cat: Vec<f32>,
    pub s_cat_b: Vec<f32>,
    /// The cell and the width `rec` of the recurrent block in `s_cat`.
    pub kind: CellKind,
    pub rec: usize,
    /// `E y · [W | O_y]` `(m, G + 2l)` plus `c_i · [C | O_c]` `(2n, G + 2l)`, with bias
    /// `[b | b_o]`.
    pub y_cat: Vec<f32>,
    pub c_cat: Vec<f32>,
    pub yc_cat_b: Vec<f32>,
    /// The paper cell's `U (n, n)` of the candidate (applied to `r ⊙ s_{i-1}`; empty otherwise).
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
        let kind = dec.rnn.kind();
        let g = kind.gates() * n;
        let (w, b) = (host(dec.rnn.input_weights().0)?, host(dec.rnn.input_weights().1)?);
        let (w_a, b_a, c) = (host(&dec.att.w_a)?, host(&dec.att.b_a)?, host(&dec.c)?);
        // A stack's deep output reads its top layer, added after the upper layers step.
        let prev = cfg.output_state == OutputState::Previous && cfg.dec_layers == 1;
        // The paper GRU multiplies `r ⊙ s` by its candidate's `U` after the gates: only
        // `U_rz` joins the shared product, and `U` stays apart.
        let (u_rec, rec, u) = match &dec.rnn {
            Rnn::Gru(gru) if gru.form == GruForm::Paper => (host(&gru.u_rz)?, 2 * n, host(&gru.u)?),
            rnn => (host(&rnn.u_cat()?)?, g, Vec::new()),
        };
        let mut s_blocks = vec![(&w_a[..], a), (&u_rec[..], rec)];
        if prev {
            s_blocks.push((&out.o_h[..], l2));
        }
        let mut s_cat_b = b_a.clone();
        s_cat_b.extend(host(&dec.rnn.bias_h()?)?.into_iter().take(rec));
        s_cat_b.resize(a + rec + if prev { l2 } else { 0 }, 0.0);
        Ok(HostAttention {
            s_cat: hcat(&s_blocks, n),
            s_cat_b,
            kind,
            rec,
            y_cat: hcat(&[(&w[..], g), (&out.o_y[..], l2)], m),
            c_cat: hcat(&[(&c[..], g), (&out.o_c[..], l2)], 2 * n),
            yc_cat_b: b.iter().chain(&out.b).copied().collect(),
            u,
            w_s: host(&dec.w_s)?,
            b_s: host(&dec.b_s)?,
            u_a: host(&dec.att.u_a)?,
            v_a: host(&dec.att.v_a)?,
        })
    }
}

/// RNNenc's summary decoder: `W' (m, G)`, `b (G)`, `U' (n, G)`, `C (n, G)`, `V (n, n)`,
/// `b_v`, `V' (n, n)`, `b'`; its cell (the GRU's reset-after arithmetic, or the LSTM).
pub struct HostSummary {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub u: Vec<f32>,
    pub c: Vec<f32>,
    pub v: Vec<f32>,
    pub b_v: Vec<f32>,
    pub v_init: Vec<f32>,
    pub b_init: Vec<f32>,
    /// The recurrent bias `b_h (G)` of the reset-after form (zeros for the paper's and the LSTM).
    pub b_h: Vec<f32>,
    pub kind: CellKind,
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

/// RNNsearch's copy gate `g = σ([s; c; E y] w_g + b_g)`: `w_g (n + 2n + m)`, `b_g`
/// (`copy.rs` computes the mixture).
pub struct HostCopy {
    pub w: Vec<f32>,
    pub b: f32,
}

/// Everything search needs, on the host.
pub struct HostModel {
    pub cfg: ModelConfig,
    pub src_emb: Vec<f32>,
    pub tgt_emb: Vec<f32>,
    pub core: HostCore,
    /// The decoder's layers above the first (`model/upper.rs`), one direction each.
    pub upper: Vec<HostEncoder>,
    /// Their gated-feedback weights (`model.stack = "gated-feedback"`), or empty.
    pub feedback: Vec<HostFeedback>,
    /// RNNenc's grConv encoder (`model.encoder = "grconv"`; then the core has no RNN layers).
    pub grconv: Option<HostGrConv>,
    /// RNNsearch's copy gate (`model.copy`).
    pub copy: Option<HostCopy>,
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

impl HostModel {
    /// This snapshot with its output projection multiplying in int8 (`kernels/int8.rs`).
    pub fn quantized(mut self) -> Self {
        let proj = std::mem::replace(&mut self.out.proj, Projection::new(&[], &[]));
        self.out.proj = proj.quantized();
        self
    }

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
                enc: enc
                    .layers
                    .iter()
                    .enumerate()
                    .map(|(k, l)| HostEncoder::new(&[&l.fwd, &l.bwd], if k == 0 { cfg.emb_dim } else { 2 * cfg.hidden_dim }))
                    .collect::<Result<_>>()?,
                dec: Box::new(HostAttention::new(dec, &cfg, &out)?),
            },
            Layers::Enc { enc, dec } => HostCore::Enc {
                enc: match enc {
                    SummaryEncoder::Rnn(e) => &e.layers[..],
                    SummaryEncoder::GrConv(_) => &[],
                }
                .iter()
                .enumerate()
                .map(|(k, l)| HostEncoder::new(&[l], if k == 0 { cfg.emb_dim } else { cfg.hidden_dim }))
                .collect::<Result<_>>()?,
                dec: Box::new(HostSummary {
                    w: host(&dec.w)?,
                    b: host(&dec.b)?,
                    u: host(&dec.u)?,
                    c: host(&dec.c)?,
                    v: host(&dec.v)?,
                    b_v: host(&dec.b_v)?,
                    v_init: host(&dec.v_init)?,
                    b_init: host(&dec.b_init)?,
                    b_h: match &dec.b_h {
                        Some(b) => host(b)?,
                        None => vec![0.0; dec.kind.gates() * cfg.hidden_dim],
                    },
                    kind: dec.kind,
                }),
            },
        };
        let upper = model.upper_layers().layers.iter().map(|l| HostEncoder::new(&[l], cfg.hidden_dim)).collect::<Result<_>>()?;
        let feedback = model.upper_layers().feedback.iter().map(HostFeedback::new).collect::<Result<_>>()?;
        let (src_emb, tgt_emb) = model.embeddings();
        let grconv = match model.layers() {
            Layers::Enc { enc: SummaryEncoder::GrConv(g), .. } => Some(HostGrConv::new(g)?),
            _ => None,
        };
        let copy = match model.copy_gate() {
            Some(g) => Some(HostCopy { w: host(&g.w)?, b: host(&g.b)?.first().copied().unwrap_or(0.0) }),
            None => None,
        };
        Ok(HostModel { src_emb: host(src_emb)?, tgt_emb: host(tgt_emb)?, cfg, core, upper, feedback, grconv, copy, out })
    }

    /// Whether the fused search can run `model`: `f32` parameters in host memory (every
    /// architecture, cell, encoder and stack).
    pub fn supports(model: &Seq2Seq) -> bool {
        model.dtype() == DType::F32 && model.device().is_cpu()
    }

    /// The width `w` of one decoder layer's state: `n`, or the LSTM's `[s; cell]`, `2n`.
    pub fn layer_width(&self) -> usize {
        self.cfg.layer_state_width()
    }

    /// The width of a decoder state row: every layer's state side by side, `L·w`.
    pub fn state_width(&self) -> usize {
        self.cfg.dec_layers * self.layer_width()
    }
}
