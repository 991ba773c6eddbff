//! Resume: a run stopped right after a checkpoint and restarted continues from that update, and
//! its next 20 losses equal those of the uninterrupted run (bit for bit). The run uses the whole
//! training recipe (unit and word dropout, label smoothing, learning-rate decay with its state in
//! the checkpoint, snapshot averaging, beam-2 validation), so all of it resumes exactly.
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use candle_core::Device;
use nmt::config::Config;
use nmt::train::{train, Progress, TrainOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

struct Quiet;
impl Progress for Quiet {}

fn write_corpus(dir: &Path) {
    let words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"];
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (mut src, mut tgt) = (String::new(), String::new());
    for _ in 0..400 {
        let n = rng.gen_range(2..8);
        let s: Vec<&str> = (0..n).map(|_| words[rng.gen_range(0..words.len())]).collect();
        src.push_str(&s.join(" "));
        src.push('\n');
        tgt.push_str(&s.iter().rev().map(|w| w.to_uppercase()).collect::<Vec<_>>().join(" "));
        tgt.push('\n');
    }
    for (name, text) in [("train.src", &src), ("train.tgt", &tgt), ("dev.src", &src), ("dev.tgt", &tgt)] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

fn config(dir: &Path, max_steps: u64, model: &str) -> Config {
    let text = format!(
        r#"
[model]
preset = "tiny"
dropout = 0.1
{model}
[data]
train_src = "{d}/train.src"
train_tgt = "{d}/train.tgt"
dev_src = "{d}/dev.src"
dev_tgt = "{d}/dev.tgt"
src_subword = {{ kind = "word", vocab_size = 100, min_frequency = 1 }}
tgt_subword = {{ kind = "word", vocab_size = 100, min_frequency = 1 }}
[train]
batch = {{ max_tokens = 200, max_sentences = 32 }}
valid_every = 10
log_every = 1
max_steps = {max_steps}
valid_bleu_sentences = 20
valid_beam_size = 2
src_word_dropout = 0.1
tgt_word_dropout = 0.1
label_smoothing = 0.1
lr_decay = 0.5
lr_patience = 1
average_last = 2
"#,
        d = dir.display()
    );
    Config::from_toml_str(&text, &[]).unwrap()
}

/// `(step, value of key)` of the log lines that have `kind` (`loss` lines or `dev_bleu` lines).
fn log_values(model_dir: &Path, kind: &str, key: &str) -> Vec<(u64, f64)> {
    std::fs::read_to_string(model_dir.join("train_log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get(kind).is_some())
        .map(|v| (v["step"].as_u64().unwrap(), v[key].as_f64().unwrap()))
        .collect()
}

fn losses(model_dir: &Path) -> Vec<(u64, f64)> {
    log_values(model_dir, "loss", "loss")
}

#[test]
fn resumed_run_continues_exactly() {
    resumes_exactly("");
}

/// Every architecture resumes as exactly: the LSTM with stacked, residual layers, recurrent
/// dropout and the source reversed; the copy mixture; grConv; the seq2seq shape.
#[test]
fn every_architecture_resumes_exactly() {
    for model in [
        "cell = \"lstm\"\nenc_layers = 2\ndec_layers = 2\nresidual = true\nrecurrent_dropout = 0.2\nreverse_source = true",
        "copy = true",
        "arch = \"rnnenc\"\natt_dim = 0\nencoder = \"grconv\"",
        "arch = \"rnnenc\"\natt_dim = 0\ncell = \"lstm\"\nenc_layers = 2\ndec_layers = 2\nreverse_source = true",
    ] {
        resumes_exactly(model);
    }
}

/// Trains 30 updates at once and as 10 + 20 with the `[model]` lines `model`, and compares.
fn resumes_exactly(model: &str) {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let tmp = tempfile::tempdir().unwrap();
    write_corpus(tmp.path());
    let run = |dir: &str, steps: u64| {
        let opts = TrainOptions::new(tmp.path().join(dir), Device::Cpu, Arc::new(AtomicBool::new(false)));
        train(&config(tmp.path(), steps, model), &opts, &mut Quiet).unwrap()
    };
    let whole = run("whole", 30);
    assert_eq!(whole.steps, 30);
    let first = run("split", 10);
    assert_eq!(first.steps, 10);
    assert!(tmp.path().join("split/checkpoint.safetensors").exists());
    let second = run("split", 30);
    assert_eq!(second.steps, 30);
    let a = losses(&tmp.path().join("whole"));
    let b = losses(&tmp.path().join("split"));
    assert_eq!(a.len(), 30);
    assert_eq!(b.len(), 30, "the resumed run must log updates 11..30 once each");
    for ((sa, la), (sb, lb)) in a.iter().zip(&b).skip(10) {
        assert_eq!(sa, sb);
        // README: a resumed run "computes the same numbers": the same bits, not close ones.
        assert!(la.to_bits() == lb.to_bits(), "{model}: update {sa}: {la} vs {lb}");
    }
    // Both runs saw the same validations and learning rates.
    let valids = |d: &str| log_values(&tmp.path().join(d), "dev_bleu", "lr");
    assert_eq!(valids("whole"), valids("split"));
    // Two snapshots kept, and their average written.
    let snaps: Vec<_> = std::fs::read_dir(tmp.path().join("whole/snapshots")).unwrap().collect();
    assert_eq!(snaps.len(), 2);
    assert!(tmp.path().join("whole/model.avg.safetensors").exists());
    // And training actually moved.
    assert!(a[29].1 < a[0].1, "loss did not fall: {} -> {}", a[0].1, a[29].1);
}

/// A checkpoint written with one `[model]` and resumed with another is a clear error naming the
/// checkpoint, before any training.
#[test]
fn a_checkpoint_with_another_config_is_refused() {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let tmp = tempfile::tempdir().unwrap();
    write_corpus(tmp.path());
    let opts = TrainOptions::new(tmp.path().join("m"), Device::Cpu, Arc::new(AtomicBool::new(false)));
    train(&config(tmp.path(), 2, ""), &opts, &mut Quiet).unwrap();
    let before = std::fs::read(tmp.path().join("m/checkpoint.safetensors")).unwrap();
    let Err(e) = train(&config(tmp.path(), 4, "cell = \"lstm\""), &opts, &mut Quiet) else { panic!("must refuse") };
    let msg = e.to_string();
    assert!(msg.contains("checkpoint.safetensors") && msg.contains("does not match"), "{msg}");
    assert_eq!(std::fs::read(tmp.path().join("m/checkpoint.safetensors")).unwrap(), before, "the checkpoint is untouched");
}
