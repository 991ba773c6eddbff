//! The kernels' argument structs, mirrored from `recurrence.cu` field for field (every field
//! 8 bytes, so `repr(C)` lays them out as the C and CUDA compilers do: no padding), and the
//! kernels themselves ([`Kernel`]: the PTX name and the host-compiled function).
use super::{Addr, Kernel, KernelArgs};

/// Declares each struct and its kernel.
macro_rules! kernels {
    ($($konst:ident = $kernel:ident, $args:ident { $($field:ident : $ty:ty),* $(,)? })*) => {
        $(
            #[repr(C)]
            #[derive(Clone, Copy, Debug)]
            pub struct $args { $(pub $field: $ty),* }
            #[cfg(feature = "cuda")]
            unsafe impl candle_core::cuda_backend::cudarc::driver::DeviceRepr for $args {}
            impl KernelArgs for $args {}
        )*
        extern "C" {
            $(fn $kernel(a: $args);)*
        }
        $(
            pub const $konst: Kernel<$args> = Kernel { name: stringify!($kernel), host: $kernel };
        )*
    };
}

kernels! {
    FILL_ROWS = nmt_fill_rows, FillRows { dst: Addr, src: Addr, rows: i64, width: i64 }
    MASK_ROWS = nmt_mask_rows, MaskRows { dst: Addr, dst_ld: i64, src: Addr, src_ld: i64, mask: Addr, rows: i64, width: i64 }
    ADD_MASKED = nmt_add_masked, AddMasked { dst: Addr, src: Addr, mask: Addr, n: i64 }
    PREV_STATES = nmt_prev_states, PrevStates {
        dst: Addr, out: Addr, out_ld: i64, mask: Addr, batch: i64, len: i64, hidden: i64, reverse: i64,
    }
    GRU_RESET_FWD = nmt_gru_reset_fwd, ResetFwd {
        gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64, hu: Addr, hu_ld: i64, q: Addr, q_ld: i64, rows: i64, hidden: i64,
    }
    GRU_GATES_FWD = nmt_gru_gates_fwd, GatesFwd {
        form: i64, t: i64, lens: Addr, gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64, hp: Addr, hp_ld: i64,
        out: Addr, out_ld: i64, rows: i64, hidden: i64,
    }
    GRU_GATES_BWD = nmt_gru_gates_bwd, GatesBwd {
        form: i64, t: i64, lens: Addr, gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64, hp: Addr, hp_ld: i64,
        dh: Addr, dh_ld: i64, carry: Addr, dgi: Addr, dgi_ld: i64, dgh: Addr, dgh_ld: i64, rows: i64, hidden: i64,
    }
    GRU_RESET_BWD = nmt_gru_reset_bwd, ResetBwd {
        t: i64, lens: Addr, gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64, hp: Addr, hp_ld: i64, mask: Addr, dq: Addr,
        carry: Addr, dgi: Addr, dgi_ld: i64, dgh: Addr, dgh_ld: i64, rows: i64, hidden: i64,
    }
}

/// The form codes of `recurrence.cu` (`NMT_PAPER`, `NMT_RESET_AFTER`).
pub const PAPER: i64 = 0;
pub const RESET_AFTER: i64 = 1;
