//! `context.rs`'s settings on a real CUDA context (cudarc's driver and cuBLAS calls). Built with
//! `--features cuda` only; emulated only, not run on a GPU.
use std::sync::{Mutex, Weak};

use candle_core::cuda_backend::cudarc::cublas::{sys as cublas, CudaBlas};
use candle_core::cuda_backend::cudarc::driver::{result, sys, CudaSlice, DevicePtrMut};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{bail, Result};

use super::context::Context;

fn cuda_err(e: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::Cuda(Box::new(e))
}

/// Each opened device's cuBLAS workspace, kept while its handle lives: cuBLAS holds the pointer,
/// and candle gives no hook at the handle's end, so a workspace is freed at a later opening once
/// its handle is gone.
static WORKSPACES: Mutex<Vec<(Weak<CudaBlas>, CudaSlice<u8>)>> = Mutex::new(Vec::new());

impl Context for CudaDevice {
    fn disable_event_tracking(&self) {
        // SAFETY: nmt enqueues everything on candle's one stream (`cuda.rs`), whose order keeps
        // every buffer's uses ordered, and no buffer exists yet (`context::open`).
        unsafe { self.cuda_stream().context().disable_event_tracking() }
    }

    fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let ctx = self.cuda_stream().context().clone();
        if !ctx.has_async_alloc() {
            return Ok(()); // cuMemAlloc: no pool to keep memory in.
        }
        ctx.bind_to_thread().map_err(cuda_err)?;
        let mut value = bytes;
        // SAFETY: the context's own device; the threshold attribute is a u64.
        unsafe {
            let pool = result::device::get_default_mem_pool(ctx.cu_device()).map_err(cuda_err)?;
            let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
            result::mem_pool::set_attribute(pool, attr, (&mut value as *mut u64).cast()).map_err(cuda_err)
        }
    }

    fn set_blas_workspace(&self, bytes: usize) -> Result<()> {
        let stream = self.cuda_stream();
        let mut ws = stream.alloc_zeros::<u8>(bytes).map_err(cuda_err)?;
        let blas = self.cublas_handle();
        let (ptr, guard) = ws.device_ptr_mut(&stream);
        // SAFETY: candle's handle, bound to candle's stream when it was made (`cublasSetStream`,
        // which resets a workspace, is not called again); `ws` lives as long as the handle.
        let status = unsafe { cublas::cublasSetWorkspace_v2(*blas.handle(), ptr as *mut std::ffi::c_void, bytes) };
        drop(guard);
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasSetWorkspace_v2 ({bytes} bytes) failed: {status:?}");
        }
        let mut all = WORKSPACES.lock().map_err(|_| candle_core::Error::Msg("a cuBLAS workspace list was poisoned".into()))?;
        all.retain(|(handle, _)| handle.strong_count() > 0);
        all.push((std::sync::Arc::downgrade(&blas), ws));
        Ok(())
    }

    fn release_threshold(&self) -> Result<Option<u64>> {
        let ctx = self.cuda_stream().context().clone();
        if !ctx.has_async_alloc() {
            return Ok(None);
        }
        ctx.bind_to_thread().map_err(cuda_err)?;
        let mut value = 0u64;
        // SAFETY: as in `set_release_threshold`.
        unsafe {
            let pool = result::device::get_default_mem_pool(ctx.cu_device()).map_err(cuda_err)?;
            let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
            result::mem_pool::get_attribute(pool, attr, (&mut value as *mut u64).cast()).map_err(cuda_err)?;
        }
        Ok(Some(value))
    }
}
