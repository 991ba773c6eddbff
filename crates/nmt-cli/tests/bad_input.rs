//! Bad input through the real binary: each case exits non-zero with one `nmt: error:` line that
//! names the problem, and never panics.
mod common;

use std::process::{Command, Stdio};

use common::{fails_with, nmt, nmt_logging, train, train_logging, write_config};

#[test]
fn unequal_line_counts_name_both_files_and_counts() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.en"), "a b\nc d\ne f\n").unwrap();
    std::fs::write(d.path().join("a.es"), "x y\nz w\n").unwrap();
    fails_with(&train(d.path(), "a.en", "a.es"), &["a.en", "a.es", "3", "2"]);
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.en"), b"a b\nc \xff d\n").unwrap();
    std::fs::write(d.path().join("a.es"), "x y\nz w\n").unwrap();
    fails_with(&train(d.path(), "a.en", "a.es"), &["a.en", "2"]);
}

#[test]
fn missing_and_empty_files() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.es"), "x y\n").unwrap();
    fails_with(&train(d.path(), "nope.en", "a.es"), &["nope.en"]);
    std::fs::write(d.path().join("e.en"), "").unwrap();
    fails_with(&train(d.path(), "e.en", "a.es"), &["e.en", "empty"]);
}

#[test]
fn bad_config_and_model_files() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("bad.toml");
    std::fs::write(&cfg, "[model]\npreset = \"huge\"\n").unwrap();
    fails_with(&nmt(&["train", "-c", cfg.to_str().unwrap()], None), &["huge"]);
    std::fs::write(&cfg, "[model]\nhidden_dimm = 3\n").unwrap();
    fails_with(&nmt(&["train", "-c", cfg.to_str().unwrap()], None), &["hidden_dimm"]);
    let junk = d.path().join("junk.safetensors");
    std::fs::write(&junk, b"not a model").unwrap();
    fails_with(&nmt(&["translate", "-m", junk.to_str().unwrap()], Some(b"hello\n")), &["junk.safetensors"]);
    fails_with(&nmt(&["translate", "-m", "/no/such/model.safetensors"], Some(b"hello\n")), &["model.safetensors"]);
}

#[test]
fn train_translate_and_bad_stdin() {
    let d = tempfile::tempdir().unwrap();
    let words = ["uno dos", "tres cuatro", "dos tres", "cuatro uno"];
    let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    let tgt = src.to_uppercase();
    std::fs::write(d.path().join("t.src"), &src).unwrap();
    std::fs::write(d.path().join("t.tgt"), &tgt).unwrap();
    let out = train(d.path(), "t.src", "t.tgt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let model = d.path().join("m/model.safetensors");
    assert!(model.exists());
    let m = model.to_str().unwrap();
    let ok = nmt(&["translate", "-m", m, "-b", "3", "--n-best", "2"], Some(b"uno dos\ntres\n"));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let text = String::from_utf8(ok.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("0 ||| ") && lines[3].starts_with("1 ||| "), "{text}");
    fails_with(&nmt(&["translate", "-m", m], Some(b"fine\nbad \xc3\x28 line\n")), &["line 2", "UTF-8"]);
    // Both search implementations print the same n-best lists; `--stats` reports on stderr.
    let input: &[u8] = b"uno dos\ntres cuatro uno\n\ndos\n";
    let fused = nmt(&["translate", "-m", m, "-b", "3", "--n-best", "3", "--stats"], Some(input));
    let ops = nmt(&["translate", "-m", m, "-b", "3", "--n-best", "3", "--impl", "ops"], Some(input));
    assert!(fused.status.success() && ops.status.success(), "{}", String::from_utf8_lossy(&fused.stderr));
    let strip_scores = |o: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(o).lines().map(|l| l.split(" ||| ").take(2).collect::<Vec<_>>().join(" ||| ")).collect()
    };
    assert_eq!(strip_scores(&fused.stdout), strip_scores(&ops.stdout));
    let stats = String::from_utf8_lossy(&fused.stderr);
    assert!(stats.contains("translated 4 sentences") && stats.contains("row-steps"), "{stats}");
    let bad = nmt(&["translate", "-m", m, "--impl", "gpu"], Some(b"uno\n"));
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("--impl"));
    // --replace-unk: no `<unk>` survives (this 2-update model says little else); a missing
    // dictionary is named.
    let rep = nmt(&["translate", "-m", m, "--replace-unk", "--n-best", "3"], Some(b"zeta uno omega\nxi\n"));
    assert!(rep.status.success(), "{}", String::from_utf8_lossy(&rep.stderr));
    assert!(!String::from_utf8_lossy(&rep.stdout).contains("<unk>"), "{}", String::from_utf8_lossy(&rep.stdout));
    fails_with(&nmt(&["translate", "-m", m, "--replace-unk", "--dict", "/no/dict.txt"], Some(b"uno\n")), &["/no/dict.txt"]);
    // nmt score: one log-probability per pair, per-token lists, and bad lines named.
    let sc = nmt(&["score", "-m", m], Some("uno dos\tUNO DOS\ntres\tTRES\n\t\n".as_bytes()));
    assert!(sc.status.success(), "{}", String::from_utf8_lossy(&sc.stderr));
    let lines: Vec<f64> = String::from_utf8_lossy(&sc.stdout).lines().map(|l| l.parse().unwrap()).collect();
    assert!(lines.len() == 3 && lines.iter().all(|&x| x < 0.0), "{lines:?}");
    let pt = nmt(&["score", "-m", m, "--per-token"], Some(b"uno dos\tUNO DOS\n"));
    let toks: Vec<f64> = String::from_utf8_lossy(&pt.stdout).split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert_eq!(toks.len(), 3, "two words and </s>");
    assert!((toks.iter().sum::<f64>() - lines[0]).abs() < 1e-4);
    fails_with(&nmt(&["score", "-m", m], Some(b"uno\tUNO\nno tab here\n")), &["line 2", "TAB"]);
}

#[test]
fn eval_bleu_rejects_malformed_input() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("ref.es");
    let h = d.path().join("hyp.es");
    std::fs::write(&r, "a b c\nd e f\ng\n").unwrap();
    std::fs::write(&h, "a b c\nd e f\n").unwrap();
    let (rs, hs) = (r.to_str().unwrap(), h.to_str().unwrap());
    fails_with(&nmt(&["eval", "bleu", "-r", rs, hs], None), &["3", "2"]);
    std::fs::write(&h, b"a b c\nd \xfe f\ng\n").unwrap();
    fails_with(&nmt(&["eval", "bleu", "-r", rs, hs], None), &["hyp.es", "2"]);
    std::fs::write(&r, "a b c d e\nd e f g h\ng h i j k\n").unwrap();
    std::fs::write(&h, "a b c d e\nd e f g h\ng h i j k\n").unwrap();
    let ok = nmt(&["eval", "bleu", "-r", rs, hs], None);
    assert!(ok.status.success());
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("BLEU = 100.00"), "{}", String::from_utf8_lossy(&ok.stdout));
}

/// Output into a pipe whose reader has gone (`nmt … | head`) ends the program without a panic.
#[cfg(unix)]
#[test]
fn closed_stdout_is_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("ref.es");
    let line = "a b c d e f g h\n".repeat(2000);
    std::fs::write(&r, &line).unwrap();
    let rs = r.to_str().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nmt"))
        .args(["eval", "bleu", "-r", rs, rs])
        .env("NMT_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the child has scored 2000 lines and printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "panic on a closed stdout: {err}");
}

/// Every architecture trains and translates through the binary (a few updates each), and
/// `nmt plot grconv` draws a grConv model's tree and refuses other models by name.
#[test]
fn each_architecture_trains_translates_and_grconv_plots() {
    let d = tempfile::tempdir().unwrap();
    let words = ["uno dos tres", "tres cuatro", "dos tres uno cuatro", "cuatro uno"];
    let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    std::fs::write(d.path().join("t.src"), &src).unwrap();
    std::fs::write(d.path().join("t.tgt"), src.to_uppercase()).unwrap();
    let cfg = write_config(d.path(), "t.src", "t.tgt");
    let shapes: [(&str, &[&str]); 4] = [
        ("copy", &["model.copy=true"]),
        ("grconv", &["model.arch=rnnenc", "model.att_dim=0", "model.encoder=grconv"]),
        (
            "seq2seq",
            &[
                "model.arch=rnnenc",
                "model.att_dim=0",
                "model.cell=lstm",
                "model.enc_layers=2",
                "model.dec_layers=2",
                "model.reverse_source=true",
            ],
        ),
        ("deep-lstm-search", &["model.cell=lstm", "model.enc_layers=2", "model.dec_layers=2", "model.residual=true"]),
    ];
    for (name, sets) in shapes {
        let md = d.path().join(name).display().to_string();
        let mut args = vec!["train", "-c", &cfg, "--model-dir", &md, "--quiet", "--threads", "1"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let out = nmt(&args, None);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let m = format!("{md}/model.safetensors");
        let tr = nmt(&["translate", "-m", &m, "-b", "3", "--n-best", "2"], Some(b"uno dos\ntres\n"));
        assert!(tr.status.success(), "{name}: {}", String::from_utf8_lossy(&tr.stderr));
        assert_eq!(String::from_utf8_lossy(&tr.stdout).lines().count(), 4, "{name}");
    }
    let png = d.path().join("tree.png");
    let m = d.path().join("grconv/model.safetensors");
    let ok = nmt(&["plot", "grconv", "-m", m.to_str().unwrap(), "--sentence", "uno dos tres cuatro", "-o", png.to_str().unwrap()], None);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    let other = d.path().join("seq2seq/model.safetensors");
    fails_with(
        &nmt(&["plot", "grconv", "-m", other.to_str().unwrap(), "--sentence", "uno", "-o", png.to_str().unwrap()], None),
        &["grConv"],
    );
}

/// A 10 MB line, in the corpus (train and dev) and at `translate`'s stdin: skipped or cropped
/// with a message, in bounded memory, never an out-of-memory abort.
#[test]
fn a_ten_megabyte_line_is_skipped_or_cropped() {
    let d = tempfile::tempdir().unwrap();
    let words = ["uno dos", "tres cuatro", "dos tres", "cuatro uno"];
    let normal: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    let huge = "uno dos tres cuatro ".repeat(500_000);
    let text = format!("{normal}{huge}\n{normal}");
    std::fs::write(d.path().join("t.src"), &text).unwrap();
    std::fs::write(d.path().join("t.tgt"), text.to_uppercase()).unwrap();
    let out = train_logging(d.path(), "t.src", "t.tgt", "info");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 over-long skipped"), "{err}");
    let m = d.path().join("m/model.safetensors");
    let input = format!("uno dos\n{huge}\ntres\n");
    let tr = nmt_logging(&["translate", "-m", m.to_str().unwrap(), "--max-length", "50"], Some(input.as_bytes()), "warn");
    let err = String::from_utf8_lossy(&tr.stderr);
    assert!(tr.status.success(), "{err}");
    assert!(err.contains("sentence 2") && err.contains("cropped to the first 50"), "{err}");
    assert_eq!(String::from_utf8_lossy(&tr.stdout).lines().count(), 3);
    // `nmt score` refuses the pair, naming it, rather than running out of memory.
    let pairs = format!("uno dos\tUNO DOS\n{huge}\tUNO\n");
    fails_with(&nmt(&["score", "-m", m.to_str().unwrap()], Some(pairs.as_bytes())), &["pair 2", "not scored"]);
}
