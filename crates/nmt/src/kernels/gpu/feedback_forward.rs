//! The gated-feedback stack (Chung et al. 2015, eq. 12–15; `model/feedback.rs` has the
//! equations) on a [`Launch`]: the GPU twin of `kernels::cpu::feedback_op`, on its inputs (the first
//! decoder layer's outputs `s1 (B, T, n)`, the start `h0 (B, n)`, every upper layer's flat
//! weights in `kernels::cpu::feedback_forward::LayerOffsets`' layout) and its masks; the forward pass
//! (the backward pass is `feedback_backward.rs`, the candle op `feedback_op.rs`).
//!
//! As on the CPU, the layers read each other at `t − 1`, so each step runs the upper layers
//! bottom-up, and the weight gradients add up step by step as the CPU's do. Per step
//! and upper layer: the products on cuBLAS (`x W`, `x W_g + S U_g`, `(m ⊙ h) U`, `V [U_c;
//! U_other]`) and `recurrence.cu`'s `nmt_sigmoid_all` for the gates and two kernels of `feedback.cu` (`V`, the cell); back,
//! four kernels (the cell and the sources write the gates' gradients and `GH`'s together) and the products of `kernels/cpu/feedback_backward.rs`, whose order of operations
//! this follows. The forward pass keeps what the CPU's keeps (`kernels::cpu::feedback_forward::Saved`):
//! the sources `S_0 … S_T (B, L·n)`, the LSTM's cell states, and per step and layer the masked
//! input, `gi`, `GH`, `g`, `V`, `R` and `h~`.
use candle_core::Result;

use super::args::{self, AddRows, FbCellFwd, FbSources, FbStep, FillRows, MaskRows, SigmoidAll, StepRows};
use super::gru_cell::{gemm, step_rows};
use super::launch::{Addr, Launch, View};
use crate::config::{CellKind, GruForm};
use crate::kernels::shapes::feedback_dims::{FeedbackDims, LayerOffsets};

/// The op of `(s1, h0, params)`.
pub(super) struct Stack {
    pub d: FeedbackDims,
}

/// The sizes: `B`, `T`, `n`, `L`, the upper layers `U = L − 1`, the gate width `G`.
#[derive(Clone, Copy)]
pub(super) struct Sz {
    pub b: usize,
    pub t: usize,
    pub n: usize,
    pub l: usize,
    pub u: usize,
    pub g: usize,
}

impl Sz {
    pub fn ln(self) -> usize {
        self.l * self.n
    }
}

/// What the forward pass keeps: `S (T + 1, B, L·n)`, the LSTM's `C (T + 1, U, B, n)` (one
/// element for a GRU) and, per step `t` and layer `k` (index `t·U + k`, each `(B, ·)`), the
/// masked input, `gi`, `GH`, `g`, `V`, `R` and `h~`.
pub(super) struct Saved<F> {
    pub s: F,
    pub c: F,
    pub xin: F,
    pub gi: F,
    pub gh: F,
    pub g: F,
    pub v: F,
    pub rsum: F,
    pub cand: F,
}

/// A launcher's masks: each upper layer's input mask per step `(T, B, n)` and state mask
/// `(B, n)`, or none.
pub(super) struct Masks<F> {
    pub input: Vec<Option<F>>,
    pub state: Vec<Option<F>>,
}

impl Stack {
    pub(super) fn sz(&self) -> Sz {
        let d = &self.d;
        Sz { b: d.batch, t: d.len, n: d.hidden, l: d.layers, u: d.uppers(), g: d.gates() }
    }

    pub(super) fn kind(&self) -> i64 {
        match self.d.kind {
            CellKind::Gru(GruForm::Paper) => args::PAPER,
            CellKind::Gru(GruForm::ResetAfter) => args::RESET_AFTER,
            CellKind::Lstm => args::LSTM,
        }
    }

    /// The masks uploaded, the input masks reordered step-major so that a step's rows are
    /// contiguous (`MaskRows` reads its mask so).
    pub(super) fn masks<L: Launch>(&self, l: &L) -> Result<Masks<L::Floats>> {
        let Sz { b, t, n, .. } = self.sz();
        let input = (self.d.input_masks.iter())
            .map(|m| {
                m.as_ref().map(|m| {
                    l.upload(&(0..t).flat_map(|s| (0..b).flat_map(move |r| &m[(r * t + s) * n..][..n])).copied().collect::<Vec<_>>())
                })
            })
            .map(Option::transpose)
            .collect::<Result<_>>()?;
        let state = self.d.state_masks.iter().map(|m| m.as_deref().map(|m| l.upload(m)).transpose()).collect::<Result<_>>()?;
        Ok(Masks { input, state })
    }

    /// Upper layer `k`'s weight (or gradient) block in the flat vector at `p`.
    pub(super) fn layer(&self, p: Addr, k: usize) -> (Addr, LayerOffsets) {
        let o = self.d.offsets();
        (p.at(k * o.len), o)
    }

    /// The step kernels' shared fields.
    pub(super) fn step(&self, (gi, gh, g): (Addr, Addr, Addr), hu: Addr, s: Addr, own: usize) -> FbStep {
        let z = self.sz();
        let rows = self.rows(gi, gh);
        FbStep { rows, g, hu, s, own: own as i64, batch: z.b as i64, layers: z.l as i64, hidden: z.n as i64, kind: self.kind() }
    }

    /// A step's contiguous rows of `gi` and `GH` (every row live: no lengths).
    pub(super) fn rows(&self, gi: Addr, gh: Addr) -> StepRows {
        let g = self.sz().g as i64;
        step_rows((0, Addr::NULL), (gi, g), (gh, g))
    }
}

/// How [`put_rows`] puts its rows: `dst = src` or `dst += src`.
#[derive(Clone, Copy)]
pub(super) enum Put {
    Copy,
    Add,
}

/// `dst` rows `=` (or `+=`) `src` rows, times `mask` (contiguous `(rows, width)`) where given.
pub(super) fn put_rows<L: Launch>(
    l: &L,
    put: Put,
    (dst, dst_ld): (Addr, usize),
    (src, src_ld): (Addr, usize),
    mask: Addr,
    (rows, width): (usize, usize),
) -> Result<()> {
    let (dst_ld, src_ld, r, w, n) = (dst_ld as i64, src_ld as i64, rows as i64, width as i64, rows * width);
    match put {
        Put::Copy => l.launch(&args::MASK_ROWS, n, MaskRows { dst, dst_ld, src, src_ld, mask, rows: r, width: w }),
        Put::Add => l.launch(&args::ADD_ROWS, n, AddRows { dst, dst_ld, src, src_ld, mask, rows: r, width: w }),
    }
}

/// Each of `rows` rows of `dst (rows, width)` a copy of the one row `src (width)`.
pub(super) fn fill_rows<L: Launch>(l: &L, dst: Addr, src: Addr, (rows, width): (usize, usize)) -> Result<()> {
    let (r, w) = (rows as i64, width as i64);
    l.launch(&args::FILL_ROWS, rows * width, FillRows { dst, src, src_ld: w, rows: r, width: w, group: r })
}

/// `dst (w) += Σ` of the `rows` rows of `src (rows, w)`, `ones` at least `rows` ones.
pub(super) fn add_col_sums<L: Launch>(l: &L, (rows, w): (usize, usize), src: Addr, dst: Addr, ones: Addr) -> Result<()> {
    l.gemm(gemm(1, w, rows, View::new(ones, rows), View::new(src, w), View::new(dst, w), true))
}

/// The address of an optional buffer (a mask), or [`Addr::NULL`].
pub(super) fn addr_or_null<L: Launch>(l: &L, f: Option<&L::Floats>) -> Addr {
    f.map_or(Addr::NULL, |f| l.addr(f))
}

/// The forward pass: the top outputs `(B, T, n)` and what the backward pass
/// (`feedback_backward.rs`) reads.
pub(super) fn forward<L: Launch>(op: &Stack, l: &L, [s1, h0, p]: [Addr; 3]) -> Result<(L::Floats, Saved<L::Floats>)> {
    let z = op.sz();
    let Sz { b, t: tl, n, l: nl, u: ups, g } = z;
    let (ln, lstm, steps) = (z.ln(), op.d.kind == CellKind::Lstm, tl * ups);
    let masks = op.masks(l)?;
    // Every buffer is written before it is read but the LSTM's `C_0 = 0`.
    let top = l.scratch(b * tl * n)?;
    let sv = Saved {
        s: l.scratch((tl + 1) * b * ln)?,
        c: if lstm { l.zeros((tl + 1) * ups * b * n)? } else { l.scratch(1)? },
        xin: l.scratch(steps * b * n)?,
        gi: l.scratch(steps * b * g)?,
        gh: l.scratch(steps * b * g)?,
        g: l.scratch(steps * b * nl)?,
        v: l.scratch(steps * b * ln)?,
        rsum: l.scratch(steps * b * n)?,
        cand: l.scratch(steps * b * n)?,
    };
    let (xcur, hu) = (l.scratch(b * n)?, l.scratch(b * n)?);
    let [sp, cp, xinp, gip, ghp, gp, vp, rp, cdp] =
        [&sv.s, &sv.c, &sv.xin, &sv.gi, &sv.gh, &sv.g, &sv.v, &sv.rsum, &sv.cand].map(|f| l.addr(f));
    let (xc, hup, topp) = (l.addr(&xcur), l.addr(&hu), l.addr(&top));
    for i in 0..nl {
        put_rows(l, Put::Copy, (sp.at(i * n), ln), (h0, n), Addr::NULL, (b, n))?;
    }
    let residual = op.d.residual as i64;
    for t in 0..tl {
        let (s_t, s_next) = (sp.at(t * b * ln), sp.at((t + 1) * b * ln));
        for k in 0..ups {
            let (i, own, (w, o)) = (t * ups + k, k + 1, op.layer(p, k));
            let (x, x_ld) = if k == 0 { (s1.at(t * n), tl * n) } else { (xc, n) };
            let input_mask = masks.input[k].as_ref().map_or(Addr::NULL, |m| l.addr(m).at(t * b * n));
            let (xin, gi, gh, gg) = (xinp.at(i * b * n), gip.at(i * b * g), ghp.at(i * b * g), gp.at(i * b * nl));
            put_rows(l, Put::Copy, (xin, n), (x, x_ld), input_mask, (b, n))?;
            // gi = x W + b;  g = σ(x W_g + S U_g).
            fill_rows(l, gi, w.at(o.b), (b, g))?;
            l.gemm(gemm(b, g, n, View::new(xin, n), View::new(w.at(o.w), g), View::new(gi, g), true))?;
            l.gemm(gemm(b, nl, n, View::new(xin, n), View::new(w.at(o.wg), nl), View::new(gg, nl), false))?;
            l.gemm(gemm(b, nl, ln, View::new(s_t, ln), View::new(w.at(o.ug), nl), View::new(gg, nl), true))?;
            l.launch(&args::SIGMOID_ALL, b * nl, SigmoidAll { x: gg, n: (b * nl) as i64 })?;
            // GH = (m ⊙ h) U + b_h.
            put_rows(l, Put::Copy, (hup, n), (s_t.at(own * n), ln), addr_or_null(l, masks.state[k].as_ref()), (b, n))?;
            fill_rows(l, gh, w.at(o.bh), (b, g))?;
            l.gemm(gemm(b, g, n, View::new(hup, n), View::new(w.at(o.u), g), View::new(gh, g), true))?;
            // V, then R = V [U_c; U_other].
            let v = vp.at(i * b * ln);
            l.launch(&args::FB_SOURCES, b * ln, FbSources { p: op.step((gi, gh, gg), hup, s_t, own), v })?;
            let rsum = rp.at(i * b * n);
            l.gemm(gemm(b, n, n, View::new(v, ln), View::new(w.at(o.u + 2 * n), g), View::new(rsum, n), false))?;
            l.gemm(gemm(b, n, (nl - 1) * n, View::new(v.at(n), ln), View::new(w.at(o.uo), n), View::new(rsum, n), true))?;
            let (cprev, c) =
                if lstm { (cp.at((t * ups + k) * b * n), cp.at(((t + 1) * ups + k) * b * n)) } else { (Addr::NULL, Addr::NULL) };
            let (xout, xout_ld) = if k + 1 == ups { (topp.at(t * n), tl * n) } else { (xc, n) };
            let (x_ld, h_ld, hprev) = (x_ld as i64, ln as i64, s_t.at(own * n));
            let cell = FbCellFwd {
                rows: op.rows(gi, gh),
                rsum,
                bh: w.at(o.bh),
                hprev,
                hprev_ld: h_ld,
                cprev,
                c,
                x,
                x_ld,
                residual,
                h: s_next.at(own * n),
                h_ld,
                xout,
                xout_ld: xout_ld as i64,
                cand: cdp.at(i * b * n),
                batch: b as i64,
                hidden: n as i64,
                kind: op.kind(),
            };
            l.launch(&args::FB_CELL_FWD, b * n, cell)?;
        }
        put_rows(l, Put::Copy, (s_next, ln), (s1.at(t * n), tl * n), Addr::NULL, (b, n))?;
    }
    Ok((top, sv))
}
