//! RNNsearch's decoder start on a [`Launch`] (`start.cu`): `s_0 = tanh(p W_s + b_s)` with `p` the
//! summary of the annotations `ann (B, S, C)` that `kernels::cpu::start_pool` computes (its
//! twin: `←h_1`, `→h_len` is not offered here, or the mean over each sentence's positions;
//! Bahdanau et al. 2014, appendix A.2.2; Nematus and Marian's `s2s` for the mean), `W_s (P, H)`,
//! `b_s (H)`. On the CPU the fused attention op computes `s_0` inside; on the GPU it is the
//! loop's input (`attention_op.rs`), and the recorded training step runs this op before the loop
//! (`model/launch_step.rs`).
//!
//! Forward: the pool (one thread per element of `p`, the positions in order, each weighted by
//! `1 / count` as the CPU's `pool` does), `p W_s + b_s` ([`Linear`]), `tanh` in place. Backward:
//! `tanh`'s derivative from the output, [`Linear`]'s backward pass, the pool's gradient added
//! into a zeroed `dann`. The lengths are [`Staged`]: nothing is uploaded when they are on the
//! device.
use candle_core::{bail, Result, Shape};

use super::args::kernels;
use super::launch::{Addr, Launch, Staged};
use super::linear::Linear;
use crate::config::{Precision, StartState};
use crate::kernels::fused_op::FusedOp;

kernels! {
    Start:
    POOL = nmt_pool, Pool { p: Addr, ann: Addr, lens: Addr, batch: i64, len: i64, c: i64, width: i64, col: i64, mean: i64 }
    POOL_BWD = nmt_pool_bwd, PoolBwd { dann: Addr, dp: Addr, lens: Addr, batch: i64, len: i64, c: i64, width: i64, col: i64, mean: i64 }
    TANH = nmt_tanh, Tanh { y: Addr, x: Addr, n: i64 }
    TANH_BWD = nmt_tanh_bwd, TanhBwd { dx: Addr, y: Addr, dy: Addr, n: i64 }
}

/// `s_0 (B, H)` as a [`FusedOp`] of `[ann (B, S, C), W_s (P, H), b_s (H)]`, with the sentences'
/// lengths `(B)`.
pub(crate) struct Start {
    pub batch: usize,
    pub len: usize,
    pub ctx: usize,
    pub hidden: usize,
    pub kind: StartState,
    pub lens: Staged<i64>,
}

impl Start {
    /// The summary's width `P` and first column, and whether it is a mean.
    fn summary(&self) -> Result<(usize, usize, bool)> {
        let c = self.ctx;
        match self.kind {
            StartState::FirstBackward => Ok((c / 2, c - c / 2, false)),
            StartState::Mean => Ok((c, 0, true)),
            StartState::LastForward => bail!("gpu start: the last forward state is not offered, only first-backward and mean"),
        }
    }

    fn linear(&self, p: usize) -> Linear {
        Linear { n: self.batch, k: p, m: self.hidden, precision: Precision::F32 }
    }

    fn pool_args(&self, p: Addr, ann: Addr, lens: Addr) -> Result<Pool> {
        let (width, col, mean) = self.summary()?;
        let (batch, len, c) = (self.batch as i64, self.len as i64, self.ctx as i64);
        Ok(Pool { p, ann, lens, batch, len, c, width: width as i64, col: col as i64, mean: mean.into() })
    }
}

impl<L: Launch> FusedOp<L> for Start {
    const NAME: &'static str = "gpu-decoder-start";
    /// The summary `p (B, P)`, which the backward pass multiplies.
    type Saved = L::Floats;

    fn out_shape(&self) -> Shape {
        Shape::from((self.batch, self.hidden))
    }

    fn forward(&self, l: &L, [ann, ws, bs]: [Addr; 3]) -> Result<(L::Floats, L::Floats)> {
        let (width, _, _) = self.summary()?;
        let (lens, _held) = self.lens.addr(l)?;
        let p = l.scratch(self.batch * width)?;
        l.launch(&POOL, self.batch * width, self.pool_args(l.addr(&p), ann, lens)?)?;
        let (s0, ()) = self.linear(width).forward(l, [l.addr(&p), ws, bs])?;
        let (y, n) = (l.addr(&s0), (self.batch * self.hidden) as i64);
        l.launch(&TANH, self.batch * self.hidden, Tanh { y, x: y, n })?;
        Ok((s0, p))
    }

    fn backward(&self, l: &L, [_, ws, bs]: [Addr; 3], p: L::Floats, s0: Addr, ds0: Addr) -> Result<[L::Floats; 3]> {
        let (width, _, _) = self.summary()?;
        let (lens, _held) = self.lens.addr(l)?;
        let nh = self.batch * self.hidden;
        let dpre = l.scratch(nh)?;
        l.launch(&TANH_BWD, nh, TanhBwd { dx: l.addr(&dpre), y: s0, dy: ds0, n: nh as i64 })?;
        let [dp, dws, dbs] = self.linear(width).backward(l, [l.addr(&p), ws, bs], (), Addr::NULL, l.addr(&dpre))?;
        let dann = l.zeros(self.batch * self.len * self.ctx)?;
        let Pool { lens, batch, len, c, width: w, col, mean, .. } = self.pool_args(Addr::NULL, Addr::NULL, lens)?;
        let a = PoolBwd { dann: l.addr(&dann), dp: l.addr(&dp), lens, batch, len, c, width: w, col, mean };
        l.launch(&POOL_BWD, self.batch * self.len * width, a)?;
        Ok([dann, dws, dbs])
    }
}
