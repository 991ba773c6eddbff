//! RNNsearch's deep output up to its hidden layer on a [`Launch`] (Bahdanau et al. 2014,
//! appendix A.2.2): the GPU twin of `kernels::cpu::deep_output`. `t = maxout([s; c] O_sc + E y
//! O_y + b)` over adjacent pairs, or `t = tanh(…)` (`model.output_layer = "tanh"`), times an
//! optional dropout mask `(N, l)`.
//!
//! Inputs `sc (N, K1)`, `ey (N, K2)` and `wb (K1 + K2 + 1, w)` = `[O_sc; O_y; b]` (`w = 2l` for
//! maxout, `l` for tanh); output `t (N, l)`. Forward: the bias row copied into every row of the
//! pre-activation `(N, w)` (`recurrence.cu`'s fill kernel), the two products accumulated onto it
//! (cuBLAS), one activation kernel (`output.cu`). Backward: one kernel for the pre-activation's
//! gradient, then every gradient a product over all rows, and the bias's a column sum (one
//! thread per column, rows in order: the CPU's order). The pre-activation stays on the device
//! between the passes (maxout finds each pair's winner again in it; tanh leaves `tanh(t̃)`
//! there).
//!
//! The mask is host data held as [`Staged`], so that a recorded step can hand a device buffer
//! and the op uploads nothing.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::{self, kernels, FillRows, SumSteps};
use super::launch::{Addr, Gemm, Launch, Staged, View};
use super::lookup::mask_addr;
use crate::config::OutputLayer;
use crate::kernels::fused_op::FusedOp;

kernels! {
    Output:
    DEEP_ACT_FWD = nmt_deep_act_fwd, DeepActFwd { pre: Addr, out: Addr, mask: Addr, rows: i64, units: i64, maxout: i64 }
    DEEP_ACT_BWD = nmt_deep_act_bwd, DeepActBwd { dpre: Addr, pre: Addr, dt: Addr, mask: Addr, rows: i64, units: i64, maxout: i64 }
}

/// `act([sc, ey] [O_sc; O_y] + b) ⊙ mask` with `wb = [O_sc; O_y; b]`, all `f32`: the signature
/// of `kernels::cpu::deep_output::deep_output`.
pub fn deep_output(sc: &Tensor, ey: &Tensor, wb: &Tensor, layer: OutputLayer, mask: Option<&[f32]>) -> Result<Tensor> {
    let (n, k1) = sc.dims2()?;
    let (n2, k2) = ey.dims2()?;
    let (rows, w) = wb.dims2()?;
    if layer == OutputLayer::Maxout && w % 2 != 0 {
        bail!("gpu deep_output: maxout needs an even width, wb is {:?}", wb.dims());
    }
    let op = DeepOutput::new(n, (k1, k2, w), layer, mask.map(|m| Staged::Host(m.to_vec())));
    let f32s = [sc.dtype(), ey.dtype(), wb.dtype()] == [DType::F32; 3];
    if !f32s || n != n2 || rows != k1 + k2 + 1 || mask.is_some_and(|m| m.len() != n * op.units()) {
        bail!("gpu deep_output: sc {:?}, ey {:?}, wb {:?} (or the mask) do not fit, or are not f32", sc.dims(), ey.dims(), wb.dims());
    }
    super::op::apply(op, sc, ey, wb)
}

/// The deep output as a [`FusedOp`] of inputs `[sc, ey, wb]`.
pub(crate) struct DeepOutput {
    n: usize,
    k1: usize,
    k2: usize,
    /// The pre-activation's width `w`.
    w: usize,
    layer: OutputLayer,
    /// `(N, l)`, contiguous.
    mask: Option<Staged<f32>>,
}

impl DeepOutput {
    /// The layer over `n` rows of `sc (n, k1)` and `ey (n, k2)` into a pre-activation `w` wide,
    /// masked by `mask (n, l)` when given.
    pub(crate) fn new(n: usize, (k1, k2, w): (usize, usize, usize), layer: OutputLayer, mask: Option<Staged<f32>>) -> DeepOutput {
        DeepOutput { n, k1, k2, w, layer, mask }
    }

    /// The output's width `l`: `w / 2` for maxout's pairs, `w` for tanh.
    pub(crate) fn units(&self) -> usize {
        match self.layer {
            OutputLayer::Maxout => self.w / 2,
            OutputLayer::Tanh => self.w,
        }
    }

    /// The kernels' `maxout` flag.
    fn maxout(&self) -> i64 {
        i64::from(self.layer == OutputLayer::Maxout)
    }
}

impl<L: Launch> FusedOp<L> for DeepOutput {
    const NAME: &'static str = "gpu-deep-output";
    /// The pre-activation `(N, w)`: raw for maxout, `tanh` of it for tanh.
    type Saved = L::Floats;

    fn out_shape(&self) -> Shape {
        Shape::from((self.n, self.units()))
    }

    fn forward(&self, l: &L, [sc, ey, wb]: [Addr; 3]) -> Result<(L::Floats, L::Floats)> {
        let (n, k1, k2, w) = (self.n, self.k1, self.k2, self.w);
        let pre = l.scratch(n * w)?;
        let p = l.addr(&pre);
        // The bias row as the products' initial value: every row a copy of `wb`'s last.
        let (rows, width) = (n as i64, w as i64);
        l.launch(&args::FILL_ROWS, n * w, FillRows { dst: p, src: wb.at((k1 + k2) * w), src_ld: width, rows, width, group: rows })?;
        l.gemm(Gemm { m: n, n: w, k: k1, a: View::new(sc, k1), b: View::new(wb, w), c: View::new(p, w), accumulate: true })?;
        l.gemm(Gemm { m: n, n: w, k: k2, a: View::new(ey, k2), b: View::new(wb.at(k1 * w), w), c: View::new(p, w), accumulate: true })?;
        let (mask, _mask_buf) = mask_addr(&self.mask, l)?;
        let out = l.scratch(n * self.units())?;
        let a = DeepActFwd { pre: p, out: l.addr(&out), mask, rows, units: self.units() as i64, maxout: self.maxout() };
        l.launch(&DEEP_ACT_FWD, n * self.units(), a)?;
        Ok((out, pre))
    }

    /// Gradients of `(sc, ey, wb)` from `dt (N, l)`.
    fn backward(&self, l: &L, [sc, ey, wb]: [Addr; 3], pre: L::Floats, _: Addr, dt: Addr) -> Result<[L::Floats; 3]> {
        let (n, k1, k2, w) = (self.n, self.k1, self.k2, self.w);
        let (mask, _mask_buf) = mask_addr(&self.mask, l)?;
        let dpre = l.scratch(n * w)?;
        let d = l.addr(&dpre);
        let a = DeepActBwd { dpre: d, pre: l.addr(&pre), dt, mask, rows: n as i64, units: self.units() as i64, maxout: self.maxout() };
        l.launch(&DEEP_ACT_BWD, n * w, a)?;
        let dp = View::new(d, w);
        // dsc = dpre O_scᵀ, dey = dpre O_yᵀ: the weights' rows read transposed in place.
        let dsc = l.scratch(n * k1)?;
        l.gemm(Gemm { m: n, n: k1, k: w, a: dp, b: View::new(wb, w).t(), c: View::new(l.addr(&dsc), k1), accumulate: false })?;
        let dey = l.scratch(n * k2)?;
        l.gemm(Gemm { m: n, n: k2, k: w, a: dp, b: View::new(wb.at(k1 * w), w).t(), c: View::new(l.addr(&dey), k2), accumulate: false })?;
        // dO_sc = scᵀ dpre, dO_y = eyᵀ dpre: one product each over all rows.
        let dwb = l.scratch((k1 + k2 + 1) * w)?;
        let g = l.addr(&dwb);
        l.gemm(Gemm { m: k1, n: w, k: n, a: View::new(sc, k1).t(), b: dp, c: View::new(g, w), accumulate: false })?;
        l.gemm(Gemm { m: k2, n: w, k: n, a: View::new(ey, k2).t(), b: dp, c: View::new(g.at(k1 * w), w), accumulate: false })?;
        // db = Σ_r dpre_r, one thread per column over the rows in order (`recurrence.cu`'s
        // per-sentence sum of steps, as one sentence of `n` steps).
        let s = SumSteps { dst: g.at((k1 + k2) * w), dst_ld: w as i64, src: d, batch: 1, len: n as i64, width: w as i64 };
        l.launch(&args::SUM_STEPS, w, s)?;
        Ok([dsc, dey, dwb])
    }
}
