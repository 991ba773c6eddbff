//! The GPU's fused recurrent kernels (issue 57, item 2), written once and run in two places:
//! on an NVIDIA GPU (`cuda.rs`: nvcc's PTX and cuBLAS on candle's stream) and on the host
//! (`emulated.rs`: the same `recurrence.cu` and `attention.cu` compiled by the host's C
//! compiler and run thread index by thread index, our GEMM for cuBLAS), so that every CPU test
//! checks the arithmetic and the orchestration the GPU runs.
//!
//! - `cell.rs`: one GRU step (either form, recurrent dropout, padding) and `dU`;
//! - `lstm.rs`: one LSTM step (recurrent dropout, padding) and `dU`;
//! - `recurrent.rs`: either cell, chosen once from the layer's cell kind;
//! - `norm.rs`: layer normalisation of a product's rows (Marian's `s2s`);
//! - `feedback.rs`, `feedback_backward.rs`: the gated-feedback stack, `feedback_op.rs` the op
//!   (`feedback_sequence`);
//! - `direction.rs`: one direction's loops through time, shared by `birnn.rs`, the
//!   bidirectional GRU or LSTM encoder layer (the op `birnn_sequence`), and `sequence.rs`, one
//!   direction with each sentence's initial state (the op `rnn_sequence`);
//! - `attention.rs`: what the RNNsearch decoders' loops share (layout, the attention's
//!   launches); `bahdanau.rs` and `conditional.rs` are the two loops, `decoder_op.rs` the op
//!   (`attention_loop`);
//! - `op.rs`: a [`Launch`]-generic op as a differentiable candle op on the CPU or the GPU;
//! - `top_k.rs`: each row's best tokens for the candle search, picked on the device;
//! - `update.rs`: the optimiser's update of a parameter, one kernel.
//!
//! **Design: Marian's** (`gGRUFastForward`/`gGRUFastBackward`, `gAtt`/`gAttBack` in its
//! `tensors/gpu/tensor_operators.cu`), not cuDNN's: what does not depend on the previous step
//! is one large product by the caller (the input projections of every step, the attention
//! keys); per time step there is one recurrent product on cuBLAS (two for the paper form,
//! whose reset gates `U_n`'s input) and a few fused elementwise kernels, forward and
//! backward; every weight gradient is one product over all steps. cuDNN's `cudnnRNNForward`
//! would run a whole encoder layer in one call, but it has neither of the cells' exact forms
//! with our recurrent dropout (one mask per sentence on the state entering `U`) nor padding
//! that carries the state, nor an attention decoder; a kernel of our own has the CPU's fused
//! op as its reference.
//!
//! A kernel launch on the GPU is a few microseconds of CPU time, and the composed candle path
//! spends 12 of them on a reset-after GRU step forward (`model/gru.rs`'s `cell_step`, counted
//! from its ops; docs/GPU.md, "Reading"). Here a reset-after GRU step is 2 launches each way
//! (a product and a gate kernel), a paper-form step 4, and recurrent dropout adds one; a
//! Bahdanau decoder step is 7 forward, a conditional GRU step 9 (docs/GPU.md). The per-step
//! launches are what a CUDA graph can later capture (not done yet).
//!
//! The host form is not a second implementation of the maths: it is the same source, a
//! test harness for it. Production CPU runs use `kernels::birnn` and `kernels::attn_op`.
pub(crate) mod args;
pub mod attention;
mod bahdanau;
pub mod birnn;
mod cell;
mod conditional;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod decoder_op;
mod direction;
pub(crate) mod emulated;
mod feedback;
mod feedback_backward;
mod feedback_op;
mod lstm;
mod norm;
mod op;
mod recurrent;
pub mod sequence;
pub mod top_k;
pub mod update;

pub use birnn::birnn_sequence;
pub use decoder_op::{attention_loop, attention_step};
pub use feedback_op::feedback_sequence;
pub use sequence::rnn_sequence;

use candle_core::Result;

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

/// The source file (and PTX module) a kernel is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    /// `recurrence.cu`: the GRU's gates.
    Recurrence,
    /// `attention.cu`: additive attention.
    Attention,
    /// `search.cu`: the search's pick.
    Search,
    /// `update.cu`: the optimiser's update.
    Update,
    /// `feedback.cu`: the gated-feedback stack.
    Feedback,
}

/// A kernel taking the argument struct `A` (`args.rs`): its module, its PTX name and the
/// host-compiled function of the same source.
pub struct Kernel<A> {
    pub module: Module,
    pub name: &'static str,
    pub host: unsafe extern "C" fn(A),
}

/// What a kernel's argument struct must be: plain data, and on the GPU a kernel parameter.
#[cfg(feature = "cuda")]
pub trait KernelArgs: Copy + 'static + candle_core::cuda_backend::cudarc::driver::DeviceRepr {}
/// What a kernel's argument struct must be: plain data.
#[cfg(not(feature = "cuda"))]
pub trait KernelArgs: Copy + 'static {}

/// Threads per block of every launch: the kernels are elementwise, one thread per element.
pub const BLOCK: usize = 256;

/// Where the kernels run: buffers, products and launches on one stream, in order.
pub trait Launch {
    /// A buffer of `f32`s the launcher owns.
    type Floats: Send + Sync + 'static;
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
    /// Runs `k` on `threads` thread indices (blocks of [`BLOCK`]).
    fn launch<A: KernelArgs>(&self, k: &Kernel<A>, threads: usize, a: A) -> Result<()>;
}

#[cfg(test)]
mod tests;
