//! What RNNsearch's decoder starts from (`model.decoder_start`, `model/attention_memory.rs`):
//! `s_0 = tanh(p W_s + b_s)`, `p` a summary of the annotations `ann (B, S, C)` of each
//! sentence of true length `len`:
//!
//! ```text
//! first-backward  p = ←h_1 = ann[b, 0, C/2 ..]        (B, C/2)   Bahdanau et al., A.2.2
//! last-forward    p = →h_len = ann[b, len−1, .. C/2]   (B, C/2)   the forward RNN's last state
//! mean            p = Σ_{j<len} ann[b, j, ..] / len    (B, C)     Nematus, Marian's s2s
//! ```
//! [`pool`] and its backward [`pool_backward`] serve the fused op (`attention_op.rs`) and the host
//! search (`HostStart::memory`); the composed form is `DecoderStart::output`.
use crate::config::StartState;
use crate::kernels::gemm::Real;
use crate::kernels::shapes::attn_dims::summary_width;

/// The positions row `b` of length `len` reads (each weighted `1 / count`).
fn positions(kind: StartState, len: usize) -> std::ops::Range<usize> {
    match kind {
        StartState::FirstBackward => 0..1,
        StartState::LastForward => len - 1..len,
        StartState::Mean => 0..len,
    }
}

/// `p (B, P)` from `ann (B, S, C)`.
pub fn pool<T: Real>(kind: StartState, ann: &[T], s: usize, c: usize, lens: &[usize]) -> Vec<T> {
    let p = summary_width(kind, c);
    let col = if kind == StartState::FirstBackward { c - p } else { 0 };
    let mut out = vec![T::ZERO; lens.len() * p];
    for (b, (row, &len)) in out.chunks_mut(p).zip(lens).enumerate() {
        let range = positions(kind, len);
        let w = T::ONE / T::from_f64(range.len() as f64);
        for j in range {
            let src = &ann[(b * s + j) * c + col..][..p];
            for (o, &x) in row.iter_mut().zip(src) {
                *o += x * w;
            }
        }
    }
    out
}

/// Adds the gradient `dp (B, P)` of [`pool`]'s output into `dann (B, S, C)`.
pub fn pool_backward<T: Real>(kind: StartState, dp: &[T], dann: &mut [T], s: usize, c: usize, lens: &[usize]) {
    let p = summary_width(kind, c);
    let col = if kind == StartState::FirstBackward { c - p } else { 0 };
    for (b, (row, &len)) in dp.chunks(p).zip(lens).enumerate() {
        let range = positions(kind, len);
        let w = T::ONE / T::from_f64(range.len() as f64);
        for j in range {
            let dst = &mut dann[(b * s + j) * c + col..][..p];
            for (d, &g) in dst.iter_mut().zip(row) {
                *d += g * w;
            }
        }
    }
}
