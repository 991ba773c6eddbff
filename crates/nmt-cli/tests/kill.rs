//! kill -9 at random moments (issue "Nothing lost"): a small model trains with a checkpoint,
//! a validation and a snapshot every 3 updates; the process is SIGKILLed 10 times at random
//! moments and restarted with the same command each time. After every kill, every model file
//! left behind must load (or fail loudly: none may be torn and accepted); at the end, the
//! weights must equal an uninterrupted run's to 1e-6. Prints how many kills landed inside a
//! write (a temporary file was left).
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nmt::candle_core::{DType, Device};
use rand::{Rng, SeedableRng};

const STEPS: u64 = 1200;

fn write_data(dir: &Path) -> String {
    let words = ["uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho"];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut src = String::new();
    for _ in 0..300 {
        let n = rng.gen_range(2..7);
        let s: Vec<&str> = (0..n).map(|_| words[rng.gen_range(0..words.len())]).collect();
        src.push_str(&s.join(" "));
        src.push('\n');
    }
    std::fs::write(dir.join("t.src"), &src).unwrap();
    std::fs::write(dir.join("t.tgt"), src.to_uppercase()).unwrap();
    let cfg = format!(
        "[model]\npreset = \"tiny\"\ndropout = 0.1\n[data]\ntrain_src = \"{d}/t.src\"\ntrain_tgt = \"{d}/t.tgt\"\ndev_src = \"{d}/t.src\"\n\
         dev_tgt = \"{d}/t.tgt\"\nsrc_subword = {{ kind = \"word\", vocab_size = 50 }}\ntgt_subword = {{ kind = \"word\", vocab_size = 50 }}\n\
         [train]\nmax_steps = {STEPS}\nvalid_every = 3\nvalid_bleu_sentences = 10\naverage_last = 2\npatience = 0\nbatch = {{ max_tokens = 120, max_sentences = 16 }}\n",
        d = dir.display()
    );
    let p = dir.join("c.toml");
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

fn command(cfg: &str, dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nmt"));
    c.args(["train", "-c", cfg, "--model-dir", dir.to_str().unwrap(), "--quiet", "--threads", "1"])
        .env("NMT_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Every `*.safetensors` under `dir`: loads, or is an error (never a panic). Returns the
/// temporary files found (a write the kill interrupted).
fn check_files(dir: &Path) -> usize {
    let mut tmp = 0;
    for sub in [dir.to_path_buf(), dir.join("snapshots")] {
        let Ok(entries) = std::fs::read_dir(&sub) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".tmp") {
                tmp += 1;
            } else if name.ends_with(".safetensors") {
                // Renamed files are whole: each must load.
                if let Err(err) = nmt::model_file::load(&e.path(), DType::F32, &Device::Cpu) {
                    panic!("{name} left by a kill does not load: {err}");
                }
            }
        }
    }
    tmp
}

fn weights(path: &Path) -> Vec<(String, Vec<f32>)> {
    let m = nmt::model_file::load(path, DType::F32, &Device::Cpu).unwrap();
    nmt::model_file::model_tensors(&m.model).into_iter().map(|(k, t)| (k, t.flatten_all().unwrap().to_vec1::<f32>().unwrap())).collect()
}

#[test]
fn ten_kills_lose_nothing() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write_data(d.path());
    let (whole, killed) = (d.path().join("whole"), d.path().join("killed"));
    let status = command(&cfg, &whole).status().unwrap();
    assert!(status.success());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let (mut kills, mut inside_write, mut finished_early) = (0, 0, 0);
    while kills < 10 {
        let mut child = command(&cfg, &killed).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(80..700)));
        if child.try_wait().unwrap().is_some() {
            // It finished before the kill: start over from scratch to keep killing.
            finished_early += 1;
            std::fs::remove_dir_all(&killed).unwrap();
            continue;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
        inside_write += check_files(&killed);
    }
    let status = command(&cfg, &killed).status().unwrap();
    assert!(status.success());
    check_files(&killed);
    let (a, b) = (weights(&whole.join("checkpoint.safetensors")), weights(&killed.join("checkpoint.safetensors")));
    let mut max_diff = 0f32;
    for ((ka, va), (kb, vb)) in a.iter().zip(&b) {
        assert_eq!(ka, kb);
        max_diff = va.iter().zip(vb).map(|(x, y)| (x - y).abs()).fold(max_diff, f32::max);
    }
    eprintln!("kill -9: {kills} kills survived, {inside_write} inside a write, {finished_early} runs finished before their kill; final weights max |diff| {max_diff:e}");
    // docs/RELIABILITY.md promises identical weights, not close ones (measured 0 on 2026-11-27).
    assert!(max_diff == 0.0, "final weights differ by {max_diff}: a resumed run must be bit-identical");
}
