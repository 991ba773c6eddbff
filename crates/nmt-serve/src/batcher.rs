//! Batching across requests: one translator thread decodes the sentences of many requests
//! together.
//!
//! Handlers queue a [`Job`] (a request's sentences, its model and search settings) on a
//! bounded channel; a full channel is a 503 at once, never a wait. The translator thread:
//! 1. waits for a job, then up to `max_wait` for more, or until `max_batch` sentences wait;
//! 2. takes the longest-waiting job's model and settings, and fills a batch of up to
//!    `max_batch` sentences round-robin over the waiting jobs with those (one sentence of
//!    each job per turn), so that many short requests share a batch and a long one cannot
//!    fill it alone;
//! 3. translates the batch (the search sorts it by length) and moves the jobs it served to the
//!    back of the queue: a long request proceeds batch by batch, taking turns with the others,
//!    instead of holding the translator until it is done.
//!
//! A job is answered when its last sentence is translated, in its own order. A job whose
//! caller went away (timeout, closed connection) is dropped before more of it is decoded. When
//! every sender is gone (the server stopped), the thread finishes what is queued and exits.
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use nmt::search::SearchOptions;
use nmt::translate::Translation;
use tokio::sync::oneshot;

use crate::config::Limits;
use crate::error::ApiError;
use crate::models::ModelSet;

/// A request's work.
pub struct Job {
    /// Index of the model in the [`ModelSet`].
    pub model: usize,
    pub opts: SearchOptions,
    pub sentences: Vec<String>,
    pub reply: oneshot::Sender<Result<Vec<Translation>, ApiError>>,
}

/// Counters for `/health` and the load test.
#[derive(Default, Debug)]
pub struct Stats {
    pub batches: AtomicU64,
    pub sentences: AtomicU64,
    pub requests: AtomicU64,
}

/// The handlers' end of the queue.
pub struct Batcher {
    tx: Option<SyncSender<Job>>,
    worker: Option<JoinHandle<()>>,
    pub stats: Arc<Stats>,
}

impl Batcher {
    pub fn start(models: Arc<ModelSet>, limits: &Limits) -> Self {
        let (tx, rx) = sync_channel(limits.queue_capacity.max(1));
        let stats = Arc::new(Stats::default());
        let (s, l) = (stats.clone(), limits.clone());
        let worker = std::thread::Builder::new().name("nmt-translator".into()).spawn(move || run(&models, &rx, &l, &s)).ok();
        Batcher { tx: Some(tx), worker, stats }
    }

    /// Queues a job; 503 when the queue is full.
    pub fn submit(&self, job: Job) -> Result<(), ApiError> {
        let tx = self.tx.as_ref().ok_or_else(ApiError::shutting_down)?;
        match tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(ApiError::busy()),
            Err(TrySendError::Disconnected(_)) => Err(ApiError::shutting_down()),
        }
    }
}

impl Drop for Batcher {
    /// Closes the queue and waits for the translator to answer what was queued.
    fn drop(&mut self) {
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// A queued job and how far it got.
struct Pending {
    job: Job,
    results: Vec<Option<Translation>>,
    /// The next sentence to schedule.
    next: usize,
}

impl Pending {
    fn waiting(&self) -> usize {
        self.job.sentences.len() - self.next
    }

    fn same_batch(&self, other: &Pending) -> bool {
        self.job.model == other.job.model
            && self.job.opts.cfg == other.job.opts.cfg
            && self.job.opts.alignments == other.job.opts.alignments
    }
}

fn run(models: &ModelSet, rx: &Receiver<Job>, limits: &Limits, stats: &Stats) {
    let mut queue: VecDeque<Pending> = VecDeque::new();
    let mut open = true;
    let push = |q: &mut VecDeque<Pending>, job: Job| {
        let n = job.sentences.len();
        q.push_back(Pending { job, results: (0..n).map(|_| None).collect(), next: 0 });
    };
    loop {
        if queue.is_empty() {
            if !open {
                return;
            }
            match rx.recv() {
                Ok(job) => push(&mut queue, job),
                Err(_) => return,
            }
        }
        // Gather more for up to `max_wait`, unless a batch is already full.
        // Capped: a wait too long for the clock would overflow the deadline (issue 44, row 8).
        let deadline = Instant::now() + limits.max_wait.min(std::time::Duration::from_secs_f64(crate::config::MAX_WAIT_MS / 1000.0));
        while open && queue.iter().map(Pending::waiting).sum::<usize>() < limits.max_batch {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(job) => push(&mut queue, job),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => open = false,
            }
        }
        // Callers that gave up get nothing more.
        queue.retain(|p| !p.job.reply.is_closed());
        let Some(lead) = queue.front() else { continue };
        // (job index in the queue, sentence index), round-robin over the jobs like the lead.
        let members: Vec<usize> = (0..queue.len()).filter(|&i| queue[i].same_batch(lead)).collect();
        let mut picks: Vec<(usize, usize)> = Vec::new();
        let mut next: Vec<usize> = members.iter().map(|&i| queue[i].next).collect();
        'fill: loop {
            let mut any = false;
            for (k, &i) in members.iter().enumerate() {
                if picks.len() >= limits.max_batch.max(1) {
                    break 'fill;
                }
                if next[k] < queue[i].job.sentences.len() {
                    picks.push((i, next[k]));
                    next[k] += 1;
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        for (k, &i) in members.iter().enumerate() {
            queue[i].next = next[k];
        }
        let lines: Vec<String> = picks.iter().map(|&(i, j)| queue[i].job.sentences[j].clone()).collect();
        let (model, opts) = (queue[members[0]].job.model, queue[members[0]].job.opts.clone());
        let out = match models.all().get(model) {
            Some(m) => std::panic::catch_unwind(AssertUnwindSafe(|| m.translator.translate(&lines, &opts)))
                .unwrap_or_else(|_| Err(nmt::Error::Input("the translator failed on this input".into()))),
            None => Err(nmt::Error::Input(format!("no model {model}"))),
        };
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.sentences.fetch_add(lines.len() as u64, Ordering::Relaxed);
        match out {
            Ok(translations) => {
                for (&(i, j), t) in picks.iter().zip(translations) {
                    queue[i].results[j] = Some(t);
                }
            }
            Err(e) => {
                // Every job in the batch fails; the others are untouched.
                let msg = format!("translation failed: {e}");
                for &i in members.iter().rev() {
                    if let Some(p) = queue.remove(i) {
                        let _ = p.job.reply.send(Err(ApiError::internal(msg.clone())));
                    }
                }
                continue;
            }
        }
        // Answer the finished jobs; the served ones go to the back.
        let mut rest = VecDeque::with_capacity(queue.len());
        let mut served = Vec::new();
        for (i, p) in queue.drain(..).enumerate() {
            // Every scheduled sentence has been translated (a failed batch removed its jobs).
            if p.next == p.job.sentences.len() {
                stats.requests.fetch_add(1, Ordering::Relaxed);
                let _ = p.job.reply.send(Ok(p.results.into_iter().flatten().collect()));
            } else if members.contains(&i) {
                served.push(p);
            } else {
                rest.push_back(p);
            }
        }
        rest.extend(served);
        queue = rest;
    }
}
