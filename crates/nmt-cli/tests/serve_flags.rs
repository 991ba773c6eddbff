//! Issue 44, row 8: `nmt serve`'s durations are checked when the flags are parsed. A value too
//! large for the clock (`--timeout 1e300`, `--max-wait-ms 1.8e22`) is an error naming the
//! flag, never a panic (exit 101) at start or in the translator thread.
mod common;

use common::nmt;

#[test]
fn durations_too_large_or_not_finite_are_errors_at_parse_time() {
    let d = tempfile::tempdir().unwrap();
    let model = d.path().join("none.safetensors").display().to_string();
    let cases = [
        ("--timeout", "1e300"),
        ("--timeout", "-1"),
        ("--timeout", "nan"),
        ("--timeout", "0"),
        ("--max-wait-ms", "1.8e22"),
        ("--max-wait-ms", "-5"),
        ("--header-timeout", "inf"),
        ("--body-timeout", "1e20"),
    ];
    for (flag, value) in cases {
        let out = nmt(&["serve", "-m", &model, "--port", "0", &format!("{flag}={value}")], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(!err.contains("panicked") && err.contains(flag) && err.contains("at most"), "{flag} {value}: {err}");
    }
}
