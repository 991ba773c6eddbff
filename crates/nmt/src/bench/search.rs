//! Greedy and beam search for bench-rnnsearch on the fused kernels, forward only, in plain
//! slices: the same computation as the reference's `greedy` and `beam` (fixed number of steps,
//! no early stop), so sentences/s compare like for like.
//!
//! Per decoder step for `N` rows (`N = B` greedy, `B·k` beam): `ws = s W_a + b_a` (GEMM),
//! attention and context per row, `gi = E y W_e + b_i + c W_c`, `gh = s U + b_h` (GEMMs), the GRU
//! cell, `t = maxout([s; E y; c] W_o + b_o)`, logits `t W_p + b_p` `(N, V)` and log-softmax.
use rayon::prelude::*;

use super::params::{BenchParams, ATT, BOS, EMB, HIDDEN, PARAMS, SRC_LEN};
use crate::error::Result;
use crate::infer::cell::{affine, embed};
use crate::kernels::attn_decoder::{attend_row, AttnScratch};
use crate::kernels::gemm::{fill_rows, matmul, Mat};
use crate::kernels::gru::{self, GruDims};
use crate::kernels::gru_cell::{reset_after_row as cell, GruForm};
use crate::kernels::math::FastMath;
use crate::kernels::scores::{Projection, RowBest};
use crate::simd_dispatch;

const H: usize = HIDDEN;
const C: usize = 2 * HIDDEN;
const EW: usize = C + ATT;

/// The parameters as host slices, copied once (model loading, not timed).
pub struct SearchWeights {
    w: Vec<Vec<f32>>,
    proj: Projection,
    /// `[U; b_h]` packed for the encoder GRUs, forward and backward.
    enc_pack: [Vec<f32>; 2],
}

impl SearchWeights {
    pub fn new(p: &BenchParams) -> Result<Self> {
        let w: Vec<Vec<f32>> = p
            .vars
            .iter()
            .map(|v| v.flatten_all()?.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>())
            .collect::<candle_core::Result<_>>()?;
        let i = |name: &str| PARAMS.iter().position(|(n, _)| *n == name).unwrap_or(0);
        let proj = Projection::new(&w[i("proj_w")], &w[i("proj_b")]);
        let mut me = SearchWeights { w, proj, enc_pack: [Vec::new(), Vec::new()] };
        for (k, dir) in ["f", "b"].iter().enumerate() {
            let mut pack = me.get(&format!("enc_{dir}_whh")).to_vec();
            pack.extend_from_slice(me.get(&format!("enc_{dir}_bhh")));
            me.enc_pack[k] = pack;
        }
        Ok(me)
    }

    fn get(&self, name: &str) -> &[f32] {
        // Names are the compile-time constants of PARAMS used below; an unknown one is empty.
        PARAMS.iter().position(|(n, _)| *n == name).map_or(&[], |i| &self.w[i])
    }
}

fn threads() -> usize {
    rayon::current_num_threads()
}

/// Encoder output per sentence: `[h_j; U_a h_j]` `(B, S, 2H + A)` and `s_0` `(B, H)`.
fn encode(w: &SearchWeights, src: &[u32]) -> (Vec<f32>, Vec<f32>) {
    let b = src.len() / SRC_LEN;
    let xs = embed(w.get("src_emb"), src, EMB);
    let mut dirs = Vec::new();
    for (k, dir) in ["f", "b"].iter().enumerate() {
        let gi = affine(&xs, b * SRC_LEN, EMB, w.get(&format!("enc_{dir}_wih")), w.get(&format!("enc_{dir}_bih")), threads());
        let dims = GruDims { batch: b, len: SRC_LEN, hidden: H, reverse: k == 1, form: GruForm::ResetAfter, lens: vec![SRC_LEN; b] };
        let (u, bh) = w.enc_pack[k].split_at(H * 3 * H);
        let mut row = bh.to_vec();
        row.resize(4 * H, 0.0);
        dirs.push(gru::forward(&dims, &gi, u, &fill_rows(&row, b)).0);
    }
    let mut hs = vec![0f32; b * SRC_LEN * C];
    for (r, row) in hs.chunks_mut(C).enumerate() {
        row[..H].copy_from_slice(&dirs[0][r * H..(r + 1) * H]);
        row[H..].copy_from_slice(&dirs[1][r * H..(r + 1) * H]);
    }
    let uh = affine(&hs, b * SRC_LEN, C, w.get("att_u"), &[0f32; ATT], threads());
    let mut enc = vec![0f32; b * SRC_LEN * EW];
    for (r, row) in enc.chunks_mut(EW).enumerate() {
        row[..C].copy_from_slice(&hs[r * C..(r + 1) * C]);
        row[C..].copy_from_slice(&uh[r * ATT..(r + 1) * ATT]);
    }
    let first_back: Vec<f32> = (0..b).flat_map(|bi| dirs[1][bi * SRC_LEN * H..bi * SRC_LEN * H + H].iter().copied()).collect();
    let mut s0 = affine(&first_back, b, H, w.get("init_w"), w.get("init_b"), threads());
    s0.iter_mut().for_each(|x| *x = x.tanh_fast());
    (enc, s0)
}

/// One decoder step for `n` rows; row `r` attends over sentence `sent[r]`. Updates `s` and
/// returns the scores of the next token.
fn step(w: &SearchWeights, enc: &[f32], sent: &[usize], s: &mut Vec<f32>, y: &[u32], want: &[usize]) -> RowBest {
    let n = y.len();
    let ws = affine(s, n, H, w.get("att_w"), w.get("att_b"), threads());
    let mut ctx = vec![0f32; n * C];
    let v = w.get("att_v");
    ctx.par_chunks_mut(C).enumerate().for_each_init(
        || AttnScratch::new(SRC_LEN, ATT),
        |sc, (r, c)| {
            let e = &enc[sent[r] * SRC_LEN * EW..(sent[r] + 1) * SRC_LEN * EW];
            simd_dispatch!(attend_row(e, &ws[r * ATT..(r + 1) * ATT], v, SRC_LEN, sc, c))
        },
    );
    let ey = embed(w.get("tgt_emb"), y, EMB);
    let mut gi = affine(&ey, n, EMB, w.get("dec_wie"), w.get("dec_bih"), threads());
    matmul(&mut gi, 0, 3 * H, Mat::new(&ctx, n, C), Mat::new(w.get("dec_wic"), C, 3 * H), true, threads());
    let gh = affine(s, n, H, w.get("dec_whh"), w.get("dec_bhh"), threads());
    let mut s_new = vec![0f32; n * H];
    simd_dispatch!(for r in 0..n {
        cell(&gi[r * 3 * H..(r + 1) * 3 * H], &gh[r * 3 * H..(r + 1) * 3 * H], &s[r * H..(r + 1) * H], &mut s_new[r * H..(r + 1) * H]);
    });
    *s = s_new;
    // Deep output: [s; Ey; c] W_o as three accumulated GEMMs, no concatenation.
    let ow = w.get("out_w");
    let mut t = fill_rows(w.get("out_b"), n);
    matmul(&mut t, 0, C, Mat::new(s, n, H), Mat::new(&ow[..H * C], H, C), true, threads());
    matmul(&mut t, 0, C, Mat::new(&ey, n, EMB), Mat::new(&ow[H * C..(H + EMB) * C], EMB, C), true, threads());
    matmul(&mut t, 0, C, Mat::new(&ctx, n, C), Mat::new(&ow[(H + EMB) * C..], C, C), true, threads());
    let m: Vec<f32> = t.chunks_exact(2).map(|p| p[0].max(p[1])).collect();
    w.proj.best(&m, n, want, &[])
}

/// Greedy search for `steps` steps: the token ids `(B, steps)`.
pub fn greedy(w: &SearchWeights, src: &[u32], steps: usize) -> Vec<u32> {
    let b = src.len() / SRC_LEN;
    let (enc, mut s) = encode(w, src);
    let sent: Vec<usize> = (0..b).collect();
    let mut y = vec![BOS; b];
    let mut out = vec![0u32; b * steps];
    let ones = vec![1; b];
    for i in 0..steps {
        let sc = step(w, &enc, &sent, &mut s, &y, &ones);
        y = sc.argmax();
        for (r, &t) in y.iter().enumerate() {
            out[r * steps + i] = t;
        }
    }
    out
}

/// Batched beam search with `k` hypotheses per sentence for `steps` steps: the final scores
/// `(B, k)`, best first.
pub fn beam(w: &SearchWeights, src: &[u32], steps: usize, k: usize) -> Vec<f32> {
    let b = src.len() / SRC_LEN;
    let (enc, s0) = encode(w, src);
    let sent: Vec<usize> = (0..b * k).map(|r| r / k).collect();
    let mut s: Vec<f32> = (0..b * k).flat_map(|r| s0[(r / k) * H..(r / k + 1) * H].iter().copied()).collect();
    let mut y = vec![BOS; b * k];
    let mut score: Vec<f32> = (0..b * k).map(|r| if r % k == 0 { 0.0 } else { f32::NEG_INFINITY }).collect();
    let groups: Vec<std::ops::Range<usize>> = (0..b).map(|bi| bi * k..(bi + 1) * k).collect();
    let widths = vec![k; b];
    for _ in 0..steps {
        // Dead hypotheses (score −∞, the first step's copies) need no tokens.
        let want: Vec<usize> = score.iter().map(|&x| if x > f32::NEG_INFINITY { k } else { 0 }).collect();
        let sc = step(w, &enc, &sent, &mut s, &y, &want);
        let picks = sc.top_k_groups(&score, &groups, &widths);
        let old = s.clone();
        for (bi, top) in picks.iter().enumerate() {
            for (slot, c) in top.iter().enumerate() {
                let (r, origin) = (bi * k + slot, c.row);
                score[r] = c.score;
                y[r] = c.token;
                s[r * H..(r + 1) * H].copy_from_slice(&old[origin * H..(origin + 1) * H]);
            }
        }
    }
    score
}
