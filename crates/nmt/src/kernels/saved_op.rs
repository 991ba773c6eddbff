//! The candle plumbing every fused op with a saved forward pass shares: dispatch on f32/f64,
//! keep what the forward pass computed for the backward pass, recompute it when it is gone (a
//! second backward through the same graph), time the f32 path for `NMT_PROFILE`.
//!
//! An op states only its maths ([`SavedForward`]); [`apply`] wraps it as a `CustomOp3`.
use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor, WithDType};

use super::gemm::Real;
use super::storage::{cpu_slice, float_dtype, tensor_from, with_slices};

/// A fused op of three inputs whose backward pass reuses state of its forward pass.
pub(crate) trait SavedForward: Send + Sync + 'static {
    /// What the forward pass keeps for the backward pass.
    type Saved<T: Real>: Send + Sync;
    const NAME: &'static str;
    /// `profile` slots of the forward and backward pass (f32 only).
    const SLOTS: (usize, usize);
    fn out_shape(&self) -> Shape;
    fn forward<T: Real>(&self, x: [&[T]; 3]) -> (Vec<T>, Self::Saved<T>);
    /// The three inputs' gradients from the saved state, the inputs, the output and its
    /// gradient.
    fn backward<T: Real>(&self, saved: Self::Saved<T>, x: [&[T]; 3], out: &[T], grad: &[T]) -> [Vec<T>; 3];
}

enum Cached<F: SavedForward> {
    F32(F::Saved<f32>),
    F64(F::Saved<f64>),
}

struct Op<F: SavedForward> {
    op: F,
    cache: Mutex<Option<Cached<F>>>,
}

/// Runs `op` on `(a, b, c)` (made contiguous) as a differentiable candle op.
pub(crate) fn apply<F: SavedForward>(op: F, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    super::storage::cpu_only(F::NAME)?;
    a.contiguous()?.apply_op3(&b.contiguous()?, &c.contiguous()?, Op { op, cache: Mutex::new(None) })
}

fn go<F: SavedForward, T: Real + WithDType>(op: &F, saved: Option<F::Saved<T>>, t: [&Tensor; 5]) -> Result<(Tensor, Tensor, Tensor)> {
    with_slices::<T, _, 5>(t, |[a, b, c, out, g]| {
        let saved = saved.unwrap_or_else(|| op.forward([a, b, c]).1);
        let [da, db, dc] = op.backward(saved, [a, b, c], out, g);
        Ok((tensor_from(da, t[0].shape(), t[0])?, tensor_from(db, t[1].shape(), t[1])?, tensor_from(dc, t[2].shape(), t[2])?))
    })
}

impl<F: SavedForward> CustomOp3 for Op<F> {
    fn name(&self) -> &'static str {
        F::NAME
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
                let (out, saved) = super::profile::timed(F::SLOTS.0, || self.op.forward::<f32>(x));
                (CpuStorage::F32(out), Cached::F32(saved))
            }
            _ => {
                let (out, saved) = self.op.forward::<f64>([cpu_slice(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?]);
                (CpuStorage::F64(out), Cached::F64(saved))
            }
        };
        if let Ok(mut c) = self.cache.lock() {
            *c = Some(cached);
        }
        Ok((out, self.op.out_shape()))
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
        let slot = F::SLOTS.1;
        let (da, db, dc) = match (a.dtype(), cached) {
            (DType::F32, Some(Cached::F32(s))) => super::profile::timed(slot, || go::<F, f32>(&self.op, Some(s), t))?,
            (DType::F32, _) => super::profile::timed(slot, || go::<F, f32>(&self.op, None, t))?,
            (_, Some(Cached::F64(s))) => go::<F, f64>(&self.op, Some(s), t)?,
            _ => go::<F, f64>(&self.op, None, t)?,
        };
        Ok((Some(da), Some(db), Some(dc)))
    }
}
