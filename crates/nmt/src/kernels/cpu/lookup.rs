//! An embedding lookup with its dropout mask as one op: `x_r = E[id_r] ⊙ m_r`, `E (V, m)`,
//! `N` ids → `(N, m)`. The composed twin is `E.index_select(ids) * mask`
//! (`model/regularizer.rs` draws the mask: word and unit dropout combined).
//!
//! Why an op: candle's `index_select` backward builds a zero `(V, m)` gradient and then a
//! second one by `index_add`, and the mask's multiplication is a node of its own whose
//! `(N, m)` gradient candle zero-fills and adds into. Here the backward pass scatters
//! `g_r ⊙ m_r` straight into one zeroed `(V, m)` buffer.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, WithDType};

use crate::kernels::gemm::Real;
use crate::kernels::storage::{cpu_slice, float_dtype, tensor_from, with_slice};

/// Rows `ids` of `table (V, m)`, each times its row of `mask (N, m)` when given.
pub fn lookup_op(table: &Tensor, ids: &[u32], mask: Option<&[f32]>) -> Result<Tensor> {
    let (vocab, dim) = table.dims2()?;
    if ids.iter().any(|&i| i as usize >= vocab) || mask.is_some_and(|m| m.len() != ids.len() * dim) {
        candle_core::bail!("embed: ids or mask do not fit a table of {:?}", table.dims());
    }
    crate::kernels::storage::cpu_only("fused-embed")?;
    table.contiguous()?.apply_op1(Embed { ids: ids.to_vec(), mask: mask.map(<[f32]>::to_vec), dim })
}

struct Embed {
    ids: Vec<u32>,
    mask: Option<Vec<f32>>,
    dim: usize,
}

impl Embed {
    fn forward<T: Real>(&self, table: &[T]) -> Vec<T> {
        let m = self.dim;
        let mut out = Vec::with_capacity(self.ids.len() * m);
        for &id in &self.ids {
            out.extend_from_slice(&table[id as usize * m..][..m]);
        }
        if let Some(mask) = &self.mask {
            for (x, &k) in out.iter_mut().zip(mask) {
                *x = *x * T::from_f64(f64::from(k));
            }
        }
        out
    }

    /// `dE (V, m)`: each row's gradient, masked, added into its word's row.
    fn backward<T: Real>(&self, vocab: usize, grad: &[T]) -> Vec<T> {
        let m = self.dim;
        let mut de = vec![T::ZERO; vocab * m];
        for (r, &id) in self.ids.iter().enumerate() {
            let (dst, g) = (&mut de[id as usize * m..][..m], &grad[r * m..][..m]);
            match &self.mask {
                None => dst.iter_mut().zip(g).for_each(|(d, &x)| *d += x),
                Some(mask) => {
                    for ((d, &x), &k) in dst.iter_mut().zip(g).zip(&mask[r * m..][..m]) {
                        *d += x * T::from_f64(f64::from(k));
                    }
                }
            }
        }
        de
    }
}

impl CustomOp1 for Embed {
    fn name(&self) -> &'static str {
        "fused-embed"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let shape = Shape::from((self.ids.len(), self.dim));
        Ok(match float_dtype(&[s.dtype()])? {
            DType::F32 => (CpuStorage::F32(self.forward::<f32>(cpu_slice(s, l)?)), shape),
            _ => (CpuStorage::F64(self.forward::<f64>(cpu_slice(s, l)?)), shape),
        })
    }

    fn bwd(&self, table: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        fn go<T: Real + WithDType>(op: &Embed, table: &Tensor, grad: &Tensor) -> Result<Tensor> {
            with_slice::<T, _>(grad, |g| tensor_from(op.backward::<T>(table.dim(0)?, g), table.shape(), table))
        }
        Ok(Some(match table.dtype() {
            DType::F32 => go::<f32>(self, table, grad)?,
            _ => go::<f64>(self, table, grad)?,
        }))
    }
}
