//! Issue 44, rows 2 and 11: `--threads` is capped at the machine's cores with a warning, the
//! beam and n-best list have a documented maximum, and an empty or whitespace-only line
//! translates to an empty line.
mod common;

use common::{fails_with, nmt, nmt_logging};

/// A tiny trained model, shared by this file's tests.
fn model() -> &'static str {
    common::tiny_model().to_str().unwrap()
}

#[test]
fn threads_beyond_the_cores_are_capped_with_a_warning() {
    let out = nmt_logging(&["translate", "-m", model(), "--threads", "100000"], Some(b"uno dos\n"), "warn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("--threads 100000") && err.contains("cores"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn beam_and_n_best_have_a_maximum() {
    fails_with(&nmt(&["translate", "-m", model(), "-b", "5000"], Some(b"uno dos\n")), &["5000", "maximum 128"]);
    fails_with(&nmt(&["translate", "-m", model(), "--n-best", "129"], Some(b"uno dos\n")), &["129", "maximum 128"]);
    let out = nmt(&["translate", "-m", model(), "-b", "128"], Some(b"uno dos\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let serve = nmt(&["serve", "-m", model(), "--port", "0", "--max-beam", "1000"], None);
    assert_eq!(serve.status.code(), Some(2), "{}", String::from_utf8_lossy(&serve.stderr));
}

#[test]
fn empty_and_blank_lines_translate_to_empty_lines() {
    let out = nmt(&["translate", "-m", model()], Some(b"\nuno dos\n   \n\t\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    assert_eq!((lines[0], lines[2], lines[3]), ("", "", ""), "{text:?}");
    // n-best: one empty hypothesis, with the model's log-probability of `</s>`.
    let out = nmt(&["translate", "-m", model(), "--n-best", "3"], Some(b"\n"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(text.starts_with("0 |||  ||| logprob= -"), "{text:?}");
}
