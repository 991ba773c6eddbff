//! nmt patch (NMT-PATCH.md, second change): a mode in which the CPU's matrix product refuses
//! the operand layouts that the CUDA backend's `gemm_config` (`cuda_backend/mod.rs`) refuses, so
//! that a model's CPU tests find a strided view that would fail on a GPU. The CPU's gemm takes
//! any strides; cuBLAS, as candle calls it, takes each operand's last two dimensions either
//! row-major or transposed with no gap between rows, and the batch dimensions evenly strided.
//! Off by default (no cost: one thread-local read per product); on inside [`checked`], on the
//! calling thread only: a model's forward and backward passes run their products on the thread
//! that calls them, and tests that run in parallel threads do not see each other's setting.
use std::cell::Cell;

use crate::{Layout, Result};

thread_local!(static ON: Cell<bool> = const { Cell::new(false) });

/// Runs `f` with the check on for this thread's matrix products, and restores the setting
/// after (a panic inside leaves it on for the thread: the test that panicked fails anyway).
pub fn checked<R>(f: impl FnOnce() -> R) -> R {
    let before = ON.with(|on| on.replace(true));
    let out = f();
    ON.with(|on| on.set(before));
    out
}

/// Whether the check is on for this thread.
pub fn cuda_layout_checks() -> bool {
    ON.with(|on| on.get())
}

/// `Ok` when the CUDA backend would accept `lhs (b, m, k) × rhs (b, k, n)` with these layouts:
/// the same conditions as `gemm_config`, written without cuBLAS's types.
pub fn check((_b, m, n, k): (usize, usize, usize, usize), lhs_l: &Layout, rhs_l: &Layout) -> Result<()> {
    if !cuda_layout_checks() {
        return Ok(());
    }
    let refuse = || -> Result<()> {
        crate::bail!(
            "matmul is only supported for contiguous tensors (CUDA layout check): lhs {:?} stride {:?} offset {}, rhs {:?} stride {:?} offset {}, mnk {:?}",
            lhs_l.dims(),
            lhs_l.stride(),
            lhs_l.start_offset(),
            rhs_l.dims(),
            rhs_l.stride(),
            rhs_l.start_offset(),
            (m, n, k)
        )
    };
    let (ls, rs) = (lhs_l.stride(), rhs_l.stride());
    if ls.len() < 2 || rs.len() < 2 {
        return refuse();
    }
    let (rhs_m1, rhs_m2) = (rs[rs.len() - 1], rs[rs.len() - 2]);
    let (lhs_m1, lhs_m2) = (ls[ls.len() - 1], ls[ls.len() - 2]);
    let rhs_ok = ((rhs_m1 == 1 || n == 1) && (rhs_m2 == n || k == 1)) || ((rhs_m1 == k || n == 1) && (rhs_m2 == 1 || k == 1));
    let lhs_ok = ((lhs_m1 == 1 || k == 1) && (lhs_m2 == k || m == 1)) || ((lhs_m1 == m || k == 1) && (lhs_m2 == 1 || m == 1));
    let batch_ok = |s: &[usize], dims: &[usize]| match s[..s.len() - 2] {
        [s1, stride] => s1 == stride * dims[1] || dims[0] == 1 || dims[1] == 1,
        [_] | [] => true,
        _ => false,
    };
    if rhs_ok && lhs_ok && batch_ok(ls, lhs_l.dims()) && batch_ok(rs, rhs_l.dims()) {
        Ok(())
    } else {
        refuse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, Tensor};

    #[test]
    fn a_narrowed_operand_is_refused_only_with_the_check_on() {
        let a = Tensor::zeros((6, 12), crate::DType::F32, &Device::Cpu).unwrap();
        let w = Tensor::zeros((8, 4), crate::DType::F32, &Device::Cpu).unwrap();
        let view = a.narrow(1, 4, 8).unwrap();
        assert!(view.matmul(&w).is_ok());
        let contiguous = view.contiguous().unwrap();
        let wt = Tensor::zeros((4, 8), crate::DType::F32, &Device::Cpu).unwrap().t().unwrap();
        let (narrowed, ok, t_ok) = checked(|| (view.matmul(&w), contiguous.matmul(&w), contiguous.matmul(&wt)));
        assert!(!cuda_layout_checks(), "the check ends with `checked`");
        assert!(narrowed.is_err(), "a view with a row gap must be refused");
        assert!(ok.is_ok() && t_ok.is_ok(), "contiguous and transposed operands must pass");
    }
}
