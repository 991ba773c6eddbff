//! Compiles the GPU kernels of `src/kernels/gpu/` (`recurrence.cu`, `attention.cu`,
//! `search.cu`, `update.cu`, `feedback.cu`) twice:
//! - for the host, always (the `cc` crate and the host's C compiler, with `emulate.h`): the
//!   CPU tests run the very same kernels thread by thread (`kernels/gpu/emulated.rs`), so that
//!   their arithmetic is checked on every machine, GPU or not;
//! - to PTX with nvcc, with `--features cuda`, for compute capability `$CUDA_COMPUTE_CAP`
//!   (default 90: H100/H200; the same variable candle's kernels are built for), one PTX module
//!   per source. The PTX is
//!   embedded (`kernels/gpu/cuda.rs`) and compiled by the driver when first loaded. No
//!   `--use_fast_math`: its approximate `tanhf` (about 5e-4 relative) would not hold the GPU
//!   issue's 1e-4 between the GPU's gradients and the CPU's.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let dir = PathBuf::from("src/kernels/gpu");
    for f in ["recurrence.cu", "attention.cu", "search.cu", "update.cu", "feedback.cu", "common.h", "emulate.h", "emulate.c"] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    // C, not C++: Rust's linking already needs a C compiler, a C++ one may be missing.
    cc::Build::new().file(dir.join("emulate.c")).include(&dir).opt_level(2).flag_if_supported("-std=c11").compile("nmt_gpu_emulated");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
        println!("cargo:rerun-if-env-changed=NVCC");
        let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
        let nvcc = std::env::var("NVCC").unwrap_or_else(|_| match std::env::var("CUDA_HOME") {
            Ok(home) => format!("{home}/bin/nvcc"),
            Err(_) => "nvcc".into(),
        });
        let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        for name in ["recurrence", "attention", "search", "update", "feedback"] {
            let out = out_dir.join(format!("{name}.ptx"));
            let src = dir.join(format!("{name}.cu"));
            let status = Command::new(&nvcc)
                .args(["--ptx", "-O3", &format!("-arch=compute_{cap}"), "-o"])
                .arg(&out)
                .arg(&src)
                .status()
                .unwrap_or_else(|e| panic!("could not run {nvcc} ({e}): set CUDA_HOME or NVCC, or use scripts/build-cuda.sh"));
            assert!(status.success(), "{nvcc} failed to compile {}", src.display());
        }
    }
}
