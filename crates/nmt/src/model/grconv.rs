//! The gated recursive convolutional encoder, grConv (Cho et al. 2014, "On the Properties of
//! Neural Machine Translation", §3; docs/MODELS.md#grconv): a binary tree of gated merges whose
//! top node summarises the sentence, used like RNNenc's `h^(T)`.
//!
//! ```text
//! h_j^(0) = x_j U                                                  level 0: (B, S, n)
//! level t = 1 … S−1, node j merges j (left) and j+1 (right) of level t−1:
//!   h~ = ReLU(h_l W^l + h_r W^r)                                   (B, S−t, n)
//!   [ω_c, ω_l, ω_r] = softmax(h_l G^l + h_r G^r)                   (B, S−t, 3)
//!   h_j^(t) = ω_c h~ + ω_l h_l + ω_r h_r
//! summary: the single node of level S_b − 1 of each sentence of length S_b   (B, n)
//! ```
//! Batched over sentences of different lengths with no loop over nodes: each level is a few
//! whole-batch tensor ops. A sentence of length `S_b` has its top node at level `S_b − 1`,
//! position 0; at the levels above, its node 0 is carried unchanged (the other positions
//! past a sentence's end are never read by its own nodes), so the last level's node 0 is
//! every sentence's summary. `S − 1` levels of `O(S)` nodes: `O(S²)` work, as in the paper.
//! Initialisation as the paper's: `W^l`, `W^r` orthogonal with spectral radius 0.4.
//!
//! The file holds the layer's forms: the composed one on candle ops ([`GrConv::run`], the
//! reference twin, and on a GPU), the fused tree training runs on the CPU
//! (`kernels::cpu::grconv_tree`, chosen in [`GrConv::forward`]) and the host form search
//! runs ([`HostGrConv`]: level by level, each sentence's nodes as two GEMM pairs over its left
//! and right children, read in place, then the gated mix row by row). `tests/grconv.rs` and
//! `tests/infer.rs` hold them to each other.
use candle_core::{Tensor, D};

use super::backend::Backend;
use super::params::{Init, ParamBuilder};
// Not candle_nn's softmax_last_dim: it has no backward in candle-nn 0.11.1 (tests/kernels.rs).
use crate::error::Result;
use crate::kernels::cpu::grconv_tree::grconv_tree;
use crate::kernels::gemm::{matmul, Mat};
use crate::model::dense::host;

/// grConv's weights.
#[derive(Clone, Debug)]
pub struct GrConv {
    /// `U (m, n)`: the leaves' projection.
    pub(crate) u: Tensor,
    /// `W^l`, `W^r (n, n)`: the candidate from the left and right child.
    pub(crate) w_l: Tensor,
    pub(crate) w_r: Tensor,
    /// `G^l`, `G^r (n, 3)`: the gates `[ω_c, ω_l, ω_r]` from the left and right child.
    pub(crate) g_l: Tensor,
    pub(crate) g_r: Tensor,
    pub(crate) hidden: usize,
}

/// Every level's gates, for pictures of the learned tree (`nmt plot grconv`).
pub struct Tree {
    /// Level `t = 1 … S−1`: `(B, S−t, 3)` gates `[ω_c, ω_l, ω_r]` of each node.
    pub gates: Vec<Tensor>,
}

impl GrConv {
    pub fn new(emb: usize, hidden: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(GrConv {
            u: pb.get("u", &[emb, hidden], Init::Normal)?,
            w_l: pb.get("w_l", &[hidden, hidden], Init::ScaledOrthogonal(0.4))?,
            w_r: pb.get("w_r", &[hidden, hidden], Init::ScaledOrthogonal(0.4))?,
            g_l: pb.get("g_l", &[hidden, 3], Init::Normal)?,
            g_r: pb.get("g_r", &[hidden, 3], Init::Normal)?,
            hidden,
        })
    }

    /// `x: (B, S, m)` embeddings, `lens` each sentence's length (`1..=S`) → the summaries
    /// `(B, n)`: the fused tree (`kernels::cpu::grconv_tree`) where `backend` runs the CPU
    /// kernels, the composed levels ([`GrConv::run`], the reference twin) elsewhere, the GPU
    /// included (the tree has no GPU twin).
    pub fn forward(&self, x: &Tensor, lens: &[usize], backend: Backend) -> Result<Tensor> {
        if !backend.fused() {
            return Ok(self.run(x, lens, false)?.0);
        }
        let (b, s, m) = x.dims3()?;
        let h0 = x.reshape((b * s, m))?.matmul(&self.u)?.reshape((b, s, self.hidden))?;
        let wc = Tensor::cat(&[&self.w_l, &self.w_r], 0)?;
        let wg = Tensor::cat(&[&self.g_l, &self.g_r], 0)?;
        Ok(grconv_tree(&h0, &wc, &wg, lens)?)
    }

    /// [`GrConv::forward`], and every level's gates when `keep_gates`.
    pub fn run(&self, x: &Tensor, lens: &[usize], keep_gates: bool) -> Result<(Tensor, Tree)> {
        let (b, s, m) = x.dims3()?;
        let n = self.hidden;
        let mut h = x.reshape((b * s, m))?.matmul(&self.u)?.reshape((b, s, n))?;
        let mut tree = Tree { gates: Vec::new() };
        for t in 1..s {
            let w = s - t;
            let (left, right) = (h.narrow(1, 0, w)?, h.narrow(1, 1, w)?);
            let (l2, r2) = (left.reshape((b * w, n))?, right.reshape((b * w, n))?);
            let cand = (l2.matmul(&self.w_l)? + r2.matmul(&self.w_r)?)?.relu()?.reshape((b, w, n))?;
            let omega = super::attention::softmax_last(&(l2.matmul(&self.g_l)? + r2.matmul(&self.g_r)?)?.reshape((b, w, 3))?)?;
            let part = |k: usize| omega.narrow(D::Minus1, k, 1);
            let merged = ((cand.broadcast_mul(&part(0)?)? + left.broadcast_mul(&part(1)?)?)? + right.broadcast_mul(&part(2)?)?)?;
            // Sentences whose top is already below this level keep their node 0 (and, harmlessly,
            // the rest) from the level before.
            let live: Vec<f64> = lens.iter().map(|&l| f64::from(u8::from(t < l))).collect();
            let live = Tensor::from_vec(live, (b, 1, 1), x.device())?.to_dtype(x.dtype())?;
            h = (&left + live.broadcast_mul(&(merged - &left)?)?)?;
            if keep_gates {
                tree.gates.push(omega);
            }
        }
        Ok((h.narrow(1, 0, 1)?.squeeze(1)?, tree))
    }
}

/// The host form: grConv's weights as host `f32`: `U (m, n)`, `W^l`, `W^r (n, n)`, `G^l`, `G^r (n, 3)`.
pub struct HostGrConv {
    pub(crate) u: Vec<f32>,
    pub(crate) w_l: Vec<f32>,
    pub(crate) w_r: Vec<f32>,
    pub(crate) g_l: Vec<f32>,
    pub(crate) g_r: Vec<f32>,
    pub(crate) hidden: usize,
}

impl HostGrConv {
    pub fn new(g: &GrConv) -> Result<Self> {
        Ok(HostGrConv { u: host(&g.u)?, w_l: host(&g.w_l)?, w_r: host(&g.w_r)?, g_l: host(&g.g_l)?, g_r: host(&g.g_r)?, hidden: g.hidden })
    }

    /// Embeddings `x (B, S, m)` of sentences of lengths `lens` → their summaries `(B, n)`.
    pub fn summaries(&self, x: &[f32], lens: &[usize], threads: usize) -> Vec<f32> {
        let (b, n) = (lens.len(), self.hidden);
        let m = self.u.len() / n;
        let s = x.len() / (b.max(1) * m);
        let mut h = vec![0f32; b * s * n];
        matmul(&mut h, 0, n, Mat::new(x, b * s, m), Mat::new(&self.u, m, n), false, threads);
        let (mut cand, mut gate) = (vec![0f32; s * n], vec![0f32; s * 3]);
        for t in 1..s {
            let w = s - t;
            for (bi, &len) in lens.iter().enumerate() {
                if t >= len {
                    continue; // this sentence's top is below: node 0 carries it
                }
                let off = bi * s * n;
                let (left, right) = (Mat::strided(&h, off, w, n, n), Mat::strided(&h, off + n, w, n, n));
                matmul(&mut cand, 0, n, left, Mat::new(&self.w_l, n, n), false, 1);
                matmul(&mut cand, 0, n, right, Mat::new(&self.w_r, n, n), true, 1);
                matmul(&mut gate, 0, 3, left, Mat::new(&self.g_l, n, 3), false, 1);
                matmul(&mut gate, 0, 3, right, Mat::new(&self.g_r, n, 3), true, 1);
                // Node j overwrites h[j] after reading h[j] and h[j + 1]: in order, each read
                // precedes the write that would clobber it.
                for j in 0..w {
                    let g = &gate[j * 3..j * 3 + 3];
                    let top = g[0].max(g[1]).max(g[2]);
                    let e = [(g[0] - top).exp(), (g[1] - top).exp(), (g[2] - top).exp()];
                    let z = e[0] + e[1] + e[2];
                    let (wc, wl, wr) = (e[0] / z, e[1] / z, e[2] / z);
                    for k in 0..n {
                        let (l, r) = (h[off + j * n + k], h[off + (j + 1) * n + k]);
                        h[off + j * n + k] = wc * cand[j * n + k].max(0.0) + wl * l + wr * r;
                    }
                }
            }
        }
        (0..b).flat_map(|bi| h[bi * s * n..bi * s * n + n].iter().copied()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::twin_support::{assert_close, randn, random_layer, values};

    /// The host form summarises sentences of every length as the composed tree does.
    #[test]
    fn host_grconv_summarises_as_the_composed_layer() {
        let (m, n, b, s) = (5, 4, 3, 6);
        let lens = [6usize, 3, 1];
        let g = random_layer(7, |pb| GrConv::new(m, n, pb));
        let (x, xv) = randn(8, &[b, s, m]);
        let want = values(&g.forward(&x, &lens, Backend::Composed).unwrap());
        let got = HostGrConv::new(&g).unwrap().summaries(&xv, &lens, 1);
        assert_close("summaries", &got, &want, 1e-5);
    }
}
