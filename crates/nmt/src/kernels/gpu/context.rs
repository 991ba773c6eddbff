//! What nmt sets on a CUDA context when it opens a GPU ([`open`], the one place that does),
//! before any tensor exists (issue 74, items 3 and 4): the per-op costs PyTorch does not pay,
//! turned off, and cuBLAS given a workspace of its own.
//!
//! - **Event tracking off.** cudarc records an event at every allocation and every use of a
//!   buffer's device pointer, and waits on it at the next use and at the free, so that buffers
//!   shared between streams stay ordered. nmt runs everything on candle's one stream, where the
//!   stream's own order already holds; a training step makes thousands of such uses.
//! - **The pool keeps what it has.** With stream-ordered allocation (`cuMemAllocAsync`), the
//!   device's default pool releases its free memory back to the driver at every synchronise
//!   while its release threshold is 0 (cudarc's and CUDA's default); the bench synchronises every
//!   step, so every step would map its memory again. PyTorch's caching allocator never releases
//!   between steps. The threshold is set to its maximum.
//! - **Kernels looked up once.** candle's `get_or_load_custom_func` asks the driver for the
//!   function (`cuModuleGetFunction`) at every launch; `cuda.rs` keeps each (device, kernel)'s
//!   function after its first launch.
//! - **One cuBLAS workspace** ([`BLAS_WORKSPACE`] bytes, allocated once per opened device and set
//!   on candle's handle with `cublasSetWorkspace_v2`, after the `cublasSetStream` that candle's
//!   handle was made with, which resets it). Without it, cuBLAS (CUDA ≥ 12.2) takes its workspace
//!   from the stream's pool, which a stream capture turns into graph memory nodes, and the eager
//!   step and the captured graph may get different memory (pytorch#83461).
//!
//! `NMT_CUDA_OVERHEADS=cudarc` leaves every one of these at cudarc's and candle's defaults (no
//! call is made), so that one run can time both settings (`scripts/gpu-check-run.sh`); unset or
//! `nmt`, the settings above. Anything else is refused when the device is opened.
//!
//! Emulated only, not run on a GPU: `tests/cuda/graph.rs`'s `gpu_context_is_set_as_nmt_sets_it`
//! reads the settings back from a real context when a GPU comes.
use candle_core::{Device, Result};

/// The environment variable that chooses the context's settings.
pub const ENV: &str = "NMT_CUDA_OVERHEADS";

/// cuBLAS's workspace: 32 MiB, what the cuBLAS documentation (`cublasSetWorkspace`) recommends
/// on Hopper, 4 MiB elsewhere (as PyTorch cites it, pytorch#120925); 32 MiB on every GPU, since
/// it is more than the smaller recommendation and the difference is memory no step needs.
pub const BLAS_WORKSPACE: usize = 32 << 20;

/// The settings of a CUDA context that cost per op (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Whether cudarc tracks each buffer's uses with events.
    pub event_tracking: bool,
    /// The default pool's release threshold in bytes, when one is set (`None`: CUDA's 0).
    pub release_threshold: Option<u64>,
    /// Whether `cuda.rs` keeps each kernel's function after its first launch.
    pub cached_functions: bool,
    /// cuBLAS's own workspace in bytes, when one is set (`None`: cuBLAS takes it from the pool).
    pub blas_workspace: Option<usize>,
}

impl Settings {
    /// nmt's: no per-op overheads.
    pub const NMT: Settings =
        Settings { event_tracking: false, release_threshold: Some(u64::MAX), cached_functions: true, blas_workspace: Some(BLAS_WORKSPACE) };
    /// cudarc's and candle's defaults: nothing set.
    pub const CUDARC: Settings = Settings { event_tracking: true, release_threshold: None, cached_functions: false, blas_workspace: None };

    /// The settings [`ENV`] chooses, or an error naming the values it takes.
    pub fn from_env() -> Result<Settings> {
        Settings::parse(std::env::var(ENV).ok().as_deref())
    }

    /// The settings a value of [`ENV`] (`None`: unset) chooses.
    pub fn parse(value: Option<&str>) -> Result<Settings> {
        match value {
            None | Some("") | Some("nmt") => Ok(Settings::NMT),
            Some("cudarc") => Ok(Settings::CUDARC),
            Some(other) => candle_core::bail!("{ENV}={other:?}: expected \"nmt\" (the default) or \"cudarc\" (its defaults, to time them)"),
        }
    }

    /// The settings in effect: [`ENV`]'s, read once per process (an invalid value was refused
    /// when the device was opened; it reads as nmt's here).
    pub fn current() -> Settings {
        static CURRENT: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
        *CURRENT.get_or_init(|| Settings::from_env().unwrap_or(Settings::NMT))
    }

    /// The name the bench's JSON gives them.
    pub fn name(self) -> &'static str {
        if self == Settings::CUDARC {
            "cudarc"
        } else {
            "nmt"
        }
    }
}

/// The calls that set a context, one per setting, made by [`apply`] in this order.
pub trait Context {
    /// cudarc's `disable_event_tracking`: buffers made after it carry no events.
    fn disable_event_tracking(&self);
    /// The default pool's release threshold (a no-op without stream-ordered allocation).
    fn set_release_threshold(&self, bytes: u64) -> Result<()>;
    /// Allocates `bytes` and sets them as cuBLAS's workspace on the device's handle.
    fn set_blas_workspace(&self, bytes: usize) -> Result<()>;
    /// The default pool's release threshold, read back (`None` without stream-ordered
    /// allocation, where there is no pool).
    fn release_threshold(&self) -> Result<Option<u64>>;
}

/// Sets `s` on a context that has no buffer yet. Event tracking goes first, so that even the
/// workspace carries no events; a setting at cudarc's default makes no call.
pub fn apply(c: &impl Context, s: Settings) -> Result<()> {
    if !s.event_tracking {
        c.disable_event_tracking();
    }
    if let Some(bytes) = s.release_threshold {
        c.set_release_threshold(bytes)?;
    }
    if let Some(bytes) = s.blas_workspace {
        c.set_blas_workspace(bytes)?;
    }
    Ok(())
}

/// The GPU `ordinal`, with [`Settings::current`] applied before the device is handed out, so
/// before any tensor exists on it. The one place nmt opens a GPU (the CLI, the Python package,
/// the GPU tests). Without the `cuda` feature, candle's error.
pub fn open(ordinal: usize) -> Result<Device> {
    Settings::from_env()?;
    let dev = Device::new_cuda(ordinal)?;
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = &dev {
        apply(d, Settings::current())?;
    }
    Ok(dev)
}

/// The bench's JSON description of `dev`'s context: the settings in effect, as read back from the
/// context (event tracking, the pool's release threshold) and whether it allocates
/// stream-ordered (`cuMemAllocAsync`, without which there is no pool and the threshold is
/// `null`); `null` on a CPU.
pub fn describe(dev: &Device) -> serde_json::Value {
    match dev {
        #[cfg(feature = "cuda")]
        Device::Cuda(d) => serde_json::json!({
            "overheads": Settings::current().name(),
            "event_tracking": d.is_event_tracking(),
            "async_alloc": d.cuda_stream().context().has_async_alloc(),
            "release_threshold": Context::release_threshold(d).ok().flatten(),
        }),
        _ => serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A context that logs the calls made on it, and what had been allocated when each came.
    #[derive(Default)]
    struct Log {
        calls: RefCell<Vec<String>>,
        buffers: RefCell<usize>,
    }

    impl Context for Log {
        fn disable_event_tracking(&self) {
            self.calls.borrow_mut().push(format!("tracking off, {} buffers", self.buffers.borrow()));
        }
        fn set_release_threshold(&self, bytes: u64) -> Result<()> {
            self.calls.borrow_mut().push(format!("threshold {bytes}, {} buffers", self.buffers.borrow()));
            Ok(())
        }
        fn set_blas_workspace(&self, bytes: usize) -> Result<()> {
            self.calls.borrow_mut().push(format!("workspace {bytes}, {} buffers", self.buffers.borrow()));
            *self.buffers.borrow_mut() += 1;
            Ok(())
        }
        fn release_threshold(&self) -> Result<Option<u64>> {
            Ok(None)
        }
    }

    /// nmt's settings make every call, tracking first and before any buffer (the workspace is
    /// the first); cudarc's make none, so its defaults stand; the environment variable's values
    /// choose between them, and anything else is refused.
    #[test]
    fn the_settings_are_made_before_any_buffer_and_the_switch_makes_none() {
        let log = Log::default();
        apply(&log, Settings::NMT).unwrap();
        let want = ["tracking off, 0 buffers", "threshold 18446744073709551615, 0 buffers", "workspace 33554432, 0 buffers"];
        assert_eq!(*log.calls.borrow(), want);
        let log = Log::default();
        apply(&log, Settings::CUDARC).unwrap();
        assert!(log.calls.borrow().is_empty(), "cudarc's defaults need no call: {:?}", log.calls.borrow());
        for (value, want) in [(None, "nmt"), (Some("nmt"), "nmt"), (Some("cudarc"), "cudarc")] {
            assert_eq!(Settings::parse(value).unwrap().name(), want);
        }
        let e = Settings::parse(Some("off")).unwrap_err().to_string();
        assert!(e.contains("expected \"nmt\""), "{e}");
    }
}
