//! Issue 44, row 9: out-of-range optimiser settings are errors naming the key, and a run whose
//! weights become non-finite stops with an error, keeping the last good checkpoint and best
//! model byte for byte and saving nothing of the bad update.
mod common;

use common::{fails_with, nmt, train, write_config};

fn corpus(dir: &std::path::Path) {
    let words = ["uno dos", "tres cuatro", "dos tres", "cuatro uno"];
    let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    std::fs::write(dir.join("t.src"), &src).unwrap();
    std::fs::write(dir.join("t.tgt"), src.to_uppercase()).unwrap();
}

#[test]
fn out_of_range_optimiser_settings_name_their_key() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let cfg = write_config(d.path(), "t.src", "t.tgt");
    let md = d.path().join("m").display().to_string();
    let cases = [
        ("train.lr=nan", "train.lr"),
        ("train.lr=-1", "train.lr"),
        ("train.lr=inf", "train.lr"),
        ("train.adam_betas=[1.5, 0.9]", "train.adam_betas[0]"),
        ("train.adam_betas=[0.9, -1]", "train.adam_betas[1]"),
        ("train.max_minutes=-1", "train.max_minutes"),
    ];
    for (set, key) in cases {
        fails_with(&nmt(&["train", "-c", &cfg, "--model-dir", &md, "--set", set], None), &[key]);
    }
    assert!(!d.path().join("m/model.safetensors").exists());
}

#[test]
fn a_diverged_run_keeps_the_last_good_files() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let out = train(d.path(), "t.src", "t.tgt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (ckpt, best) = (d.path().join("m/checkpoint.safetensors"), d.path().join("m/model.safetensors"));
    let (ckpt_before, best_before) = (std::fs::read(&ckpt).unwrap(), std::fs::read(&best).unwrap());
    // Resumed with a learning rate that makes the next update's weights infinite.
    let cfg = d.path().join("c.toml").display().to_string();
    let md = d.path().join("m").display().to_string();
    let args =
        ["train", "-c", &cfg, "--model-dir", &md, "--quiet", "--threads", "1", "--set", "train.lr=1e300", "--set", "train.max_steps=3"];
    fails_with(&nmt(&args, None), &["diverged"]);
    assert_eq!(std::fs::read(&ckpt).unwrap(), ckpt_before, "the checkpoint changed");
    assert_eq!(std::fs::read(&best).unwrap(), best_before, "a best model was saved");
}
