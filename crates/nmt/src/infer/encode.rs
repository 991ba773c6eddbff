//! The encoders' forward pass on the host (model/encoder.rs and `Seq2Seq::encode` are the
//! candle twins): embeddings, the GRU(s) over the padded batch with each sentence's state
//! carried through its padding, and what the decoder reads.
use super::cell::{affine, embed, gru_step, tanh_in_place, GruScratch};
use super::weights::{HostCore, HostGru, HostModel};
use crate::kernels::gemm::{matmul, Mat};

/// The encoded batch of `B` sentences, padded to `S` positions.
pub struct HostEncoded {
    /// RNNsearch: `(B, S, 2n + A)`, position `j` of sentence `b` holds `[h_j ; U_a h_j]`
    /// (the layout `attend_row` reads). Empty for RNNenc.
    pub mem: Vec<f32>,
    /// RNNenc: `C c` `(B, 3n)` and `O_c c` `(B, 2l)`. Empty for RNNsearch.
    pub gate_ctx: Vec<f32>,
    pub out_ctx: Vec<f32>,
    /// `s_0 (B, n)`.
    pub init: Vec<f32>,
    /// True source lengths (`</s>` included) and the padded length `S`.
    pub lens: Vec<usize>,
    pub src_len: usize,
}

/// A GRU over `x (B, S, m)`: all states `(B, S, n)` and the state after each sentence's last
/// word (first word when `reverse`) `(B, n)`.
fn run_gru(g: &HostGru, n: usize, x: &[f32], lens: &[usize], s: usize, reverse: bool, threads: usize) -> (Vec<f32>, Vec<f32>) {
    let b = lens.len();
    let m = g.w.len() / (3 * n);
    let gi = affine(x, b * s, m, &g.w, &g.b, threads);
    let mut h = vec![0f32; b * n];
    let mut next = vec![0f32; b * n];
    let mut states = vec![0f32; b * s * n];
    let mut sc = GruScratch::new(b, n);
    let order: Vec<usize> = if reverse { (0..s).rev().collect() } else { (0..s).collect() };
    for t in order {
        for r in 0..b {
            let row = &gi[(r * s + t) * 3 * n..(r * s + t + 1) * 3 * n];
            sc.rz[r * 2 * n..(r + 1) * 2 * n].copy_from_slice(&row[..2 * n]);
            sc.cand[r * n..(r + 1) * n].copy_from_slice(&row[2 * n..]);
        }
        gru_step(g, n, &h, &mut sc, &mut next, |r| t < lens[r], threads);
        std::mem::swap(&mut h, &mut next);
        for r in 0..b {
            states[(r * s + t) * n..(r * s + t + 1) * n].copy_from_slice(&h[r * n..(r + 1) * n]);
        }
    }
    (states, h)
}

/// Encodes `src (B, S)` ids with true lengths `lens`.
pub fn encode(model: &HostModel, src: &[u32], lens: &[usize], threads: usize) -> HostEncoded {
    let cfg = &model.cfg;
    let (b, n, m) = (lens.len(), cfg.hidden_dim, cfg.emb_dim);
    let s = src.len() / b.max(1);
    let x = embed(&model.src_emb, src, m);
    match &model.core {
        HostCore::Search { fwd, bwd, dec } => {
            // One direction per thread, each with single-threaded GEMMs: no synchronisation
            // inside the step loops (kernels/bigru.rs measured this as the faster split).
            let inner = if threads >= 2 { 1 } else { threads };
            let ((fs, _), (bs, back_first)) =
                rayon::join(|| run_gru(fwd, n, &x, lens, s, false, inner), || run_gru(bwd, n, &x, lens, s, true, inner));
            let a = cfg.att_dim;
            let ew = 2 * n + a;
            let mut mem = vec![0f32; b * s * ew];
            for (p, row) in mem.chunks_exact_mut(ew).enumerate() {
                row[..n].copy_from_slice(&fs[p * n..(p + 1) * n]);
                row[n..2 * n].copy_from_slice(&bs[p * n..(p + 1) * n]);
            }
            // U_a h_j for every position, written next to h_j.
            let annotations = Mat::strided(&mem, 0, b * s, 2 * n, ew);
            let mut uh = vec![0f32; b * s * a];
            matmul(&mut uh, 0, a, annotations, Mat::new(&dec.u_a, 2 * n, a), false, threads);
            for (row, u) in mem.chunks_exact_mut(ew).zip(uh.chunks_exact(a)) {
                row[2 * n..].copy_from_slice(u);
            }
            let mut init = affine(&back_first, b, n, &dec.w_s, &dec.b_s, threads);
            tanh_in_place(&mut init);
            HostEncoded { mem, gate_ctx: Vec::new(), out_ctx: Vec::new(), init, lens: lens.to_vec(), src_len: s }
        }
        HostCore::Enc { gru, dec } => {
            let (_, last) = run_gru(gru, n, &x, lens, s, false, threads);
            let mut c = affine(&last, b, n, &dec.v, &dec.b_v, threads);
            tanh_in_place(&mut c);
            let mut init = affine(&c, b, n, &dec.v_init, &dec.b_init, threads);
            tanh_in_place(&mut init);
            let gate_ctx = affine(&c, b, n, &dec.c, &vec![0f32; 3 * n], threads);
            let l2 = model.out.b.len();
            let out_ctx = affine(&c, b, n, &model.out.o_c, &vec![0f32; l2], threads);
            HostEncoded { mem: Vec::new(), gate_ctx, out_ctx, init, lens: lens.to_vec(), src_len: s }
        }
    }
}
