//! An embedding lookup with its dropout mask as one op: `x_r = E[id_r] ⊙ m_r`, `E (V, m)`,
//! `N` ids → `(N, m)`. The composed twin is `E.index_select(ids) * mask`
//! (`model/regularizer.rs` draws the mask: word and unit dropout combined).
//!
//! Why an op: candle's `index_select` backward builds a zero `(V, m)` gradient and then a
//! second one by `index_add`, and the mask's multiplication is a node of its own whose
//! `(N, m)` gradient candle zero-fills and adds into. Here the backward pass scatters
//! `g_r ⊙ m_r` straight into one zeroed `(V, m)` buffer.
//!
//! [`columns_op`] is its transpose for the untied output matrix `G (l, K_y)`: the training
//! softmax over candidates (`model/candidates.rs`) reads `V′`'s columns of `G`. candle's
//! `index_select` on dimension 1 has a scalar `index_add` as its backward pass, on a copy of a
//! zeroed `(l, K_y)` buffer: about 15 ms of a bench-rnnsearch step (`perf record`,
//! docs/logs/candidates-overhead-2026-11-30.txt); here one zeroed buffer takes the columns'
//! gradients row by row, in parallel.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, WithDType};

use rayon::prelude::*;

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

/// Columns `ids` (distinct) of `table (l, V)` → `(l, |ids|)`; the composed twin is
/// `table.index_select(ids, 1)`.
pub fn columns_op(table: &Tensor, ids: &[u32]) -> Result<Tensor> {
    let (_, vocab) = table.dims2()?;
    if ids.iter().any(|&i| i as usize >= vocab) {
        candle_core::bail!("columns: ids do not fit a table of {:?}", table.dims());
    }
    crate::kernels::storage::cpu_only("gather-columns")?;
    table.contiguous()?.apply_op1(Columns { ids: ids.to_vec(), vocab })
}

struct Columns {
    ids: Vec<u32>,
    vocab: usize,
}

impl Columns {
    fn forward<T: Real>(&self, table: &[T]) -> Vec<T> {
        let n = self.ids.len();
        let mut out = vec![T::ZERO; table.len() / self.vocab * n];
        out.par_chunks_mut(n.max(1)).zip(table.par_chunks(self.vocab)).for_each(|(o, row)| {
            for (x, &id) in o.iter_mut().zip(&self.ids) {
                *x = row[id as usize];
            }
        });
        out
    }

    /// `dG (l, V)`: zero outside `ids`, each gathered column's gradient added into its column.
    fn backward<T: Real>(&self, grad: &[T]) -> Vec<T> {
        let n = self.ids.len().max(1);
        let mut dg = vec![T::ZERO; grad.len() / n * self.vocab];
        dg.par_chunks_mut(self.vocab).zip(grad.par_chunks(n)).for_each(|(row, g)| {
            for (&id, &x) in self.ids.iter().zip(g) {
                row[id as usize] += x;
            }
        });
        dg
    }
}

impl CustomOp1 for Columns {
    fn name(&self) -> &'static str {
        "gather-columns"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let shape = Shape::from((l.dims()[0], self.ids.len()));
        Ok(match float_dtype(&[s.dtype()])? {
            DType::F32 => (CpuStorage::F32(self.forward::<f32>(cpu_slice(s, l)?)), shape),
            _ => (CpuStorage::F64(self.forward::<f64>(cpu_slice(s, l)?)), shape),
        })
    }

    fn bwd(&self, table: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        fn go<T: Real + WithDType>(op: &Columns, table: &Tensor, grad: &Tensor) -> Result<Tensor> {
            with_slice::<T, _>(&grad.contiguous()?, |g| tensor_from(op.backward::<T>(g), table.shape(), table))
        }
        Ok(Some(match table.dtype() {
            DType::F32 => go::<f32>(self, table, grad)?,
            _ => go::<f64>(self, table, grad)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// The column gather and its scatter against `index_select` and its `index_add`, exactly.
    #[test]
    fn columns_equal_index_select_and_its_gradient() {
        let dev = Device::Cpu;
        let g = Var::from_tensor(&Tensor::randn(0f32, 1.0, (5, 12), &dev).unwrap()).unwrap();
        let ids = [0u32, 3, 4, 9, 11];
        let w = Tensor::randn(0f32, 1.0, (5, ids.len()), &dev).unwrap();
        let want = g.index_select(&Tensor::new(&ids, &dev).unwrap(), 1).unwrap();
        let got = columns_op(&g, &ids).unwrap();
        assert_eq!(got.to_vec2::<f32>().unwrap(), want.to_vec2::<f32>().unwrap());
        let (gw, gg) =
            ((want * &w).unwrap().sum_all().unwrap().backward().unwrap(), (got * &w).unwrap().sum_all().unwrap().backward().unwrap());
        assert_eq!(gw.get(&g).unwrap().to_vec2::<f32>().unwrap(), gg.get(&g).unwrap().to_vec2::<f32>().unwrap());
        assert!(columns_op(&g, &[12]).is_err());
    }
}
