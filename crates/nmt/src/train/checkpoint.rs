//! Training checkpoints: one atomic safetensors file holding the weights, the optimizer moments
//! (`opt.…` tensors) and, in its metadata, the model file's metadata plus [`TrainProgress`].
//!
//! One file rather than weights + a sibling state file: a single rename is atomic, so a crash or
//! Ctrl-C can never leave weights and optimizer state from different steps. The checkpoint is
//! also a valid model file (`nmt translate -m checkpoint.safetensors` ignores the state).
use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use super::optim::Optimizer;
use crate::error::{Error, Result};
use crate::model::Seq2Seq;
use crate::model_file::{self, LoadedModel, ModelMeta};

/// Where training stands; with the seed this fixes the rest of the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TrainProgress {
    /// Updates done.
    pub step: u64,
    /// Current epoch (0-based) and the index of the next batch in it.
    pub epoch: u64,
    pub batch_in_epoch: usize,
    /// Best dev BLEU so far, its step, and validations since it improved.
    pub best_bleu: Option<f64>,
    pub best_step: u64,
    pub bad_validations: u32,
    /// Learning-rate decay: the current factor on `train.lr` and validations since the last
    /// improvement or decay (older checkpoints: 1 and 0).
    #[serde(default = "one")]
    pub lr_scale: f64,
    #[serde(default)]
    pub lr_bad_validations: u32,
    /// Training seconds across all runs of this model directory.
    pub elapsed_s: f64,
}

impl Default for TrainProgress {
    fn default() -> Self {
        TrainProgress {
            step: 0,
            epoch: 0,
            batch_in_epoch: 0,
            best_bleu: None,
            best_step: 0,
            bad_validations: 0,
            lr_scale: 1.0,
            lr_bad_validations: 0,
            elapsed_s: 0.0,
        }
    }
}

fn one() -> f64 {
    1.0
}

const PROGRESS_KEY: &str = "train_progress";

/// Writes the checkpoint atomically.
pub fn save(path: &Path, model: &Seq2Seq, meta: &ModelMeta, opt: &Optimizer, progress: &TrainProgress) -> Result<()> {
    let mut tensors = model_file::model_tensors(model);
    tensors.extend(opt.state_tensors()?);
    let mut m = model_file::meta_map(meta)?;
    m.insert(PROGRESS_KEY.to_string(), serde_json::to_string(progress).map_err(|e| Error::Input(e.to_string()))?);
    model_file::write_atomic(path, &model_file::to_safetensors(&tensors, m)?)
}

/// A checkpoint as read back.
pub struct Checkpoint {
    pub loaded: LoadedModel,
    pub opt_state: BTreeMap<String, Tensor>,
    pub progress: TrainProgress,
}

pub fn load(path: &Path, dtype: DType, device: &Device) -> Result<Checkpoint> {
    let (loaded, opt_state, raw) = model_file::load_parts(path, dtype, device)?;
    let progress = raw
        .get(PROGRESS_KEY)
        .ok_or_else(|| Error::ModelFile { path: path.to_path_buf(), reason: "no training progress: not a checkpoint".into() })
        .and_then(|s| {
            serde_json::from_str(s).map_err(|e| Error::ModelFile { path: path.to_path_buf(), reason: format!("training progress: {e}") })
        })?;
    Ok(Checkpoint { loaded, opt_state, progress })
}
