//! Configuration: one TOML file with `[model]`, `[data]`, `[train]` and `[search]` tables.
//!
//! Every key has a default, so a config file holds only what differs. `[model] preset = "…"`
//! fills the model table from a named preset (the papers' sizes or small CPU sizes) before the
//! file's own keys are applied; `--set section.key=value` on the command line is applied last.
//! The resolved [`ModelConfig`] is stored in every model file, so a model is self-describing.
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod arch;
mod checks;
mod data;
mod model;
mod output_keys;
mod presets;
mod search;
mod train;
pub use arch::{Arch, ArchName, DecoderKind, EncoderKind, StartState};
pub use data::{CorpusEntry, DataConfig, TrainInput};
pub use model::{Cell, CellKind, GruForm, Impl, ModelConfig, StackKind, WeightInit};
pub use output_keys::{OutputLayer, OutputState};
pub use search::{SearchConfig, SearchRequest, MAX_BEAM};
pub use train::{CandidatesConfig, Optimizer, Precision, Proposal, TrainConfig};

/// A whole run's configuration, as read from TOML.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub model: ModelConfig,
    #[serde(default)]
    pub data: DataConfig,
    #[serde(default)]
    pub train: TrainConfig,
    #[serde(default)]
    pub search: SearchConfig,
}

impl Config {
    /// Reads a TOML file; relative data paths are taken relative to the file's folder.
    pub fn from_file(path: &Path, overrides: &[String]) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        // The file's name before the message, once: "invalid configuration: FILE: …".
        let mut cfg = Self::from_toml_str(&text, overrides).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            other => other,
        })?;
        cfg.data.resolve_paths(path.parent().unwrap_or(Path::new(".")));
        Ok(cfg)
    }

    /// Parses TOML text, expanding `[model] preset` and applying `section.key=value` overrides.
    pub fn from_toml_str(text: &str, overrides: &[String]) -> Result<Self> {
        let mut root: toml::Table = toml::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        for o in overrides {
            apply_override(&mut root, o)?;
        }
        let model = root.entry("model").or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let model = model.as_table_mut().ok_or_else(|| Error::Config("[model] must be a table".into()))?;
        let preset = match model.get("preset") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => return Err(Error::Config("model.preset must be a string".into())),
            None => "rnnsearch-small".to_string(),
        };
        let defaults = toml::Table::try_from(ModelConfig::preset(&preset)?).map_err(|e| Error::Config(e.to_string()))?;
        for (k, v) in defaults {
            model.entry(k).or_insert(v);
        }
        let cfg: Config = toml::Value::Table(root).try_into().map_err(|e: toml::de::Error| Error::Config(e.to_string()))?;
        cfg.model.validate()?;
        cfg.train.validate()?;
        Ok(cfg)
    }
}

/// Applies one `section.key=value` (value in TOML syntax; bare words are taken as strings).
fn apply_override(root: &mut toml::Table, spec: &str) -> Result<()> {
    let (key, value) = spec.split_once('=').ok_or_else(|| Error::Config(format!("override {spec:?} is not KEY=VALUE")))?;
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(value.to_string())),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let mut parts: Vec<&str> = key.trim().split('.').collect();
    let last = parts.pop().filter(|s| !s.is_empty());
    let last = last.ok_or_else(|| Error::Config(format!("override {spec:?} has an empty key")))?;
    let mut table = root;
    for p in parts {
        let entry = table.entry(p).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        // A switch (`train.candidates = false` or `true`) given a field is a table again, so that
        // a later `--set` overrides an earlier one (`scripts/recipe-minutes.sh` turns a config's
        // list off, then a run's `--set train.candidates.frequent=…` turns it on).
        if entry.is_bool() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        table = entry.as_table_mut().ok_or_else(|| Error::Config(format!("override {spec:?}: {p} is not a table")))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}
