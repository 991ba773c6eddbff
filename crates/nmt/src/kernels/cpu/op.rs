//! The candle plumbing of every CPU op ([`FusedOp`] on [`Host`]): dispatch on f32/f64, keep
//! what the forward pass computed for the backward pass, recompute it when it is gone (a
//! second backward through the same graph), time the f32 passes for `NMT_PROFILE`. The GPU's
//! twin is `kernels/gpu/op.rs`.
//!
//! An op states only its maths; [`apply`] wraps it as a `CustomOp3`.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};

use crate::kernels::fused_op::{FusedOp, Host};
use crate::kernels::gemm::Real;
use crate::kernels::storage::{cpu_slice, float_dtype, tensor_from, with_slices};

/// An op of both host element types.
pub(crate) trait HostOp: FusedOp<Host<f32>> + FusedOp<Host<f64>> {}
impl<F: FusedOp<Host<f32>> + FusedOp<Host<f64>>> HostOp for F {}

enum Cached<F: HostOp> {
    F32(<F as FusedOp<Host<f32>>>::Saved),
    F64(<F as FusedOp<Host<f64>>>::Saved),
}

struct Op<F: HostOp> {
    op: F,
    cache: Mutex<Option<Cached<F>>>,
}

fn name<F: HostOp>() -> &'static str {
    <F as FusedOp<Host<f32>>>::NAME
}

/// Times `f` in the op's forward (`backward` false) or backward `profile` slot, if it has one.
fn timed<F: HostOp, R>(backward: bool, f: impl FnOnce() -> R) -> R {
    match <F as FusedOp<Host<f32>>>::SLOTS {
        Some((fwd, bwd)) => crate::kernels::profile::timed(if backward { bwd } else { fwd }, f),
        None => f(),
    }
}

/// Runs `op` on `(a, b, c)` (made contiguous) as a differentiable candle op.
pub(crate) fn apply<F: HostOp>(op: F, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    crate::kernels::storage::cpu_only(name::<F>())?;
    a.contiguous()?.apply_op3(&b.contiguous()?, &c.contiguous()?, Op { op, cache: Mutex::new(None) })
}

fn go<F: FusedOp<Host<T>>, T: Real + WithDType>(op: &F, saved: Option<F::Saved>, t: [&Tensor; 5]) -> Result<(Tensor, Tensor, Tensor)> {
    let h = Host::<T>::default();
    with_slices::<T, _, 5>(t, |[a, b, c, out, g]| {
        let saved = match saved {
            Some(s) => s,
            None => op.forward(&h, [a, b, c])?.1,
        };
        let [da, db, dc] = op.backward(&h, [a, b, c], saved, out, g)?;
        Ok((tensor_from(da, t[0].shape(), t[0])?, tensor_from(db, t[1].shape(), t[1])?, tensor_from(dc, t[2].shape(), t[2])?))
    })
}

impl<F: HostOp> CustomOp3 for Op<F> {
    fn name(&self) -> &'static str {
        name::<F>()
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (out, cached) = match float_dtype(&[s1.dtype(), s2.dtype(), s3.dtype()])? {
            DType::F32 => {
                let x = [cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?];
                let (out, saved) = timed::<F, _>(false, || self.op.forward(&Host::<f32>::default(), x))?;
                (CpuStorage::F32(out), Cached::F32(saved))
            }
            _ => {
                let x = [cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?];
                let (out, saved) = self.op.forward(&Host::<f64>::default(), x)?;
                (CpuStorage::F64(out), Cached::F64(saved))
            }
        };
        if let Ok(mut c) = self.cache.lock() {
            *c = Some(cached);
        }
        Ok((out, <F as FusedOp<Host<f32>>>::out_shape(&self.op)))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let cached = self.cache.lock().ok().and_then(|mut c| c.take());
        let t = [a, b, c, res, grad];
        let (da, db, dc) = match (a.dtype(), cached) {
            (DType::F32, Some(Cached::F32(s))) => timed::<F, _>(true, || go::<F, f32>(&self.op, Some(s), t))?,
            (DType::F32, _) => timed::<F, _>(true, || go::<F, f32>(&self.op, None, t))?,
            (_, Some(Cached::F64(s))) => go::<F, f64>(&self.op, Some(s), t)?,
            _ => go::<F, f64>(&self.op, None, t)?,
        };
        Ok((Some(da), Some(db), Some(dc)))
    }
}
