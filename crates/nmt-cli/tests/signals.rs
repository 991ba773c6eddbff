//! Stopping a training run by signal (issue "Nothing lost"; MPI runs in `tests/mpi.rs`):
//! SIGINT (Ctrl-C), SIGTERM (schedulers) and SIGUSR1 (what `mpirun` forwards) each make
//! `nmt train` save a checkpoint and exit 0, and the same command with a later horizon resumes
//! from that update. Unix only: the signals are sent with `kill`.
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn write_config(dir: &Path) -> String {
    let words = ["uno", "dos", "tres", "cuatro", "cinco", "seis"];
    let src: String = (0..200).map(|i| format!("{} {} {}\n", words[i % 6], words[(i / 6) % 6], words[(i / 36) % 6])).collect();
    std::fs::write(dir.join("t.src"), &src).unwrap();
    std::fs::write(dir.join("t.tgt"), src.to_uppercase()).unwrap();
    let cfg = format!(
        "[model]\npreset = \"tiny\"\n[data]\ntrain_src = \"{d}/t.src\"\ntrain_tgt = \"{d}/t.tgt\"\ndev_src = \"{d}/t.src\"\n\
         dev_tgt = \"{d}/t.tgt\"\nsrc_subword = {{ kind = \"word\", vocab_size = 50 }}\ntgt_subword = {{ kind = \"word\", vocab_size = 50 }}\n\
         [train]\nmax_steps = 1000000\nvalid_every = 100000\nlog_every = 5\naverage_last = 0\nbatch = {{ max_tokens = 120, max_sentences = 16 }}\n",
        d = dir.display()
    );
    let p = dir.join("c.toml");
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

fn train(cfg: &str, dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nmt"));
    c.args(["train", "-c", cfg, "--model-dir", dir.to_str().unwrap(), "--quiet", "--threads", "1"])
        .args(extra)
        .env("NMT_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Waits until the run has logged its first updates (so the handlers are installed and the
/// loop is running), then sends `signal`.
fn signal_when_training(child: &Child, dir: &Path, signal: &str) {
    let t0 = Instant::now();
    while !dir.join("train_log.jsonl").exists() {
        assert!(t0.elapsed() < Duration::from_secs(120), "training never logged an update");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill -s {signal} failed");
}

/// "stopped (REASON) after N updates" from `nmt train`'s last lines.
fn stopped(stderr: &str) -> (String, u64) {
    let line = stderr.lines().find(|l| l.starts_with("stopped (")).unwrap_or_else(|| panic!("no stop line in {stderr}"));
    let reason = line["stopped (".len()..].split(')').next().unwrap().to_string();
    let steps = line.split(" after ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    (reason, steps)
}

#[test]
fn each_stop_signal_saves_a_checkpoint_that_resumes() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write_config(d.path());
    for signal in ["INT", "TERM", "USR1"] {
        let dir = d.path().join(signal);
        let child = train(&cfg, &dir, &[]).spawn().unwrap();
        signal_when_training(&child, &dir, signal);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "SIG{signal}: exit {:?}: {err}", out.status);
        let (reason, at) = stopped(&err);
        assert_eq!(reason, "Interrupted", "{signal}: {err}");
        assert!((5..1_000_000).contains(&at), "{signal}: stopped at {at}");
        assert!(dir.join("checkpoint.safetensors").exists(), "{signal}: no checkpoint");
        // The same command with a horizon 3 updates later continues from the checkpoint.
        let horizon = format!("train.max_steps={}", at + 3);
        let out = train(&cfg, &dir, &["--set", &horizon]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{signal}: resume failed: {err}");
        assert_eq!(stopped(&err), ("MaxSteps".to_string(), at + 3), "{signal}: {err}");
        eprintln!("SIG{signal}: checkpoint at update {at}, resumed to {}", at + 3);
    }
}
