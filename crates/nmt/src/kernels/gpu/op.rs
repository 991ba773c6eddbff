//! The candle plumbing of every GPU op ([`FusedOp`] on a [`Launch`]; the CPU's twin is
//! `kernels/cpu/op.rs`): an op states its forward and backward passes once, for every
//! launcher; [`apply`] wraps it as a
//! differentiable `CustomOp3` that runs on the GPU for a CUDA tensor (`cuda.rs`) and emulated
//! for a CPU tensor (`emulated.rs`), which is how the CPU tests check it against the fused CPU
//! ops. What the forward pass keeps stays on the device for the backward pass; a second
//! backward pass that finds it gone runs the forward pass again.
use std::any::Any;
use std::sync::Mutex;

use candle_core::{bail, CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};

use super::emulated::{Emulated, HostBuf};
use super::launch::{Addr, Launch};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::storage::{cpu_slice, with_slices};

/// An op of every launcher this build has: the emulation, and with `--features cuda` the GPU.
#[cfg(not(feature = "cuda"))]
pub(super) trait LaunchOp: FusedOp<Emulated> {}
#[cfg(not(feature = "cuda"))]
impl<O: FusedOp<Emulated>> LaunchOp for O {}
/// An op of every launcher this build has: the emulation, and with `--features cuda` the GPU.
#[cfg(feature = "cuda")]
pub(super) trait LaunchOp: FusedOp<Emulated> + FusedOp<super::cuda::Cuda> {}
#[cfg(feature = "cuda")]
impl<O: FusedOp<Emulated> + FusedOp<super::cuda::Cuda>> LaunchOp for O {}

fn name<O: LaunchOp>() -> &'static str {
    <O as FusedOp<Emulated>>::NAME
}

/// Runs `op` on `(a, b, c)`, made contiguous.
pub(super) fn apply<O: LaunchOp>(op: O, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    a.contiguous()?.apply_op3(&b.contiguous()?, &c.contiguous()?, Wrapped { op, saved: Mutex::new(None) })
}

/// Runs `op` on `(a, b, c)`, made contiguous, outside the autodiff graph (its `backward` is
/// never called: the optimiser's update).
pub(super) fn apply_no_bwd<O: LaunchOp>(op: O, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    a.contiguous()?.apply_op3_no_bwd(&b.contiguous()?, &c.contiguous()?, &Wrapped { op, saved: Mutex::new(None) })
}

struct Wrapped<O> {
    op: O,
    /// The forward pass's `O::Saved<L::Floats>` of its launcher.
    saved: Mutex<Option<Box<dyn Any + Send + Sync>>>,
}

impl<O: LaunchOp> Wrapped<O> {
    fn keep<L: Launch>(&self, s: <O as FusedOp<L>>::Saved)
    where
        O: FusedOp<L>,
    {
        if let Ok(mut slot) = self.saved.lock() {
            *slot = Some(Box::new(s));
        }
    }

    /// What the forward pass kept on launcher `L`, or the forward pass again.
    fn saved<L: Launch>(&self, l: &L, x: [Addr; 3]) -> Result<<O as FusedOp<L>>::Saved>
    where
        O: FusedOp<L>,
    {
        let boxed = self.saved.lock().ok().and_then(|mut s| s.take());
        match boxed.and_then(|b| b.downcast::<<O as FusedOp<L>>::Saved>().ok()) {
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
            _ => bail!("{}: could not make the backward inputs contiguous", name::<O>()),
        };
        let guards = [&a, &b, &c, &out, &dout].map(|x| x.storage_and_layout());
        let Storage::Cuda(first) = &*guards[0].0 else { bail!("{}: a CUDA tensor expected", name::<O>()) };
        let l = Cuda::new(&first.device);
        let mut addrs = [Addr::NULL; 5];
        for (a, (s, lay)) in addrs.iter_mut().zip(&guards) {
            let Storage::Cuda(s) = &**s else { bail!("{}: a CUDA tensor expected", name::<O>()) };
            *a = l.input(s, lay)?;
        }
        let x = [addrs[0], addrs[1], addrs[2]];
        let saved = self.saved(&l, x)?;
        let [da, db, dc] = self.op.backward(&l, x, saved, addrs[3], addrs[4])?;
        Ok([l.tensor(da, t[0].shape()), l.tensor(db, t[1].shape()), l.tensor(dc, t[2].shape())])
    }
}

impl<O: LaunchOp> CustomOp3 for Wrapped<O> {
    fn name(&self) -> &'static str {
        name::<O>()
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
        Ok((CpuStorage::F32(out.to_vec()), <O as FusedOp<Emulated>>::out_shape(&self.op)))
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
        Ok((l.storage(out), <O as FusedOp<Emulated>>::out_shape(&self.op)))
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
            other => bail!("{}: no backward pass on {:?}", name::<O>(), other.location()),
        };
        Ok((Some(da), Some(db), Some(dc)))
    }
}
