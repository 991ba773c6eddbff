//! An epoch's batches as indices only: which pairs form each batch, in which order. The pairs
//! themselves are read when a batch is due, so planning an epoch of 10 M pairs takes the
//! memory of its index (4 bytes a pair, 8 a batch), not of its tokens.
//!
//! Length bucketing works in windows: the epoch's pairs are shuffled, each window of
//! `POOL_BATCHES` batches' worth of pairs is sorted by (target length, source length) and cut
//! under the token budget, and then the order of all the epoch's batches is shuffled. Everything
//! random is a ChaCha8 stream on `(seed, epoch)`, so a resumed run regenerates the same plan and
//! skips the batches already done.
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Limits for one batch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BatchConfig {
    /// Token budget: `size * max(src_len, tgt_len) <= max_tokens` (default 2000). A single
    /// example longer than the budget still forms a batch of its own rather than being lost.
    pub max_tokens: usize,
    /// At most this many sentences per batch (default 80).
    pub max_sentences: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self { max_tokens: 2000, max_sentences: 80 }
    }
}

/// How many batches' worth of sentences are sorted together: large enough for tight length
/// buckets, small enough that batch composition still varies between epochs.
pub const POOL_BATCHES: usize = 100;

/// A corpus's share of an epoch: pairs `first..first + len` seen `weight` times each on
/// average (2 = twice; 0.5 = a random half, another half each epoch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weighted {
    pub first: usize,
    pub len: usize,
    pub weight: f64,
}

/// The batches of one epoch: batch `b` is the pairs `order[ranges[b]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochPlan {
    order: Vec<u32>,
    ranges: Vec<(u32, u32)>,
}

impl EpochPlan {
    /// Plans epoch `epoch` of `corpora`; `lens(i)` is pair `i`'s `(source, target)` length.
    /// A pure function of its arguments. One corpus of weight 1 gives the order of every pair
    /// once, in the layout earlier versions produced (so their runs reproduce).
    pub fn new(corpora: &[Weighted], lens: impl Fn(usize) -> (usize, usize), cfg: &BatchConfig, seed: u64, epoch: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(epoch);
        let mut order = epoch_pairs(corpora, seed, epoch);
        order.shuffle(&mut rng);
        let pool = POOL_BATCHES.saturating_mul(cfg.max_sentences.max(1));
        let mut ranges = Vec::new();
        let mut base = 0usize;
        for chunk in order.chunks_mut(pool) {
            // Stable sort: ties keep their shuffled order, so equal-length batches still vary.
            chunk.sort_by_key(|&i| {
                let (s, t) = lens(i as usize);
                (t, s)
            });
            for (a, b) in cut(chunk, cfg, |i| {
                let (s, t) = lens(i as usize);
                s.max(t)
            }) {
                ranges.push(((base + a) as u32, (base + b) as u32));
            }
            base += chunk.len();
        }
        ranges.shuffle(&mut rng);
        EpochPlan { order, ranges }
    }

    /// Number of batches.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The pair ids of batch `b`.
    pub fn batch(&self, b: usize) -> &[u32] {
        let (s, e) = self.ranges[b];
        &self.order[s as usize..e as usize]
    }
}

/// The pair ids of an epoch before shuffling: each corpus's `⌊weight⌋` full copies, then a
/// fraction of it drawn on its own stream (so weight-1 corpora consume no randomness).
fn epoch_pairs(corpora: &[Weighted], seed: u64, epoch: u64) -> Vec<u32> {
    let mut ids = Vec::new();
    for (k, c) in corpora.iter().enumerate() {
        let range = c.first as u32..(c.first + c.len) as u32;
        let weight = if c.weight.is_finite() { c.weight.max(0.0) } else { 0.0 };
        for _ in 0..weight.floor() as usize {
            ids.extend(range.clone());
        }
        let extra = ((weight - weight.floor()) * c.len as f64).round() as usize;
        if extra > 0 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c0de_u64.wrapping_mul(k as u64 + 1));
            rng.set_stream(epoch);
            let mut all: Vec<u32> = range.collect();
            let (picked, _) = all.partial_shuffle(&mut rng, extra.min(c.len));
            ids.extend_from_slice(picked);
        }
    }
    ids
}

/// Greedily splits `order` into consecutive groups with `len(group) * max cost <= max_tokens`
/// and `len(group) <= max_sentences`; a group always holds at least one item. Returns each
/// group's `start..end` in `order`.
pub(crate) fn cut<T: Copy>(order: &[T], cfg: &BatchConfig, cost: impl Fn(T) -> usize) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let (mut start, mut longest) = (0, 0);
    for (pos, &i) in order.iter().enumerate() {
        let count = pos - start;
        let new_longest = longest.max(cost(i));
        let fits = (count + 1) * new_longest <= cfg.max_tokens && count < cfg.max_sentences;
        if count > 0 && !fits {
            groups.push((start, pos));
            start = pos;
            longest = cost(i);
        } else {
            longest = new_longest;
        }
    }
    if start < order.len() {
        groups.push((start, order.len()));
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_budget_and_keeps_oversized_alone() {
        let cfg = BatchConfig { max_tokens: 10, max_sentences: 3 };
        let lens = [2, 2, 2, 2, 5, 20, 3];
        let order: Vec<usize> = (0..lens.len()).collect();
        assert_eq!(cut(&order, &cfg, |i| lens[i]), vec![(0, 3), (3, 5), (5, 6), (6, 7)]);
    }

    #[test]
    fn weights_repeat_and_sample_each_corpus() {
        let corpora = [Weighted { first: 0, len: 10, weight: 2.0 }, Weighted { first: 10, len: 20, weight: 0.5 }];
        let count = |epoch| {
            let plan = EpochPlan::new(&corpora, |_| (3, 3), &BatchConfig::default(), 7, epoch);
            let mut seen = vec![0usize; 30];
            (0..plan.len()).flat_map(|b| plan.batch(b).to_vec()).for_each(|i| seen[i as usize] += 1);
            seen
        };
        let (a, b) = (count(0), count(1));
        assert!(a[..10].iter().all(|&n| n == 2));
        assert_eq!(a[10..].iter().sum::<usize>(), 10);
        assert!(a[10..].iter().all(|&n| n <= 1));
        assert_ne!(a[10..], b[10..], "another half in another epoch");
    }
}
