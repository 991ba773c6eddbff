//! The GPU room's vocabulary: what a kernel is ([`Kernel`], its source module and its argument
//! struct), what it runs on ([`Launch`]: buffers, products and launches on one stream), and how
//! buffers and products are named ([`Addr`], [`View`], [`Gemm`]). `cuda.rs` and `emulated.rs`
//! are its two launchers; every loop and op of this folder is written against it.
use candle_core::Result;

use crate::kernels::fused_op::Device;

/// A device address of `f32` (or `i64`) data: a CUDA device pointer, or under emulation a
/// host pointer. The kernels receive addresses as their pointer arguments on both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Addr(pub u64);

impl Addr {
    /// No buffer (a kernel's optional mask).
    pub const NULL: Addr = Addr(0);

    /// The address `elems` `f32`s further on.
    pub fn at(self, elems: usize) -> Addr {
        Addr(self.0 + 4 * elems as u64)
    }

    /// The address `elems` `i64`s (or `f64`s) further on.
    pub fn at_i64(self, elems: usize) -> Addr {
        Addr(self.0 + 8 * elems as u64)
    }
}

/// A row-major view for [`Gemm`]: `rows × cols` with leading dimension `ld`, transposed
/// (stored `cols × rows`) when `t`.
#[derive(Clone, Copy, Debug)]
pub struct View {
    pub addr: Addr,
    pub ld: usize,
    pub t: bool,
}

impl View {
    /// A matrix stored row-major with leading dimension `ld`.
    pub fn new(addr: Addr, ld: usize) -> View {
        View { addr, ld, t: false }
    }
    /// The same matrix used transposed.
    pub fn t(self) -> View {
        View { t: !self.t, ..self }
    }
}

/// `C (m × n) = beta·C + op(A) (m × k) · op(B) (k × n)`, row-major, `beta` 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: View,
    pub b: View,
    pub c: View,
    pub accumulate: bool,
}

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// A kernel taking the argument struct `A` (`args.rs`): its module, its PTX name and the
/// host-compiled function of the same source.
pub struct Kernel<A> {
    pub module: Module,
    pub name: &'static str,
    pub host: unsafe extern "C" fn(A),
}

/// An argument struct as the Rust compiler lays it out: its name (the C struct's, less `Nmt`),
/// its size and each field's name and offset. The emulation compares it with the C compiler's
/// layout of the same struct (build.rs's table) before a kernel first runs (`emulated.rs`).
#[derive(Debug)]
pub struct ArgLayout {
    pub name: &'static str,
    pub size: usize,
    pub fields: &'static [(&'static str, usize)],
}

/// A `#[repr(C)]` mirror of a C struct of the kernels, with its layout.
pub trait ArgStruct: Copy + 'static {
    const LAYOUT: ArgLayout;
}

/// What a kernel's argument struct must be: plain data, and on the GPU a kernel parameter.
#[cfg(feature = "cuda")]
pub trait KernelArgs: ArgStruct + candle_core::cuda_backend::cudarc::driver::DeviceRepr {}
/// What a kernel's argument struct must be: plain data.
#[cfg(not(feature = "cuda"))]
pub trait KernelArgs: ArgStruct {}

/// Threads per block of every launch: the kernels are elementwise, one thread per element.
pub const BLOCK: usize = 256;

/// Host data an op reads (lengths, token ids, dropout masks): host values the op uploads when
/// it runs (the candle path: `op.rs` makes the launcher inside the op), or a buffer already on
/// the device. A recorded training step (`recording.rs`) stages its inputs into the bucket's
/// buffers before each replay and hands the ops [`Staged::Device`], so that nothing is
/// uploaded inside the replayed region, where a CUDA graph would bake the first step's values.
#[derive(Clone, Debug)]
pub enum Staged<T> {
    Host(Vec<T>),
    Device(Addr),
}

impl Staged<f32> {
    /// The data's address, and the buffer that holds it when it was uploaded here (the caller
    /// keeps it alive while the launches that read it run).
    pub fn addr<L: Launch>(&self, l: &L) -> Result<(Addr, Option<L::Floats>)> {
        match self {
            Staged::Host(v) => {
                let b = l.upload(v)?;
                Ok((l.addr(&b), Some(b)))
            }
            Staged::Device(a) => Ok((*a, None)),
        }
    }
}

impl Staged<i64> {
    /// As for `f32` data, for integers (`Launch::upload_ints`).
    pub fn addr<L: Launch>(&self, l: &L) -> Result<(Addr, Option<L::Ints>)> {
        match self {
            Staged::Host(v) => {
                let b = l.upload_ints(v)?;
                Ok((l.ints_addr(&b), Some(b)))
            }
            Staged::Device(a) => Ok((*a, None)),
        }
    }
}

/// Where the kernels run: buffers, products and launches on one stream, in order.
/// A launcher is a [`Device`] whose ops read device addresses; its `Floats` are the buffers of
/// `f32`s it owns.
pub trait Launch: for<'a> Device<In<'a> = Addr> {
    /// A buffer of `i64`s (the sentence lengths).
    type Ints;
    /// `n` zeros (on the GPU an allocation and a memset launch).
    fn zeros(&self, n: usize) -> Result<Self::Floats>;
    /// `n` values the caller writes before it reads any: on the GPU uninitialised (no memset
    /// launch), on the host NaN, so that a kernel or product that reads one before it is
    /// written fails the emulated tests.
    fn scratch(&self, n: usize) -> Result<Self::Floats>;
    /// A copy of host data.
    fn upload(&self, x: &[f32]) -> Result<Self::Floats>;
    /// A copy of host integers.
    fn upload_ints(&self, x: &[i64]) -> Result<Self::Ints>;
    fn addr(&self, b: &Self::Floats) -> Addr;
    fn ints_addr(&self, b: &Self::Ints) -> Addr;
    fn gemm(&self, g: Gemm) -> Result<()>;
    /// `g` with A and B in bf16 and C in `f32`, the sums in `f32`: each operand element is the
    /// 16 bits `bf16.cu`'s rounding writes (addresses in bytes, `ld` in elements, as for `f32`).
    /// On the GPU `cublasGemmEx` (`CUDA_R_16BF` inputs, `CUBLAS_COMPUTE_32F`); under emulation
    /// the values widened to `f32` (exact) and the `f32` product. `bf16::gemm_in` rounds `f32`
    /// operands into it.
    fn gemm_bf16(&self, g: Gemm) -> Result<()>;
    /// Runs `k` on `threads` thread indices (blocks of [`BLOCK`]).
    fn launch<A: KernelArgs>(&self, k: &Kernel<A>, threads: usize, a: A) -> Result<()>;
    /// Sets `n` values at `dst` to `value` (on the GPU a memset launch, which a CUDA graph can
    /// hold, as it cannot hold an allocation).
    fn fill(&self, dst: Addr, n: usize, value: f32) -> Result<()>;
    /// Copies host data into a buffer that exists (a recorded step's inputs, staged before its
    /// replay: `recording.rs`).
    fn write(&self, dst: Addr, x: &[f32]) -> Result<()>;
    /// As [`Launch::write`], for integers.
    fn write_ints(&self, dst: Addr, x: &[i64]) -> Result<()>;
    /// Copies `n` values back to the host, after every launch before it has run.
    fn read(&self, src: Addr, n: usize) -> Result<Vec<f32>>;
    /// Whether a replayed step's scratch buffers are refilled with NaN before each replay: the
    /// emulation's check that no kernel reads a value the step did not write (`scratch`).
    const POISONS_SCRATCH: bool = false;
}
