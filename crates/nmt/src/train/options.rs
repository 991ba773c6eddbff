//! What a training run is given besides the config ([`TrainOptions`]), what it returns
//! ([`TrainSummary`], [`StopReason`]), and what its loop reads but never changes (`LoopEnv`,
//! shared by the loop, `trainer.rs`, and what it does at each validation, `milestone.rs`).
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use candle_core::Device;

use super::collective::{Collective, Single};
use super::log::JsonlLog;
use super::train_data::TrainData;
use super::validate::DevSet;
use crate::config::Config;

/// How to run, besides the config.
pub struct TrainOptions {
    pub model_dir: PathBuf,
    pub device: Device,
    /// Set by a Ctrl-C handler: save a checkpoint and return.
    pub stop: Arc<AtomicBool>,
    /// The ranks of a data-parallel run ([`Single`] for one process).
    pub collective: Box<dyn Collective>,
    /// A prepared corpus (`nmt prepare`) to train on instead of the config's text.
    pub data: Option<PathBuf>,
}

impl TrainOptions {
    /// One process.
    pub fn new(model_dir: PathBuf, device: Device, stop: Arc<AtomicBool>) -> Self {
        TrainOptions { model_dir, device, stop, collective: Box::new(Single), data: None }
    }

    pub(super) fn is_root(&self) -> bool {
        self.collective.rank() == 0
    }
}

/// Why training stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    MaxSteps,
    MaxEpochs,
    MaxMinutes,
    Patience,
    Interrupted,
}

/// The outcome of [`train`].
#[derive(Clone, Debug)]
pub struct TrainSummary {
    pub steps: u64,
    pub best_bleu: Option<f64>,
    pub best_step: u64,
    pub best_model: PathBuf,
    pub checkpoint: PathBuf,
    pub reason: StopReason,
    pub elapsed_s: f64,
    /// Target tokens per second over this run's updates.
    pub tok_per_s: f64,
}

/// What the loop reads but never changes.
pub(super) struct LoopEnv<'a> {
    pub(super) cfg: &'a Config,
    pub(super) opts: &'a TrainOptions,
    pub(super) data: &'a TrainData,
    pub(super) dev: &'a DevSet,
    pub(super) log: &'a JsonlLog,
    pub(super) ckpt_path: &'a std::path::Path,
    pub(super) best_path: &'a std::path::Path,
    pub(super) snapshot_dir: &'a std::path::Path,
}
