//! Access to the CPU buffers behind candle tensors, for the custom ops.
use candle_core::{bail, CpuStorage, DType, Layout, Result, Shape, Storage, Tensor, WithDType};

/// The contiguous slice a CPU storage and layout describe.
pub fn cpu_slice<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s.as_slice::<T>()?[a..b]),
        None => bail!("fused kernels need contiguous inputs"),
    }
}

/// Runs `f` on the contiguous CPU slice behind `t` (made contiguous first if needed).
pub fn with_slice<T: WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> Result<R>) -> Result<R> {
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    match &*storage {
        Storage::Cpu(cpu) => f(cpu_slice::<T>(cpu, layout)?),
        other => bail!("fused kernels run on the CPU, got a {:?} tensor", other.device().location()),
    }
}

/// A CPU tensor from a vector, on the device of `like` (always the CPU for these kernels).
pub fn tensor_from<T: WithDType>(v: Vec<T>, shape: impl Into<Shape>, like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(v, shape, like.device())
}

/// The dtype all of an op's inputs share, F32 or F64.
pub fn float_dtype(dtypes: &[DType]) -> Result<DType> {
    let d = dtypes[0];
    if dtypes.iter().any(|&x| x != d) {
        bail!("fused kernels need all inputs in one dtype, got {dtypes:?}")
    }
    match d {
        DType::F32 | DType::F64 => Ok(d),
        _ => bail!("fused kernels run in f32 or f64, got {d:?}"),
    }
}

/// Runs `f` on the contiguous CPU slices behind `N` tensors of one dtype: an op's inputs, its
/// output and its gradient in `bwd`, without a closure nested per tensor.
pub fn with_slices<T: WithDType, R, const N: usize>(ts: [&Tensor; N], f: impl FnOnce([&[T]; N]) -> Result<R>) -> Result<R> {
    let cont = ts.iter().map(|t| t.contiguous()).collect::<Result<Vec<_>>>()?;
    let guards: Vec<_> = cont.iter().map(|t| t.storage_and_layout()).collect();
    let mut slices = Vec::with_capacity(N);
    for (storage, layout) in &guards {
        match &**storage {
            Storage::Cpu(cpu) => slices.push(cpu_slice::<T>(cpu, layout)?),
            other => bail!("fused kernels run on the CPU, got a {:?} tensor", other.device().location()),
        }
    }
    let Ok(slices) = <[&[T]; N]>::try_from(slices) else { bail!("with_slices: {N} tensors expected") };
    f(slices)
}

/// Refuses the fused CPU op `name` while this thread runs the composed path under the GPU
/// check (`candle_core::cpu_backend::cuda_layouts::checked`, vendor/candle-core/NMT-PATCH.md):
/// these ops have no CUDA form, so the composed path a GPU runs must never reach one. Called
/// by every entry point that applies one of this folder's custom ops.
pub(crate) fn cpu_only(name: &str) -> Result<()> {
    if candle_core::cpu_backend::cuda_layouts::cuda_layout_checks() {
        bail!("{name}: a fused CPU op inside the composed path, which has no GPU form");
    }
    Ok(())
}
