//! Checkpoint averaging: the element-wise mean of the weights of several saved models of one
//! run (Junczys-Dowmunt et al. 2016; Vaswani et al. 2017 average the last checkpoints). Late in
//! training the weights wander around a minimum; their mean usually sits closer to it than any
//! one of them, which is worth a little BLEU for free.
//!
//! Training keeps the last `train.average_last` validations' weights in `MODEL_DIR/snapshots/`
//! and writes their mean to `model.avg.safetensors` at the end; `nmt average` averages any
//! model files of one configuration by hand.
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};

use crate::error::{Error, Result};
use crate::model::Seq2Seq;
use crate::model_file::{self, LoadedModel, ModelMeta};

/// Saves this validation's weights as `dir/step-NNNNNNNN.safetensors` and deletes all but the
/// newest `keep` snapshots.
pub fn keep_snapshot(dir: &Path, model: &Seq2Seq, meta: &ModelMeta, keep: usize) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    model_file::save(&dir.join(format!("step-{:08}.safetensors", meta.step)), model, meta)?;
    let all = snapshots(dir)?;
    for old in &all[..all.len().saturating_sub(keep)] {
        std::fs::remove_file(old).map_err(|e| Error::io(old, e))?;
    }
    Ok(())
}

/// The snapshots in `dir`, oldest first (the zero-padded step orders them by name).
pub fn snapshots(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("step-") && name.ends_with(".safetensors") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Averages the weights of `inputs` (model files or checkpoints of one configuration) into a
/// model with the first file's vocabularies and settings. Files are read one at a time.
pub fn average(inputs: &[PathBuf]) -> Result<LoadedModel> {
    let (first, rest) = inputs.split_first().ok_or_else(|| Error::Input("nothing to average: no model files given".into()))?;
    // f64 accumulators, so the mean of many f32 files loses nothing to rounding.
    let acc = model_file::load(first, DType::F64, &Device::Cpu)?;
    let vars = acc.model.params.named_vars();
    for path in rest {
        let other = model_file::load(path, DType::F64, &Device::Cpu)?;
        let same_vocab = other.meta.src.to_json()? == acc.meta.src.to_json()? && other.meta.tgt.to_json()? == acc.meta.tgt.to_json()?;
        if other.meta.config != acc.meta.config || !same_vocab {
            return Err(Error::ModelFile {
                path: path.clone(),
                reason: format!(
                    "its configuration or vocabularies differ from {}: only models of one run can be averaged",
                    first.display()
                ),
            });
        }
        for ((name, var), (name2, var2)) in vars.iter().zip(other.model.params.named_vars()) {
            if *name != name2 {
                return Err(Error::ModelFile { path: path.clone(), reason: format!("parameter {name2} where {name} was expected") });
            }
            var.set(&(var.as_tensor() + var2.as_tensor())?)?;
        }
    }
    let n = inputs.len() as f64;
    for (_, var) in &vars {
        var.set(&(var.as_tensor() / n)?)?;
    }
    // Back to f32, the precision models are trained and saved in.
    let tensors = vars.iter().map(|(k, v)| Ok((k.clone(), v.as_tensor().to_dtype(DType::F32)?))).collect::<Result<_>>()?;
    let params = crate::model::params::Params::from_tensors(tensors, DType::F32, &Device::Cpu);
    let model = Seq2Seq::build(&acc.meta.config, params)?;
    Ok(LoadedModel { model, meta: acc.meta })
}

/// [`average`], written atomically to `output`.
pub fn average_to(inputs: &[PathBuf], output: &Path) -> Result<()> {
    let avg = average(inputs)?;
    model_file::save(output, &avg.model, &avg.meta)
}
