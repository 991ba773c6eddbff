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
}

impl Default for Limits {
    /// 1 MB bodies, 64 sentences of 256 tokens, beam ≤ 32, 30 s per request, 256 queued
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
        }
    }
}
