//! The attention decoder's launch form (issue 77), the recorded GPU step's twin of
//! `AttentionDecoder::forward` and `ConditionalDecoder::forward` (RNNsearch appendix A.2.2),
//! for `B` sentences of `S` source and `T` target positions, `N = B·T`, `C = 2H`:
//! ```text
//! s_0 = tanh(pool(ann) W_s + b_s) (B, H)    enc = [ann | ann U_a] (B, S, C + A)
//! gie = ey W + b (N, G)                     [s_i; c_i] = loop([gie; s_0], enc) (N, H + C)
//! ```
//! The annotations' gradient gathers their three uses here: the loop's, the keys' and the
//! start's.
use candle_core::{Result, Tensor};

use super::launch_tape::{Node, Param, StepBatch, Tape};
use super::regularizer::{Dropout, Side, Site};
use super::rnnsearch::Decoder;
use crate::config::Precision;
use crate::kernels::gpu::attention_op::AttnOp;
use crate::kernels::gpu::launch::{Addr, Gemm, Launch, Staged, View};
use crate::kernels::gpu::linear::Linear;
use crate::kernels::gpu::start_pool::Start;

/// The decoder, run: its passes and the buffers its backward pass reads.
pub(crate) struct DecoderLaunch<L: Launch> {
    start: Node<L, Start>,
    /// The loop's inputs, which its backward pass reads: `[ann | ann U_a]` `(B·S, C + A)` and
    /// `[gie; s_0]` `(N·G + B·H)`.
    _enc: L::Floats,
    _seq: L::Floats,
    first: Node<L, Linear>,
    attn: Node<L, AttnOp>,
}

impl Decoder {
    /// The decoder's slots of the arena: the start state's `W_s (P, H)` and `b_s (H)`, the keys'
    /// `U_a (C, A)`, the first cell's input weights `(m, G)` and bias `(G)` (it reads `E y`),
    /// and the loop's packed weights (`decoder_loop_gpu::LoopWeights::packed`).
    pub(crate) fn launch_slots(&self) -> crate::error::Result<Vec<(Param, Tensor)>> {
        let (start, keys, first, weights) = match self {
            Decoder::Bahdanau(d) => (&d.start, &d.att.u_a, &d.rnn, d.loop_weights()),
            Decoder::Conditional(d) => (&d.start, &d.att.u_a, &d.rnn1, d.loop_weights()),
        };
        let (dw, db) = first.input_weights();
        Ok(vec![
            (Param::StartW, start.w_s.clone()),
            (Param::StartB, start.b_s.clone()),
            (Param::Keys, keys.clone()),
            (Param::DecW, dw.clone()),
            (Param::DecB, db.clone()),
            (Param::Loop, weights.packed()?),
        ])
    }

    /// The decoder's one dropout mask: its recurrent mask `(B, H)`, or none.
    pub(crate) fn launch_mask(d: Option<&mut Dropout>, b: usize, hidden: usize) -> Option<Vec<f32>> {
        d?.recurrent(Site::State { side: Side::Decoder, layer: 0, dir: 0 }, b, hidden)
    }

    /// The states and contexts `[s_i; c_i]` `(N, H + C)` from the annotations `ann (B, S, C)`
    /// and the embedded targets `ey (N, m)`.
    pub(crate) fn launch<L: Launch>(
        t: &Tape<'_, L>,
        x: &StepBatch<Staged<i64>, Staged<f32>>,
        (ann, ey): (Addr, Addr),
        mask: Option<Staged<f32>>,
    ) -> Result<DecoderLaunch<L>> {
        let (z, l) = (t.sizes, t.l);
        let (b, s, tl) = x.shape;
        let (h, a, n) = (z.hidden, z.att, b * tl);
        let (c, g) = (2 * h, z.kind.gates() * h);
        let start = Start { batch: b, len: s, ctx: c, hidden: h, kind: z.start, lens: x.ints.src_lens.clone() };
        let start = Node::forward(l, start, [ann, t.slot(Param::StartW)?, t.slot(Param::StartB)?])?;
        // enc = [ann | ann U_a]: the keys written beside the annotations.
        let enc = l.scratch(b * s * (c + a))?;
        let encp = l.addr(&enc);
        t.copy_rows((encp, c + a), (ann, c), b * s, c)?;
        let keys = View::new(t.slot(Param::Keys)?, a);
        l.gemm(Gemm { m: b * s, n: a, k: c, a: View::new(ann, c), b: keys, c: View::new(encp.at(c), c + a), accumulate: false })?;
        let first = Linear { n, k: z.emb, m: g, precision: Precision::F32 };
        let first = Node::forward(l, first, [ey, t.slot(Param::DecW)?, t.slot(Param::DecB)?])?;
        // The loop reads [gie; s_0].
        let seq = l.scratch(n * g + b * h)?;
        let seqp = l.addr(&seq);
        t.copy_rows((seqp, g), (first.at(l), g), n, g)?;
        t.copy_rows((seqp.at(n * g), h), (start.at(l), h), b, h)?;
        let attn = AttnOp { d: z.looped.at(b, tl, s, &[]), m0: false, lens: x.ints.src_lens.clone(), all: x.ints.all.clone(), mask };
        let attn = Node::forward(l, attn, [seqp, encp, t.slot(Param::Loop)?])?;
        Ok(DecoderLaunch { start, _enc: enc, _seq: seq, first, attn })
    }
}

impl<L: Launch> DecoderLaunch<L> {
    /// The states and contexts `(N, H + C)`.
    pub fn at(&self, l: &L) -> Addr {
        self.attn.at(l)
    }

    /// Writes the decoder's gradients from `dsc (N, H + C)`; returns the annotations' gradient
    /// `(B·S, C)` (the loop's, the keys' and the start's) and the embedded targets' `(N, m)`.
    pub fn backward(self, t: &Tape<'_, L>, x: &StepBatch<Staged<i64>, Staged<f32>>, dsc: Addr) -> Result<(L::Floats, L::Floats)> {
        let (z, l) = (t.sizes, t.l);
        let (b, s, tl) = x.shape;
        let (h, a, n) = (z.hidden, z.att, b * tl);
        let c = 2 * h;
        let ann = self.start.x[0];
        let [dseq, denc, dloop] = self.attn.backward(l, dsc)?;
        t.put(Param::Loop, &dloop)?;
        let dseqp = l.addr(&dseq);
        let [dey, dw, db] = self.first.backward(l, dseqp)?;
        t.put(Param::DecW, &dw)?;
        t.put(Param::DecB, &db)?;
        // The annotations' gradient: the loop's, the keys', the start's.
        let dann = l.scratch(b * s * c)?;
        let (dannp, dencp) = (l.addr(&dann), l.addr(&denc));
        t.copy_rows((dannp, c), (dencp, c + a), b * s, c)?;
        let dkeys = View::new(dencp.at(c), c + a);
        let grad_keys = View::new(t.grad(Param::Keys)?, a);
        l.gemm(Gemm { m: c, n: a, k: b * s, a: View::new(ann, c).t(), b: dkeys, c: grad_keys, accumulate: false })?;
        let keys_t = View::new(t.slot(Param::Keys)?, a).t();
        l.gemm(Gemm { m: b * s, n: c, k: a, a: dkeys, b: keys_t, c: View::new(dannp, c), accumulate: true })?;
        let [dann0, dws, dbs] = self.start.backward(l, dseqp.at(n * z.kind.gates() * h))?;
        t.add_rows((dannp, 1), (l.addr(&dann0), 1), 1, b * s * c)?;
        t.put(Param::StartW, &dws)?;
        t.put(Param::StartB, &dbs)?;
        Ok((dann, dey))
    }
}
