//! The kernels' argument structs, mirrored from the `.cu` sources field for
//! field (every field 8 bytes, so `repr(C)` lays them out as the C and CUDA compilers do: no
//! padding), and the kernels themselves ([`Kernel`]: the source file, the PTX name and the
//! host-compiled function).
use super::launch::Addr;

/// Declares argument structs that nest in others (`#[repr(C)]` mirrors with their layout).
macro_rules! arg_structs {
    ($($(#[$doc:meta])* $args:ident { $($field:ident : $ty:ty),* $(,)? })*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug)]
            pub struct $args { $(pub $field: $ty),* }
            impl $crate::kernels::gpu::launch::ArgStruct for $args {
                const LAYOUT: $crate::kernels::gpu::launch::ArgLayout = $crate::kernels::gpu::launch::ArgLayout {
                    name: stringify!($args),
                    size: std::mem::size_of::<$args>(),
                    fields: &[$((stringify!($field), std::mem::offset_of!($args, $field))),*],
                };
            }
        )*
    };
}

/// Declares each kernel of a module (a `.cu` file) and its argument struct. A new source's
/// Rust wrapper declares its own kernels with it.
macro_rules! kernels {
    ($module:ident: $($konst:ident = $kernel:ident, $args:ident { $($field:ident : $ty:ty),* $(,)? })*) => {
        $crate::kernels::gpu::args::arg_structs! { $($args { $($field: $ty),* })* }
        $(
            #[cfg(feature = "cuda")]
            unsafe impl candle_core::cuda_backend::cudarc::driver::DeviceRepr for $args {}
            impl $crate::kernels::gpu::launch::KernelArgs for $args {}
        )*
        extern "C" {
            $(fn $kernel(a: $args);)*
        }
        $(
            pub const $konst: $crate::kernels::gpu::launch::Kernel<$args> = $crate::kernels::gpu::launch::Kernel {
                module: $crate::kernels::gpu::launch::Module::$module,
                name: stringify!($kernel),
                host: $kernel,
            };
        )*
    };
}
pub(crate) use arg_structs;
pub(crate) use kernels;

kernels! {
    Recurrence:
    FILL_ROWS = nmt_fill_rows, FillRows { dst: Addr, src: Addr, src_ld: i64, rows: i64, width: i64, group: i64 }
    SUM_STEPS = nmt_sum_steps, SumSteps { dst: Addr, dst_ld: i64, src: Addr, batch: i64, len: i64, width: i64 }
    MASK_ROWS = nmt_mask_rows, MaskRows { dst: Addr, dst_ld: i64, src: Addr, src_ld: i64, mask: Addr, rows: i64, width: i64 }
    ADD_ROWS = nmt_add_rows, AddRows { dst: Addr, dst_ld: i64, src: Addr, src_ld: i64, mask: Addr, rows: i64, width: i64 }
    SIGMOID_ALL = nmt_sigmoid_all, SigmoidAll { x: Addr, n: i64 }
    PREV_STATES = nmt_prev_states, PrevStates {
        dst: Addr, out: Addr, out_ld: i64, init: Addr, init_ld: i64, mask: Addr, batch: i64, len: i64, hidden: i64, reverse: i64,
    }
    GRU_RESET_FWD = nmt_gru_reset_fwd, ResetFwd {
        gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64, hu: Addr, hu_ld: i64, q: Addr, q_ld: i64, rows: i64, hidden: i64,
    }
    GRU_GATES_FWD = nmt_gru_gates_fwd, GatesFwd {
        form: i64, s: StepRows, hp: Addr, hp_ld: i64, out: Addr, out_ld: i64, rows: i64, hidden: i64,
    }
    GRU_GATES_BWD = nmt_gru_gates_bwd, GatesBwd {
        form: i64, s: StepRows, hp: Addr, hp_ld: i64, dh: Addr, dh_ld: i64, carry: Addr, dg: GradRows, rows: i64, hidden: i64,
    }
    GRU_RESET_BWD = nmt_gru_reset_bwd, ResetBwd {
        s: StepRows, hp: Addr, hp_ld: i64, mask: Addr, dq: Addr, carry: Addr, dg: GradRows, rows: i64, hidden: i64,
    }
    LSTM_GATES_FWD = nmt_lstm_gates_fwd, LstmFwd {
        s: StepRows, hp: Addr, hp_ld: i64, cp: Addr, cp_ld: i64, c: Addr, c_ld: i64, out: Addr, out_ld: i64, rows: i64, hidden: i64,
    }
    LSTM_GATES_BWD = nmt_lstm_gates_bwd, LstmBwd {
        s: StepRows, cp: Addr, cp_ld: i64, dh: Addr, dh_ld: i64, carry: Addr, carry_c: Addr, dg: GradRows, rows: i64, hidden: i64,
    }
    LN_FWD = nmt_ln_fwd, LnFwd { a: Addr, a_ld: i64, gamma: Addr, y: Addr, y_ld: i64, rows: i64, width: i64 }
    LN_BWD = nmt_ln_bwd, LnBwd {
        a: Addr, a_ld: i64, gamma: Addr, dy: Addr, dy_ld: i64, da: Addr, da_ld: i64, dyx: Addr, dyx_ld: i64, rows: i64, width: i64,
    }
}

kernels! {
    Attention:
    ATT_SCORES = nmt_att_scores, AttScores {
        enc: Addr, ws: Addr, ws_ld: i64, v: Addr, lens: Addr, e: Addr, batch: i64, src_len: i64, ctx: i64, att: i64,
    }
    ATT_SOFTMAX = nmt_att_softmax, AttSoftmax { e: Addr, lens: Addr, alpha: Addr, alpha_ld: i64, batch: i64, src_len: i64 }
    ATT_CONTEXT = nmt_att_context, AttContext {
        alpha: Addr, alpha_ld: i64, enc: Addr, lens: Addr, c: Addr, c_ld: i64, batch: i64, src_len: i64, ctx: i64, att: i64,
    }
    ATT_DALPHA = nmt_att_dalpha, AttDalpha { enc: Addr, dc: Addr, lens: Addr, de: Addr, batch: i64, src_len: i64, ctx: i64, att: i64 }
    ATT_SOFTMAX_BWD = nmt_att_softmax_bwd, AttSoftmaxBwd { alpha: Addr, alpha_ld: i64, lens: Addr, de: Addr, batch: i64, src_len: i64 }
    ATT_ENC_BWD = nmt_att_enc_bwd, AttEncBwd {
        alpha: Addr, alpha_ld: i64, enc: Addr, ws: Addr, ws_ld: i64, v: Addr, dc: Addr, de: Addr, lens: Addr, denc: Addr,
        batch: i64, src_len: i64, ctx: i64, att: i64,
    }
    ATT_QUERY_BWD = nmt_att_query_bwd, AttQueryBwd {
        enc: Addr, ws: Addr, ws_ld: i64, v: Addr, de: Addr, lens: Addr, dws: Addr, dws_ld: i64, dv: Addr,
        batch: i64, src_len: i64, ctx: i64, att: i64,
    }
}

kernels! {
    Search:
    ROW_TOP_K = nmt_row_top_k, RowTopK { lp: Addr, width: i64, rows: i64, k: i64, skip: Addr, n_skip: i64, out: Addr }
}

kernels! {
    Feedback:
    FB_SOURCES = nmt_fb_sources, FbSources { p: FbStep, v: Addr }
    FB_CELL_FWD = nmt_fb_cell_fwd, FbCellFwd {
        rows: StepRows, rsum: Addr, bh: Addr, hprev: Addr, hprev_ld: i64, cprev: Addr, c: Addr, x: Addr, x_ld: i64,
        residual: i64, h: Addr, h_ld: i64, xout: Addr, xout_ld: i64, cand: Addr, batch: i64, hidden: i64, kind: i64,
    }
    FB_CELL_BWD = nmt_fb_cell_bwd, FbCellBwd {
        rows: StepRows, cand: Addr, rsum: Addr, bh: Addr, hprev: Addr, hprev_ld: i64, cprev: Addr, c: Addr, dh: Addr,
        dc: Addr, dg: GradRows, drs: Addr, dr: Addr, dhprev: Addr, batch: i64, hidden: i64, kind: i64,
    }
    FB_GATE_BWD = nmt_fb_gate_bwd, FbGateBwd { p: FbStep, dv: Addr, dgp: Addr }
    FB_SOURCES_BWD = nmt_fb_sources_bwd, FbSourcesBwd { p: FbStep, dv: Addr, dr: Addr, dhu: Addr, ds: Addr, dg: GradRows }
    FB_STATE_BWD = nmt_fb_state_bwd, FbStateBwd {
        ds: Addr, dhprev: Addr, dhu: Addr, mask: Addr, own: i64, batch: i64, layers: i64, hidden: i64,
    }
}

kernels! {
    Update:
    UPDATE = nmt_update, Update {
        p_out: Addr, m_out: Addr, v_out: Addr, p: Addr, m: Addr, v: Addr, g: Addr, scal: Addr, n: i64, adam: i64, beta: f64, beta2: f64,
    }
    SQ_PARTIAL = nmt_sq_partial, SqPartial { part: Addr, g: Addr, n: i64, chunk: i64 }
    WEIGHTED_SUM = nmt_weighted_sum, WeightedSum { out: Addr, x: Addr, w: Addr, n: i64 }
    STEP_SCALARS = nmt_step_scalars, StepScalars {
        state: Addr, part: Addr, scal: Addr, parts: i64, adam: i64, warmup: i64, normalize: i64, beta: f64, beta2: f64, eps: f64, clip: f64,
    }
}

arg_structs! {
    /// What every cell kernel reads of its step (`common.h`'s `NmtStepRows`, nested in the
    /// kernels' structs): the position `t` (row `b` is live when `t < lens[b]`) and the rows of
    /// `gi` and `gh`, `*_ld` elements apart.
    StepRows { t: i64, lens: Addr, gi: Addr, gi_ld: i64, gh: Addr, gh_ld: i64 }
    /// Where the backward gate kernels write the gradients of `gi`'s and `gh`'s pre-activations
    /// (`NmtGradRows`).
    GradRows { dgi: Addr, dgi_ld: i64, dgh: Addr, dgh_ld: i64 }
    /// What `feedback.cu`'s step kernels share (`NmtFbStep`): the step's rows of `gi` and `GH`,
    /// its gates `g`, masked own state `hu` and sources `S`, contiguous, the layer's own source
    /// index and the sizes; `kind` is a cell code ([`PAPER`], [`RESET_AFTER`], [`LSTM`]).
    FbStep { rows: StepRows, g: Addr, hu: Addr, s: Addr, own: i64, batch: i64, layers: i64, hidden: i64, kind: i64 }
}

/// The cells' codes (`common.h`'s `NMT_PAPER`, `NMT_RESET_AFTER`, `NMT_LSTM`): the gate kernels'
/// `form`, the gated-feedback kernels' `kind`.
pub const PAPER: i64 = 0;
pub const RESET_AFTER: i64 = 1;
pub const LSTM: i64 = 2;
