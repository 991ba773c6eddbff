//! The kernels on an NVIDIA GPU: the `.cu` sources as PTX (compiled by nvcc in build.rs, loaded
//! once per device by candle's module cache) and cuBLAS's `sgemm` (`cublasGemmEx` with bf16
//! operands for the bf16 products), both on candle's stream, so they run in order with the
//! candle ops around them, each kernel's function kept after its first lookup (`context.rs`).
//! Built with `--features cuda` only.
//!
//! Row-major products on column-major cuBLAS: `C = op(A)·op(B)` row-major is
//! `Cᵀ = op(B)ᵀ·op(A)ᵀ` column-major, and a row-major matrix read column-major is its
//! transpose; so [`Launch::gemm`] calls `sgemm(op_B, op_A, n, m, k, B, A, C)` with each
//! operand's own leading dimension.
use candle_core::cuda_backend::cudarc::cublas::sys as cublas;
use candle_core::cuda_backend::cudarc::driver::{self, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaDevice, DeviceId};
use candle_core::op::BackpropOp;
use candle_core::{bail, CudaStorage, Layout, Result, Storage, Tensor};

use super::context::Settings;
use super::launch::{Addr, Gemm, Kernel, KernelArgs, Launch, Module, BLOCK};
use crate::kernels::fused_op::Device;

fn cuda_err(e: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::Cuda(Box::new(e))
}

/// A CUDA device as a [`Launch`].
pub struct Cuda {
    dev: CudaDevice,
}

impl Cuda {
    pub fn new(dev: &CudaDevice) -> Self {
        Cuda { dev: dev.clone() }
    }

    /// The address of a contiguous `f32` input.
    pub fn input(&self, s: &CudaStorage, l: &Layout) -> Result<Addr> {
        let Some((start, _)) = l.contiguous_offsets() else { bail!("gpu kernels need contiguous inputs") };
        Ok(self.ptr(s.as_cuda_slice::<f32>()?).at(start))
    }

    /// A buffer's device address. One stream for everything: the guard's synchronisation
    /// is not needed. Not free: cudarc's `device_ptr` waits for the buffer's last write and
    /// records an event (when the context tracks streams), so callers look addresses up once
    /// per op, not per step.
    fn ptr<T>(&self, b: &CudaSlice<T>) -> Addr {
        let stream = self.dev.cuda_stream();
        let (ptr, guard) = b.device_ptr(&stream);
        drop(guard);
        Addr(ptr)
    }

    /// The kernel `name` of `module`: kept per (device, kernel) on this thread after its first
    /// lookup (`context.rs`: candle's cache asks the driver at every launch), or candle's lookup
    /// every time under `NMT_CUDA_OVERHEADS=cudarc`.
    fn function(&self, module: Module, name: &'static str) -> Result<driver::CudaFunction> {
        use std::collections::HashMap;
        thread_local! {
            static KEPT: std::cell::RefCell<HashMap<(DeviceId, &'static str), driver::CudaFunction>> = std::cell::RefCell::new(HashMap::new());
        }
        let load =
            || Ok::<_, candle_core::Error>(self.dev.get_or_load_custom_func(name, module.name(), module.ptx())?.into_cuda_function());
        if !Settings::current().cached_functions {
            return load();
        }
        let key = (self.dev.id(), name);
        if let Some(f) = KEPT.with(|k| k.borrow().get(&key).cloned()) {
            return Ok(f);
        }
        let f = load()?;
        KEPT.with(|k| k.borrow_mut().insert(key, f.clone()));
        Ok(f)
    }

    /// Waits for every launch queued on the stream (a bench's step ends when its kernels have run).
    pub fn synchronize(&self) -> Result<()> {
        self.dev.cuda_stream().synchronize().map_err(cuda_err)
    }

    /// A buffer as candle storage.
    pub fn storage(&self, b: CudaSlice<f32>) -> CudaStorage {
        CudaStorage::wrap_cuda_slice(b, self.dev.clone())
    }

    /// A buffer as a tensor of `shape` (no gradient graph: a backward pass's result).
    pub fn tensor(&self, b: CudaSlice<f32>, shape: &candle_core::Shape) -> Tensor {
        Tensor::from_storage(Storage::Cuda(self.storage(b)), shape.clone(), BackpropOp::none(), false)
    }
}

/// A recorded step (`recording.rs`) captured as a CUDA graph: instantiated once per bucket,
/// then launched once per update after the bucket's inputs are staged.
pub struct Graph(driver::CudaGraph);

impl Graph {
    /// Runs the step: one launch of the whole graph on the stream it was captured on.
    pub fn launch(&self) -> Result<()> {
        self.0.launch().map_err(cuda_err)
    }
}

impl Cuda {
    /// Captures `rec`'s step: its tape replayed once on candle's stream while that stream
    /// captures (nothing runs), then instantiated. Candle's device stream is a stream of its
    /// own (per thread, `CU_STREAM_PER_THREAD`, never the legacy stream, which cannot capture),
    /// and capturing on it keeps cuBLAS's handle and the module cache the eager step used;
    /// thread-local mode, since only this thread enqueues there while capturing. The tape holds
    /// products, launches and memsets only (`recording.rs` refuses uploads, reads and
    /// allocations in the step), which stream capture accepts. Unconfirmed until a GPU runs
    /// `tests/cuda.rs`'s `gpu_graph_replays_equal_fresh_steps`.
    pub fn capture(&self, rec: &super::recording::Recording<'_, Cuda>) -> Result<Graph> {
        let stream = self.dev.cuda_stream();
        stream.begin_capture(driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(cuda_err)?;
        let taped = rec.replay();
        // The capture is ended whatever the replay returned, so the stream is usable again.
        let graph = stream.end_capture(driver::sys::CUgraphInstantiate_flags(0)).map_err(cuda_err);
        taped?;
        match graph? {
            Some(g) => Ok(Graph(g)),
            None => bail!("stream capture of a recorded step returned no graph"),
        }
    }
}

impl super::recording::Replay for Cuda {
    type Graph = Graph;
    fn capture(&self, rec: &super::recording::Recording<'_, Self>) -> Result<Graph> {
        Cuda::capture(self, rec)
    }
    fn replay(&self, _: &super::recording::Recording<'_, Self>, g: &Graph) -> Result<()> {
        g.launch()
    }
}

impl Device for Cuda {
    type In<'a> = Addr;
    type Floats = CudaSlice<f32>;
}

impl Launch for Cuda {
    type Ints = CudaSlice<i64>;

    fn zeros(&self, n: usize) -> Result<CudaSlice<f32>> {
        self.dev.alloc_zeros::<f32>(n.max(1))
    }

    fn scratch(&self, n: usize) -> Result<CudaSlice<f32>> {
        // SAFETY: every bit pattern is an `f32`, and the callers write each element before
        // they read it (the emulation fills the same buffers with NaN to check that).
        unsafe { self.dev.alloc::<f32>(n.max(1)) }
    }

    fn upload(&self, x: &[f32]) -> Result<CudaSlice<f32>> {
        self.dev.clone_htod(x)
    }

    fn upload_ints(&self, x: &[i64]) -> Result<CudaSlice<i64>> {
        self.dev.clone_htod(x)
    }

    fn addr(&self, b: &CudaSlice<f32>) -> Addr {
        self.ptr(b)
    }

    fn ints_addr(&self, b: &CudaSlice<i64>) -> Addr {
        self.ptr(b)
    }

    fn gemm(&self, g: Gemm) -> Result<()> {
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        let op = |t: bool| if t { cublas::cublasOperation_t::CUBLAS_OP_T } else { cublas::cublasOperation_t::CUBLAS_OP_N };
        let (alpha, beta) = (1f32, if g.accumulate { 1f32 } else { 0f32 });
        let int = |x: usize| i32::try_from(x).map_err(|_| candle_core::Error::Msg(format!("gemm dimension {x} over i32")));
        let blas = self.dev.cublas_handle();
        // SAFETY: the views lie inside live device buffers on this stream (the orchestration
        // sizes them), and cuBLAS's handle is bound to candle's stream.
        let status = unsafe {
            cublas::cublasSgemm_v2(
                *blas.handle(),
                op(g.b.t),
                op(g.a.t),
                int(g.n)?,
                int(g.m)?,
                int(g.k)?,
                &alpha,
                g.b.addr.0 as *const f32,
                int(g.b.ld)?,
                g.a.addr.0 as *const f32,
                int(g.a.ld)?,
                &beta,
                g.c.addr.0 as *mut f32,
                int(g.c.ld)?,
            )
        };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasSgemm failed: {status:?} ({g:?})");
        }
        Ok(())
    }

    fn fill(&self, dst: Addr, n: usize, value: f32) -> Result<()> {
        let stream = self.dev.cuda_stream();
        // SAFETY: the caller names `n` values of a live device buffer; on candle's stream.
        unsafe { driver::sys::cuMemsetD32Async(dst.0, value.to_bits(), n, stream.cu_stream()) }.result().map_err(cuda_err)
    }

    fn write(&self, dst: Addr, x: &[f32]) -> Result<()> {
        let stream = self.dev.cuda_stream();
        // SAFETY: `dst` holds `x.len()` values; a pageable source is copied before the call returns.
        unsafe { driver::result::memcpy_htod_async(dst.0, x, stream.cu_stream()) }.map_err(cuda_err)
    }

    fn write_ints(&self, dst: Addr, x: &[i64]) -> Result<()> {
        let stream = self.dev.cuda_stream();
        // SAFETY: as for `write`.
        unsafe { driver::result::memcpy_htod_async(dst.0, x, stream.cu_stream()) }.map_err(cuda_err)
    }

    fn read(&self, src: Addr, n: usize) -> Result<Vec<f32>> {
        let stream = self.dev.cuda_stream();
        let mut out = vec![0f32; n];
        // SAFETY: `src` holds `n` values; the stream is synchronised before `out` is read.
        unsafe { driver::result::memcpy_dtoh_async(&mut out, src.0, stream.cu_stream()) }.map_err(cuda_err)?;
        stream.synchronize().map_err(cuda_err)?;
        Ok(out)
    }

    fn gemm_bf16(&self, g: Gemm) -> Result<()> {
        use std::ffi::c_void;
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        // As `gemm` (the module doc's transposition), with bf16 A and B, f32 C and f32 sums.
        let op = |t: bool| if t { cublas::cublasOperation_t::CUBLAS_OP_T } else { cublas::cublasOperation_t::CUBLAS_OP_N };
        let (alpha, beta) = (1f32, if g.accumulate { 1f32 } else { 0f32 });
        let int = |x: usize| i32::try_from(x).map_err(|_| candle_core::Error::Msg(format!("gemm dimension {x} over i32")));
        let (bf16, f32) = (cublas::cudaDataType::CUDA_R_16BF, cublas::cudaDataType::CUDA_R_32F);
        let blas = self.dev.cublas_handle();
        // SAFETY: as for `gemm`; A and B hold bf16 values (the caller's contract).
        let status = unsafe {
            cublas::cublasGemmEx(
                *blas.handle(),
                op(g.b.t),
                op(g.a.t),
                int(g.n)?,
                int(g.m)?,
                int(g.k)?,
                (&alpha as *const f32).cast::<c_void>(),
                g.b.addr.0 as *const c_void,
                bf16,
                int(g.b.ld)?,
                g.a.addr.0 as *const c_void,
                bf16,
                int(g.a.ld)?,
                (&beta as *const f32).cast::<c_void>(),
                g.c.addr.0 as *mut c_void,
                f32,
                int(g.c.ld)?,
                cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            bail!("cublasGemmEx (bf16) failed: {status:?} ({g:?})");
        }
        Ok(())
    }

    fn launch<A: KernelArgs>(&self, k: &Kernel<A>, threads: usize, a: A) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let func = self.function(k.module, k.name)?;
        let grid = u32::try_from(threads.div_ceil(BLOCK)).map_err(|_| candle_core::Error::Msg("grid too large".into()))?;
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
        let stream = self.dev.cuda_stream();
        let mut b = stream.launch_builder(&func);
        b.arg(&a);
        // SAFETY: `A` mirrors the kernel's parameter struct (args.rs), whose pointers the
        // orchestration sized for `threads`.
        unsafe { b.launch(cfg) }.map_err(cuda_err)?;
        Ok(())
    }
}
