//! The machine-readable training log: one JSON object per line in `MODEL_DIR/train_log.jsonl`.
//! Every line has `step`; training lines have `loss` (token-weighted mean since the last line),
//! `tok_per_s`, `grad_norm`; validation lines have `dev_ppl`, `dev_loss`, `dev_bleu`, the
//! learning rate `lr` and the validation's own cost `valid_s`.
//! `nmt plot curves` draws it.
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

/// Appends JSON lines to a file (created if missing; a resumed run appends).
pub struct JsonlLog {
    path: PathBuf,
}

impl JsonlLog {
    pub fn new(path: &Path) -> Self {
        JsonlLog { path: path.to_path_buf() }
    }

    /// Appends `record` as one line; returns it as written, for [`Progress::on_log`].
    ///
    /// [`Progress::on_log`]: super::Progress::on_log
    pub fn append<T: Serialize>(&self, record: &T) -> Result<serde_json::Value> {
        let line = serde_json::to_string(record).map_err(|e| Error::Input(e.to_string()))?;
        let mut f = OpenOptions::new().create(true).append(true).open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        writeln!(f, "{line}").map_err(|e| Error::io(&self.path, e))?;
        serde_json::to_value(record).map_err(|e| Error::Input(e.to_string()))
    }
}

/// A training-loss line.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct TrainRecord {
    pub step: u64,
    pub epoch: u64,
    pub loss: f64,
    pub tok_per_s: f64,
    pub grad_norm: f64,
    pub elapsed_s: f64,
    /// The mean size of the candidate lists `|V′|` since the last line (`train.candidates`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<f64>,
}

/// A validation line.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ValidRecord {
    pub step: u64,
    pub epoch: u64,
    pub dev_loss: f64,
    pub dev_ppl: f64,
    pub dev_bleu: f64,
    pub best: bool,
    pub elapsed_s: f64,
    /// Learning rate after this validation (decay may have lowered it).
    #[serde(default)]
    pub lr: f64,
    /// Seconds this validation took (dev loss + search + BLEU).
    #[serde(default)]
    pub valid_s: f64,
}
