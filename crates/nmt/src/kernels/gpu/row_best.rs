//! Each row's best tokens, picked where the distribution is (`search.cu`'s `nmt_row_top_k`):
//! the candle search (`search/candle.rs`) on a GPU brings `(R, 2k)` numbers to the host a
//! step instead of the whole `(R, V)` distribution (`V` = 8 000 for the shipped recipes: 10 MB
//! a step at 320 rows). On a CPU tensor the same kernel runs emulated, so every composed search
//! on the CPU runs it too.
use candle_core::{bail, CpuStorage, CustomOp1, DType, Layout, Result, Shape, Tensor};

use super::args::{self, RowTopK};
use super::emulated::{Emulated, HostBuf};
use super::launch::{Addr, Launch};
use crate::kernels::storage::cpu_slice;

/// Per row of `lp (R, V)` (`f32`), its `k` best values, best first (equal values in column
/// order), and their columns: `(R, 2k)`, values then columns (as `f32`, exact below 2²⁴);
/// columns in `skip` and values at −∞ are never chosen, and slots left over hold −∞ and −1.
/// The lists are `row_best::Fold::rows`'s (`search/scorer.rs`, `best_of_full`).
pub fn row_top_k(lp: &Tensor, k: usize, skip: &[u32]) -> Result<Tensor> {
    let (_, width) = lp.dims2()?;
    if lp.dtype() != DType::F32 || width >= 1 << 24 {
        bail!("row_top_k: f32 rows of fewer than 2^24 columns, got {:?} {:?}", lp.dtype(), lp.dims());
    }
    lp.contiguous()?.apply_op1_no_bwd(&TopK { k, skip: skip.iter().map(|&s| s as i64).collect() })
}

struct TopK {
    k: usize,
    skip: Vec<i64>,
}

impl TopK {
    /// Runs the kernel on `l` over `rows × width` at `lp`.
    fn run<L: Launch>(&self, l: &L, lp: Addr, rows: usize, width: usize) -> Result<L::Floats> {
        let out = l.zeros(rows * 2 * self.k)?;
        let skip = l.upload_ints(if self.skip.is_empty() { &[-1] } else { &self.skip })?;
        let a = RowTopK {
            lp,
            width: width as i64,
            rows: rows as i64,
            k: self.k as i64,
            skip: l.ints_addr(&skip),
            n_skip: self.skip.len() as i64,
            out: l.addr(&out),
        };
        l.launch(&args::ROW_TOP_K, rows, a)?;
        Ok(out)
    }
}

impl CustomOp1 for TopK {
    fn name(&self) -> &'static str {
        "row-top-k"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (rows, width) = l.shape().dims2()?;
        let lp = HostBuf::from_slice(cpu_slice::<f32>(s, l)?);
        let e = Emulated;
        let out = self.run(&e, e.addr(&lp), rows, width)?;
        Ok((CpuStorage::F32(out.to_vec()), Shape::from((rows, 2 * self.k))))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, s: &candle_core::CudaStorage, l: &Layout) -> Result<(candle_core::CudaStorage, Shape)> {
        let (rows, width) = l.shape().dims2()?;
        let c = super::cuda::Cuda::new(&s.device);
        let out = self.run(&c, c.input(s, l)?, rows, width)?;
        Ok((c.storage(out), Shape::from((rows, 2 * self.k))))
    }
}
