//! The `threads=` argument: a rayon pool of that size for one object's work (the search and the
//! fused kernels run on the current rayon pool), or the process-wide pool when it is `None`.
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// Where a computation runs.
pub struct Threads {
    pool: Option<rayon::ThreadPool>,
}

impl Threads {
    pub fn new(threads: Option<usize>) -> PyResult<Self> {
        let pool = match threads {
            None => None,
            Some(0) => return Err(PyValueError::new_err("threads must be at least 1")),
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}")))?,
            ),
        };
        Ok(Threads { pool })
    }

    /// Runs `f` on this pool.
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}
