//! The self-describing model file: one safetensors file holding the weights, with the model
//! config, the default search settings and both subword models in its metadata, so
//! `nmt translate -m model.safetensors` needs nothing else.
//!
//! Writes are atomic: the bytes go to `NAME.tmp` in the same folder, are flushed to disk, and the
//! file is renamed over `NAME`; an interrupted write never leaves a half-written model.
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use std::sync::Arc;

use nmt_data::subword::Segmenter;
use nmt_data::Shortlist;
use safetensors::SafeTensors;

use crate::config::{ModelConfig, SearchConfig};
use crate::error::{Error, Result};
use crate::model::params::Params;
use crate::model::Seq2Seq;
use crate::model_checksum;

/// The format tags (`nmt-model/2`, with the whole file's checksum; `nmt-model/1`, still read).
pub use crate::model_checksum::{FORMAT, FORMAT_V1};

/// Everything a model file holds besides the weights.
#[derive(Clone, Debug)]
pub struct ModelMeta {
    pub config: ModelConfig,
    pub search: SearchConfig,
    pub src: Segmenter,
    pub tgt: Segmenter,
    /// Training updates done when the file was written.
    pub step: u64,
    /// The language pair (`[data] src_lang`/`tgt_lang`, or the training files' extensions);
    /// `None` when unknown (and in files written before it was stored).
    pub languages: Option<crate::languages::Languages>,
    /// The lexical shortlist (`nmt shortlist`, or the end of training), stored as the tensors
    /// [`SHORTLIST_PREFIX`]`cands` `(K_x, k)` and `…frequent` `(N)`, both `u32`.
    pub shortlist: Option<Arc<Shortlist>>,
    /// Where a converted model came from (`nmt convert`: "Marian v1.12.42 … s2s: PATH"),
    /// kept through every rewrite (`nmt shortlist`, `nmt quantize`); `None` for nmt's own.
    pub converted_from: Option<String>,
}

/// A loaded model: network + segmenters + search defaults.
pub struct LoadedModel {
    pub model: Seq2Seq,
    pub meta: ModelMeta,
}

/// Writes `bytes` to `path` with the one output writer: atomically (temp file in the same
/// folder, fsync, rename) for a regular or new file, in place for a FIFO or device, through a
/// symbolic link to its target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    nmt_data::output::write_whole(path, bytes).map_err(|e| Error::io(path, e))
}

/// Metadata key naming where a converted model came from ([`ModelMeta::converted_from`]).
pub const CONVERTED_FROM_KEY: &str = "converted_from";

/// Metadata key of the CRC-32 of the tensor data (hex); the whole file's is
/// [`model_checksum::FILE_KEY`].
pub const CHECKSUM_KEY: &str = model_checksum::DATA_KEY;

/// Serialises named tensors with string metadata into safetensors bytes, with the data's and
/// the whole file's checksums added to the metadata (`crate::model_checksum`).
pub fn to_safetensors(tensors: &[(String, Tensor)], mut meta: HashMap<String, String>) -> Result<Vec<u8>> {
    let data: Vec<(String, &Tensor)> = tensors.iter().map(|(k, t)| (k.clone(), t)).collect();
    // An older file rewritten (`nmt shortlist`) now carries the whole file's checksum.
    if meta.get("format").is_some_and(|f| f == FORMAT_V1) {
        meta.insert("format".to_string(), FORMAT.to_string());
    }
    // The header holds placeholders of the checksums' width; once the bytes are laid out, the
    // CRCs are written over them (same length: no offset moves).
    meta.insert(model_checksum::DATA_KEY.to_string(), model_checksum::PLACEHOLDER.to_string());
    meta.insert(model_checksum::FILE_KEY.to_string(), model_checksum::PLACEHOLDER.to_string());
    let mut bytes = safetensors::serialize(data, Some(meta)).map_err(|e| Error::Input(format!("cannot serialise tensors: {e}")))?;
    model_checksum::seal(&mut bytes)?;
    Ok(bytes)
}

/// Parses a safetensors file's bytes: its tensors (on `device`) and metadata. A truncated
/// file, a damaged header and (for files that carry one) a checksum that does not match the
/// data are errors naming the file (`path`).
pub fn parse_safetensors(bytes: &[u8], path: &Path, device: &Device) -> Result<(BTreeMap<String, Tensor>, HashMap<String, String>)> {
    let bad = |reason: String| Error::ModelFile { path: path.to_path_buf(), reason };
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("{e} (truncated or damaged?)")))?;
    let meta = header.metadata().clone().unwrap_or_default();
    if model_checksum::verify(bytes, &meta).map_err(bad)? == model_checksum::Checked::DataOnly {
        tracing::warn!(
            "{}: an older model file ({FORMAT_V1}): its checksum covers the tensor data only, not its header and metadata; \
             rewrite it (e.g. `nmt average -o NEW {}`) to have the whole file checked",
            path.display(),
            path.display()
        );
    }
    let tensors = candle_core::safetensors::load_buffer(bytes, device).map_err(|e| bad(format!("{e} (truncated or damaged?)")))?;
    Ok((tensors.into_iter().collect(), meta))
}

/// The metadata map of a model file.
pub fn meta_map(meta: &ModelMeta) -> Result<HashMap<String, String>> {
    let json = |v: &dyn erased::Json| v.to_json();
    let mut m = HashMap::new();
    m.insert("format".to_string(), FORMAT.to_string());
    m.insert("config".to_string(), json(&meta.config)?);
    m.insert("search".to_string(), json(&meta.search)?);
    m.insert("src_subword".to_string(), meta.src.to_json()?);
    m.insert("tgt_subword".to_string(), meta.tgt.to_json()?);
    m.insert("step".to_string(), meta.step.to_string());
    if let Some(l) = &meta.languages {
        m.insert("languages".to_string(), json(l)?);
    }
    m.insert("created_by".to_string(), format!("nmt {}", env!("CARGO_PKG_VERSION")));
    if let Some(c) = &meta.converted_from {
        m.insert(CONVERTED_FROM_KEY.to_string(), c.clone());
    }
    Ok(m)
}

/// The model's parameters by name.
pub fn model_tensors(model: &Seq2Seq) -> Vec<(String, Tensor)> {
    model.params.named_vars().into_iter().map(|(k, v)| (k, v.as_tensor().clone())).collect()
}

/// Saves a model with its metadata (and shortlist).
pub fn save(path: &Path, model: &Seq2Seq, meta: &ModelMeta) -> Result<()> {
    save_tensors(path, model_tensors(model), meta).map(drop)
}

/// Saves named weight tensors (a model's, or their int8 form, `crate::quantize`) with `meta`
/// and its shortlist; returns the file's size in bytes.
pub fn save_tensors(path: &Path, mut tensors: Vec<(String, Tensor)>, meta: &ModelMeta) -> Result<usize> {
    if let Some(sl) = &meta.shortlist {
        tensors.extend(shortlist_tensors(sl)?);
    }
    let bytes = to_safetensors(&tensors, meta_map(meta)?)?;
    write_atomic(path, &bytes)?;
    Ok(bytes.len())
}

/// Tensors whose names start with this hold the lexical shortlist.
pub const SHORTLIST_PREFIX: &str = "shortlist.";

/// A shortlist as the model file stores it.
pub fn shortlist_tensors(sl: &Shortlist) -> Result<Vec<(String, Tensor)>> {
    let (k, cands, frequent) = sl.parts();
    let dev = Device::Cpu;
    Ok(vec![
        (format!("{SHORTLIST_PREFIX}cands"), Tensor::from_slice(cands, (cands.len() / k.max(1), k), &dev)?),
        (format!("{SHORTLIST_PREFIX}frequent"), Tensor::from_slice(frequent, frequent.len(), &dev)?),
    ])
}

/// Takes a model file's shortlist tensors out of `tensors` (`None` when it has none).
fn take_shortlist(tensors: &mut BTreeMap<String, Tensor>, cfg: &ModelConfig, path: &Path) -> Result<Option<Arc<Shortlist>>> {
    let bad = |reason: String| Error::ModelFile { path: path.to_path_buf(), reason };
    let (Some(cands), Some(frequent)) =
        (tensors.remove(&format!("{SHORTLIST_PREFIX}cands")), tensors.remove(&format!("{SHORTLIST_PREFIX}frequent")))
    else {
        return Ok(None);
    };
    let ids = |t: &Tensor| -> Result<Vec<u32>> { t.flatten_all()?.to_dtype(DType::U32)?.to_vec1::<u32>().map_err(Into::into) };
    let k = cands.dims().get(1).copied().ok_or_else(|| bad("shortlist.cands is not a matrix".into()))?;
    let sl = Shortlist::from_parts(k, ids(&cands)?, ids(&frequent)?, cfg.src_vocab, cfg.tgt_vocab).map_err(|e| bad(e.to_string()))?;
    Ok(Some(Arc::new(sl)))
}

/// Reads only the metadata of a model file.
pub fn read_meta(meta: &HashMap<String, String>, path: &Path) -> Result<ModelMeta> {
    let bad = |reason: String| Error::ModelFile { path: path.to_path_buf(), reason };
    let get = |k: &str| meta.get(k).ok_or_else(|| bad(format!("metadata key {k:?} is missing")));
    let format = get("format")?;
    if format != FORMAT && format != FORMAT_V1 {
        return Err(bad(format!("format {format:?}, this program reads {FORMAT:?} and {FORMAT_V1:?}")));
    }
    Ok(ModelMeta {
        config: serde_json::from_str(get("config")?).map_err(|e| bad(format!("config: {e}")))?,
        search: serde_json::from_str(get("search")?).map_err(|e| bad(format!("search: {e}")))?,
        src: Segmenter::from_json(get("src_subword")?)?,
        tgt: Segmenter::from_json(get("tgt_subword")?)?,
        step: get("step")?.parse().map_err(|_| bad("step is not a number".into()))?,
        languages: match meta.get("languages") {
            Some(l) => Some(serde_json::from_str(l).map_err(|e| bad(format!("languages: {e}")))?),
            None => None,
        },
        shortlist: None,
        converted_from: meta.get(CONVERTED_FROM_KEY).cloned(),
    })
}

/// Tensors whose names start with this are training state (optimizer moments in a
/// checkpoint), not model parameters.
pub const STATE_PREFIX: &str = "opt.";

/// Loads a model file onto `device` in `dtype`. A training checkpoint loads too: its optimizer
/// state is left aside.
pub fn load(path: &Path, dtype: DType, device: &Device) -> Result<LoadedModel> {
    Ok(load_parts(path, dtype, device)?.0)
}

/// A checkpoint's model, its optimiser-state tensors, and its metadata.
pub type LoadedCheckpoint = (LoadedModel, BTreeMap<String, Tensor>, HashMap<String, String>);

/// Loads a model file and also returns the training-state tensors and the raw metadata.
pub fn load_parts(path: &Path, dtype: DType, device: &Device) -> Result<LoadedCheckpoint> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    load_bytes(&bytes, path, dtype, device)
}

/// [`load_parts`] on a file's bytes (`path` names it in errors): what the fuzz target
/// `model_file` drives.
pub fn load_bytes(bytes: &[u8], path: &Path, dtype: DType, device: &Device) -> Result<LoadedCheckpoint> {
    let (mut tensors, raw) = parse_safetensors(bytes, path, device)?;
    let state_keys: Vec<String> = tensors.keys().filter(|k| k.starts_with(STATE_PREFIX)).cloned().collect();
    let state: BTreeMap<String, Tensor> = state_keys.into_iter().filter_map(|k| tensors.remove(&k).map(|t| (k, t))).collect();
    let mut meta = read_meta(&raw, path)?;
    meta.shortlist = take_shortlist(&mut tensors, &meta.config, path)?;
    crate::quantize::dequantize_tensors(&mut tensors).map_err(|e| Error::ModelFile { path: path.to_path_buf(), reason: e.to_string() })?;
    let model = Seq2Seq::build(&meta.config, Params::from_tensors(tensors, dtype, device))
        .map_err(|e| Error::ModelFile { path: path.to_path_buf(), reason: e.to_string() })?;
    Ok((LoadedModel { model, meta }, state, raw))
}

/// serde_json for the config types without naming each.
mod erased {
    pub trait Json {
        fn to_json(&self) -> crate::error::Result<String>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> crate::error::Result<String> {
            serde_json::to_string(self).map_err(|e| crate::error::Error::Input(e.to_string()))
        }
    }
}
