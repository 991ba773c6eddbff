//! Opt-in wall-clock accounting of the fused ops (`NMT_PROFILE=1`), for `nmt bench` and
//! docs/PERF-HISTORY.md, "Where a training step goes now": how much of a training step each kernel's forward and backward take, and by
//! difference, what candle's own graph code takes.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Kernels that are timed, in report order.
pub const NAMES: [&str; 19] = [
    "gru.fwd",
    "gru.bwd",
    "attn.fwd",
    "attn.bwd",
    "linear.fwd",
    "linear.bwd",
    "proj_nll.fwd",
    "proj_nll.bwd",
    "optim",
    // The host search (model/snapshot.rs): encoder, attention, the decoder's other products and
    // cell, the fused scores, and the beam's selection and bookkeeping. `search.step` is a whole
    // decoder step and includes `search.attn` and `search.scores`.
    "search.encode",
    "search.attn",
    "search.step",
    "search.scores",
    "search.select",
    // A training update's phases (`train/trainer.rs`): the loss, its backward pass, clipping
    // and the optimiser step. The kernels above are inside the first two.
    "train.forward",
    "train.backward",
    "train.update",
    // Inside the bf16 products of the training step (`bf16_gemm`, `amx_gemm`): the packing of
    // their A and B operands into bf16 pairs, wall time on the calling thread (issue 76: the
    // share that packing weights once per update could save; B is the weight in every
    // forward and input-gradient product). Inside the kernels' slots above.
    "bf16.pack_a",
    "bf16.pack_b",
];

/// Indices of the search's slots in [`NAMES`].
pub const SEARCH_ENCODE: usize = 9;
pub const SEARCH_ATTN: usize = 10;
pub const SEARCH_STEP: usize = 11;
pub const SEARCH_SCORES: usize = 12;
pub const SEARCH_SELECT: usize = 13;

/// Indices of the training phases in [`NAMES`].
pub const TRAIN_FORWARD: usize = 14;
pub const TRAIN_BACKWARD: usize = 15;
pub const TRAIN_UPDATE: usize = 16;

/// Indices of the bf16 products' packing in [`NAMES`].
pub const PACK_A: usize = 17;
pub const PACK_B: usize = 18;

static NANOS: [AtomicU64; 19] = [const { AtomicU64::new(0) }; 19];

/// Whether `NMT_PROFILE` is set (and not `0`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("NMT_PROFILE").is_some_and(|v| v != "0"))
}

/// Runs `f`, adding its wall time to counter `i` (an index into [`NAMES`]) when profiling.
pub fn timed<R>(i: usize, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    let t0 = Instant::now();
    let r = f();
    NANOS[i].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// The start of a region timed with [`stop`] (`None` when not profiling).
pub fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

/// Adds the time since `t0` (from [`start`]) to counter `i`.
pub fn stop(i: usize, t0: Option<Instant>) {
    if let Some(t0) = t0 {
        NANOS[i].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// The accumulated milliseconds per kernel, and resets the counters.
pub fn take() -> Vec<(&'static str, f64)> {
    NAMES.iter().zip(&NANOS).map(|(n, c)| (*n, c.swap(0, Ordering::Relaxed) as f64 / 1e6)).collect()
}
