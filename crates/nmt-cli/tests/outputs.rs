//! Issue 44, rows 1 and 10: every command's output goes through one writer. A FIFO or device
//! is written in place (and stays what it was), a symbolic link is followed to its target, and
//! an output that is an input or another output is refused before anything is read.
#![cfg(unix)]
mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use common::{fails_with, nmt};

/// A tiny trained model, shared by the tests of this file (trained once).
fn model() -> &'static Path {
    common::tiny_model()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_fifo_output_is_streamed_into_and_stays_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.txt");
    std::fs::write(&input, "uno dos\ntres cuatro\n").unwrap();
    let fifo = d.path().join("out.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // The reader: opening a FIFO for reading blocks until the writer opens it.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = nmt(&["translate", "-m", s(model()), "-i", s(&input), "-o", s(&fifo)], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = reader.join().unwrap();
    assert_eq!(got.lines().count(), 2, "the FIFO's reader got {got:?}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    let leftovers: Vec<_> =
        std::fs::read_dir(d.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".tmp")).collect();
    assert!(leftovers.is_empty());
}

#[test]
fn a_symlinked_output_writes_its_target() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.txt");
    std::fs::write(&input, "uno dos\n").unwrap();
    let target = d.path().join("target.txt");
    std::fs::write(&target, "old\n").unwrap();
    let link = d.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = nmt(&["translate", "-m", s(model()), "-i", s(&input), "-o", s(&link)], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    let text = std::fs::read_to_string(&target).unwrap();
    assert_ne!(text, "old\n");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f.txt");
    std::fs::write(&f, "uno dos\ntres cuatro\n").unwrap();
    let before = std::fs::read(&f).unwrap();
    fails_with(&nmt(&["translate", "-m", s(model()), "-i", s(&f), "-o", s(&f)], None), &["f.txt", "same file"]);
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // By another name: `./f.txt` in its folder.
    let dotted = d.path().join(".").join("f.txt");
    fails_with(&nmt(&["translate", "-m", s(model()), "-i", s(&f), "-o", s(&dotted)], None), &["same file"]);
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // `score`'s input, and the model itself.
    let pairs = d.path().join("p.tsv");
    std::fs::write(&pairs, "uno dos\tUNO DOS\n").unwrap();
    let pairs_before = std::fs::read(&pairs).unwrap();
    fails_with(&nmt(&["score", "-m", s(model()), "-i", s(&pairs), "-o", s(&pairs)], None), &["p.tsv", "same file"]);
    assert_eq!(std::fs::read(&pairs).unwrap(), pairs_before);
    let model_before = std::fs::read(model()).unwrap();
    fails_with(&nmt(&["translate", "-m", s(model()), "-i", s(&f), "-o", s(model())], None), &["same file"]);
    assert_eq!(std::fs::read(model()).unwrap(), model_before);
}

#[test]
fn two_outputs_of_one_command_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.txt");
    std::fs::write(&input, "uno dos\n").unwrap();
    let x = d.path().join("x.txt");
    fails_with(&nmt(&["translate", "-m", s(model()), "-i", s(&input), "-o", s(&x), "--alignments", s(&x)], None), &["x.txt", "same file"]);
    assert!(!x.exists(), "nothing is written");
}

#[test]
fn dev_stdout_is_written_through_its_pipe() {
    // `/dev/stdout` → `/proc/self/fd/1` → `pipe:[…]`: a link no path resolution can follow.
    if !Path::new("/dev/stdout").exists() {
        return;
    }
    let out = nmt(&["translate", "-m", s(model()), "-o", "/dev/stdout"], Some(b"uno dos\ntres cuatro\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}
