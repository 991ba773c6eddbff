//! How a bench times and reports: the median and fastest of repeated runs after a warm-up, and
//! figures rounded for the JSON lines (`run.rs`, `cuda_graph.rs`), and the process's peak memory.
use crate::error::Result;
use std::time::Instant;

/// Median and minimum milliseconds of `reps` timed runs after 3 warm-up runs.
pub fn timed(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    let mut ms = Vec::with_capacity(reps);
    for it in 0..3 + reps {
        let t0 = Instant::now();
        f()?;
        if it >= 3 {
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms[ms.len() / 2], ms[0]))
}

/// `x` rounded to `digits` decimals.
pub fn round(x: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (x * s).round() / s
}

/// Peak resident memory of this process in MB (Linux; `None` elsewhere).
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
