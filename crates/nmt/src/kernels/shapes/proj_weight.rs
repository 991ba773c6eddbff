//! The output projection's weight as `proj_nll` reads it, shared by the CPU op
//! (`kernels/cpu/proj_nll.rs`) and its GPU twin (`kernels/gpu/proj_nll.rs`): `W (K, V)`, or the
//! tied target embeddings `E = Wᵀ (V, K)` (Press and Wolf 2017), and the checked sizes of one call.
use candle_core::{Result, Tensor};

/// The projection matrix as the op reads it.
#[derive(Clone, Copy, Debug)]
pub enum ProjWeight<'a> {
    /// `W (K, V)`.
    Kv(&'a Tensor),
    /// `Wᵀ (V, K)`, contiguous: the target embeddings `E` when they are tied (`G = Eᵀ`). The op
    /// reads them as they are, with no copy in either pass, and returns their gradient as
    /// `(V, K)` straight to `E`: no transpose node (each would cost a strided 8 MB add in
    /// candle's backward pass).
    Vk(&'a Tensor),
}

/// The sizes of `proj_nll`'s inputs, checked, and the stored weight.
pub struct Fitted<'a> {
    pub n: usize,
    pub k: usize,
    pub v: usize,
    /// Whether the weight is stored `(V, K)`.
    pub transposed: bool,
    pub w: &'a Tensor,
}

impl<'a> ProjWeight<'a> {
    /// The sizes of `x (N, K)` under this weight with bias `b (V)` and `N` targets below `V`,
    /// or an error naming `op` (the CPU op and its GPU twin check alike).
    #[inline]
    pub fn fitted(self, op: &str, x: &Tensor, b: &Tensor, targets: &[u32]) -> Result<Fitted<'a>> {
        let (n, k) = x.dims2()?;
        let (transposed, w) = match self {
            ProjWeight::Kv(w) => (false, w),
            ProjWeight::Vk(w) => (true, w),
        };
        let (k2, v) = if transposed { (w.dim(1)?, w.dim(0)?) } else { w.dims2()? };
        if k != k2 || b.dims1()? != v || targets.len() != n || targets.iter().any(|&t| t as usize >= v) {
            candle_core::bail!("{op}: x {:?}, w {:?}, b {:?}, {} targets do not fit", x.dims(), w.dims(), b.dims(), targets.len());
        }
        Ok(Fitted { n, k, v, transposed, w })
    }
}
