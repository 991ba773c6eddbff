//! The gated-feedback stack op's forward pass (`feedback.rs`, where the equations are): the
//! flat weights' layout, one upper layer's step, the whole sequence, and the products kept
//! for the backward pass (`feedback_backward.rs`).
use crate::config::CellKind;
use crate::kernels::gemm::{matmul, Mat, Real};
use crate::kernels::shapes::feedback_dims::FeedbackDims;

/// The masks as the CPU loops read them, converted to `T` per call.
impl FeedbackDims {
    /// Upper layer `k`'s input mask at step `t` as rows `(B, n)`, in `T`.
    pub fn input_mask<T: Real>(&self, k: usize, t: usize) -> Option<Vec<T>> {
        let (b, s, n) = (self.batch, self.len, self.hidden);
        self.input_masks[k]
            .as_ref()
            .map(|m| (0..b).flat_map(|r| m[(r * s + t) * n..][..n].iter().map(|&v| T::from_f64(f64::from(v)))).collect())
    }
    /// Upper layer `k`'s state mask `(B, n)`, in `T`.
    pub fn state_mask<T: Real>(&self, k: usize) -> Option<Vec<T>> {
        self.state_masks[k].as_ref().map(|m| m.iter().map(|&v| T::from_f64(f64::from(v))).collect())
    }
}

/// What the forward pass keeps.
pub(crate) struct Saved<T> {
    /// The sources `S_0 … S_T`, `(T + 1, B, L·n)`: `S_{t+1}` holds every layer's output at `t`.
    pub s: Vec<T>,
    /// The LSTM's cell states `(T + 1, L − 1, B, n)`, the first zero (empty for the GRU).
    pub c: Vec<T>,
    pub steps: Steps<T>,
}

/// Per step `t` and upper layer `k` (index `t·(L−1) + k`): the masked inputs `(B, n)`,
/// `gi (B, G)`, `GH (B, G)`, the gates `g (B, L)`, `V (B, L·n)`, `R (B, n)` and the
/// candidates `h~ (B, n)`.
pub(crate) struct Steps<T> {
    xin: Vec<T>,
    gi: Vec<T>,
    gh: Vec<T>,
    g: Vec<T>,
    v: Vec<T>,
    rsum: Vec<T>,
    cand: Vec<T>,
}

/// One step's slices of [`Steps`].
pub(crate) struct StepBufs<S> {
    pub xin: S,
    pub gi: S,
    pub gh: S,
    pub g: S,
    pub v: S,
    pub rsum: S,
    pub cand: S,
}

impl<T: Real> Steps<T> {
    fn zeros(d: &FeedbackDims) -> Self {
        let (b, n, l, count) = (d.batch, d.hidden, d.layers, d.len * d.uppers());
        let z = |w: usize| vec![T::ZERO; count * b * w];
        Steps { xin: z(n), gi: z(d.gates()), gh: z(d.gates()), g: z(l), v: z(l * n), rsum: z(n), cand: z(n) }
    }

    /// The widths of one row of each buffer, in [`StepBufs`] order.
    fn widths(d: &FeedbackDims) -> [usize; 7] {
        let (n, l, g) = (d.hidden, d.layers, d.gates());
        [n, g, g, l, l * n, n, n]
    }

    pub fn at(&mut self, d: &FeedbackDims, i: usize) -> StepBufs<&mut [T]> {
        let [a, b, c, e, f, g, h] = Self::widths(d).map(|w| (i * d.batch * w, d.batch * w));
        StepBufs {
            xin: &mut self.xin[a.0..][..a.1],
            gi: &mut self.gi[b.0..][..b.1],
            gh: &mut self.gh[c.0..][..c.1],
            g: &mut self.g[e.0..][..e.1],
            v: &mut self.v[f.0..][..f.1],
            rsum: &mut self.rsum[g.0..][..g.1],
            cand: &mut self.cand[h.0..][..h.1],
        }
    }

    pub fn get(&self, d: &FeedbackDims, i: usize) -> StepBufs<&[T]> {
        let [a, b, c, e, f, g, h] = Self::widths(d).map(|w| (i * d.batch * w, d.batch * w));
        StepBufs {
            xin: &self.xin[a.0..][..a.1],
            gi: &self.gi[b.0..][..b.1],
            gh: &self.gh[c.0..][..c.1],
            g: &self.g[e.0..][..e.1],
            v: &self.v[f.0..][..f.1],
            rsum: &self.rsum[g.0..][..g.1],
            cand: &self.cand[h.0..][..h.1],
        }
    }
}

/// One upper layer's weights, views into its block of the flat vector.
pub(crate) struct LayerWeights<'a, T> {
    pub w: &'a [T],
    pub b: &'a [T],
    pub u: &'a [T],
    pub bh: &'a [T],
    pub wg: &'a [T],
    pub ug: &'a [T],
    pub uo: &'a [T],
}

impl<'a, T> LayerWeights<'a, T> {
    /// Upper layer `k`'s weights in `p`.
    pub fn of(d: &FeedbackDims, p: &'a [T], k: usize) -> Self {
        let o = d.offsets();
        let blk = &p[k * o.len..][..o.len];
        LayerWeights {
            w: &blk[o.w..o.b],
            b: &blk[o.b..o.u],
            u: &blk[o.u..o.bh],
            bh: &blk[o.bh..o.wg],
            wg: &blk[o.wg..o.ug],
            ug: &blk[o.ug..o.uo],
            uo: &blk[o.uo..],
        }
    }
}

/// `x ⊙ m` row by row, or `x` itself.
pub(crate) fn masked<T: Real>(x: &[T], m: Option<&[T]>) -> Vec<T> {
    match m {
        Some(m) => x.iter().zip(m).map(|(&a, &k)| a * k).collect(),
        None => x.to_vec(),
    }
}

/// The sources block `i` (`(B, n)` rows of `s (B, L·n)`), as a copy.
pub(crate) fn block<T: Real>(s: &[T], i: usize, n: usize, l: usize) -> Vec<T> {
    s.chunks_exact(l * n).flat_map(|row| row[i * n..(i + 1) * n].iter().copied()).collect()
}

/// Forward pass: the top outputs `(B, T, n)` and what backward needs.
pub(crate) fn forward<T: Real>(d: &FeedbackDims, s1: &[T], h0: &[T], p: &[T]) -> (Vec<T>, Saved<T>) {
    let (b, tn, n, l, ups) = (d.batch, d.len, d.hidden, d.layers, d.uppers());
    let ln = l * n;
    let lstm = d.kind == CellKind::Lstm;
    let mut s = vec![T::ZERO; (tn + 1) * b * ln];
    let mut c = vec![T::ZERO; if lstm { (tn + 1) * ups * b * n } else { 0 }];
    let mut steps = Steps::zeros(d);
    for r in 0..b {
        for i in 0..l {
            s[r * ln + i * n..][..n].copy_from_slice(&h0[r * n..][..n]);
        }
    }
    let state_masks: Vec<Option<Vec<T>>> = (0..ups).map(|k| d.state_mask(k)).collect();
    let mut top = vec![T::ZERO; b * tn * n];
    for t in 0..tn {
        let mut x: Vec<T> = (0..b).flat_map(|r| s1[(r * tn + t) * n..][..n].iter().copied()).collect();
        let (before, after) = s.split_at_mut((t + 1) * b * ln);
        let (s_prev, s_next) = (&before[t * b * ln..], &mut after[..b * ln]);
        for k in 0..ups {
            let cprev = if lstm { &c[(t * ups + k) * b * n..][..b * n] } else { &[][..] };
            let xin = masked(&x, d.input_mask::<T>(k, t).as_deref());
            let step = Step { d, k, w: LayerWeights::of(d, p, k), state_mask: state_masks[k].as_deref() };
            let (hn, cn) = step.forward(&mut steps.at(d, t * ups + k), xin, s_prev, cprev);
            for r in 0..b {
                s_next[r * ln + (k + 1) * n..][..n].copy_from_slice(&hn[r * n..][..n]);
            }
            if lstm {
                c[((t + 1) * ups + k) * b * n..][..b * n].copy_from_slice(&cn);
            }
            x = match d.residual {
                true => hn.iter().zip(&x).map(|(&h, &v)| h + v).collect(),
                false => hn,
            };
        }
        for r in 0..b {
            s_next[r * ln..][..n].copy_from_slice(&s1[(r * tn + t) * n..][..n]);
            top[(r * tn + t) * n..][..n].copy_from_slice(&x[r * n..][..n]);
        }
    }
    (top, Saved { s, c, steps })
}

/// Upper layer `k` at one step: its weights and its state mask.
pub(crate) struct Step<'a, T> {
    pub d: &'a FeedbackDims,
    pub k: usize,
    pub w: LayerWeights<'a, T>,
    pub state_mask: Option<&'a [T]>,
}

impl<T: Real> Step<'_, T> {
    /// The layer's own source index (`j − 1`).
    pub fn own(&self) -> usize {
        self.k + 1
    }

    /// The sources other than the layer's own, in layer order (`V`'s blocks `1…`).
    pub fn others(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.d.layers).filter(move |&i| i != self.own())
    }

    /// The forward step from the masked input `xin (B, n)`, the sources `s (B, L·n)` and the
    /// LSTM's cell state `cprev (B, n)`: fills `bufs`, returns the new `h (B, n)` and the
    /// LSTM's new `c (B, n)` (empty for the GRU).
    pub fn forward(&self, bufs: &mut StepBufs<&mut [T]>, xin: Vec<T>, s: &[T], cprev: &[T]) -> (Vec<T>, Vec<T>) {
        let d = self.d;
        let (b, n, l, g) = (d.batch, d.hidden, d.layers, d.gates());
        let (ln, th, w) = (l * n, rayon::current_num_threads(), &self.w);
        bufs.xin.copy_from_slice(&xin);
        let xm = Mat::new(&xin, b, n);
        bufs.gi.chunks_exact_mut(g).for_each(|row| row.copy_from_slice(w.b));
        matmul(bufs.gi, 0, g, xm, Mat::new(w.w, n, g), true, th);
        matmul(bufs.g, 0, l, xm, Mat::new(w.wg, n, l), false, th);
        matmul(bufs.g, 0, l, Mat::new(s, b, ln), Mat::new(w.ug, ln, l), true, th);
        bufs.g.iter_mut().for_each(|v| *v = v.sigmoid_fast());
        let hprev = block(s, self.own(), n, l);
        let hu = masked(&hprev, self.state_mask);
        bufs.gh.chunks_exact_mut(g).for_each(|row| row.copy_from_slice(w.bh));
        matmul(bufs.gh, 0, g, Mat::new(&hu, b, n), Mat::new(w.u, n, g), true, th);
        // V: each source times its gate (and, for the paper's GRU, the reset gate `ρ'`, one
        // row per sentence, shared by every block).
        let mut rho = vec![T::ONE; n];
        for r in 0..b {
            let (gi, gh) = (&bufs.gi[r * g..][..g], &bufs.gh[r * g..][..g]);
            if d.reset_before() {
                rho.iter_mut().enumerate().for_each(|(j, p)| *p = (gi[j] + gh[j]).sigmoid_fast());
            }
            let gates = &bufs.g[r * l..][..l];
            let v = &mut bufs.v[r * ln..][..ln];
            let src = std::iter::once((self.own(), &hu[r * n..][..n])).chain(self.others().map(|i| (i, &s[r * ln + i * n..][..n])));
            for (blk, (i, x)) in src.enumerate() {
                for j in 0..n {
                    v[blk * n + j] = gates[i] * rho[j] * x[j];
                }
            }
        }
        matmul(bufs.rsum, 0, n, Mat::strided(bufs.v, 0, b, n, ln), Mat::strided(w.u, 2 * n, n, n, g), false, th);
        matmul(bufs.rsum, 0, n, Mat::strided(bufs.v, n, b, (l - 1) * n, ln), Mat::new(w.uo, (l - 1) * n, n), true, th);
        let mut h = vec![T::ZERO; b * n];
        let mut c = vec![T::ZERO; if cprev.is_empty() { 0 } else { b * n }];
        for r in 0..b {
            let (gi, gh) = (&bufs.gi[r * g..][..g], &bufs.gh[r * g..][..g]);
            for j in 0..n {
                let i = r * n + j;
                let rho = if d.reset_after() { (gi[j] + gh[j]).sigmoid_fast() } else { T::ONE };
                let cand = (gi[2 * n + j] + rho * (bufs.rsum[i] + w.bh[2 * n + j])).tanh_fast();
                bufs.cand[i] = cand;
                if c.is_empty() {
                    let z = (gi[n + j] + gh[n + j]).sigmoid_fast();
                    h[i] = cand + z * (hprev[i] - cand);
                } else {
                    let sig = |q: usize| (gi[q * n + j] + gh[q * n + j]).sigmoid_fast();
                    c[i] = sig(1) * cprev[i] + sig(0) * cand;
                    h[i] = sig(3) * c[i].tanh_fast();
                }
            }
        }
        (h, c)
    }
}
