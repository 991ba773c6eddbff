//! The bidirectional encoder's launch form (issue 77), the recorded GPU step's twin of
//! `BiRnnEncoder::forward` for its one layer: `gi = x [W→ | W←] + [b→ | b←]` `(B·S, 2G)` by
//! `kernels::gpu::linear`, then both directions' recurrences `ann = [→h; ←h]` `(B, S, C)`,
//! `C = 2H`, by `kernels::gpu::birnn`, with one recurrent dropout mask per direction.
use candle_core::{Result, Tensor};

use super::encoder::BiRnnEncoder;
use super::launch_tape::{Node, Param, StepBatch, Tape};
use super::regularizer::{Dropout, Side, Site};
use crate::config::Precision;
use crate::kernels::gpu::birnn::{BiRnn, Dims};
use crate::kernels::gpu::launch::{Addr, Launch, Staged};
use crate::kernels::gpu::linear::Linear;

/// The encoder, run: its input projection's and its recurrences' passes.
pub(crate) struct EncoderLaunch<L: Launch> {
    lin: Node<L, Linear>,
    bi: Node<L, BiRnn>,
}

impl BiRnnEncoder {
    /// The encoder's slots of the arena, in the layout its ops read: `[W→ | W←] (m, 2G)`, the
    /// biases `(2G)`, `[U→; U←] (2, H, G)` and the recurrent biases `(2, G)` (`b_h`; zeros for
    /// the paper GRU, constants of the packing).
    pub(crate) fn launch_slots(&self) -> crate::error::Result<Vec<(Param, Tensor)>> {
        let enc = &self.layers[0];
        let ((wf, bf), (wb, bb)) = (enc.fwd.input_weights(), enc.bwd.input_weights());
        Ok(vec![
            (Param::EncW, Tensor::cat(&[wf, wb], 1)?),
            (Param::EncB, Tensor::cat(&[bf, bb], 0)?),
            (Param::EncU, Tensor::stack(&[enc.fwd.u_cat()?, enc.bwd.u_cat()?], 0)?),
            (Param::EncBh, Tensor::stack(&[enc.fwd.bias_h()?, enc.bwd.bias_h()?], 0)?),
        ])
    }

    /// The encoder's one dropout mask: both directions' recurrent masks `(2, B, H)`, drawn at
    /// the composed model's sites, or none.
    pub(crate) fn launch_mask(d: Option<&mut Dropout>, b: usize, hidden: usize) -> Option<Vec<f32>> {
        let d = d?;
        match [0, 1].map(|dir| d.recurrent(Site::State { side: Side::Encoder, layer: 0, dir }, b, hidden)) {
            [Some(f), Some(w)] => Some([f, w].concat()),
            _ => None,
        }
    }

    /// The annotations of the embedded source `xs (B·S, m)`.
    pub(crate) fn launch<L: Launch>(
        t: &Tape<'_, L>,
        x: &StepBatch<Staged<i64>, Staged<f32>>,
        xs: Addr,
        mask: Option<Staged<f32>>,
    ) -> Result<EncoderLaunch<L>> {
        let z = t.sizes;
        let (b, s, _) = x.shape;
        let g = z.kind.gates() * z.hidden;
        let lin = Linear { n: b * s, k: z.emb, m: 2 * g, precision: Precision::F32 };
        let lin = Node::forward(t.l, lin, [xs, t.slot(Param::EncW)?, t.slot(Param::EncB)?])?;
        let d = Dims { batch: b, len: s, hidden: z.hidden, kind: z.kind, norm: false };
        let bi = BiRnn { d, lens: x.ints.src_lens.clone(), mask };
        let bi = Node::forward(t.l, bi, [lin.at(t.l), t.slot(Param::EncU)?, t.slot(Param::EncBh)?])?;
        Ok(EncoderLaunch { lin, bi })
    }
}

impl<L: Launch> EncoderLaunch<L> {
    /// The annotations `(B, S, C)`.
    pub fn at(&self, l: &L) -> Addr {
        self.bi.at(l)
    }

    /// Writes the encoder's gradients from the annotations' `dann`; returns the embedded
    /// source's gradient `(B·S, m)`.
    pub fn backward(self, t: &Tape<'_, L>, dann: Addr) -> Result<L::Floats> {
        let [dgi, du, dbh] = self.bi.backward(t.l, dann)?;
        t.put(Param::EncU, &du)?;
        t.put(Param::EncBh, &dbh)?;
        let [dxs, dw, db] = self.lin.backward(t.l, t.l.addr(&dgi))?;
        t.put(Param::EncW, &dw)?;
        t.put(Param::EncB, &db)?;
        Ok(dxs)
    }
}
