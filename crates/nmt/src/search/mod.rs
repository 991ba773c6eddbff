//! Search: one beam loop (`beam.rs`; greedy is beam 1) over a [`Scorer`] (`scorer.rs`), and
//! [`Searcher`], the one entry point, which picks the scorer: the fused host snapshots of the
//! models (`model/snapshot.rs`) where they can run, else the candle models, one model or an ensemble
//! (`ensemble.rs`) alike.
//!
//! The types every search shares (hypotheses, options, length normalisation) live in
//! `hypothesis.rs` and are re-exported here; the beam bookkeeping is `beams.rs`.
pub mod beam;
mod beams;
mod candle;
pub mod ensemble;
mod host;
pub(crate) mod hypothesis;
pub mod scorer;

use std::borrow::Borrow;
use std::sync::{Arc, OnceLock};

use nmt_data::batch::Batch;
use nmt_data::Shortlist;

pub use self::ensemble::Ensemble;
pub use self::scorer::Scorer;
use crate::config::Impl;
use crate::error::Result;
use crate::model::snapshot::HostModel;
use crate::model::Seq2Seq;
pub use hypothesis::{max_output_len, normalized, take_row_steps, Hypothesis, SearchOptions};

/// Up to this many threads, [`Searcher::search`] runs its batches one after another, each
/// batch's steps split across the threads: on 2 cores that was the measured speed (docs/PERF.md)
/// and it stays so. More threads also take whole batches.
const SERIAL_THREADS: usize = 2;

/// One model or an ensemble (`models[0]` sets the reading order and the defaults; the models
/// share both vocabularies) ready to search: it holds the host snapshots the fused search runs
/// on, built on the first search that can use them (`--impl fused`, every model `f32` on the
/// CPU) and kept, since building them copies the weights.
///
/// `M` is `Seq2Seq` for a searcher that owns its models ([`crate::translate::Translator`]) or
/// `&Seq2Seq` for one that borrows them (the trainer's validation).
pub struct Searcher<M = Seq2Seq> {
    models: Vec<M>,
    hosts: OnceLock<Option<Vec<HostModel>>>,
    /// The same with the output projection in int8 (`SearchConfig::int8`).
    hosts_int8: OnceLock<Option<Vec<HostModel>>>,
    /// The lead model's lexical shortlist, for searches that ask for it.
    shortlist: Option<Arc<Shortlist>>,
}

impl<M: Borrow<Seq2Seq>> Searcher<M> {
    /// A searcher for `models` (at least one).
    pub fn new(models: Vec<M>) -> Result<Self> {
        if models.is_empty() {
            return Err(crate::error::Error::Input("a search needs at least one model".into()));
        }
        Ok(Searcher { models, hosts: OnceLock::new(), hosts_int8: OnceLock::new(), shortlist: None })
    }

    /// The lexical shortlist that `SearchConfig::shortlist` searches score (the lead model
    /// file's, [`crate::model_file::ModelMeta::shortlist`]).
    pub fn with_shortlist(mut self, shortlist: Option<Arc<Shortlist>>) -> Self {
        self.shortlist = shortlist;
        self
    }

    /// Whether a shortlist is there for `SearchConfig::shortlist`.
    pub fn has_shortlist(&self) -> bool {
        self.shortlist.is_some()
    }

    /// The batch's shortlist when the search asks for one.
    fn batch_shortlist(&self, batch: &Batch, opts: &SearchOptions) -> Result<Option<Vec<u32>>> {
        if !opts.cfg.shortlist {
            return Ok(None);
        }
        let Some(sl) = &self.shortlist else {
            return Err(crate::error::Error::Input("the model file has no lexical shortlist: add one with `nmt shortlist`".into()));
        };
        if self.models().iter().any(|m| m.cfg.copy()) {
            // A copy model exists to emit source words, which a shortlist would cut.
            return Err(crate::error::Error::Input("a lexical shortlist does not apply to copy models".into()));
        }
        let c = sl.candidates(&batch.src);
        Ok(Some(c))
    }

    /// Every model, the lead first.
    pub fn models(&self) -> Vec<&Seq2Seq> {
        self.models.iter().map(<M as Borrow<Seq2Seq>>::borrow).collect()
    }

    /// The lead model: its reading order and search defaults are the ensemble's.
    pub fn lead(&self) -> &Seq2Seq {
        <M as Borrow<Seq2Seq>>::borrow(&self.models[0])
    }

    /// The host snapshots when `imp` is `Fused` and every model can run on them, in int8
    /// when `int8`.
    fn hosts(&self, imp: Impl, int8: bool) -> Result<Option<&[HostModel]>> {
        if imp != Impl::Fused {
            return Ok(None);
        }
        let cell = if int8 { &self.hosts_int8 } else { &self.hosts };
        if let Some(h) = cell.get() {
            return Ok(h.as_deref());
        }
        let models = self.models();
        let built = if models.iter().all(|m| HostModel::supports(m)) {
            let host = |m: &&Seq2Seq| match int8 {
                true => HostModel::new(&crate::quantize::quantized_model(m)?, true),
                false => HostModel::new(m, false),
            };
            Some(models.iter().map(host).collect::<Result<Vec<_>>>()?)
        } else {
            None
        };
        Ok(cell.get_or_init(|| built).as_deref())
    }

    /// Searches one batch (sources in the lead model's reading order; a copy model's extended
    /// ids in `batch.src_ext`): up to `n_best` hypotheses per row, best first, in the batch's
    /// row order. Alignments are over the lead model's reading order.
    pub fn search_batch(&self, batch: &Batch, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>> {
        if self.models().iter().any(|m| m.cfg.copy()) && batch.src_ext.is_empty() {
            return Err(crate::error::Error::Input("a copy model needs each source's extended ids".into()));
        }
        let shortlist = self.batch_shortlist(batch, opts)?;
        let shortlist = shortlist.as_deref();
        match self.hosts(opts.imp, opts.cfg.int8)? {
            Some(h) => beam::search(&Ensemble::new(h.iter().collect())?, batch, shortlist, opts),
            None => beam::search(&Ensemble::new(self.models())?, batch, shortlist, opts),
        }
    }

    /// Translates many source id sequences (each ending with `</s>`, in the lead model's
    /// reading order): sorted by length into batches of `opts.cfg.batch_size` sentences and
    /// returned in the input order. `exts[i]` is source `i` in a copy model's extended target
    /// space (`nmt_data::copy`); hypotheses may then hold its extended ids.
    ///
    /// On the host path with more than `SERIAL_THREADS` threads, batches are searched
    /// concurrently (rayon's tasks; each batch still splits its own products): one batch's
    /// steps are too small to keep 16 threads busy. A batch's hypotheses do not depend on the
    /// thread count or on what runs beside it (`tests/shortlist.rs`), so the output is the same.
    pub fn search(&self, srcs: &[Vec<u32>], exts: Option<&[Vec<u32>]>, opts: &SearchOptions) -> Result<Vec<Vec<Hypothesis>>>
    where
        M: Sync,
    {
        use rayon::prelude::*;
        let per = opts.cfg.batch_size.max(1);
        // The beam multiplies rows; keep `rows × src_len` near what one batch of `per` sentences holds.
        let cfg = nmt_data::BatchConfig { max_tokens: per * 100, max_sentences: per };
        let mut batches = nmt_data::inference_batches(srcs, &cfg);
        if let Some(e) = exts {
            batches.iter_mut().for_each(|b| b.set_source_ext(e));
        }
        let concurrent = rayon::current_num_threads() > SERIAL_THREADS && self.hosts(opts.imp, opts.cfg.int8)?.is_some();
        let found: Vec<Vec<Vec<Hypothesis>>> = match concurrent {
            true => batches.par_iter().map(|b| self.search_batch(b, opts)).collect::<Result<_>>()?,
            false => batches.iter().map(|b| self.search_batch(b, opts)).collect::<Result<_>>()?,
        };
        let mut out: Vec<Vec<Hypothesis>> = vec![Vec::new(); srcs.len()];
        for (batch, hyps) in batches.iter().zip(found) {
            for (&row, h) in batch.indices.iter().zip(hyps) {
                out[row] = h;
            }
        }
        Ok(out)
    }
}
