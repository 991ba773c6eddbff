//! The GPU bidirectional GRU (`birnn.rs`) as a differentiable candle op: on a CUDA tensor it
//! runs on the GPU (`cuda.rs`); on a CPU tensor it runs emulated (`emulated.rs`), which is how
//! the CPU tests check it against `kernels::birnn` and the composed twin. The forward pass's
//! `GH` and `Q` are kept on the device for the backward pass, and recomputed if a second
//! backward pass finds them gone.
use std::any::Any;
use std::sync::Mutex;

use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor};

use super::birnn::{self, Dims, Inputs, Saved};
use super::emulated::{Emulated, HostBuf};
use super::Launch;
use crate::kernels::rnn_op::RnnSpec;
use crate::kernels::storage::{cpu_slice, with_slices};

/// Runs both directions of a GRU over `gi (B·S, 2G)` with `u (2, H, G)` and `bh (2, G)`
/// (`kernels::birnn::birnn_sequence`'s contract, without layer normalisation); returns
/// `(B, S, 2H)`. `f32` only; the LSTM is refused.
pub fn birnn_sequence(gi: &Tensor, u: &Tensor, bh: &Tensor, spec: RnnSpec<'_>) -> Result<Tensor> {
    let form = match spec.kind {
        crate::config::CellKind::Gru(form) => form,
        crate::config::CellKind::Lstm => bail!("gpu birnn_sequence: the LSTM has no GPU kernel yet"),
    };
    let hidden = u.dim(1)?;
    let g = 3 * hidden;
    let fit = u.dims() == [2, hidden, g] && bh.dims() == [2, g];
    let dims = spec.dims("gpu birnn_sequence", gi, hidden, false, 2, fit)?;
    if [gi.dtype(), u.dtype(), bh.dtype()] != [DType::F32; 3] {
        bail!("gpu birnn_sequence: f32 only, got {:?}", gi.dtype());
    }
    let d = Dims { batch: dims.batch, len: dims.len, hidden, form };
    let op = GpuBiGru { d, lens: dims.lens.iter().map(|&l| l as i64).collect(), mask: dims.mask, saved: Mutex::new(None) };
    gi.contiguous()?.apply_op3(&u.contiguous()?, &bh.contiguous()?, op)
}

pub(super) struct GpuBiGru {
    pub d: Dims,
    pub lens: Vec<i64>,
    pub mask: Option<Vec<f32>>,
    /// The forward pass's [`Saved`] on its launcher (`Saved<HostBuf<f32>>` or, on a GPU,
    /// `Saved<CudaSlice<f32>>`).
    pub saved: Mutex<Option<Box<dyn Any + Send + Sync>>>,
}

impl GpuBiGru {
    fn out_shape(&self) -> Shape {
        Shape::from((self.d.batch, self.d.len, 2 * self.d.hidden))
    }

    /// The inputs uploaded as the launcher's buffers (lengths and mask) beside the given
    /// addresses; the buffers must outlive the launches.
    pub(super) fn inputs<L: Launch>(&self, l: &L, [gi, u, bh]: [super::Addr; 3]) -> Result<(Inputs, L::Ints, Option<L::Floats>)> {
        let lens = l.upload_ints(&self.lens)?;
        let mask = self.mask.as_deref().map(|m| l.upload(m)).transpose()?;
        let m = mask.as_ref().map_or(super::Addr::NULL, |m| l.addr(m));
        Ok((Inputs { gi, u, bh, lens: l.ints_addr(&lens), mask: m }, lens, mask))
    }

    /// Takes the kept forward state of launcher `L`, if it is there.
    pub(super) fn take_saved<L: Launch>(&self) -> Option<Saved<L::Floats>>
    where
        L::Floats: 'static,
    {
        let boxed = self.saved.lock().ok()?.take()?;
        boxed.downcast::<Saved<L::Floats>>().ok().map(|b| *b)
    }

    pub(super) fn keep<L: Launch>(&self, s: Saved<L::Floats>)
    where
        L::Floats: Send + Sync + 'static,
    {
        if let Ok(mut slot) = self.saved.lock() {
            *slot = Some(Box::new(s));
        }
    }

    /// The backward pass on the CPU, emulated.
    fn backward_host(&self, t: [&Tensor; 5]) -> Result<[Tensor; 3]> {
        let l = Emulated;
        let [gi, u, bh, out, dout] = with_slices::<f32, _, 5>(t, |s| Ok(s.map(HostBuf::from_slice)))?;
        let (x, _lens, _mask) = self.inputs(&l, [l.addr(&gi), l.addr(&u), l.addr(&bh)])?;
        let saved = match self.take_saved::<Emulated>() {
            Some(s) => s,
            None => birnn::forward(&l, self.d, x)?.1,
        };
        let gr = birnn::backward(&l, self.d, x, &saved, l.addr(&out), l.addr(&dout))?;
        let dev = t[0].device();
        Ok([
            Tensor::from_vec(gr.dgi.to_vec(), t[0].shape(), dev)?,
            Tensor::from_vec(gr.du.to_vec(), t[1].shape(), dev)?,
            Tensor::from_vec(gr.dbh.to_vec(), t[2].shape(), dev)?,
        ])
    }
}

impl CustomOp3 for GpuBiGru {
    fn name(&self) -> &'static str {
        "gpu-bidirectional-gru"
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
        let [gi, u, bh] = [cpu_slice::<f32>(s1, l1)?, cpu_slice(s2, l2)?, cpu_slice(s3, l3)?].map(HostBuf::from_slice);
        let (x, _lens, _mask) = self.inputs(&l, [l.addr(&gi), l.addr(&u), l.addr(&bh)])?;
        let (out, saved) = birnn::forward(&l, self.d, x)?;
        self.keep::<Emulated>(saved);
        Ok((CpuStorage::F32(out.to_vec()), self.out_shape()))
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
        let addrs = [l.input(s1, l1)?, l.input(s2, l2)?, l.input(s3, l3)?];
        let (x, _lens, _mask) = self.inputs(&l, addrs)?;
        let (out, saved) = birnn::forward(&l, self.d, x)?;
        self.keep::<super::cuda::Cuda>(saved);
        Ok((l.storage(out), self.out_shape()))
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
            candle_core::Device::Cuda(_) => backward_cuda(self, t)?,
            other => bail!("gpu-bidirectional-gru: no backward pass on {:?}", other.location()),
        };
        Ok((Some(da), Some(db), Some(dc)))
    }
}

#[cfg(feature = "cuda")]
/// The backward pass of [`GpuBiGru`] on the GPU: `(dgi, du, dbh)`.
fn backward_cuda(op: &GpuBiGru, t: [&Tensor; 5]) -> Result<[Tensor; 3]> {
    use super::cuda::Cuda;
    use super::Addr;
    use candle_core::Storage;
    let ts = t.map(|x| x.contiguous());
    let [gi, u, bh, out, dout] = match ts {
        [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e)] => [a, b, c, d, e],
        _ => bail!("gpu-bidirectional-gru: could not make the backward inputs contiguous"),
    };
    let guards = [&gi, &u, &bh, &out, &dout].map(|x| x.storage_and_layout());
    let Storage::Cuda(first) = &*guards[0].0 else { bail!("gpu-bidirectional-gru: a CUDA tensor expected") };
    let l = Cuda::new(&first.device);
    let mut addrs = [Addr::NULL; 5];
    for (a, (s, lay)) in addrs.iter_mut().zip(&guards) {
        let Storage::Cuda(s) = &**s else { bail!("gpu-bidirectional-gru: a CUDA tensor expected") };
        *a = l.input(s, lay)?;
    }
    let (x, _lens, _mask) = op.inputs(&l, [addrs[0], addrs[1], addrs[2]])?;
    let saved = match op.take_saved::<Cuda>() {
        Some(s) => s,
        None => birnn::forward(&l, op.d, x)?.1,
    };
    let g = birnn::backward(&l, op.d, x, &saved, addrs[3], addrs[4])?;
    Ok([l.tensor(g.dgi, t[0].shape()), l.tensor(g.du, t[1].shape()), l.tensor(g.dbh, t[2].shape())])
}
