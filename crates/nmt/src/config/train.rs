//! `[train]`: the optimiser, the schedule, regularisation and when to stop.
use nmt_data::batch::BatchConfig;
use serde::{Deserialize, Serialize};

use super::model::Impl;
use crate::error::{Error, Result};

/// Optimiser choice.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// Kingma & Ba; `lr` default 1e-3.
    Adam,
    /// Zeiler 2012 as in the papers (ρ = 0.95, ε = 1e-6); `lr` scales the update (1.0 = plain).
    Adadelta,
}

/// The precision of the training step's large products (issue 42, `kernels/cpu/engine/products.rs`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// f32 products.
    #[default]
    F32,
    /// bf16 × bf16 → f32 products on a CPU with AVX512_BF16 (f32 elsewhere, with a warning);
    /// master weights, Adam, the recurrences' per-step products and the loss stay f32.
    Bf16,
}

impl std::str::FromStr for Precision {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            other => Err(Error::Config(format!("unknown precision {other:?} (known: f32, bf16)"))),
        }
    }
}

/// Training loop settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub optimizer: Optimizer,
    /// Learning rate (Adam) or update scale (Adadelta).
    pub lr: f64,
    /// Linear learning-rate warm-up: update `k` uses `lr · min(1, k / warmup)` (0 = none).
    pub warmup: u64,
    /// The last fraction of the run's budget over which the rate falls linearly to zero: the
    /// update at fraction `f` of the budget done takes `lr · min(1, (1 − f) / lr_cooldown)`, `f`
    /// by whichever of `max_steps`, `max_minutes` and `max_epochs` is nearest its end (the
    /// progress bar's fraction). 0 = none; 1 = from the first update, the budget-aware linear
    /// schedule of Li, Yumer & Ramanan 2020; between, the cooldown of warmup-stable-decay
    /// schedules (Hägele et al. 2024). Needs a budget.
    pub lr_cooldown: f64,
    /// Adadelta's decay ρ and ε (the papers: 0.95, 1e-6).
    pub adadelta_rho: f64,
    pub adadelta_eps: f64,
    /// Adam's β1, β2, ε.
    pub adam_betas: (f64, f64),
    pub adam_eps: f64,
    /// Rescale the gradient when its global L2 norm exceeds this (RNNsearch: 1). 0 = off.
    pub clip_norm: f64,
    /// Rescale every update's gradient to norm `clip_norm`, not only those above it: what
    /// Marian's summed loss with `--clip-norm 1` does in effect (an ablation of issue 40).
    pub normalize_updates: bool,
    /// Batches: token budget (`sentences × max(src_len, tgt_len)`) and sentence cap.
    pub batch: BatchConfig,
    /// The batches of a run on a GPU (`nmt train --gpu`), in place of `batch`: a GPU is idle at
    /// a CPU's batch of 80 sentences, so one recipe names both (Marian and OpenNMT-py leave it
    /// to a per-machine flag). `None`: `batch` everywhere. [`TrainConfig::batch_on`].
    pub gpu_batch: Option<BatchConfig>,
    /// On a GPU, run each update as RNNsearch's recorded step replayed as a CUDA graph
    /// (`train/graph.rs`) instead of candle's ops. Off until a GPU run confirms it (docs/GPU.md).
    pub cuda_graph: bool,
    /// Validate (dev perplexity + BLEU), checkpoint and keep the best model every N updates.
    pub valid_every: u64,
    /// Log training loss every N updates.
    pub log_every: u64,
    /// Stop after this many validations without a better dev BLEU (0 = never).
    pub patience: u32,
    /// Stop after this many updates / epochs / minutes of training (0 = no limit).
    pub max_steps: u64,
    pub max_epochs: u64,
    pub max_minutes: f64,
    /// Seed for initialisation, batch order and dropout: the same seed gives the same run.
    pub seed: u64,
    /// Dev BLEU is computed on the first N dev sentences with greedy search (0 = all).
    pub valid_bleu_sentences: usize,
    /// `fused` (the CPU kernels, default) or `ops` (composed candle ops) for the loss.
    #[serde(rename = "impl")]
    pub imp: Impl,
    /// Beam size of the dev-BLEU search (1 = greedy, the cheapest).
    pub valid_beam_size: usize,
    /// Word dropout: the probability of zeroing a whole source / target word's embedding
    /// (Gal & Ghahramani 2016; Nematus' `dropout_source`/`dropout_target`). 0 = off.
    pub src_word_dropout: f64,
    pub tgt_word_dropout: f64,
    /// Label smoothing ε (Szegedy et al. 2016): the training loss is
    /// `(1−ε)·NLL + ε·mean_k(−log p_k)`. Dev loss and scores stay plain NLL. 0 = off.
    pub label_smoothing: f64,
    /// Multiply the learning rate by this when dev BLEU has not improved for `lr_patience`
    /// validations (0.5 = halve; 1 = never). The count restarts after each decay.
    pub lr_decay: f64,
    pub lr_patience: u32,
    /// Keep the weights of the last N validations and write their average to
    /// `model.avg.safetensors` at the end (0 = off; `nmt average` does the same by hand).
    pub average_last: usize,
    /// Learn a lexical shortlist into the model files at the end (`translate --shortlist`;
    /// `nmt shortlist` does it by hand): up to a minute and 650 MB on 200 000 pairs.
    pub shortlist: bool,
    /// The precision of the large products: `f32` or `bf16` (`kernels/cpu/engine/products.rs`, given to each op by the model's `Backend`).
    pub precision: Precision,
    /// The training softmax over each batch's candidate words (`model/candidates.rs`; Jean
    /// et al. 2015); `None`: the full softmax. Validation, search and scoring always use the
    /// full softmax. `false` (`--set train.candidates=false`) turns off a config's list,
    /// `true` is the default list.
    #[serde(deserialize_with = "candidates_switch")]
    pub candidates: Option<CandidatesConfig>,
}

/// `train.candidates` as a table, or `true`/`false` for the default list or none.
fn candidates_switch<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<CandidatesConfig>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Switch {
        On(bool),
        Table(CandidatesConfig),
    }
    Ok(match Switch::deserialize(d)? {
        Switch::On(on) => on.then(CandidatesConfig::default),
        Switch::Table(c) => Some(c),
    })
}

/// `train.candidates`: `V′` = the batch's target ids, the `frequent` most frequent target
/// types, `<unk>`, `</s>`, and ids drawn from the rest by `proposal`: `sampled` distinct ids
/// uniformly, or `sampled` draws with replacement by unigram frequency (`model/candidates.rs`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CandidatesConfig {
    pub frequent: usize,
    pub sampled: usize,
    pub proposal: Proposal,
    /// The optimiser's squared-gradient average takes a drawn word's `g²` times its chance
    /// `Q(k)` of being drawn (`model/candidates.rs`, "Moments"), so that its step is the full
    /// softmax's on average; `false`: plain `g²`.
    pub scale_moments: bool,
}

impl Default for CandidatesConfig {
    /// GroundHog's practice of adding the most frequent words; 500 of 8 000 here.
    fn default() -> Self {
        CandidatesConfig { frequent: 500, sampled: 0, proposal: Proposal::Uniform, scale_moments: false }
    }
}

/// How `train.candidates.sampled` ids are drawn from the words outside a batch's list.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Proposal {
    /// Distinct ids, uniformly: each word of the rest `R` in with probability `|S|/|R|`.
    #[default]
    Uniform,
    /// Draws with replacement in proportion to `(count + 1)^0.75` (word2vec's smoothed
    /// unigram): the likelier words, which carry most of the normaliser, are drawn more often
    /// and weigh less.
    Unigram,
}

impl TrainConfig {
    /// The batches a run on `device` trains on: `gpu_batch` on a CUDA or Metal device when
    /// given, else `batch`. The epoch's plan follows from it, so a run resumed on the other kind
    /// of device goes on with that device's batches from the same position in the epoch.
    pub fn batch_on(&self, device: &candle_core::Device) -> &BatchConfig {
        self.batch_for(!device.is_cpu())
    }

    /// What [`TrainConfig::batch_on`] chose, for the log.
    pub fn batch_note(&self, device: &candle_core::Device) -> String {
        let b = self.batch_on(device);
        let which = if std::ptr::eq(b, &self.batch) { "" } else { " (train.gpu_batch)" };
        format!("batches of at most {} tokens and {} sentences{which}", b.max_tokens, b.max_sentences)
    }

    fn batch_for(&self, gpu: bool) -> &BatchConfig {
        match (&self.gpu_batch, gpu) {
            (Some(b), true) => b,
            _ => &self.batch,
        }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            optimizer: Optimizer::Adam,
            lr: 1e-3,
            warmup: 0,
            lr_cooldown: 0.0,
            adadelta_rho: 0.95,
            adadelta_eps: 1e-6,
            adam_betas: (0.9, 0.999),
            adam_eps: 1e-8,
            clip_norm: 1.0,
            normalize_updates: false,
            batch: BatchConfig { max_tokens: 2000, max_sentences: 80 },
            gpu_batch: None,
            cuda_graph: false,
            valid_every: 500,
            log_every: 50,
            patience: 10,
            max_steps: 0,
            max_epochs: 0,
            max_minutes: 0.0,
            seed: 1,
            valid_bleu_sentences: 300,
            imp: Impl::Fused,
            valid_beam_size: 1,
            src_word_dropout: 0.0,
            tgt_word_dropout: 0.0,
            label_smoothing: 0.0,
            lr_decay: 1.0,
            lr_patience: 0,
            average_last: 0,
            shortlist: true,
            precision: Precision::F32,
            candidates: None,
        }
    }
}

impl TrainConfig {
    /// Checks the regularisation and schedule keys' ranges.
    pub fn validate(&self) -> Result<()> {
        let probs = [
            ("src_word_dropout", self.src_word_dropout),
            ("tgt_word_dropout", self.tgt_word_dropout),
            ("label_smoothing", self.label_smoothing),
        ];
        for (key, p) in probs {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::Config(format!("train.{key} must be in [0, 1), got {p}")));
            }
        }
        if !(self.lr_decay > 0.0 && self.lr_decay <= 1.0) {
            return Err(Error::Config(format!("train.lr_decay must be in (0, 1], got {}", self.lr_decay)));
        }
        // Issue 44, row 9: NaN passes every `<`/`>` test, so finiteness is checked first.
        let positive = [("lr", self.lr), ("adam_eps", self.adam_eps), ("adadelta_eps", self.adadelta_eps)];
        for (key, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Config(format!("train.{key} must be a finite number above 0, got {v}")));
            }
        }
        let unit = [("adam_betas[0]", self.adam_betas.0), ("adam_betas[1]", self.adam_betas.1), ("adadelta_rho", self.adadelta_rho)];
        for (key, v) in unit {
            if !(0.0..1.0).contains(&v) {
                return Err(Error::Config(format!("train.{key} must be in [0, 1), got {v}")));
            }
        }
        let non_negative = [("max_minutes", self.max_minutes), ("clip_norm", self.clip_norm)];
        for (key, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::Config(format!("train.{key} must be a finite number at least 0, got {v}")));
            }
        }
        if self.normalize_updates && self.clip_norm <= 0.0 {
            return Err(Error::Config(
                "train.normalize_updates rescales each update to norm train.clip_norm: it needs clip_norm > 0".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.lr_cooldown) {
            return Err(Error::Config(format!("train.lr_cooldown must be in [0, 1], got {}", self.lr_cooldown)));
        }
        if self.lr_cooldown > 0.0 && self.max_steps == 0 && self.max_minutes == 0.0 && self.max_epochs == 0 {
            return Err(Error::Config(
                "train.lr_cooldown ends the rate at zero at the end of the run's budget: set train.max_steps, max_minutes or max_epochs"
                    .into(),
            ));
        }
        if self.valid_beam_size == 0 {
            return Err(Error::Config("train.valid_beam_size must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped recipe names its GPU batches; a config without them trains on `batch`
    /// everywhere, and the key survives the model file's config.
    #[test]
    fn gpu_batch_replaces_batch_on_a_gpu_only() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rnnsearch-s2s.toml");
        let cfg = crate::config::Config::from_file(std::path::Path::new(path), &[]).unwrap();
        let t = &cfg.train;
        assert_eq!((t.batch_for(false).max_tokens, t.batch_for(true).max_tokens), (2000, 8000));
        assert_eq!(t.batch_on(&candle_core::Device::Cpu).max_sentences, 80);
        let plain = TrainConfig::default();
        assert_eq!(plain.batch_for(true).max_tokens, plain.batch.max_tokens);
        let back: crate::config::Config = toml::from_str(&toml::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back.train.gpu_batch.map(|b| b.max_sentences), Some(256));
    }

    /// `train.candidates` as a table, `true` or `false`, from a file or `--set`, and back
    /// through the model file's config.
    #[test]
    fn candidates_take_a_table_or_a_switch() {
        let parse = |o: &[&str]| {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            crate::config::Config::from_toml_str("", &o).map(|c| c.train.candidates)
        };
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&["train.candidates=true"]).unwrap(), Some(CandidatesConfig::default()));
        assert_eq!(parse(&["train.candidates=false"]).unwrap(), None);
        assert_eq!(
            parse(&["train.candidates.frequent=100"]).unwrap(),
            Some(CandidatesConfig { frequent: 100, sampled: 0, ..Default::default() })
        );
        let on_again = parse(&["train.candidates=false", "train.candidates.frequent=100", "train.candidates.sampled=9"]);
        assert_eq!(on_again.unwrap(), Some(CandidatesConfig { frequent: 100, sampled: 9, ..Default::default() }));
        assert!(parse(&["train.candidates.often=100"]).is_err());
        let cfg = crate::config::Config::from_toml_str("[train]\ncandidates = { frequent = 7, sampled = 3 }\n", &[]).unwrap();
        let back: crate::config::Config = toml::from_str(&toml::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back.train.candidates, Some(CandidatesConfig { frequent: 7, sampled: 3, ..Default::default() }));
        let unigram = parse(&["train.candidates.proposal=\"unigram\""]).unwrap().unwrap();
        assert_eq!(unigram.proposal, Proposal::Unigram);
        assert!(parse(&["train.candidates.scale_moments=true"]).unwrap().unwrap().scale_moments);
    }
}
