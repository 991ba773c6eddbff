//! `nmt bench`: JSON lines with the reference's keys, and clear errors for bad arguments.
use std::process::Command;

fn nmt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nmt"))
}

#[test]
fn bench_prints_json_lines_with_the_reference_keys() {
    let out = nmt().args(["bench", "--json", "--steps", "1", "--only", "train", "--threads", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let train = lines.iter().find(|v| v["bench"] == "train").expect("a train line");
    for key in ["ms_median", "target_tokens_per_s", "loss0", "gflop_per_s", "forward_ms", "backward_ms", "adam_ms"] {
        assert!(train[key].is_number(), "missing {key} in {train}");
    }
    let loss0 = train["loss0"].as_f64().unwrap();
    assert!((loss0 - 8000f64.ln()).abs() < 0.1, "loss0 {loss0}");
    assert!(lines.iter().any(|v| v["bench"] == "memory" && v["peak_rss_mb"].is_number()));
}

#[test]
fn bench_rejects_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let out = nmt().args(["bench", "--only", "trian"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown measurement"));
    let out = nmt().args(["bench", "--only", "train", "--data"]).arg(dir.path()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("init.bin") && !err.contains("panicked"), "{err}");
    std::fs::write(dir.path().join("init.bin"), [0u8; 12]).unwrap();
    let out = nmt().args(["bench", "--only", "train", "--data"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("regenerate"), "{err}");
}

/// Every architecture's preset benches: training and search lines with its name.
#[test]
fn bench_runs_every_architecture_preset() {
    for preset in ["rnnenc-small", "lstm-seq2seq-small", "grconv-small"] {
        let out = nmt()
            .args(["bench", "--json", "--steps", "1", "--only", "train,greedy", "--threads", "1", "--preset", preset])
            .output()
            .unwrap();
        assert!(out.status.success(), "{preset}: {}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<serde_json::Value> =
            String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        for bench in ["train", "greedy"] {
            let v = lines.iter().find(|v| v["bench"] == bench).unwrap_or_else(|| panic!("{preset}: no {bench} line"));
            assert_eq!(v["preset"], preset);
        }
    }
    let out = nmt().args(["bench", "--preset", "nope", "--only", "train"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("unknown model preset"));
}
