//! The deep output's launch form (issue 77), the recorded GPU step's twin of
//! `DeepOutput::forward` and `nll` (RNNsearch appendix A.2.2), for `N` target positions:
//! ```text
//! t = maxout([s; c] O_sc + ey O_y + b) ⊙ m_t (N, l)    nll = proj_nll(t, G, b_G, y_out, ε) (N)
//! ```
//! by `kernels::gpu::deep_output` and `kernels::gpu::proj_nll`. With tied embeddings `G = Eᵀ`
//! is the target embedding's slot, and its gradient goes back to the caller, which adds it to
//! the embedding's.
use candle_core::{Result, Tensor};

use super::launch_tape::{Node, Param, StepBatch, Tape};
use super::output::DeepOutput;
use super::regularizer::{Dropout, Site};
use crate::kernels::gpu::deep_output::DeepOutput as DeepOp;
use crate::kernels::gpu::launch::{Addr, Launch, Staged};
use crate::kernels::gpu::proj_nll::ProjNll;
use crate::kernels::shapes::proj_weight::ProjWeight;

/// The output layer, run: the deep output's and the projection's passes.
pub(crate) struct OutputLaunch<L: Launch> {
    deep: Node<L, DeepOp>,
    proj: Node<L, ProjNll>,
}

/// The output layer's gradients that leave it: the states and contexts' `(N, H + C)`, the
/// embedded targets' `(N, m)`, and with tied embeddings the projection's `(K_y, m)`.
pub(crate) struct OutputGrads<F> {
    pub dsc: F,
    pub dey: F,
    pub tied: Option<F>,
}

impl DeepOutput {
    /// The output layer's slots of the arena: `[O_h; O_c; O_y; b] (H + C + m + 1, w)`, the
    /// projection `G (l, K_y)` (none when tied: it reads the target embedding's slot) and its
    /// bias `(K_y)`.
    pub(crate) fn launch_slots(&self) -> crate::error::Result<Vec<(Param, Tensor)>> {
        let mut slots = vec![(Param::OutWb, Tensor::cat(&[&self.o_h, &self.o_c, &self.o_y, &self.b.unsqueeze(0)?], 0)?)];
        if let ProjWeight::Kv(g) = self.projection() {
            slots.push((Param::Proj, g.clone()));
        }
        slots.push((Param::ProjB, self.b_g.clone()));
        Ok(slots)
    }

    /// The output layer's one dropout mask: on the deep output's `N·l` units, or none.
    pub(crate) fn launch_mask(d: Option<&mut Dropout>, n: usize, units: usize) -> Option<Vec<f32>> {
        d?.units_mask(Site::Maxout, n * units)
    }

    /// The per-position NLL `(N)` from the states and contexts `sc (N, H + C)` and the embedded
    /// targets `ey (N, m)`.
    pub(crate) fn launch<L: Launch>(
        t: &Tape<'_, L>,
        x: &StepBatch<Staged<i64>, Staged<f32>>,
        (sc, ey): (Addr, Addr),
        mask: Option<Staged<f32>>,
    ) -> Result<OutputLaunch<L>> {
        let (z, l) = (t.sizes, t.l);
        let (b, _, tl) = x.shape;
        let (h, n) = (z.hidden, b * tl);
        let deep = DeepOp::new(n, (h + 2 * h, z.emb, z.layer.pre_width(z.units)), z.layer, mask);
        let deep = Node::forward(l, deep, [sc, ey, t.slot(Param::OutWb)?])?;
        let w = if z.tied { t.slot(Param::TgtEmb)? } else { t.slot(Param::Proj)? };
        let proj = ProjNll::new(x.ints.tgt_out.clone(), (n, z.units, z.tgt_vocab), t.smoothing, z.tied);
        let proj = Node::forward(l, proj, [deep.at(l), w, t.slot(Param::ProjB)?])?;
        Ok(OutputLaunch { deep, proj })
    }
}

impl<L: Launch> OutputLaunch<L> {
    /// The per-position NLL `(N)`.
    pub fn at(&self, l: &L) -> Addr {
        self.proj.at(l)
    }

    /// Writes the output layer's gradients from `dnll (N)`, the loss's weight of each position.
    pub fn backward(self, t: &Tape<'_, L>, dnll: Addr) -> Result<OutputGrads<L::Floats>> {
        let l = t.l;
        let [dtt, dproj, dpb] = self.proj.backward(l, dnll)?;
        let [dsc, dey, dwb] = self.deep.backward(l, l.addr(&dtt))?;
        t.put(Param::ProjB, &dpb)?;
        t.put(Param::OutWb, &dwb)?;
        let tied = if t.sizes.tied {
            Some(dproj)
        } else {
            t.put(Param::Proj, &dproj)?;
            None
        };
        Ok(OutputGrads { dsc, dey, tied })
    }
}
