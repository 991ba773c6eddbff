//! The word embeddings `E[y]` of both sides (RNNsearch appendix A.2: `E x_j`, `E y_{i-1}`), with
//! their dropout (word and unit dropout combined into one mask, `regularizer.rs`).
//!
//! One lookup, two forms: the fused op (`kernels::cpu::lookup`, which scatters the gradient straight
//! into one `(V, m)` buffer) or the composed `E.index_select(ids) ⊙ mask`, as [`Backend`] says.
use candle_core::Tensor;

use super::backend::Backend;
use super::regularizer::times_mask;
use crate::error::Result;

/// Rows `ids (B, L)` u32 of `table (V, m)`, each times its row of `mask (B·L, m)` when given
/// → `(B, L, m)`.
pub fn lookup(table: &Tensor, ids: &Tensor, mask: Option<Vec<f32>>, backend: Backend) -> Result<Tensor> {
    let (b, l) = ids.dims2()?;
    let m = table.dim(1)?;
    let flat = ids.flatten_all()?;
    if backend.kernels() {
        let ids = flat.to_vec1::<u32>()?;
        return Ok(backend.lookup(table, &ids, mask.as_deref())?.reshape((b, l, m))?);
    }
    let x = table.index_select(&flat, 0)?.reshape((b, l, m))?;
    match mask {
        Some(mk) => times_mask(&x, mk),
        None => Ok(x),
    }
}
