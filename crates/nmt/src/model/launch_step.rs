//! RNNsearch's training step as launches over a parameter arena (`launch_arena.rs`), Marian's way:
//! every op a GPU twin of a CPU op (`kernels::gpu`), driven through `FusedOp::forward` and
//! `backward` on addresses, the step's host data handed as [`Staged`] buffers and every scalar
//! that changes between updates on the device (`optim_step::DeviceUpdate`). So the step can be
//! recorded once per bucket and replayed, or captured as a CUDA graph (`kernels/gpu/recording.rs`,
//! docs/GPU.md), and its loss and gradients are the composed model's (the tests compare them).
//!
//! The forward pass, for `B` sentences of `S` source and `T` target positions, `N = B·T`:
//! ```text
//! x = E_x[src] ⊙ m_x (B·S, m)           gi = x [W→ | W←] + b (B·S, 2G)     ann = biRNN(gi) (B, S, C)
//! s_0 = tanh(pool(ann) W_s + b_s) (B, H)                                  enc = [ann | ann U_a] (B, S, C + A)
//! ey = E_y[y_in] ⊙ m_y (N, m)           gie = ey W + b (N, G)              [s_i; c_i] = loop([gie; s_0], enc) (N, H + C)
//! t = maxout([s; c] O_sc + ey O_y + b) ⊙ m_t (N, l)                       nll = proj_nll(t, G, b_G, y_out, ε) (N)
//! loss = Σ_r nll_r · w_r,  w_r = mask_r / tokens
//! ```
//! and the backward pass in reverse, each weight gradient written into its arena slot.
use candle_core::Result;

use super::decoder_loop_gpu::LoopDims;
use super::launch_arena::{pack_model, pack_named, positions, supported, unpack, unpack_named, Layout, Param};
use super::rnnsearch::Decoder;
use super::Seq2Seq;
use crate::config::{CellKind, OutputLayer, Precision, StartState};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::gpu::args::{self, AddRows, MaskRows, WeightedSum};
use crate::kernels::gpu::attention_op::AttnOp;
use crate::kernels::gpu::birnn::{BiRnn, Dims};
use crate::kernels::gpu::deep_output::DeepOutput;
use crate::kernels::gpu::launch::{Addr, Gemm, Launch, Staged, View};
use crate::kernels::gpu::linear::Linear;
use crate::kernels::gpu::lookup::Lookup;
use crate::kernels::gpu::optim_step::{DeviceUpdate, UpdateConfig};
use crate::kernels::gpu::proj_nll::ProjNll;
use crate::kernels::gpu::start_pool::Start;

/// A batch's host data as the step reads it (ids `i64`, masks `0` or `1/(1−p)`).
#[derive(Clone, Debug)]
pub struct StepInputs<T> {
    pub src: T,
    pub tgt_in: T,
    pub tgt_out: T,
    pub src_lens: T,
    /// `T` for every sentence (the loop's target lengths).
    pub all: T,
}

/// A batch for the step: its shape `(B, S, T)`, ids and lengths, the loss weights
/// `mask_r / tokens` and the dropout masks (source and target embeddings, the encoder's two
/// directions' recurrent masks, the decoder's, the deep output's units), each `None` when off.
#[derive(Clone, Debug)]
pub struct StepBatch<I, F> {
    pub shape: (usize, usize, usize),
    pub ints: StepInputs<I>,
    pub weights: F,
    pub masks: [Option<F>; 5],
}

/// The model's sizes the step reads.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    emb: usize,
    hidden: usize,
    att: usize,
    src_vocab: usize,
    tgt_vocab: usize,
    units: usize,
    kind: CellKind,
    start: StartState,
    layer: OutputLayer,
    tied: bool,
    looped: LoopDims,
}

/// The step of one model: its arena (parameters, moments, gradients, the frozen mask), the
/// optimiser's device state and the loss.
pub struct LaunchStep<F, I> {
    sizes: Sizes,
    layout: Layout,
    /// Each arena value's parameter element (`launch_arena::positions`), for writing back.
    positions: Vec<Option<usize>>,
    smoothing: f64,
    /// `[θ, m, v, g, frozen, loss]`: kept alive here, used through `at`.
    _bufs: [F; 6],
    at: [Addr; 6],
    opt: DeviceUpdate<F, I>,
}

impl<F, I> LaunchStep<F, I> {
    /// The step of `model` on launcher `l`, updating with `cfg` from learning rate `lr`,
    /// label smoothing `smoothing`.
    pub fn new<L: Launch<Floats = F, Ints = I>>(
        l: &L,
        model: &Seq2Seq,
        cfg: UpdateConfig,
        lr: f64,
        smoothing: f64,
    ) -> crate::error::Result<Self> {
        let net = supported(model)?;
        let mc = &model.cfg;
        let (looped, start, att) = match &net.dec {
            Decoder::Bahdanau(d) => (d.loop_weights().dims(2 * mc.hidden_dim)?, d.start.kind, d.att.u_a.dim(1)?),
            Decoder::Conditional(d) => (d.loop_weights().dims(2 * mc.hidden_dim)?, d.start.kind, d.att.u_a.dim(1)?),
        };
        let (flat, layout) = pack_model(model)?;
        // Each arena value's parameter element: the constants of the packing keep a zero gradient.
        let positions = positions(model)?;
        let frozen: Vec<f32> = positions.iter().map(|p| if p.is_some() { 1.0 } else { 0.0 }).collect();
        let n = layout.len;
        let sizes = Sizes {
            emb: mc.emb_dim,
            hidden: mc.hidden_dim,
            att,
            src_vocab: mc.src_vocab,
            tgt_vocab: mc.tgt_vocab,
            units: mc.maxout_dim,
            kind: mc.cell_kind(),
            start,
            layer: mc.output_layer,
            tied: mc.tie_target_embeddings,
            looped,
        };
        let bufs = [l.upload(&flat)?, l.zeros(n)?, l.zeros(n)?, l.zeros(n)?, l.upload(&frozen)?, l.zeros(1)?];
        let at = [0, 1, 2, 3, 4, 5].map(|k| l.addr(&bufs[k]));
        let opt = DeviceUpdate::new(l, cfg, n, lr)?;
        Ok(LaunchStep { sizes, layout, positions, smoothing, _bufs: bufs, at, opt })
    }

    /// The parameters, after the step.
    pub fn params(&self, l: &impl Launch) -> Result<Vec<f32>> {
        l.read(self.at[0], self.layout.len)
    }

    /// Writes the step's parameters back into `model` (before a validation or a checkpoint).
    pub fn write_back(&self, l: &impl Launch, model: &Seq2Seq) -> crate::error::Result<()> {
        unpack(model, &self.positions, &self.params(l)?)
    }

    /// An arena laid out as the parameters (the moments) as one tensor per parameter, by name.
    pub fn unpacked(&self, model: &Seq2Seq, arena: &[f32]) -> crate::error::Result<Vec<(String, candle_core::Tensor)>> {
        unpack_named(model, &self.positions, arena)
    }

    /// The optimiser's moments `(m, v)`, each laid out as the parameters.
    pub fn moments(&self, l: &impl Launch) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((l.read(self.at[1], self.layout.len)?, l.read(self.at[2], self.layout.len)?))
    }

    /// Sets the optimiser's moments (laid out as the parameters) and its count of updates
    /// applied: a resumed run's state, between steps.
    pub fn set_state(&self, l: &impl Launch, (m, v): (&[f32], &[f32]), count: u64) -> Result<()> {
        if m.len() != self.layout.len || v.len() != self.layout.len {
            candle_core::bail!("moments of {} and {} values for an arena of {}", m.len(), v.len(), self.layout.len);
        }
        l.write(self.at[1], m)?;
        l.write(self.at[2], v)?;
        self.opt.set_count(l, count)
    }

    /// The last step's gradients.
    pub fn grads(&self, l: &impl Launch) -> Result<Vec<f32>> {
        l.read(self.at[3], self.layout.len)
    }

    /// The last step's loss (the mean token NLL) and gradient norm before clipping.
    pub fn loss_and_norm(&self, l: &impl Launch) -> Result<(f32, f64)> {
        Ok((l.read(self.at[5], 1)?[0], self.opt.norm(l)?))
    }

    /// The optimiser's learning rate (a plateau's decay), between steps.
    pub fn set_lr(&self, l: &impl Launch, lr: f64) -> Result<()> {
        self.opt.set_lr(l, lr)
    }

    fn slot(&self, s: Param) -> Result<Addr> {
        Ok(self.at[0].at(self.layout.at(s).map_err(|e| candle_core::Error::Msg(e.to_string()))?))
    }

    fn grad(&self, s: Param) -> Result<Addr> {
        Ok(self.at[3].at(self.layout.at(s).map_err(|e| candle_core::Error::Msg(e.to_string()))?))
    }

    /// One step on `l`: forward, backward and (`update`) the optimiser's update in place.
    pub fn run<L: Launch>(&self, l: &L, x: &StepBatch<Staged<i64>, Staged<f32>>, update: bool) -> Result<()> {
        let z = self.sizes;
        let (b, s, t) = x.shape;
        let (m, h, a, n) = (z.emb, z.hidden, z.att, b * t);
        let (c, g) = (2 * h, z.kind.gates() * h);
        let [src_mask, tgt_mask, enc_mask, dec_mask, out_mask] = x.masks.clone();
        let f32s = Precision::F32;
        // Forward: the source side.
        let look_x = Lookup::new(x.ints.src.clone(), src_mask, b * s, (z.src_vocab, m));
        let (xs, ()) = look_x.forward(l, [self.slot(Param::SrcEmb)?, Addr::NULL, Addr::NULL])?;
        let lin_x = Linear { n: b * s, k: m, m: 2 * g, precision: f32s };
        let x_in = [l.addr(&xs), self.slot(Param::EncW)?, self.slot(Param::EncB)?];
        let (gi, ()) = lin_x.forward(l, x_in)?;
        let bi =
            BiRnn { d: Dims { batch: b, len: s, hidden: h, kind: z.kind, norm: false }, lens: x.ints.src_lens.clone(), mask: enc_mask };
        let bi_in = [l.addr(&gi), self.slot(Param::EncU)?, self.slot(Param::EncBh)?];
        let (ann, bi_saved) = bi.forward(l, bi_in)?;
        let annp = l.addr(&ann);
        let start = Start { batch: b, len: s, ctx: c, hidden: h, kind: z.start, lens: x.ints.src_lens.clone() };
        let start_in = [annp, self.slot(Param::StartW)?, self.slot(Param::StartB)?];
        let (s0, start_saved) = start.forward(l, start_in)?;
        // enc = [ann | ann U_a]: the keys written beside the annotations.
        let enc = l.scratch(b * s * (c + a))?;
        let encp = l.addr(&enc);
        copy_rows(l, (encp, c + a), (annp, c), b * s, c)?;
        let keys = Gemm {
            m: b * s,
            n: a,
            k: c,
            a: View::new(annp, c),
            b: View::new(self.slot(Param::Keys)?, a),
            c: View::new(encp.at(c), c + a),
            accumulate: false,
        };
        l.gemm(keys)?;
        // The target side and the loop.
        let look_y = Lookup::new(x.ints.tgt_in.clone(), tgt_mask, n, (z.tgt_vocab, m));
        let (ey, ()) = look_y.forward(l, [self.slot(Param::TgtEmb)?, Addr::NULL, Addr::NULL])?;
        let eyp = l.addr(&ey);
        let lin_y = Linear { n, k: m, m: g, precision: f32s };
        let y_in = [eyp, self.slot(Param::DecW)?, self.slot(Param::DecB)?];
        let (gie, ()) = lin_y.forward(l, y_in)?;
        let seq = l.scratch(n * g + b * h)?;
        let seqp = l.addr(&seq);
        copy_rows(l, (seqp, g), (l.addr(&gie), g), n, g)?;
        copy_rows(l, (seqp.at(n * g), h), (l.addr(&s0), h), b, h)?;
        let attn =
            AttnOp { d: z.looped.at(b, t, s, &[]), m0: false, lens: x.ints.src_lens.clone(), all: x.ints.all.clone(), mask: dec_mask };
        let loop_in = [seqp, encp, self.slot(Param::Loop)?];
        let (sc, attn_saved) = attn.forward(l, loop_in)?;
        let scp = l.addr(&sc);
        let deep = DeepOutput::new(n, (h + c, m, z.layer.pre_width(z.units)), z.layer, out_mask);
        let deep_in = [scp, eyp, self.slot(Param::OutWb)?];
        let (tt, deep_saved) = deep.forward(l, deep_in)?;
        let proj_w = if z.tied { self.slot(Param::TgtEmb)? } else { self.slot(Param::Proj)? };
        let proj = ProjNll::new(x.ints.tgt_out.clone(), (n, z.units, z.tgt_vocab), self.smoothing, z.tied);
        let proj_in = [l.addr(&tt), proj_w, self.slot(Param::ProjB)?];
        let (nll, probs) = proj.forward(l, proj_in)?;
        let (w, _held) = x.weights.addr(l)?;
        l.launch(&args::WEIGHTED_SUM, 1, WeightedSum { out: self.at[5], x: l.addr(&nll), w, n: n as i64 })?;

        // Backward, each weight's gradient into its slot.
        let [dtt, dproj, dpb] = proj.backward(l, proj_in, probs, l.addr(&nll), w)?;
        let [dsc, dey, dwb] = deep.backward(l, deep_in, deep_saved, l.addr(&tt), l.addr(&dtt))?;
        self.put(l, Param::ProjB, &dpb, z.tgt_vocab)?;
        self.put(l, Param::OutWb, &dwb, (h + c + m + 1) * z.layer.pre_width(z.units))?;
        let [dseq, denc, dloop] = attn.backward(l, loop_in, attn_saved, scp, l.addr(&dsc))?;
        self.put(l, Param::Loop, &dloop, self.len(Param::Loop)?)?;
        let dseqp = l.addr(&dseq);
        let [dey2, ddw, ddb] = lin_y.backward(l, y_in, (), l.addr(&gie), dseqp)?;
        add_rows(l, (l.addr(&dey), m), (l.addr(&dey2), m), n, m)?;
        self.put(l, Param::DecW, &ddw, m * g)?;
        self.put(l, Param::DecB, &ddb, g)?;
        let [de_y, _, _] = look_y.backward(l, [self.slot(Param::TgtEmb)?, Addr::NULL, Addr::NULL], (), eyp, l.addr(&dey))?;
        self.put(l, Param::TgtEmb, &de_y, z.tgt_vocab * m)?;
        if z.tied {
            add_rows(l, (self.grad(Param::TgtEmb)?, 1), (l.addr(&dproj), 1), 1, z.tgt_vocab * m)?;
        } else {
            self.put(l, Param::Proj, &dproj, z.units * z.tgt_vocab)?;
        }
        // The annotations' gradient: the loop's, the keys', the start's.
        let dann = l.scratch(b * s * c)?;
        let dannp = l.addr(&dann);
        let dencp = l.addr(&denc);
        copy_rows(l, (dannp, c), (dencp, c + a), b * s, c)?;
        let dkeys = View::new(dencp.at(c), c + a);
        l.gemm(Gemm {
            m: c,
            n: a,
            k: b * s,
            a: View::new(annp, c).t(),
            b: dkeys,
            c: View::new(self.grad(Param::Keys)?, a),
            accumulate: false,
        })?;
        l.gemm(Gemm {
            m: b * s,
            n: c,
            k: a,
            a: dkeys,
            b: View::new(self.slot(Param::Keys)?, a).t(),
            c: View::new(dannp, c),
            accumulate: true,
        })?;
        let [dann0, dws, dbs] = start.backward(l, start_in, start_saved, l.addr(&s0), dseqp.at(n * g))?;
        add_rows(l, (dannp, 1), (l.addr(&dann0), 1), 1, b * s * c)?;
        self.put(l, Param::StartW, &dws, self.len(Param::StartW)?)?;
        self.put(l, Param::StartB, &dbs, h)?;
        let [dgi, du, dbh] = bi.backward(l, bi_in, bi_saved, annp, dannp)?;
        self.put(l, Param::EncU, &du, 2 * h * g)?;
        self.put(l, Param::EncBh, &dbh, self.len(Param::EncBh)?)?;
        let [dxs, dwx, dbx] = lin_x.backward(l, x_in, (), l.addr(&gi), l.addr(&dgi))?;
        self.put(l, Param::EncW, &dwx, m * 2 * g)?;
        self.put(l, Param::EncB, &dbx, 2 * g)?;
        let [de_x, _, _] = look_x.backward(l, [self.slot(Param::SrcEmb)?, Addr::NULL, Addr::NULL], (), l.addr(&xs), l.addr(&dxs))?;
        self.put(l, Param::SrcEmb, &de_x, z.src_vocab * m)?;
        // Constants of the packing keep a zero gradient, so the update leaves them alone.
        let len = self.layout.len;
        let frz = MaskRows {
            dst: self.at[3],
            dst_ld: len as i64,
            src: self.at[3],
            src_ld: len as i64,
            mask: self.at[4],
            rows: 1,
            width: len as i64,
        };
        l.launch(&args::MASK_ROWS, len, frz)?;
        if update {
            self.opt.step(l, self.at[0], [self.at[1], self.at[2]], self.at[3])?;
        }
        Ok(())
    }

    fn len(&self, s: Param) -> Result<usize> {
        self.layout.regions.iter().find(|r| r.0 == s).map(|r| r.2).ok_or_else(|| candle_core::Error::Msg(format!("no {s:?} slot")))
    }

    /// Copies a gradient of `len` values into slot `s`.
    fn put<L: Launch>(&self, l: &L, s: Param, from: &L::Floats, len: usize) -> Result<()> {
        copy_rows(l, (self.grad(s)?, len), (l.addr(from), len), 1, len)
    }
}

/// A slot of the arena: its name, offset and length.
pub type ParamSpan = (String, usize, usize);

/// The arena of `model`'s gradients `grads` (a parameter without one: zeros), laid out as
/// [`LaunchStep::grads`] lays them out, and each slot's `(name, offset, length)`: how the tests,
/// on the CPU and on a GPU, compare the step with the composed model.
#[doc(hidden)]
pub fn packed_gradients(model: &Seq2Seq, grads: &candle_core::backprop::GradStore) -> crate::error::Result<(Vec<f32>, Vec<ParamSpan>)> {
    let mut named = std::collections::BTreeMap::new();
    for (name, v) in model.params.named_vars() {
        let g = match grads.get(v.as_tensor()) {
            Some(g) => g.clone(),
            None => v.as_tensor().zeros_like()?,
        };
        named.insert(name, g);
    }
    let (_, layout) = pack_model(model)?;
    Ok((pack_named(model, &named)?, layout.regions.iter().map(|&(s, at, len)| (format!("{s:?}"), at, len)).collect()))
}

/// `dst[r][..width] = src[r][..width]` for `rows` rows, each side `(address, row stride)`.
fn copy_rows(l: &impl Launch, (dst, dst_ld): (Addr, usize), (src, src_ld): (Addr, usize), rows: usize, width: usize) -> Result<()> {
    let a = MaskRows { dst, dst_ld: dst_ld as i64, src, src_ld: src_ld as i64, mask: Addr::NULL, rows: rows as i64, width: width as i64 };
    l.launch(&args::MASK_ROWS, rows * width, a)
}

/// `dst[r][..width] += src[r][..width]`, as [`copy_rows`].
fn add_rows(l: &impl Launch, (dst, dst_ld): (Addr, usize), (src, src_ld): (Addr, usize), rows: usize, width: usize) -> Result<()> {
    let a = AddRows { dst, dst_ld: dst_ld as i64, src, src_ld: src_ld as i64, mask: Addr::NULL, rows: rows as i64, width: width as i64 };
    l.launch(&args::ADD_ROWS, rows * width, a)
}
