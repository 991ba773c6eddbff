//! A data batch as tensors on the model's device.
use candle_core::{DType, Device, Tensor};
use nmt_data::batch::Batch;
use nmt_data::PAD;

use crate::error::Result;

/// Tensors of one batch. `src (B, S)` u32 with `src_mask (B, S)`; `tgt_in (B, T)` u32 decoder
/// inputs (`<s> y_1 …`), `tgt_out (B·T)` u32 targets (`y_1 … </s>`) with `tgt_mask (B·T)`.
pub struct BatchTensors {
    pub(crate) src: Tensor,
    pub(crate) src_mask: Tensor,
    pub(crate) tgt_in: Tensor,
    pub(crate) tgt_out: Tensor,
    pub(crate) tgt_mask: Tensor,
    /// Real target tokens (the mask's sum).
    pub(crate) tokens: usize,
    /// Each sentence's source length (`</s>` included): the fused kernels' lengths.
    pub(crate) src_lengths: Vec<usize>,
    /// A copy model's extended source ids `(B, S)` u32 (`Batch::src_ext`), if the batch has them.
    pub(crate) src_ext: Option<Tensor>,
}

impl BatchTensors {
    pub fn new(batch: &Batch, dtype: DType, device: &Device) -> Result<Self> {
        let (b, t) = (batch.size, batch.tgt_len);
        let (src, src_mask) = Self::source(batch, dtype, device)?;
        let tgt_in = Tensor::from_vec(batch.tgt_in.clone(), (b, t), device)?;
        let tgt_out = Tensor::from_vec(batch.tgt_out.clone(), b * t, device)?;
        let tgt_mask_v = mask_of(&batch.tgt_out);
        let tokens = tgt_mask_v.iter().filter(|&&x| x > 0.0).count();
        let tgt_mask = Tensor::from_vec(tgt_mask_v, b * t, device)?.to_dtype(dtype)?;
        let src_lengths = batch.src_lengths.clone();
        let src_ext = Self::source_ext(batch, device)?;
        Ok(BatchTensors { src, src_mask, tgt_in, tgt_out, tgt_mask, tokens, src_lengths, src_ext })
    }

    /// Source side only (for search): `(src, src_mask)`.
    pub fn source(batch: &Batch, dtype: DType, device: &Device) -> Result<(Tensor, Tensor)> {
        let (b, s) = (batch.size, batch.src_len);
        let mask = mask_of(&batch.src);
        Ok((Tensor::from_vec(batch.src.clone(), (b, s), device)?, Tensor::from_vec(mask, (b, s), device)?.to_dtype(dtype)?))
    }
}

impl BatchTensors {
    /// `Batch::src_ext` as a `(B, S)` u32 tensor, or `None` when the batch has none.
    pub fn source_ext(batch: &Batch, device: &Device) -> Result<Option<Tensor>> {
        if batch.src_ext.is_empty() {
            return Ok(None);
        }
        Ok(Some(Tensor::from_vec(batch.src_ext.clone(), (batch.size, batch.src_len), device)?))
    }
}

/// 1.0 at real tokens, 0.0 at padding.
fn mask_of(ids: &[u32]) -> Vec<f32> {
    ids.iter().map(|&i| if i == PAD { 0.0 } else { 1.0 }).collect()
}
