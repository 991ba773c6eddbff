//! The training loop: batches → loss → backward → clip → update; every `valid_every` updates
//! dev perplexity + BLEU, the best model kept as `model.safetensors`, and a checkpoint.
//!
//! Files in the model directory: `model.safetensors` (best by dev BLEU, what `translate` uses),
//! `checkpoint.safetensors` (latest weights + optimizer + progress), `train_log.jsonl`,
//! `config.toml` (the resolved configuration). Running the same command again resumes from the
//! checkpoint: batches are a pure function of (seed, epoch) and dropout masks of (seed, step),
//! so the resumed run computes exactly what the uninterrupted one would have.
//!
//! With several ranks (`TrainOptions::collective`, under `mpirun`) each rank trains on its rows
//! of every batch, the gradients summed (`collective`, `step`); rank 0 alone validates, logs and
//! writes files. All ranks share the model directory: a resume reads the checkpoint on each.
use std::sync::atomic::Ordering;
use std::time::Instant;

use nmt_data::batch::RowShare;
use nmt_data::read_parallel;

use super::checkpoint::{self, TrainProgress};
use super::collective::{agree_on, broadcast_params, Control};
use super::graph::{launcher, GraphLauncher, GraphUpdater};
use super::log::{JsonlLog, TrainRecord};
use super::milestone::{average_snapshots, validate};
use super::moment_scale::moment_scales;
use super::options::{LoopEnv, StopReason, TrainOptions, TrainSummary};
use super::progress::{Progress, StepInfo};
use super::setup::{check_vocabularies, check_writable, resume, set_precision, start, write_config, Run};
use super::train_data::{DataSource, TrainData};
use super::update::{Share, Updater};
use super::validate::DevSet;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::candidates::{self, Candidates};
use crate::model::regularizer::{DropoutRates, Regularizer};
use crate::model::{Backend, TrainStep};

/// Trains (or resumes) per `cfg`, writing into `opts.model_dir`.
pub fn train(cfg: &Config, opts: &TrainOptions, ui: &mut dyn Progress) -> Result<TrainSummary> {
    let dir = &opts.model_dir;
    let c = opts.collective.as_ref();
    // How each update runs, or why it cannot: said before the corpus is read.
    let step = Backend::training_step(&cfg.model, &cfg.train, &opts.device, c.size()).map_err(Error::Config)?;
    if opts.is_root() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        check_writable(dir)?;
    }
    // The other ranks read the directory only after rank 0 has made it.
    c.barrier()?;
    let ckpt_path = dir.join("checkpoint.safetensors");
    let best_path = dir.join("model.safetensors");
    let log = JsonlLog::new(&dir.join("train_log.jsonl"));
    let d = &cfg.data;
    let resumed = if ckpt_path.exists() { Some(resume(cfg, &ckpt_path, &opts.device, ui)?) } else { None };
    let segmenters = resumed.as_ref().map(|r| (r.meta.src.clone(), r.meta.tgt.clone()));
    let source = DataSource { given: opts.data.as_deref(), model_dir: dir, segmenters };
    let data = TrainData::open(cfg, source, c, ui)?;
    let mut run = match resumed {
        Some(run) => {
            check_vocabularies(&run, &data, &ckpt_path)?;
            run
        }
        None => start(cfg, data.segmenters(), &opts.device)?,
    };
    agree_on(c, "the update to resume from", run.progress.step)?;
    broadcast_params(c, &run.model.params.named_vars())?;
    let dev_corpus = read_parallel(&d.dev_src, &d.dev_tgt, None)?;
    // The dev loss skips pairs longer than search crops sources to (the dev BLEU crops them).
    let dev_max = Some(cfg.search.max_source_len);
    // A copy model trains on targets in each pair's extended space (nmt_data::copy).
    let (mut dev_examples, mut dev_exts) = if run.meta.config.copy() {
        let (de, dx) = nmt_data::copy::copy_examples(&dev_corpus, &run.meta.src, &run.meta.tgt, dev_max);
        (de, Some(dx))
    } else {
        (nmt_data::examples(&dev_corpus, &run.meta.src, &run.meta.tgt, dev_max), None)
    };
    for e in dev_examples.iter_mut() {
        run.meta.config.order_source(&mut e.src);
    }
    for x in dev_exts.iter_mut().flatten() {
        run.meta.config.order_source(x);
    }
    let mut dev = DevSet::new(&dev_examples, dev_corpus.src.clone(), dev_corpus.tgt.clone(), cfg.train.batch_on(&opts.device));
    if let Some(x) = &dev_exts {
        dev.batches.iter_mut().for_each(|b| b.set_source_ext(x));
    }
    if opts.is_root() {
        write_config(cfg, &run.meta, dir)?;
    }
    set_precision(&cfg.train, &mut run.model, ui);
    ui.on_message(&format!(
        "model: {}, {} parameters; starting at update {}; {}{}",
        run.meta.config.arch.name().name(),
        run.model.num_parameters(),
        run.progress.step,
        cfg.train.batch_note(&opts.device),
        match c.size() {
            1 => String::new(),
            n => format!("; {n} ranks, each with 1/{n} of every batch"),
        }
    ));
    let snapshot_dir = dir.join("snapshots");
    let env =
        LoopEnv { cfg, opts, data: &data, dev: &dev, log: &log, ckpt_path: &ckpt_path, best_path: &best_path, snapshot_dir: &snapshot_dir };
    let reason = run_loop(&env, step, &mut run, ui)?;
    if cfg.train.average_last > 0 && reason.0 != StopReason::Interrupted && opts.is_root() {
        average_snapshots(&env, &run, ui)?;
    }
    if cfg.train.shortlist && reason.0 != StopReason::Interrupted && opts.is_root() {
        ui.on_message(&crate::shortlist::after_training(data.prepared(), &run.meta, &[&best_path, &dir.join("model.avg.safetensors")])?);
    }
    Ok(TrainSummary {
        steps: run.progress.step,
        best_bleu: run.progress.best_bleu,
        best_step: run.progress.best_step,
        best_model: best_path,
        checkpoint: ckpt_path,
        reason: reason.0,
        elapsed_s: run.progress.elapsed_s,
        tok_per_s: reason.1,
    })
}

/// Loss and tokens since the last log line.
#[derive(Default)]
struct Window {
    loss_sum: f64,
    tokens: usize,
    grad_norm: f64,
    updates: u64,
    /// The sizes `|V′|` of the candidate lists, summed.
    candidates: usize,
    started: Option<Instant>,
}

fn run_loop(env: &LoopEnv, step: TrainStep, run: &mut Run, ui: &mut dyn Progress) -> Result<(StopReason, f64)> {
    let t = &env.cfg.train;
    let started = Instant::now();
    let elapsed_before = run.progress.elapsed_s;
    let elapsed = || -> f64 { elapsed_before + started.elapsed().as_secs_f64() };
    let (mut run_tokens, mut win) = (0usize, Window::default());
    let mut validated_at = u64::MAX;
    let root = env.opts.is_root();
    let single = env.opts.collective.size() == 1;
    let vars = run.model.params.named_vars();
    let m = &run.meta.config;
    let rates =
        DropoutRates { units: m.dropout, src_words: t.src_word_dropout, tgt_words: t.tgt_word_dropout, recurrent: m.recurrent_dropout };
    // Stop flags agreed by all ranks after each update (one process: its own flags). Only
    // rank 0's clock counts, so every rank stops at the same update.
    let mut agreed = Control { out_of_time: t.max_minutes > 0.0 && elapsed_before >= t.max_minutes * 60.0, ..Control::default() };
    // `train.cuda_graph`: each update replays the recorded step (`graph.rs`).
    let graph_l = launcher(step, &run.model)?;
    let cand_spec = match &t.candidates {
        Some(c) => {
            let prepared = env.data.prepared();
            let pairs = prepared.manifest().pairs as usize;
            let spec = candidates::spec(c, pairs, run.meta.config.tgt_vocab, |i| Ok(prepared.pair(i)?.tgt))?;
            ui.on_message(&format!(
                "candidate softmax in training: each batch's targets, the {} most frequent types, {} drawn (model/candidates.rs)",
                spec.frequent.len(),
                spec.sampled
            ));
            Some(spec)
        }
        None => None,
    };
    let mut graph = graph_l.as_ref().map(|l| GraphUpdater::new(l, &run.model, &run.opt, t)).transpose()?;
    let reason = 'outer: loop {
        if t.max_epochs > 0 && run.progress.epoch >= t.max_epochs {
            break StopReason::MaxEpochs;
        }
        let plan = env.data.plan(t.batch_on(&env.opts.device), t.seed, run.progress.epoch);
        if plan.is_empty() {
            return Err(Error::Input("an epoch has no batch: every training corpus has weight 0".into()));
        }
        let c = env.opts.collective.as_ref();
        while run.progress.batch_in_epoch < plan.len() {
            let out_of_time = || t.max_minutes > 0.0 && elapsed() >= t.max_minutes * 60.0;
            // One process acts on its own flags at once; ranks on the flags they agreed on.
            let (interrupted, timed_out) = match single {
                true => (env.opts.stop.load(Ordering::SeqCst), out_of_time()),
                false => (agreed.interrupted, agreed.out_of_time),
            };
            if interrupted {
                break 'outer StopReason::Interrupted;
            }
            if t.max_steps > 0 && run.progress.step >= t.max_steps {
                break 'outer StopReason::MaxSteps;
            }
            if timed_out {
                break 'outer StopReason::MaxMinutes;
            }
            let ids = plan.batch(run.progress.batch_in_epoch);
            let share = RowShare::of(c.rank(), c.size(), ids.len());
            let part = env.data.batch(ids, share, &run.meta.config)?;
            let tokens = env.data.target_tokens(ids);
            win.started.get_or_insert_with(Instant::now);
            let cands = cand_spec.as_ref().map(|s| Candidates::for_batch(&part.tgt_out, s, t.seed, run.progress.step)).transpose()?;
            win.candidates += cands.as_ref().map_or(0, Candidates::len);
            let scales = moment_scales(&run.model, cands.as_ref(), t.candidates.as_ref())?;
            let reg = Regularizer::new(rates, t.label_smoothing, t.seed, run.progress.step).with_candidates(cands);
            // Rank 0's fraction of the budget, for `train.lr_cooldown` (the others send 0).
            let progress = if root { fraction(t, &run.progress, elapsed(), plan.len()).unwrap_or(0.0) } else { 0.0 };
            let local = Control {
                interrupted: env.opts.stop.load(Ordering::SeqCst),
                out_of_time: root && out_of_time(),
                progress,
                ..Control::default()
            };
            let done = match graph.as_mut() {
                Some(g) => {
                    if t.lr_cooldown > 0.0 {
                        run.opt.set_progress(progress);
                        g.set_lr(&run.opt)?;
                    }
                    g.update(&part, reg, tokens, local)?
                }
                None => {
                    let (model, opt, collective) = (&run.model, &mut run.opt, env.opts.collective.as_ref());
                    let mut updater = Updater { model, opt, vars: &vars, collective, scales: &scales };
                    updater.update(&part, Share { rows: share, tokens }, reg, run.progress.step + 1, local)?
                }
            };
            agreed = done.control;
            run.progress.step += 1;
            run.progress.batch_in_epoch += 1;
            run_tokens += done.tokens;
            win.loss_sum += done.loss * done.tokens as f64;
            win.tokens += done.tokens;
            win.grad_norm += done.grad_norm;
            win.updates += 1;
            let step = run.progress.step;
            if root && step.is_multiple_of(t.log_every.max(1)) {
                let secs = win.started.map(|s| s.elapsed().as_secs_f64()).unwrap_or(0.0).max(1e-9);
                let info = StepInfo {
                    step,
                    epoch: run.progress.epoch,
                    loss: win.loss_sum / win.tokens.max(1) as f64,
                    tok_per_s: win.tokens as f64 / secs,
                    elapsed_s: elapsed(),
                    fraction: fraction(t, &run.progress, elapsed(), plan.len()),
                };
                let record = env.log.append(&TrainRecord {
                    step,
                    epoch: info.epoch,
                    loss: info.loss,
                    tok_per_s: info.tok_per_s,
                    grad_norm: win.grad_norm / win.updates.max(1) as f64,
                    elapsed_s: info.elapsed_s,
                    candidates: cand_spec.as_ref().map(|_| win.candidates as f64 / win.updates.max(1) as f64),
                })?;
                ui.on_log(&record);
                ui.on_step(&info);
                win = Window::default();
            }
            if step.is_multiple_of(t.valid_every.max(1)) {
                run.progress.elapsed_s = elapsed();
                validated_at = step;
                sync(&graph, run)?;
                if validate(env, run, ui)? {
                    break 'outer StopReason::Patience;
                }
                if let Some(g) = &graph {
                    g.set_lr(&run.opt)?;
                }
            }
        }
        run.progress.epoch += 1;
        run.progress.batch_in_epoch = 0;
    };
    run.progress.elapsed_s = elapsed();
    sync(&graph, run)?;
    if reason == StopReason::Interrupted && root {
        run.meta.step = run.progress.step;
        checkpoint::save(env.ckpt_path, &run.model, &run.meta, &run.opt, &run.progress)?;
        ui.on_message(&format!("interrupted: checkpoint saved at update {}", run.progress.step));
    } else if reason != StopReason::Interrupted && validated_at != run.progress.step {
        validate(env, run, ui)?;
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    Ok((reason, run_tokens as f64 / secs))
}

/// With `train.cuda_graph`, the device's parameters and moments written into `run` (before a
/// validation or a checkpoint reads them).
fn sync(graph: &Option<GraphUpdater<'_, GraphLauncher>>, run: &mut Run) -> Result<()> {
    match graph {
        Some(g) => g.sync(&run.model, &mut run.opt),
        None => Ok(()),
    }
}

/// How much of the run is done, by whichever limit is closest.
fn fraction(t: &crate::config::TrainConfig, p: &TrainProgress, elapsed: f64, epoch_len: usize) -> Option<f64> {
    let mut f: Option<f64> = None;
    let mut take = |x: f64| f = Some(f.map_or(x, |g: f64| g.max(x)));
    if t.max_steps > 0 {
        take(p.step as f64 / t.max_steps as f64);
    }
    if t.max_minutes > 0.0 {
        take(elapsed / (t.max_minutes * 60.0));
    }
    if t.max_epochs > 0 {
        take((p.epoch as f64 + p.batch_in_epoch as f64 / epoch_len.max(1) as f64) / t.max_epochs as f64);
    }
    f.map(|x| x.min(1.0))
}
