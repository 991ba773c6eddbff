//! Data-parallel training on MPI (issue "Training beyond one machine"): 2 ranks, each with half
//! of every batch, must end 20 updates with the weights of one process on the whole batches,
//! to 1e-6, with every regulariser on (unit, word and recurrent dropout, label smoothing).
//! A run that switches from 2 ranks to 1 at a resume must end there too. `kill -USR1` to
//! `mpirun` stops every rank with a checkpoint that resumes.
//!
//! Needs the `mpi` feature and Open MPI's `mpirun` (`.ci/run` installs it and runs
//! `cargo test --release -p nmt-cli --features mpi --test mpi`).
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::Command;

use nmt::candle_core::{DType, Device};

#[path = "../../nmt/tests/common/weights.rs"]
mod weights;
use weights::max_weight_diff;

/// The data-parallel tests' recipe (`crates/nmt/tests/common/data_parallel.toml`), `steps`
/// updates, written into `dir`.
fn write_config(dir: &Path, steps: u64) -> String {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/bible-en-es");
    let cfg = include_str!("../../nmt/tests/common/data_parallel.toml").replace("DATA", data).replace("STEPS", &steps.to_string());
    let p = dir.join(format!("c{steps}.toml"));
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

/// `nmt train` on `ranks` MPI ranks of one thread each (`ranks = 0`: no launcher at all).
fn command(cfg: &str, dir: &Path, ranks: usize) -> Command {
    let nmt = env!("CARGO_BIN_EXE_nmt");
    let train = ["train", "-c", cfg, "--model-dir", dir.to_str().unwrap(), "--quiet", "--threads", "1"];
    let mut c = match ranks {
        0 => Command::new(nmt),
        n => {
            let mut c = Command::new("mpirun");
            c.args(["--oversubscribe", "--bind-to", "none", "-np", &n.to_string(), nmt]);
            c
        }
    };
    c.args(train).env("NMT_LOG", "warn").env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn train(cfg: &str, dir: &Path, ranks: usize) {
    let out = command(cfg, dir, ranks).output().expect("mpirun (Open MPI) must be installed for this test");
    assert!(out.status.success(), "{} ranks failed: {}", ranks, String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_ranks_end_with_the_weights_of_one_process() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write_config(d.path(), 20);
    let (one, two) = (d.path().join("one"), d.path().join("two"));
    train(&cfg, &one, 0);
    train(&cfg, &two, 2);
    let diff = max_weight_diff(&one.join("checkpoint.safetensors"), &two.join("checkpoint.safetensors"));
    eprintln!("mpi exactness: 20 updates, 1 process vs 2 ranks: max |diff| of the weights {diff:e}");
    assert!(diff <= 1e-6, "2 ranks differ from 1 process by {diff}");
    // The training really moved the weights (a run that did nothing would also agree).
    let fresh = d.path().join("fresh");
    train(&write_config(d.path(), 1), &fresh, 0);
    assert!(max_weight_diff(&one.join("checkpoint.safetensors"), &fresh.join("checkpoint.safetensors")) > 1e-3);
}

#[test]
fn a_resume_may_change_the_number_of_ranks() {
    let d = tempfile::tempdir().unwrap();
    let (one, mixed) = (d.path().join("one"), d.path().join("mixed"));
    train(&write_config(d.path(), 20), &one, 0);
    train(&write_config(d.path(), 10), &mixed, 2);
    train(&write_config(d.path(), 20), &mixed, 1);
    let diff = max_weight_diff(&one.join("checkpoint.safetensors"), &mixed.join("checkpoint.safetensors"));
    eprintln!("mpi resume: 10 updates on 2 ranks then 10 on 1 vs 20 in one process: max |diff| {diff:e}");
    assert!(diff <= 1e-6, "a resume on another number of ranks differs by {diff}");
}

#[test]
fn sigusr1_to_mpirun_stops_every_rank_with_a_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("run");
    let cfg = write_config(d.path(), 1_000_000);
    let child = command(&cfg, &dir, 2).stderr(std::process::Stdio::piped()).spawn().expect("mpirun must be installed");
    let t0 = std::time::Instant::now();
    while !dir.join("train_log.jsonl").exists() {
        assert!(t0.elapsed().as_secs() < 120, "training never logged an update");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sent = Command::new("kill").args(["-s", "USR1", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "mpirun after SIGUSR1: {:?}: {err}", out.status);
    let line = err.lines().find(|l| l.starts_with("stopped (Interrupted) after ")).unwrap_or_else(|| panic!("no stop line: {err}"));
    let at: u64 = line["stopped (Interrupted) after ".len()..].split(' ').next().unwrap().parse().unwrap();
    let ckpt = dir.join("checkpoint.safetensors");
    assert!(ckpt.exists() && at > 0, "{err}");
    // Both ranks resume from it to 3 updates later.
    train(&write_config(d.path(), at + 3), &dir, 2);
    let m = nmt::model_file::load(&ckpt, DType::F32, &Device::Cpu).unwrap();
    eprintln!("mpi SIGUSR1: both ranks stopped at update {at} with a checkpoint; resumed on 2 ranks");
    assert_eq!(m.meta.step, at + 3, "the resumed run did not continue from update {at}");
}
