//! Maxout over adjacent pairs (Goodfellow et al. 2013; RNNsearch's deep output, Bahdanau et al.
//! 2014, eq. A.2.2): `t_k = max(t̃_{2k}, t̃_{2k+1})`, `(N, 2K) → (N, K)`. The composed twin is
//! `reshape(N, K, 2).max(2)`, whose backward builds a broadcast equality mask.
use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor, WithDType};

use crate::kernels::gemm::Real;
use crate::kernels::storage::{cpu_slice, float_dtype, tensor_from, with_slice};

/// Max over adjacent pairs of the last dimension, which must be even.
pub fn maxout_pairs(x: &Tensor) -> Result<Tensor> {
    let dims = x.dims();
    match dims.last() {
        Some(&k2) if k2 % 2 == 0 => {
            crate::kernels::storage::cpu_only("fused-maxout")?;
            x.contiguous()?.apply_op1(Maxout)
        }
        _ => candle_core::bail!("maxout_pairs: last dimension of {dims:?} must be even"),
    }
}

struct Maxout;

impl CustomOp1 for Maxout {
    fn name(&self) -> &'static str {
        "fused-maxout"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        fn fwd<T: Real>(x: &[T]) -> Vec<T> {
            x.chunks_exact(2).map(|p| if p[1] > p[0] { p[1] } else { p[0] }).collect()
        }
        let mut dims = l.shape().dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last /= 2;
        }
        Ok(match float_dtype(&[s.dtype()])? {
            DType::F32 => (CpuStorage::F32(fwd::<f32>(cpu_slice(s, l)?)), Shape::from(dims)),
            _ => (CpuStorage::F64(fwd::<f64>(cpu_slice(s, l)?)), Shape::from(dims)),
        })
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        fn go<T: Real + WithDType>(arg: &Tensor, grad: &Tensor) -> Result<Tensor> {
            with_slice::<T, _>(arg, |x| {
                with_slice::<T, _>(grad, |g| {
                    let mut dx = vec![T::ZERO; x.len()];
                    for ((p, d), &gk) in x.chunks_exact(2).zip(dx.chunks_exact_mut(2)).zip(g) {
                        // Ties go to the first of the pair, as the forward pass picks it.
                        d[usize::from(p[1] > p[0])] = gk;
                    }
                    tensor_from(dx, arg.shape(), arg)
                })
            })
        }
        Ok(Some(match arg.dtype() {
            DType::F32 => go::<f32>(arg, grad)?,
            _ => go::<f64>(arg, grad)?,
        }))
    }
}
