//! The server's limits and batching knobs, with the defaults `nmt serve` uses.
use std::time::Duration;

/// What one request may ask for, and how requests are batched.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request body in bytes (413 above it).
    pub max_body_bytes: usize,
    /// Most sentences in one request (400 above it).
    pub max_sentences: usize,
    /// Most source tokens (the model's segmentation) in one sentence (400 above it).
    pub max_tokens: usize,
    /// Largest beam and n-best list a request may ask for (400 above it).
    pub max_beam: usize,
    /// How long a request may wait for its translations, queueing included (504 after it).
    pub timeout: Duration,
    /// Requests waiting for the translator at most; a request beyond it gets 503 with
    /// `Retry-After`.
    pub queue_capacity: usize,
    /// Sentences decoded together at most (from several requests).
    pub max_batch: usize,
    /// How long the first waiting sentence waits for others to batch with.
    pub max_wait: Duration,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may stay idle; the connection is closed after it (`listen.rs`).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body (408 after it).
    pub body_timeout: Duration,
    /// Largest response body in bytes: a request whose answer would exceed it gets 413.
    pub max_response_bytes: usize,
}

/// The largest durations accepted (`nmt serve` checks its flags against them): beyond, a
/// deadline computed from them could overflow the clock.
pub const MAX_TIMEOUT_S: f64 = 24.0 * 3600.0;
pub const MAX_WAIT_MS: f64 = 10_000.0;

/// Seconds as a [`Duration`], checked: finite, above 0 (or at least 0 with `zero_ok`), at most
/// `max`; the error names `what`.
pub fn checked_duration(secs: f64, max: f64, zero_ok: bool, what: &str) -> Result<Duration, String> {
    let low_ok = if zero_ok { secs >= 0.0 } else { secs > 0.0 };
    if !(secs.is_finite() && low_ok && secs <= max) {
        let low = if zero_ok { "at least 0" } else { "above 0" };
        return Err(format!("{what} must be {low} and at most {max}, not {secs}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{what}: {e}"))
}

impl Default for Limits {
    /// 1 MB bodies, 8 MiB responses, 10 s to send headers, 30 s to send a body,
    /// 64 sentences of 256 tokens, beam ≤ 32, 30 s per request, 256 queued
    /// requests, batches of up to 32 sentences gathered for up to 5 ms (the "a few ms";
    /// not tuned yet: the load test, `scripts/load-test.sh`, is where to tune it).
    fn default() -> Self {
        Limits {
            max_body_bytes: 1 << 20,
            max_sentences: 64,
            max_tokens: 256,
            max_beam: 32,
            timeout: Duration::from_secs(30),
            queue_capacity: 256,
            max_batch: 32,
            max_wait: Duration::from_millis(5),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_response_bytes: 8 << 20,
        }
    }
}
