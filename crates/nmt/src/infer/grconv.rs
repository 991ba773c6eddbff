//! grConv's forward pass on the host (`model/grconv.rs` is the candle twin): level by level,
//! each sentence's nodes as two GEMM pairs over its left and right children (row windows of
//! the level below, read in place), then the gated mix row by row.
use super::dense::host;
use crate::error::Result;
use crate::kernels::gemm::{matmul, Mat};
use crate::model::grconv::GrConv;

/// grConv's weights as host `f32`: `U (m, n)`, `W^l`, `W^r (n, n)`, `G^l`, `G^r (n, 3)`.
pub struct HostGrConv {
    pub u: Vec<f32>,
    pub w_l: Vec<f32>,
    pub w_r: Vec<f32>,
    pub g_l: Vec<f32>,
    pub g_r: Vec<f32>,
    pub hidden: usize,
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
