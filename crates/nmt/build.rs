//! Compiles the GPU kernels of `src/kernels/gpu/`: every `.cu` file of that folder, found by
//! scanning it (a new kernel source is one new file and its Rust wrapper), twice:
//! - for the host, always (the `cc` crate and the host's C compiler, with `emulate.h`): the
//!   CPU tests run the very same kernels thread by thread (`kernels/gpu/emulated.rs`), so that
//!   their arithmetic is checked on every machine, GPU or not;
//! - to PTX with nvcc, with `--features cuda`, for compute capability `$CUDA_COMPUTE_CAP`
//!   (default 90: H100/H200; the same variable candle's kernels are built for), one PTX module
//!   per source, embedded (`kernels/gpu/cuda.rs`) and compiled by the driver when first
//!   loaded. No `--use_fast_math`: its approximate `tanhf` (about 5e-4 relative) would not
//!   hold the GPU issue's 1e-4 between the GPU's gradients and the CPU's.
//!
//! It writes to `OUT_DIR`:
//! - `kernels.c`, the host's one translation unit: `emulate.c` and every `.cu` source, then a
//!   table of every argument struct's size and field offsets (`nmt_layouts`), which a test
//!   compares with the Rust mirrors (`kernels/gpu/args.rs`);
//! - `modules.rs`, the enum of the sources (`Module`, one variant per `.cu` file) with each
//!   one's name and, with `--features cuda`, its PTX.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from("src/kernels/gpu");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .expect("src/kernels/gpu is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu" || x == "h" || x == "c"))
        .inspect(|p| println!("cargo:rerun-if-changed={}", p.display()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .map(|p| p.file_stem().expect("a file name").to_string_lossy().into_owned())
        .collect();
    stems.sort();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // The argument structs are typedef'd in the sources and in the header they share.
    let files = stems.iter().map(|s| format!("{s}.cu")).chain(["common.h".to_owned()]);
    let sources: Vec<String> = files.map(|f| std::fs::read_to_string(dir.join(f)).expect("a readable kernel source")).collect();
    let mut c =
        String::from("// Written by build.rs: the GPU kernels compiled for the host.\n#include <stddef.h>\n#include \"emulate.c\"\n");
    for s in &stems {
        writeln!(c, "#include \"{s}.cu\"").unwrap();
    }
    c.push_str(&layout_table(&sources));
    let host = out_dir.join("kernels.c");
    std::fs::write(&host, c).expect("OUT_DIR is writable");
    // C, not C++: Rust's linking already needs a C compiler, a C++ one may be missing.
    cc::Build::new().file(&host).include(&dir).opt_level(2).flag_if_supported("-std=c11").compile("nmt_gpu_emulated");
    let cuda = std::env::var_os("CARGO_FEATURE_CUDA").is_some();
    std::fs::write(out_dir.join("modules.rs"), modules_rs(&stems, cuda)).expect("OUT_DIR is writable");
    if cuda {
        compile_ptx(&dir, &out_dir, &stems);
    }
}

/// `attention` → `Attention`, `row_best` → `RowBest`.
fn camel(stem: &str) -> String {
    stem.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

fn modules_rs(stems: &[String], cuda: bool) -> String {
    let mut s = String::from("/// A CUDA source of `kernels/gpu/` (and its PTX module), one variant per `.cu` file (build.rs).\n");
    s.push_str("#[derive(Clone, Copy, Debug, PartialEq, Eq)]\npub enum Module {\n");
    for st in stems {
        writeln!(s, "    /// `{st}.cu`.\n    {},", camel(st)).unwrap();
    }
    s.push_str("}\n\nimpl Module {\n    /// Every source, in file-name order.\n    pub const ALL: &'static [Module] = &[");
    for st in stems {
        write!(s, "Module::{}, ", camel(st)).unwrap();
    }
    s.push_str(
        "];\n\n    /// The module's name (candle's cache key of its PTX).\n    pub fn name(self) -> &'static str {\n        match self {\n",
    );
    for st in stems {
        writeln!(s, "            Module::{} => \"nmt_{st}\",", camel(st)).unwrap();
    }
    s.push_str("        }\n    }\n");
    if cuda {
        s.push_str("\n    /// The module's PTX (nvcc, build.rs).\n    pub fn ptx(self) -> &'static str {\n        match self {\n");
        for st in stems {
            writeln!(s, "            Module::{} => include_str!(concat!(env!(\"OUT_DIR\"), \"/{st}.ptx\")),", camel(st)).unwrap();
        }
        s.push_str("        }\n    }\n");
    }
    s.push_str("}\n");
    s
}

/// Every `typedef struct { … } NmtX;` of the sources: `X` and its fields' names, in order.
fn structs(sources: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for src in sources {
        let mut rest = src.as_str();
        while let Some(i) = rest.find("typedef struct {") {
            let body_start = i + "typedef struct {".len();
            let Some(close) = rest[body_start..].find('}') else { break };
            let body = &rest[body_start..body_start + close];
            let after = &rest[body_start + close + 1..];
            let name_end = after.find(';').unwrap_or(after.len());
            let name = after[..name_end].trim();
            let fields = body
                .split(';')
                .filter_map(|decl| decl.split(|ch: char| !(ch.is_alphanumeric() || ch == '_')).rfind(|w| !w.is_empty()).map(str::to_owned))
                .collect();
            if let Some(rust) = name.strip_prefix("Nmt") {
                out.push((rust.to_owned(), fields));
            }
            rest = after;
        }
    }
    out
}

/// A C table of every argument struct's size and field offsets, for the layout test.
fn layout_table(sources: &[String]) -> String {
    let mut s = String::from("\ntypedef struct { const char* name; const char* field; size_t offset; size_t size; } nmt_layout_row;\n");
    s.push_str("const nmt_layout_row nmt_layouts[] = {\n");
    let mut n = 0;
    for (name, fields) in structs(sources) {
        for f in fields {
            writeln!(s, "  {{\"{name}\", \"{f}\", offsetof(Nmt{name}, {f}), sizeof(Nmt{name})}},").unwrap();
            n += 1;
        }
    }
    writeln!(s, "}};\nconst size_t nmt_layouts_len = {n};").unwrap();
    s
}

fn compile_ptx(dir: &Path, out_dir: &Path, stems: &[String]) {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rerun-if-env-changed=NVCC");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| match std::env::var("CUDA_HOME") {
        Ok(home) => format!("{home}/bin/nvcc"),
        Err(_) => "nvcc".into(),
    });
    for name in stems {
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
