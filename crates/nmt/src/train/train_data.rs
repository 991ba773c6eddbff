//! The training data as training sees it: a prepared directory (`nmt prepare`), opened and
//! verified, from which each batch is read when it is due.
//!
//! `nmt train --data DIR` names the directory. Given text, training prepares it into
//! `MODEL_DIR/data` first (rank 0; the other ranks wait and map the result) and reuses it on
//! the next run while the config's `[data]` and the files are unchanged, so resuming a run of
//! millions of pairs starts at once. A resumed model keeps its vocabularies: the directory is
//! then encoded with the checkpoint's segmenters.
use std::path::{Path, PathBuf};

use nmt_data::batch::{Batch, RowShare};
use nmt_data::shards::{prepare, Manifest, Prepared, MANIFEST};
use nmt_data::subword::Segmenter;
use nmt_data::{BatchConfig, EpochPlan, Example};

use super::collective::Collective;
use super::progress::Progress;
use crate::config::{Config, ModelConfig};
use crate::error::Result;

/// The training pairs, mapped.
pub(super) struct TrainData {
    prepared: Prepared,
}

/// Where the prepared data of a run lives and whether it must be made.
pub(super) struct DataSource<'a> {
    /// `--data DIR`, or `None` to prepare the config's text into `model_dir/data`.
    pub given: Option<&'a Path>,
    pub model_dir: &'a Path,
    /// The checkpoint's segmenters when resuming.
    pub segmenters: Option<(Segmenter, Segmenter)>,
}

impl TrainData {
    /// Opens (making it first when needed) the run's prepared directory.
    pub fn open(cfg: &Config, src: DataSource, c: &dyn Collective, ui: &mut dyn Progress) -> Result<Self> {
        let dir = match src.given {
            Some(dir) => dir.to_path_buf(),
            None => {
                let dir = prepared_dir(src.model_dir);
                if c.rank() == 0 {
                    prepare_if_stale(cfg, &dir, src.segmenters, ui)?;
                }
                c.barrier()?;
                dir
            }
        };
        let prepared = Prepared::open(&dir)?;
        let m = prepared.manifest();
        if m.spec.encoding.copy != cfg.model.copy() {
            let reason = format!(
                "prepared {} copy-model ids, but model.copy = {}: prepare it again with this config",
                if m.spec.encoding.copy { "with" } else { "without" },
                cfg.model.copy()
            );
            return Err(nmt_data::Error::Prepared { path: dir.join(MANIFEST), reason }.into());
        }
        let sum = |f: fn(&nmt_data::shards::CorpusRange) -> u64| m.corpora.iter().map(f).sum::<u64>();
        ui.on_message(&format!(
            "training data: {} pairs in {} ({} empty and {} over-long skipped, {} over {} subwords)",
            m.pairs,
            dir.display(),
            sum(|r| r.skipped_empty),
            sum(|r| r.skipped_long),
            sum(|r| r.skipped_subwords),
            m.spec.encoding.max_len
        ));
        Ok(TrainData { prepared })
    }

    /// The segmenters the pairs were encoded with.
    pub fn segmenters(&self) -> (&Segmenter, &Segmenter) {
        self.prepared.segmenters()
    }

    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    pub fn dir(&self) -> &Path {
        self.prepared.dir()
    }

    /// Epoch `epoch`'s batches as pair ids ([`EpochPlan`]).
    pub fn plan(&self, cfg: &BatchConfig, seed: u64, epoch: u64) -> EpochPlan {
        EpochPlan::new(&self.prepared.weighted(), |i| self.prepared.lengths(i), cfg, seed, epoch)
    }

    /// The target tokens of the batch `ids` (from the index: no tokens read).
    pub fn target_tokens(&self, ids: &[u32]) -> usize {
        ids.iter().map(|&i| self.prepared.lengths(i as usize).1).sum()
    }

    /// This rank's `share` of the batch `ids`, padded as the whole batch is, with the model's
    /// source order applied: only the share's tokens are read.
    pub fn batch(&self, ids: &[u32], share: RowShare, model: &ModelConfig) -> Result<Batch> {
        let (mut src_len, mut tgt_len) = (0, 0);
        for &i in ids {
            let (s, t) = self.prepared.lengths(i as usize);
            (src_len, tgt_len) = (src_len.max(s), tgt_len.max(t));
        }
        let mine = &ids[share.range()];
        let (mut examples, mut exts) = (Vec::with_capacity(mine.len()), Vec::new());
        for &i in mine {
            let mut p = self.prepared.pair(i as usize)?;
            model.order_source(&mut p.src);
            model.order_source(&mut p.src_ext);
            examples.push(Example { src: p.src, tgt: p.tgt });
            exts.push(p.src_ext);
        }
        let rows: Vec<&Example> = examples.iter().collect();
        let mut batch = Batch::padded(&rows, mine.iter().map(|&i| i as usize).collect(), src_len, tgt_len);
        if model.copy() {
            batch.fill_source_ext(&exts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        }
        Ok(batch)
    }
}

/// Prepares `dir` unless it holds a complete preparation of the same spec (and, when
/// resuming, the same vocabularies).
fn prepare_if_stale(cfg: &Config, dir: &Path, segmenters: Option<(Segmenter, Segmenter)>, ui: &mut dyn Progress) -> Result<()> {
    let opts = cfg.data.prepare_options(cfg.model.copy())?;
    let spec = opts.spec()?;
    let same_segmenters = |m: &Manifest| -> bool {
        let Some((s, t)) = &segmenters else { return true };
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        read(&m.src_segmenter.name) == s.to_json().ok() && read(&m.tgt_segmenter.name) == t.to_json().ok()
    };
    if let Ok(m) = Manifest::read(dir) {
        if m.spec == spec && same_segmenters(&m) {
            ui.on_message(&format!("reusing the prepared training data in {}", dir.display()));
            return Ok(());
        }
        ui.on_message(&format!("the prepared data in {} was made from other inputs: preparing again", dir.display()));
    }
    ui.on_message(&format!("preparing the training data into {}", dir.display()));
    let began = std::time::Instant::now();
    let m = prepare(&opts, dir, segmenters, &mut |msg| tracing::debug!("{msg}"))?;
    ui.on_message(&format!("prepared {} pairs in {:.1} s", m.pairs, began.elapsed().as_secs_f64()));
    Ok(())
}

/// Where `nmt train` puts the prepared data of a model directory.
fn prepared_dir(model_dir: &Path) -> PathBuf {
    model_dir.join("data")
}
