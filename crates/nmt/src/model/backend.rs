//! Which form of the layers runs: decided once, here, from the requested [`Impl`], the device
//! and the dtype, and asked by each layer's teacher-forcing `forward` (the loss, `model/layers.rs`), the optimiser's update
//! (`train/optim.rs`) and the search (`search/mod.rs`, `snapshot::HostModel::supports`).
//!
//! The fused kernels of `crate::kernels` read host memory in `f32` or `f64`; the host search's
//! snapshot and the optimiser's in-place update are written for `f32` only (f64 is the
//! gradient checks' precision, where speed does not matter). Everything else, and
//! `impl = "composed"` everywhere, runs the composed candle ops: the reference twin and the GPU path.
use candle_core::{DType, Device, Result, Tensor};

use crate::config::Impl;
use crate::kernels::cpu::feedback_op;
use crate::kernels::cpu::linear;
use crate::kernels::cpu::rnn_sequence;
use crate::kernels::gpu;
use crate::kernels::precision::{self, Precision};
use crate::kernels::shapes::feedback_dims::FeedbackSpec;
use crate::kernels::shapes::rnn_dims::RnnSpec;

/// The form that runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Composed candle ops: autodiff, any device and dtype.
    Composed,
    /// The fused kernels for the loss; search and the update stay composed (a CPU `f64` model).
    FusedF64,
    /// The fused kernels for the loss, the in-place update and the host search (a CPU `f32`
    /// model).
    FusedF32,
    /// An `f32` model on a GPU: the layers that have GPU kernels (`kernels::gpu`: the
    /// recurrent encoders, RNNenc's and the seq2seq decoders' recurrences, the decoders' upper
    /// layers and gated-feedback stacks, the RNNsearch decoders' loops, GRU or LSTM,
    /// layer-normalised or not) run them, the others their composed candle ops; search runs candle's search. `impl = "composed"` on a GPU is [`Backend::Composed`] throughout.
    Gpu,
}

impl Backend {
    /// The form for `imp` on `device` in `dtype`.
    pub fn new(imp: Impl, device: &Device, dtype: DType) -> Self {
        match (imp, device.is_cpu(), dtype) {
            (Impl::Fused, true, DType::F32) => Backend::FusedF32,
            (Impl::Fused, true, DType::F64) => Backend::FusedF64,
            (Impl::Fused, false, DType::F32) if device.is_cuda() => Backend::Gpu,
            _ => Backend::Composed,
        }
    }

    /// Whether the layers' teacher-forcing passes (the loss) run their fused forms (each
    /// layer's `forward` chooses inside; each architecture wires them, `model/rnnsearch.rs` and `model/rnnenc.rs`).
    pub fn fused(self) -> bool {
        matches!(self, Backend::FusedF64 | Backend::FusedF32)
    }

    /// Whether search runs on the host snapshot (`model/snapshot.rs`) and the optimiser updates in
    /// place (`kernels::cpu::optim_step`).
    pub fn host(self) -> bool {
        matches!(self, Backend::FusedF32)
    }

    /// Whether the layers with GPU kernels (`kernels::gpu`) run them.
    pub fn gpu(self) -> bool {
        self == Backend::Gpu
    }

    /// `x (n, k) W (k, m) + b (m)`, the fused forms' input projections: the CPU op
    /// (`kernels::cpu::linear`, its products in bf16 under `train.precision = "bf16"` where the
    /// CPU has a fast bf16 path); on a GPU candle's product (cuBLAS) and add, or with the GPU's
    /// products in bf16 (`precision::gpu_products`) the GPU twin (`kernels::gpu::linear`), its
    /// three products in bf16 with f32 sums.
    pub(crate) fn linear(self, x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        match (self.gpu(), precision::gpu_products()) {
            (true, Precision::Bf16) => gpu::linear::linear_in(x, w, b, Precision::Bf16),
            (true, Precision::F32) => Ok(x.matmul(w)?.broadcast_add(b)?),
            (false, _) => linear::linear(x, w, b),
        }
    }

    /// The gated-feedback stack over the first layer's outputs (`kernels::cpu::feedback_op`'s
    /// contract): the fused CPU op, or on a GPU its twin (`kernels::gpu::feedback_op::feedback_sequence`).
    pub(crate) fn feedback_sequence(self, s1: &Tensor, h0: &Tensor, params: &Tensor, spec: FeedbackSpec<'_>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::feedback_op::feedback_sequence(s1, h0, params, spec),
            false => feedback_op::feedback_sequence(s1, h0, params, spec),
        }
    }

    /// One recurrent direction with each sentence's `[ghb; h_0]` (`kernels::cpu::rnn_sequence`'s
    /// contract): the fused CPU op, or on a GPU its twin (`kernels::gpu::rnn_sequence::rnn_sequence`).
    pub(crate) fn rnn_sequence(self, gi: &Tensor, u: &Tensor, rows: &Tensor, reverse: bool, spec: RnnSpec<'_>) -> Result<Tensor> {
        match self.gpu() {
            true => gpu::rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec),
            false => rnn_sequence::rnn_sequence(gi, u, rows, reverse, spec),
        }
    }

    /// The implementation this amounts to, as the options of a search or a bench name it.
    pub fn imp(self) -> Impl {
        match self {
            Backend::Composed => Impl::Composed,
            Backend::FusedF64 | Backend::FusedF32 | Backend::Gpu => Impl::Fused,
        }
    }
}
