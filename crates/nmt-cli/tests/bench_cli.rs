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

/// `loss0` is computed in the training step's precision (issue 74): with `--precision bf16`
/// where this CPU runs bf16 products, it differs from the f32 one; where it does not (the line
/// says "off"), it is the f32 one.
#[test]
fn loss0_is_the_training_steps_own_precision() {
    let train = |p: &str| {
        let out = nmt().args(["bench", "--json", "--steps", "1", "--only", "train", "--threads", "1", "--precision", p]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["bench"] == "train").expect("a train line")
    };
    let (f32s, bf16s) = (train("f32"), train("bf16"));
    let (a, b) = (f32s["loss0"].as_f64().unwrap(), bf16s["loss0"].as_f64().unwrap());
    let on = bf16s["precision"] == "bf16";
    println!("loss0: f32 {a}, bf16 {b} ({})", bf16s["bf16_products"]);
    assert_eq!(a != b, on, "loss0 f32 {a}, bf16 {b}, bf16 products {}", bf16s["bf16_products"]);
    assert!((a - b).abs() < 1e-4 * a, "loss0 f32 {a}, bf16 {b}: more than bf16's rounding apart");
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

/// `NMT_MAX_CPU_ISA` (issue 56): `avx2` runs the AVX2 kernels and products, says so in the
/// bench's `cpu`, trains the same model (the losses of a step agree with the uncapped run's
/// to rounding) and runs rten's AVX2 int8 kernel; a misspelt value is refused before anything
/// runs.
#[test]
fn the_instruction_set_cap_is_named_and_computes_the_same_step() {
    let out = nmt().env("NMT_MAX_CPU_ISA", "avx-2").args(["bench", "--only", "train"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NMT_MAX_CPU_ISA") && err.contains("avx2, avx512, avx512_bf16"), "{err}");

    let train = |cap: &str| {
        let out = nmt()
            .env("NMT_MAX_CPU_ISA", cap)
            .args(["bench", "--json", "--steps", "2", "--only", "train", "--threads", "1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["bench"] == "train").expect("a train line")
    };
    let (capped, full) = (train("avx2"), train(""));
    let detected = nmt::kernels::cpu::engine::isa::detected();
    let want = match detected {
        nmt::kernels::cpu::engine::isa::CpuLevel::Avx512
        | nmt::kernels::cpu::engine::isa::CpuLevel::Avx512Bf16
        | nmt::kernels::cpu::engine::isa::CpuLevel::Amx => "AVX2 (NMT_MAX_CPU_ISA)",
        other => other.name(),
    };
    assert_eq!(capped["cpu"], want, "detected {detected:?}");
    assert_eq!(full["cpu"], detected.name());
    // Each train line says which kernels would run bf16 products there (issue 70): none under
    // the AVX2 cap.
    assert_eq!(full["bf16_products"], nmt::bf16_path().to_string());
    assert!(capped["bf16_products"].as_str().is_some_and(|s| s.starts_with("bf16 products: off, no bf16 instructions")), "{capped}");
    for key in ["loss0", "loss_last"] {
        let (a, b) = (capped[key].as_f64().unwrap(), full[key].as_f64().unwrap());
        assert!((a - b).abs() < 1e-4 * b.abs(), "{key}: capped {a}, uncapped {b}");
    }
    if detected >= nmt::kernels::cpu::engine::isa::CpuLevel::Avx2 {
        let out =
            nmt().env("NMT_MAX_CPU_ISA", "avx2").args(["bench", "--json", "--int8", "--steps", "1", "--only", "greedy"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let greedy = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["bench"] == "greedy").unwrap();
        assert_eq!(greedy["int8_kernel"], "x86_64-u8i8i32-avx2", "{greedy}");
    }
}

/// `--candidates-scale-moments` reaches the timed update: the same first loss, and after the
/// warm-up updates (whose drawn words' moments it scales) a different last one.
#[test]
fn bench_times_the_scaled_moments() {
    let train = |extra: &[&str]| {
        let args =
            ["bench", "--json", "--steps", "1", "--only", "train", "--threads", "1", "--candidates", "10", "--candidates-sampled", "500"];
        let out = nmt().args(args).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|v| v["bench"] == "train").expect("a train line")
    };
    let (plain, scaled) = (train(&[]), train(&["--candidates-scale-moments"]));
    assert_eq!(plain["loss0"], scaled["loss0"]);
    assert_ne!(plain["loss_last"], scaled["loss_last"], "plain {plain}, scaled {scaled}");
}
