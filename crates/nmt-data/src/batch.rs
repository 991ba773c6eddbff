//! Padded batches and the length-bucketed, reproducible batching of training and inference data.
//!
//! Training batches are cut from large shuffled pools sorted by length, so sentences of similar
//! length share a batch and padding stays small, while the pool shuffle and the final batch-order
//! shuffle keep the gradient noise of random batches. Everything random comes from a ChaCha8
//! stream chosen by `(seed, epoch)`, so the batches of an epoch can be regenerated exactly when a
//! run resumes: only `(epoch, index of next batch)` needs to be stored.

use crate::plan::cut;
pub use crate::plan::{BatchConfig, EpochPlan, Weighted};
use crate::{BOS, PAD};

/// One training pair as ids. `src` ends with EOS; `tgt` ends with EOS (no BOS).
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    /// Source ids, EOS-terminated.
    pub src: Vec<u32>,
    /// Target ids, EOS-terminated, without BOS (the batch adds it to the decoder inputs).
    pub tgt: Vec<u32>,
}

/// A padded batch, row-major `(batch, len)` flat vectors, padded with PAD.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Number of sentences.
    pub size: usize,
    /// Padded source length (max over the batch).
    pub src_len: usize,
    /// `(size, src_len)` source ids.
    pub src: Vec<u32>,
    /// True source lengths, EOS included.
    pub src_lengths: Vec<usize>,
    /// Padded target length (0 for inference batches).
    pub tgt_len: usize,
    /// `(size, tgt_len)` decoder inputs: `BOS y_1 .. y_{n-1}`, padded.
    pub tgt_in: Vec<u32>,
    /// `(size, tgt_len)` decoder targets: `y_1 .. y_{n-1} EOS`, padded.
    pub tgt_out: Vec<u32>,
    /// True target lengths, EOS included (0 for inference batches).
    pub tgt_lengths: Vec<usize>,
    /// Index of each row's example in the dataset (to restore the original order).
    pub indices: Vec<usize>,
    /// `(size, src_len)` each source position's id in the extended target space of a copy
    /// model (`crate::copy`), padded with PAD; empty for other models ([`Batch::set_source_ext`]).
    pub src_ext: Vec<u32>,
}

impl Batch {
    /// Builds the padded tensors for `examples`; `indices[i]` is the dataset index of row `i`.
    pub fn from_examples(examples: &[&Example], indices: Vec<usize>) -> Batch {
        let src_len = examples.iter().map(|e| e.src.len()).max().unwrap_or(0);
        let tgt_len = examples.iter().map(|e| e.tgt.len()).max().unwrap_or(0);
        Batch::padded(examples, indices, src_len, tgt_len)
    }

    /// [`Batch::from_examples`] padded to given lengths (at least the examples' own): a
    /// data-parallel rank builds its rows of a batch padded as the whole batch is.
    pub fn padded(examples: &[&Example], indices: Vec<usize>, src_len: usize, tgt_len: usize) -> Batch {
        let size = examples.len();
        let src_len = examples.iter().map(|e| e.src.len()).fold(src_len, usize::max);
        let tgt_len = examples.iter().map(|e| e.tgt.len()).fold(tgt_len, usize::max);
        let mut src = vec![PAD; size * src_len];
        let mut tgt_in = vec![PAD; size * tgt_len];
        let mut tgt_out = vec![PAD; size * tgt_len];
        for (row, e) in examples.iter().enumerate() {
            src[row * src_len..][..e.src.len()].copy_from_slice(&e.src);
            let out = &mut tgt_out[row * tgt_len..][..e.tgt.len()];
            out.copy_from_slice(&e.tgt);
            if let Some((_, shifted)) = e.tgt.split_last() {
                let inp = &mut tgt_in[row * tgt_len..][..e.tgt.len()];
                inp[0] = BOS;
                inp[1..].copy_from_slice(shifted);
            }
        }
        Batch {
            size,
            src_len,
            src,
            src_lengths: examples.iter().map(|e| e.src.len()).collect(),
            tgt_len,
            tgt_in,
            tgt_out,
            tgt_lengths: examples.iter().map(|e| e.tgt.len()).collect(),
            indices,
            src_ext: Vec::new(),
        }
    }

    /// Fills [`Batch::src_ext`] from the extended source ids of the whole dataset
    /// (`exts[i]` for example `i`, each as long as its source).
    pub fn set_source_ext(&mut self, exts: &[Vec<u32>]) {
        let rows: Vec<&[u32]> = self.indices.iter().map(|&i| exts[i].as_slice()).collect();
        self.fill_source_ext(&rows);
    }

    /// Fills [`Batch::src_ext`] from each row's extended source ids.
    pub fn fill_source_ext(&mut self, rows: &[&[u32]]) {
        let mut out = vec![PAD; self.size * self.src_len];
        for (row, e) in rows.iter().enumerate().take(self.size) {
            let n = e.len().min(self.src_len);
            out[row * self.src_len..][..n].copy_from_slice(&e[..n]);
        }
        self.src_ext = out;
    }

    /// Rows `range` of the batch, with the batch's padded lengths kept: a data-parallel rank's
    /// share. Keeping the padding keeps every per-row tensor's inner size, so a share's dropout
    /// masks are exactly the whole batch's masks at those rows (`nmt::model::regularizer`).
    pub fn rows(&self, range: std::ops::Range<usize>) -> Batch {
        let range = range.start.min(self.size)..range.end.min(self.size);
        let (s, t) = (self.src_len, self.tgt_len);
        let cut = |v: &[u32], w: usize| if v.is_empty() { Vec::new() } else { v[range.start * w..range.end * w].to_vec() };
        Batch {
            size: range.len(),
            src_len: s,
            src: cut(&self.src, s),
            src_lengths: self.src_lengths[range.clone()].to_vec(),
            tgt_len: t,
            tgt_in: cut(&self.tgt_in, t),
            tgt_out: cut(&self.tgt_out, t),
            tgt_lengths: self.tgt_lengths[range.clone()].to_vec(),
            indices: self.indices[range.clone()].to_vec(),
            src_ext: cut(&self.src_ext, s),
        }
    }

    /// Number of real (non-padding) target tokens, for per-token loss normalisation.
    pub fn target_tokens(&self) -> usize {
        self.tgt_lengths.iter().sum()
    }
}

/// One data-parallel rank's rows of every batch: `len` rows from `start` of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowShare {
    pub start: usize,
    pub len: usize,
    pub total: usize,
}

impl RowShare {
    /// Rank `rank` of `ranks` takes rows `⌊total·rank/ranks⌋ .. ⌊total·(rank+1)/ranks⌋`: contiguous,
    /// disjoint, covering the batch, sizes differing by at most one (a rank may get none).
    pub fn of(rank: usize, ranks: usize, total: usize) -> RowShare {
        let ranks = ranks.max(1);
        let start = total * rank / ranks;
        let end = total * (rank + 1) / ranks;
        RowShare { start, len: end.saturating_sub(start), total }
    }

    pub fn range(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.len
    }
}

/// Length-bucketed training batches for epoch `epoch` of in-memory examples: the
/// [`EpochPlan`] of one corpus of weight 1, materialised. A pure function of
/// `(examples, cfg, seed, epoch)`; every example appears exactly once.
pub fn epoch_batches(examples: &[Example], cfg: &BatchConfig, seed: u64, epoch: u64) -> Vec<Batch> {
    let all = [Weighted { first: 0, len: examples.len(), weight: 1.0 }];
    let plan = EpochPlan::new(&all, |i| (examples[i].src.len(), examples[i].tgt.len()), cfg, seed, epoch);
    (0..plan.len())
        .map(|b| {
            let ids = plan.batch(b);
            let rows: Vec<&Example> = ids.iter().map(|&i| &examples[i as usize]).collect();
            Batch::from_examples(&rows, ids.iter().map(|&i| i as usize).collect())
        })
        .collect()
}

/// Inference batches: sources sorted by length (so a batch holds similar lengths), cut under
/// the budget; `indices` map rows back to positions in `srcs`. Target fields are empty
/// (`tgt_len == 0`, `tgt_lengths` all 0).
pub fn inference_batches(srcs: &[Vec<u32>], cfg: &BatchConfig) -> Vec<Batch> {
    let mut order: Vec<usize> = (0..srcs.len()).collect();
    order.sort_by_key(|&i| srcs[i].len());
    let examples: Vec<Example> = srcs.iter().map(|s| Example { src: s.clone(), tgt: Vec::new() }).collect();
    cut(&order, cfg, |i| srcs[i].len())
        .into_iter()
        .map(|(a, b)| {
            let group = &order[a..b];
            let rows: Vec<&Example> = group.iter().map(|&i| &examples[i]).collect();
            Batch::from_examples(&rows, group.to_vec())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EOS;

    fn ex(src: &[u32], tgt: &[u32]) -> Example {
        Example { src: src.to_vec(), tgt: tgt.to_vec() }
    }

    #[test]
    fn padding_and_shift() {
        let a = ex(&[5, 6, EOS], &[7, EOS]);
        let b = ex(&[8, EOS], &[9, 10, 11, EOS]);
        let batch = Batch::from_examples(&[&a, &b], vec![3, 1]);
        assert_eq!(batch.size, 2);
        assert_eq!(batch.src_len, 3);
        assert_eq!(batch.src, vec![5, 6, EOS, 8, EOS, PAD]);
        assert_eq!(batch.src_lengths, vec![3, 2]);
        assert_eq!(batch.tgt_len, 4);
        assert_eq!(batch.tgt_in, vec![BOS, 7, PAD, PAD, BOS, 9, 10, 11]);
        assert_eq!(batch.tgt_out, vec![7, EOS, PAD, PAD, 9, 10, 11, EOS]);
        assert_eq!(batch.tgt_lengths, vec![2, 4]);
        assert_eq!(batch.target_tokens(), 6);
        assert_eq!(batch.indices, vec![3, 1]);
    }

    #[test]
    fn rows_keep_the_padding_and_partition_the_batch() {
        let (a, b, c) = (ex(&[5, 6, EOS], &[7, EOS]), ex(&[8, EOS], &[9, 10, 11, EOS]), ex(&[4, EOS], &[3, EOS]));
        let batch = Batch::from_examples(&[&a, &b, &c], vec![0, 1, 2]);
        let (top, bottom) = (batch.rows(0..1), batch.rows(1..3));
        assert_eq!((top.size, top.src_len, top.tgt_len), (1, 3, 4));
        assert_eq!(top.src, vec![5, 6, EOS]);
        assert_eq!(top.tgt_out, vec![7, EOS, PAD, PAD]);
        assert_eq!(bottom.src, batch.src[3..].to_vec());
        assert_eq!(bottom.tgt_in, batch.tgt_in[4..].to_vec());
        assert_eq!(top.target_tokens() + bottom.target_tokens(), batch.target_tokens());
        assert_eq!(bottom.indices, vec![1, 2]);
        for ranks in 1..6 {
            let shares: Vec<RowShare> = (0..ranks).map(|r| RowShare::of(r, ranks, 3)).collect();
            assert_eq!(shares.iter().map(|s| s.len).sum::<usize>(), 3);
            assert!(shares.windows(2).all(|w| w[0].start + w[0].len == w[1].start));
        }
        // More ranks than rows: an empty share, not a panic.
        assert_eq!(batch.rows(3..3).size, 0);
        assert_eq!(batch.rows(2..9).size, 1);
    }

    #[test]
    fn zero_limits_do_not_loop_or_drop() {
        let cfg = BatchConfig { max_tokens: 0, max_sentences: 0 };
        let exs = vec![ex(&[EOS], &[EOS]); 5];
        let batches = epoch_batches(&exs, &cfg, 1, 0);
        assert_eq!(batches.len(), 5);
        assert!(epoch_batches(&[], &cfg, 1, 0).is_empty());
    }

    #[test]
    fn inference_batches_have_empty_targets() {
        let srcs = vec![vec![4, 5, EOS], vec![EOS], vec![4, EOS]];
        let batches = inference_batches(&srcs, &BatchConfig::default());
        assert_eq!(batches.len(), 1);
        let b = &batches[0];
        assert_eq!(b.indices, vec![1, 2, 0]);
        assert_eq!(b.tgt_len, 0);
        assert!(b.tgt_in.is_empty() && b.tgt_out.is_empty());
        assert_eq!(b.target_tokens(), 0);
        assert_eq!(b.src, vec![EOS, PAD, PAD, 4, EOS, PAD, 4, 5, EOS]);
    }
}
