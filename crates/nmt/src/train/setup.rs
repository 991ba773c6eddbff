//! Before the loop: a fresh model (subword vocabularies learned, weights initialised) or one
//! resumed from its checkpoint, the model directory checked, the resolved config written.
use candle_core::{DType, Device};
use nmt_data::subword::Segmenter;

use super::checkpoint::{self, TrainProgress};
use super::optim::Optimizer;
use super::progress::Progress;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::Seq2Seq;
use crate::model_file::{self, ModelMeta};

/// What training changes: the model, its metadata, the optimiser and the progress.
pub(super) struct Run {
    pub model: Seq2Seq,
    pub meta: ModelMeta,
    pub opt: Optimizer,
    pub progress: TrainProgress,
}

/// Fails before any work when `dir` cannot take new files (read-only, no permission, full):
/// better than an hour of training lost at the first checkpoint. Also removes temporary files
/// that a killed write left (`*.tmp`: never read, the renamed files are whole).
pub(super) fn check_writable(dir: &std::path::Path) -> Result<()> {
    let probe = dir.join(".nmt-write-test.tmp");
    let attempt = std::fs::write(&probe, b"probe").and_then(|_| std::fs::remove_file(&probe));
    attempt.map_err(|e| Error::io(dir, std::io::Error::new(e.kind(), format!("the model directory is not writable: {e}"))))?;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            // A killed `prepare` of the directory's `data/` leaves `.data.XXXXXX.tmp/`.
            let _ = match name.starts_with(".data.") && entry.path().is_dir() {
                true => std::fs::remove_dir_all(entry.path()),
                false => std::fs::remove_file(entry.path()),
            };
        }
    }
    Ok(())
}

/// A fresh model on the prepared data's vocabularies.
pub(super) fn start(cfg: &Config, (src, tgt): (&Segmenter, &Segmenter), device: &Device) -> Result<Run> {
    let mut mc = cfg.model.clone();
    mc.src_vocab = src.vocab_size();
    mc.tgt_vocab = tgt.vocab_size();
    let mut model = Seq2Seq::fresh(&mc, cfg.train.seed, DType::F32, device)?;
    model.set_impl(cfg.train.imp);
    let opt = Optimizer::new(model.params.named_vars(), &cfg.train)?;
    let languages = cfg.data.languages()?;
    let meta = ModelMeta {
        config: mc,
        search: cfg.search.clone(),
        src: src.clone(),
        tgt: tgt.clone(),
        step: 0,
        languages,
        shortlist: None,
        converted_from: None,
    };
    Ok(Run { model, meta, opt, progress: TrainProgress::default() })
}

/// Sets the precision of the model's large products (`train.precision`, `Seq2Seq::set_products`).
/// With bf16 asked for, says once which kernels run them or why they run in f32
/// (`products::bf16_path`: off where bf16 is not faster than f32 on this CPU, issue 70), and
/// which stay f32 anyway: with `model.layer_norm` the normalised whole-sequence products (the
/// input projections and the deep output's, multiplied by candle before
/// `kernels::cpu::norm_rows`). A model in its GPU form (`Backend::Gpu`) runs its input
/// projections' products in bf16 on cuBLAS instead (docs/GPU.md "bf16 products"), whatever
/// the CPU has.
pub(super) fn set_precision(cfg: &crate::config::TrainConfig, model: &mut crate::model::Seq2Seq, ui: &mut dyn super::progress::Progress) {
    let gpu = model.backend().gpu();
    let in_effect = model.set_products(cfg.precision);
    let path = crate::kernels::cpu::engine::products::products_line(gpu);
    if cfg.precision != crate::config::Precision::Bf16 {
        return;
    }
    if gpu {
        let ln = if model.cfg.layer_norm { "; with model.layer_norm the normalised input projections run in f32" } else { "" };
        ui.on_message(&format!("train.precision = \"bf16\": {path}{ln}"));
        return;
    }
    if !model.backend().host() {
        // `impl = "composed"` (or an f64 model): candle's products, in the model's dtype.
        ui.on_message("train.precision = \"bf16\": the composed ops multiply in the model's dtype; bf16 products are the fused kernels'");
    } else if in_effect != cfg.precision {
        ui.on_message(&format!("train.precision = \"bf16\": {path}, so the products run in f32"));
    } else if model.cfg.layer_norm {
        ui.on_message(&format!(
            "train.precision = \"bf16\": {path}; with model.layer_norm the normalised input projections and deep-output products run in f32"
        ));
    } else {
        ui.on_message(&format!("train.precision = \"bf16\": {path}"));
    }
}

/// A resumed model must train on data encoded with its own vocabularies.
pub(super) fn check_vocabularies(run: &Run, data: &super::train_data::TrainData, ckpt: &std::path::Path) -> Result<()> {
    let (src, tgt) = data.segmenters();
    let same = |a: &Segmenter, b: &Segmenter| a.to_json().ok() == b.to_json().ok();
    if same(src, &run.meta.src) && same(tgt, &run.meta.tgt) {
        return Ok(());
    }
    Err(Error::CheckpointMismatch {
        path: ckpt.to_path_buf(),
        reason: format!("the prepared data in {} was encoded with other vocabularies than the checkpoint's", data.dir().display()),
    })
}

pub(super) fn resume(cfg: &Config, path: &std::path::Path, device: &Device, ui: &mut dyn Progress) -> Result<Run> {
    let ck = checkpoint::load(path, DType::F32, device)?;
    let mut want = cfg.model.clone();
    want.src_vocab = ck.loaded.meta.config.src_vocab;
    want.tgt_vocab = ck.loaded.meta.config.tgt_vocab;
    want.preset = ck.loaded.meta.config.preset.clone();
    if want != ck.loaded.meta.config {
        return Err(Error::CheckpointMismatch {
            path: path.to_path_buf(),
            reason: format!(
                "[model] differs: checkpoint has {:?}, config asks for {:?}; use another --model-dir or the old config",
                ck.loaded.meta.config, want
            ),
        });
    }
    let mut opt = Optimizer::new(ck.loaded.model.params.named_vars(), &cfg.train)?;
    opt.load_state(&ck.opt_state, ck.progress.step)?;
    opt.set_lr_scale(ck.progress.lr_scale);
    ui.on_message(&format!("resuming from {} at update {}", path.display(), ck.progress.step));
    let mut meta = ck.loaded.meta;
    meta.search = cfg.search.clone();
    // Checkpoints written before languages were stored take them from the config.
    if meta.languages.is_none() {
        meta.languages = cfg.data.languages()?;
    }
    let mut model = ck.loaded.model;
    model.set_impl(cfg.train.imp);
    Ok(Run { model, meta, opt, progress: ck.progress })
}

pub(super) fn write_config(cfg: &Config, meta: &ModelMeta, dir: &std::path::Path) -> Result<()> {
    let mut resolved = cfg.clone();
    resolved.model = meta.config.clone();
    // Absolute paths: the file is read relative to its own folder, the model directory.
    resolved.data.for_each_path(|p| {
        if let Ok(abs) = std::fs::canonicalize(&*p) {
            *p = abs;
        }
    });
    let text = toml::to_string(&resolved).map_err(|e| Error::Config(e.to_string()))?;
    model_file::write_atomic(&dir.join("config.toml"), text.as_bytes())
}
