//! What the CLI tests share: running the binary, expecting one error line, a tiny trained
//! model.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Runs `nmt` with `args`, feeding `stdin`.
pub fn nmt(args: &[&str], stdin: Option<&[u8]>) -> Output {
    nmt_logging(args, stdin, "error")
}

/// [`nmt`] with the log level `log` (`NMT_LOG`).
pub fn nmt_logging(args: &[&str], stdin: Option<&[u8]>, log: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nmt"))
        .args(args)
        .env("NMT_LOG", log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut si = child.stdin.take().unwrap();
        if let Some(b) = stdin {
            // The child may exit on an earlier error before reading stdin (a broken pipe
            // here is then expected, not a failure: the assertions are on its output).
            let _ = si.write_all(b);
        }
    }
    child.wait_with_output().unwrap()
}

/// Asserts failure with exactly one error line containing every `needle`; returns it.
pub fn fails_with(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "expected failure, stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("nmt: error:")).collect();
    assert_eq!(lines.len(), 1, "want one error line, got: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} not in {:?}", lines[0]);
    }
    lines[0].to_string()
}

pub fn write_config(dir: &Path, src: &str, tgt: &str) -> String {
    let cfg = format!(
        "[model]\npreset = \"tiny\"\n[data]\ntrain_src = \"{s}\"\ntrain_tgt = \"{t}\"\ndev_src = \"{s}\"\ndev_tgt = \"{t}\"\n\
         src_subword = {{ kind = \"word\", vocab_size = 50 }}\ntgt_subword = {{ kind = \"word\", vocab_size = 50 }}\n[train]\nmax_steps = 2\n",
        s = dir.join(src).display(),
        t = dir.join(tgt).display()
    );
    let p = dir.join("c.toml");
    std::fs::write(&p, cfg).unwrap();
    p.display().to_string()
}

pub fn train(dir: &Path, src: &str, tgt: &str) -> Output {
    train_logging(dir, src, tgt, "error")
}

/// [`train`] with the log level `log`.
pub fn train_logging(dir: &Path, src: &str, tgt: &str, log: &str) -> Output {
    let cfg = write_config(dir, src, tgt);
    let md = dir.join("m").display().to_string();
    nmt_logging(&["train", "-c", &cfg, "--model-dir", &md, "--quiet", "--threads", "1"], None, log)
}

/// A tiny model trained once per test binary (40 pairs of number words), for tests that only
/// need some model to run the CLI on.
pub fn tiny_model() -> &'static Path {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(|| {
        let d = tempfile::tempdir().unwrap().keep();
        let words = ["uno dos", "tres cuatro", "dos tres", "cuatro uno"];
        let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
        std::fs::write(d.join("t.src"), &src).unwrap();
        std::fs::write(d.join("t.tgt"), src.to_uppercase()).unwrap();
        let out = train(&d, "t.src", "t.tgt");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        d.join("m/model.safetensors")
    })
}
