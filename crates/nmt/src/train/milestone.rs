//! What the training loop does at each validation (dev loss, perplexity and BLEU; the best
//! model kept; the learning rate decayed on a plateau; patience; the snapshot for averaging;
//! the checkpoint), and at the end, the average of the kept snapshots. Rank 0 does the work;
//! every rank follows its decisions.
use std::time::Instant;

use super::average;
use super::checkpoint;
use super::collective::{broadcast_decision, Decision};
use super::log::ValidRecord;
use super::options::LoopEnv;
use super::progress::Progress;
use super::setup::Run;
use super::validate::dev_bleu;
use super::validate::dev_loss;
use crate::error::{Error, Result};
use crate::model_file;

/// Rank 0 validates and saves ([`validate_and_save`]); every rank follows its learning-rate
/// scale and patience decision. Returns true when patience ran out.
pub(super) fn validate(env: &LoopEnv, run: &mut Run, ui: &mut dyn Progress) -> Result<bool> {
    let out_of_patience = if env.opts.is_root() { validate_and_save(env, run, ui)? } else { false };
    let decision = broadcast_decision(env.opts.collective.as_ref(), Decision { lr_scale: run.progress.lr_scale, out_of_patience })?;
    run.progress.lr_scale = decision.lr_scale;
    run.opt.set_lr_scale(decision.lr_scale);
    Ok(decision.out_of_patience)
}

/// Dev loss, perplexity and BLEU; keeps the best model; decays the learning rate on a plateau;
/// keeps the snapshot for averaging; writes the checkpoint. Returns true when patience ran out.
fn validate_and_save(env: &LoopEnv, run: &mut Run, ui: &mut dyn Progress) -> Result<bool> {
    let t = &env.cfg.train;
    let began = Instant::now();
    let loss = dev_loss(&run.model, env.dev)?;
    // Issue 44, row 9: non-finite weights show here first; nothing of this update is saved.
    if !loss.is_finite() {
        let (step, best) = (run.progress.step, run.progress.best_step);
        return Err(Error::Input(format!("dev loss {loss} at update {step}: training diverged; not saved (best: update {best})")));
    }
    let bleu = dev_bleu(&run.model, &run.meta, env.dev, t.valid_bleu_sentences, t.valid_beam_size)?;
    let valid_s = began.elapsed().as_secs_f64();
    let p = &mut run.progress;
    let better = match p.best_bleu {
        None => true,
        Some(b) => bleu > b + 1e-9,
    };
    run.meta.step = p.step;
    if better {
        p.best_bleu = Some(bleu);
        p.best_step = p.step;
        p.bad_validations = 0;
        p.lr_bad_validations = 0;
        model_file::save(env.best_path, &run.model, &run.meta)?;
    } else {
        p.bad_validations += 1;
        p.lr_bad_validations += 1;
    }
    let mut decayed = false;
    if t.lr_decay < 1.0 && t.lr_patience > 0 && p.lr_bad_validations >= t.lr_patience {
        p.lr_scale *= t.lr_decay;
        p.lr_bad_validations = 0;
        run.opt.set_lr_scale(p.lr_scale);
        decayed = true;
    }
    let record = env.log.append(&ValidRecord {
        step: p.step,
        epoch: p.epoch,
        dev_loss: loss,
        dev_ppl: loss.exp(),
        dev_bleu: bleu,
        best: better,
        elapsed_s: p.elapsed_s,
        lr: run.opt.lr(),
        valid_s,
    })?;
    ui.on_log(&record);
    ui.on_message(&format!(
        "update {}: dev loss {loss:.4}, ppl {:.2}, BLEU {bleu:.2}{} [validation {valid_s:.1} s]{}",
        p.step,
        loss.exp(),
        if better { " (best, saved)" } else { "" },
        if decayed { format!("; learning rate now {:.3e}", t.lr * p.lr_scale) } else { String::new() }
    ));
    let out_of_patience = t.patience > 0 && p.bad_validations >= t.patience;
    if t.average_last > 0 {
        average::keep_snapshot(env.snapshot_dir, &run.model, &run.meta, t.average_last)?;
    }
    checkpoint::save(env.ckpt_path, &run.model, &run.meta, &run.opt, &run.progress)?;
    Ok(out_of_patience)
}

/// Writes the mean of the kept snapshots to `model.avg.safetensors` and reports its dev BLEU
/// beside the best single model's, so the user can pick (`translate` uses `model.safetensors`).
pub(super) fn average_snapshots(env: &LoopEnv, run: &Run, ui: &mut dyn Progress) -> Result<()> {
    let t = &env.cfg.train;
    let files = average::snapshots(env.snapshot_dir)?;
    let avg_path = env.opts.model_dir.join("model.avg.safetensors");
    let mut avg = average::average(&files)?;
    avg.model.set_impl(t.imp);
    model_file::save(&avg_path, &avg.model, &avg.meta)?;
    let bleu = dev_bleu(&avg.model, &run.meta, env.dev, t.valid_bleu_sentences, t.valid_beam_size)?;
    ui.on_message(&format!(
        "averaged the last {} snapshots into {}: dev BLEU {bleu:.2} (best single model {:.2})",
        files.len(),
        avg_path.display(),
        run.progress.best_bleu.unwrap_or(0.0)
    ));
    Ok(())
}
