//! `nmt prepare` + `nmt train --data DIR` against `nmt train` from text: the same seed gives the
//! same losses, update for update, and a prepared directory that does not fit is refused.
mod common;

use std::path::Path;

use common::{fails_with, nmt};

/// The bundled dev set as a small training corpus, with a tiny model.
fn config(dir: &Path, extra: &str) -> String {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es");
    let cfg = format!(
        "[model]\npreset = \"tiny\"\n[data]\ntrain_src = \"{d}/dev.en.gz\"\ntrain_tgt = \"{d}/dev.es.gz\"\n\
         dev_src = \"{d}/dev.en.gz\"\ndev_tgt = \"{d}/dev.es.gz\"\nshard_pairs = 150\n\
         src_subword = {{ kind = \"bpe\", vocab_size = 400 }}\ntgt_subword = {{ kind = \"bpe\", vocab_size = 400 }}\n\
         [train]\nmax_steps = 200\nlog_every = 1\nvalid_every = 100\nvalid_bleu_sentences = 20\n\
         batch = {{ max_tokens = 300, max_sentences = 16 }}\n{extra}",
        d = data.display()
    );
    let p = dir.join("c.toml");
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

/// `(step, loss)` of every training log line.
fn losses(model_dir: &Path) -> Vec<(u64, f64)> {
    let text = std::fs::read_to_string(model_dir.join("train_log.jsonl")).unwrap();
    text.lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Some((v["step"].as_u64()?, v.get("loss")?.as_f64()?))
        })
        .collect()
}

fn ok(out: &std::process::Output) {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn prepared_and_text_training_have_the_same_losses() {
    let d = tempfile::tempdir().unwrap();
    let cfg = config(d.path(), "");
    let (prep, a, b) = (d.path().join("prep"), d.path().join("a"), d.path().join("b"));
    let s = |p: &Path| p.display().to_string();
    ok(&nmt(&["prepare", "-c", &cfg, "-o", &s(&prep), "--threads", "2"], None));
    ok(&nmt(&["train", "-c", &cfg, "--data", &s(&prep), "--model-dir", &s(&a), "--quiet", "--threads", "1"], None));
    ok(&nmt(&["train", "-c", &cfg, "--model-dir", &s(&b), "--quiet", "--threads", "1"], None));
    let (la, lb) = (losses(&a), losses(&b));
    assert_eq!(la.len(), 200);
    assert_eq!(la, lb, "the same seed must give the same losses from prepared data and from text");
    // Training from text prepared into the model directory, and the two preparations agree.
    let manifest = |p: &Path| std::fs::read_to_string(p.join("manifest.json")).unwrap();
    assert_eq!(manifest(&prep), manifest(&b.join("data")));
    // Resuming from the model directory's own config.toml (the same files, named by their
    // canonical paths) reuses the prepared data instead of encoding the corpus again.
    let resolved = b.join("config.toml");
    let again = common::nmt_logging(
        &["train", "-c", &s(&resolved), "--model-dir", &s(&b), "--quiet", "--threads", "1", "--set", "train.max_steps=202"],
        None,
        "info",
    );
    ok(&again);
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(log.contains("reusing the prepared training data") && !log.contains("preparing"), "{log}");
}

#[test]
fn a_prepared_directory_that_does_not_fit_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let cfg = config(d.path(), "");
    let prep = d.path().join("prep");
    let s = |p: &Path| p.display().to_string();
    ok(&nmt(&["prepare", "-c", &cfg, "-o", &s(&prep)], None));
    // Made without copy ids, used for a copy model.
    let copy = nmt(&["train", "-c", &cfg, "--data", &s(&prep), "--model-dir", &s(&d.path().join("m")), "--set", "model.copy=true"], None);
    fails_with(&copy, &["manifest.json", "copy"]);
    // A shard damaged after preparation.
    let shard = prep.join("shard-00001.tok");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[7] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let out = nmt(&["train", "-c", &cfg, "--data", &s(&prep), "--model-dir", &s(&d.path().join("m2"))], None);
    fails_with(&out, &["shard-00001.tok", "corrupt"]);
    // No manifest at all.
    let out = nmt(&["train", "-c", &cfg, "--data", &s(d.path()), "--model-dir", &s(&d.path().join("m3"))], None);
    fails_with(&out, &["manifest.json"]);
}

#[test]
fn tsv_and_weighted_corpora_train() {
    let d = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es");
    let tsv = d.path().join("extra.tsv");
    std::fs::write(&tsv, "In the beginning\tEn el principio\nGod is love\tDios es amor\n").unwrap();
    let cfg = format!(
        "[model]\npreset = \"tiny\"\n[data]\ntrain = [{{ src = \"{d}/dev.en.gz\", tgt = \"{d}/dev.es.gz\" }}, {{ tsv = \"{t}\", weight = 3 }}]\n\
         dev_src = \"{d}/dev.en.gz\"\ndev_tgt = \"{d}/dev.es.gz\"\n\
         src_subword = {{ kind = \"word\", vocab_size = 300 }}\ntgt_subword = {{ kind = \"word\", vocab_size = 300 }}\n\
         [train]\nmax_steps = 3\nvalid_bleu_sentences = 5\n",
        d = data.display(),
        t = tsv.display()
    );
    let c = d.path().join("c.toml");
    std::fs::write(&c, cfg).unwrap();
    let m = d.path().join("m");
    let out = nmt(&["train", "-c", c.to_str().unwrap(), "--model-dir", m.to_str().unwrap(), "--quiet", "--threads", "1"], None);
    ok(&out);
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(m.join("data/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["corpora"][1]["pairs"], 2);
    assert_eq!(manifest["corpora"][1]["weight"], 3.0);
    // The languages come from the first corpus's file names.
    let info = nmt::model_file::load(&m.join("model.safetensors"), nmt::candle_core::DType::F32, &nmt::candle_core::Device::Cpu).unwrap();
    assert_eq!(info.meta.languages, Some(nmt::languages::Languages { src: "en".into(), tgt: "es".into() }));
}
