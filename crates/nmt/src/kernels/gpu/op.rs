//! The candle plumbing of every GPU op of three inputs (`birnn.rs`, `decoder_op.rs`,
//! `update.rs`): a [`GpuOp`] states its
//! forward and backward passes once, on any [`Launch`]; [`apply`] wraps it as a
//! differentiable `CustomOp3` that runs on the GPU for a CUDA tensor (`cuda.rs`) and emulated
//! for a CPU tensor (`emulated.rs`), which is how the CPU tests check it against the fused CPU
//! ops. What the forward pass keeps stays on the device for the backward pass; a second
//! backward pass that finds it gone runs the forward pass again.
use std::any::Any;
use std::sync::Mutex;

use candle_core::{bail, CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};

use super::emulated::{Emulated, HostBuf};
use super::{Addr, Launch};
use crate::kernels::storage::{cpu_slice, with_slices};

/// A forward pass's output and what it keeps, on launcher `L`.
pub(super) type Forward<L, S> = (<L as Launch>::Floats, S);

/// A GPU op of three contiguous `f32` inputs.
pub(super) trait GpuOp: Send + Sync + 'static {
    const NAME: &'static str;
    /// What the forward pass keeps, in the launcher's buffers `F`.
    type Saved<F: Send + Sync + 'static>: Send + Sync + 'static;
    fn out_shape(&self) -> Shape;
    /// The output and what the backward pass needs, from the inputs' addresses.
    fn forward<L: Launch>(&self, l: &L, x: [Addr; 3]) -> Result<Forward<L, Self::Saved<L::Floats>>>;
    /// The inputs' gradients from what the forward pass kept, its output and its gradient.
    fn backward<L: Launch>(&self, l: &L, x: [Addr; 3], saved: Self::Saved<L::Floats>, out: Addr, dout: Addr) -> Result<[L::Floats; 3]>;
}

/// Runs `op` on `(a, b, c)`, made contiguous.
pub(super) fn apply<O: GpuOp>(op: O, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    a.contiguous()?.apply_op3(&b.contiguous()?, &c.contiguous()?, Wrapped { op, saved: Mutex::new(None) })
}

/// Runs `op` on `(a, b, c)`, made contiguous, outside the autodiff graph (its `backward` is
/// never called: the optimiser's update).
pub(super) fn apply_no_bwd<O: GpuOp>(op: O, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    a.contiguous()?.apply_op3_no_bwd(&b.contiguous()?, &c.contiguous()?, &Wrapped { op, saved: Mutex::new(None) })
}

struct Wrapped<O> {
    op: O,
    /// The forward pass's `O::Saved<L::Floats>` of its launcher.
    saved: Mutex<Option<Box<dyn Any + Send + Sync>>>,
}

impl<O: GpuOp> Wrapped<O> {
    fn keep<L: Launch>(&self, s: O::Saved<L::Floats>) {
        if let Ok(mut slot) = self.saved.lock() {
            *slot = Some(Box::new(s));
        }
    }

    /// What the forward pass kept on launcher `L`, or the forward pass again.
    fn saved<L: Launch>(&self, l: &L, x: [Addr; 3]) -> Result<O::Saved<L::Floats>> {
        let boxed = self.saved.lock().ok().and_then(|mut s| s.take());
        match boxed.and_then(|b| b.downcast::<O::Saved<L::Floats>>().ok()) {
            Some(s) => Ok(*s),
            None => Ok(self.op.forward(l, x)?.1),
        }
    }

    /// The backward pass on the CPU, emulated.
    fn backward_host(&self, t: [&Tensor; 5]) -> Result<[Tensor; 3]> {
        let l = Emulated;
        let [a, b, c, out, dout] = with_slices::<f32, _, 5>(t, |s| Ok(s.map(HostBuf::from_slice)))?;
        let x = [l.addr(&a), l.addr(&b), l.addr(&c)];
        let saved = self.saved(&l, x)?;
        let [da, db, dc] = self.op.backward(&l, x, saved, l.addr(&out), l.addr(&dout))?;
        let dev = t[0].device();
        Ok([
            Tensor::from_vec(da.to_vec(), t[0].shape(), dev)?,
            Tensor::from_vec(db.to_vec(), t[1].shape(), dev)?,
            Tensor::from_vec(dc.to_vec(), t[2].shape(), dev)?,
        ])
    }

    #[cfg(feature = "cuda")]
    /// The backward pass on the GPU.
    fn backward_cuda(&self, t: [&Tensor; 5]) -> Result<[Tensor; 3]> {
        use super::cuda::Cuda;
        use candle_core::Storage;
        let ts = t.map(|x| x.contiguous());
        let [a, b, c, out, dout] = match ts {
            [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e)] => [a, b, c, d, e],
            _ => bail!("{}: could not make the backward inputs contiguous", O::NAME),
        };
        let guards = [&a, &b, &c, &out, &dout].map(|x| x.storage_and_layout());
        let Storage::Cuda(first) = &*guards[0].0 else { bail!("{}: a CUDA tensor expected", O::NAME) };
        let l = Cuda::new(&first.device);
        let mut addrs = [Addr::NULL; 5];
        for (a, (s, lay)) in addrs.iter_mut().zip(&guards) {
            let Storage::Cuda(s) = &**s else { bail!("{}: a CUDA tensor expected", O::NAME) };
            *a = l.input(s, lay)?;
        }
        let x = [addrs[0], addrs[1], addrs[2]];
        let saved = self.saved(&l, x)?;
        let [da, db, dc] = self.op.backward(&l, x, saved, addrs[3], addrs[4])?;
        Ok([l.tensor(da, t[0].shape()), l.tensor(db, t[1].shape()), l.tensor(dc, t[2].shape())])
    }
}

impl<O: GpuOp> CustomOp3 for Wrapped<O> {
    fn name(&self) -> &'static str {
        O::NAME
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
        let l = Emulated;
        let [a, b, c] = [cpu_slice::<f32>(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?].map(HostBuf::from_slice);
        let (out, saved) = self.op.forward(&l, [l.addr(&a), l.addr(&b), l.addr(&c)])?;
        self.keep::<Emulated>(saved);
        Ok((CpuStorage::F32(out.to_vec()), self.op.out_shape()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
        s3: &candle_core::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let l = super::cuda::Cuda::new(&s1.device);
        let (out, saved) = self.op.forward(&l, [l.input(s1, l1)?, l.input(s2, l2)?, l.input(s3, l3)?])?;
        self.keep::<super::cuda::Cuda>(saved);
        Ok((l.storage(out), self.op.out_shape()))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let t = [a, b, c, res, grad];
        let [da, db, dc] = match a.device() {
            candle_core::Device::Cpu => self.backward_host(t)?,
            #[cfg(feature = "cuda")]
            candle_core::Device::Cuda(_) => self.backward_cuda(t)?,
            other => bail!("{}: no backward pass on {:?}", O::NAME, other.location()),
        };
        Ok((Some(da), Some(db), Some(dc)))
    }
}
