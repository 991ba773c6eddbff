//! What both RNNsearch decoders (`attention_decoder.rs`, `conditional_decoder.rs`) read of the
//! encoder, written once: the start state `s_0 = tanh(←h_1 W_s + b_s)` (Bahdanau et al. 2014,
//! appendix A.2.2; `←h_1` is the backward half of the first annotation, which has read the
//! whole sentence) and the attention's memory of a batch, in the candle form and the host form.
use candle_core::Tensor;

use super::attention::Attention;
use super::decoder::{AttentionMemory, HostMemory};
use super::params::{Init, ParamBuilder};
use crate::error::Result;
use crate::kernels::dense::{affine, host, tanh_in_place};
use crate::kernels::gemm::{matmul, Mat};

/// `W_s (n_enc, n)` and `b_s (n)`, registered as the decoder's `w_s`, `b_s`.
#[derive(Clone, Debug)]
pub struct DecoderStart {
    pub(crate) w_s: Tensor,
    pub(crate) b_s: Tensor,
}

impl DecoderStart {
    pub fn new(enc: usize, hidden: usize, pb: &ParamBuilder) -> Result<Self> {
        Ok(DecoderStart { w_s: pb.get("w_s", &[enc, hidden], Init::Normal)?, b_s: pb.get("b_s", &[hidden], Init::Zeros)? })
    }

    /// `s_0 = tanh(←h_1 W_s + b_s) (B, n)` from the annotations `(B, S, 2n_enc)`.
    pub fn output(&self, ann: &Tensor) -> Result<Tensor> {
        let e = self.w_s.dim(0)?;
        let back_first = ann.narrow(1, 0, 1)?.squeeze(1)?.narrow(1, e, e)?.contiguous()?;
        Ok(back_first.matmul(&self.w_s)?.broadcast_add(&self.b_s)?.tanh()?)
    }
}

/// What a step reads of a batch: `ann (B, S, 2n)`, `src_mask (B, S)` (1 at words).
pub fn attention_memory(att: &Attention, ann: &Tensor, src_mask: &Tensor) -> Result<AttentionMemory> {
    let uh = att.precompute(ann)?;
    let mask_bias = ((src_mask - 1.0)? * 1e9)?;
    Ok(AttentionMemory { annotations: ann.clone(), uh, mask_bias, src_ext: None, n_ext: 0 })
}

/// The host form: `W_s (n, n)`, `b_s (n)`, `U_a (2n, A)` and `v_a (A)`.
pub struct HostStart {
    pub(crate) w_s: Vec<f32>,
    pub(crate) b_s: Vec<f32>,
    pub(crate) u_a: Vec<f32>,
    pub(crate) v_a: Vec<f32>,
}

impl HostStart {
    pub fn new(start: &DecoderStart, att: &Attention) -> Result<Self> {
        Ok(HostStart { w_s: host(&start.w_s)?, b_s: host(&start.b_s)?, u_a: host(&att.u_a)?, v_a: host(&att.v_a)? })
    }

    /// The memory `(B, S, 2n + A)` holding `[h_j ; U_a h_j]` at each position (the layout
    /// `kernels::attn_decoder::attend_row` reads), and `s_0 (B, n)`, from `ann (B, S, 2n)`.
    pub fn memory(&self, ann: &[f32], b: usize, s: usize, threads: usize) -> (HostMemory, Vec<f32>) {
        let (n, a) = (self.b_s.len(), self.v_a.len());
        let ew = 2 * n + a;
        let mut mem = vec![0f32; b * s * ew];
        for (row, h) in mem.chunks_exact_mut(ew).zip(ann.chunks_exact(2 * n)) {
            row[..2 * n].copy_from_slice(h);
        }
        // ←h_1: the backward direction's state at each sentence's first position.
        let back_first: Vec<f32> = (0..b).flat_map(|r| ann[r * s * 2 * n + n..r * s * 2 * n + 2 * n].iter().copied()).collect();
        // U_a h_j for every position, written next to h_j.
        let annotations = Mat::strided(&mem, 0, b * s, 2 * n, ew);
        let mut uh = vec![0f32; b * s * a];
        matmul(&mut uh, 0, a, annotations, Mat::new(&self.u_a, 2 * n, a), false, threads);
        for (row, u) in mem.chunks_exact_mut(ew).zip(uh.chunks_exact(a)) {
            row[2 * n..].copy_from_slice(u);
        }
        let mut h0 = affine(&back_first, b, n, &self.w_s, &self.b_s, threads);
        tanh_in_place(&mut h0);
        (HostMemory::Attention { mem }, h0)
    }
}
