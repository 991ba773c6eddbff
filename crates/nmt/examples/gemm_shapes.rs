//! GEMM rates for the shapes bench-rnnsearch uses, through the project's GEMM
//! (`nmt::kernels::gemm::matmul`): the numbers behind the layout choices in docs/PERF.md.
//!
//! `cargo run --release -p nmt --example gemm_shapes` (RAYON_NUM_THREADS sets the pool size);
//! `… --example gemm_shapes -- bf16 [ROUNDS]`: the bf16 products (`kernels/cpu/engine/bf16_gemm.rs`) against
//! f32 on the training step's large shapes, alternated, packing and conversion included (issue 42);
//! `… -- amx [ROUNDS]`: the AMX tiles (`kernels/cpu/engine/amx_gemm.rs`) against f32 on every product shape
//! of the demo's recipe, and at the small `m` of short batches (issue 76).
use nmt::kernels::gemm::{matmul, transpose, Mat};
use std::time::Instant;

fn ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t0 = Instant::now();
    for _ in 0..reps {
        f();
    }
    t0.elapsed().as_secs_f64() / reps as f64 * 1e3
}

fn report(name: &str, m: usize, k: usize, n: usize, t: f64) {
    println!("{name:<44} ({m:>4}×{k:>4})·({k:>4}×{n:>4})  {t:8.3} ms  {:6.1} GFLOP/s", 2.0 * (m * k * n) as f64 / t / 1e6);
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("bf16") => return bf16(),
        Some("amx") => return amx(),
        _ => {}
    }
    let threads = rayon::current_num_threads();
    println!("threads: {threads}");
    // Large products of a training step: row-major, and with a transposed operand as a view.
    for (name, m, k, n, lhs_t) in [
        ("projection forward  t·W_p", 960, 256, 8000, false),
        ("projection dx       dz·W_pᵀ (view)", 960, 8000, 256, false),
        ("projection dW       tᵀ·dz (view)", 256, 960, 8000, true),
    ] {
        let a = vec![0.01f32; m * k];
        let b = vec![0.02f32; k * n];
        let mut c = vec![0f32; m * n];
        let am = if lhs_t { Mat::new(&a, k, m).t() } else { Mat::new(&a, m, k) };
        report(name, m, k, n, ms(5, || matmul(&mut c, 0, n, am, Mat::new(&b, k, n), false, threads)));
    }
    // Per-step products of the recurrences, one thread each, by rows per chunk.
    for m in [8, 16, 32] {
        let (k, n) = (256, 768);
        let (a, b, mut c) = (vec![0.01f32; m * k], vec![0.02f32; k * n], vec![0f32; m * n]);
        report("per-step h·U, 1 thread", m, k, n, ms(500, || matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), true, 1)));
    }
    // The same per-step backward product with U as a transposed view and transposed once.
    let (m, k, n) = (16, 768, 256);
    let (a, u) = (vec![0.01f32; m * k], vec![0.02f32; n * k]);
    let ut = transpose(&u, n, k);
    let mut c = vec![0f32; m * n];
    report(
        "per-step dGH·Uᵀ as a view, 1 thread",
        m,
        k,
        n,
        ms(500, || matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&u, n, k).t(), true, 1)),
    );
    report(
        "per-step dGH·Uᵀ contiguous, 1 thread",
        m,
        k,
        n,
        ms(500, || matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&ut, k, n), true, 1)),
    );
    // Search logits: t·W_p row-major against zᵀ = W_pᵀ·tᵀ (what kernels::cpu::projection does, per vocabulary block).
    for m in [32, 160] {
        let (k, n) = (256, 8000);
        let (t, w) = (vec![0.01f32; m * k], vec![0.02f32; k * n]);
        let wt = transpose(&w, k, n);
        let mut z = vec![0f32; m * n];
        report("search logits t·W_p", m, k, n, ms(20, || matmul(&mut z, 0, n, Mat::new(&t, m, k), Mat::new(&w, k, n), false, threads)));
        report(
            "search logits zᵀ = W_pᵀ·tᵀ",
            m,
            k,
            n,
            ms(20, || matmul(&mut z, 0, m, Mat::new(&wt, n, k), Mat::new(&t, m, k).t(), false, threads)),
        );
    }
}

#[cfg(target_arch = "x86_64")]
fn bf16() {
    use nmt::kernels::cpu::engine::bf16_gemm::{available, matmul_bf16};
    if !available() {
        eprintln!("gemm_shapes bf16: this CPU has no AVX512_BF16");
        std::process::exit(1);
    }
    let rounds: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let threads = rayon::current_num_threads();
    println!("threads: {threads}; ms per product (GFLOP/s), f32 then bf16, {rounds} alternations");
    // (name, m, k, n, a transposed, b transposed): the bench's batch of 960 target rows.
    let shapes = [
        ("projection forward   t·W_pᵀ (tied)", 960, 256, 8000, false, true),
        ("projection dx        dz·W_p", 960, 8000, 256, false, false),
        ("projection dW_pᵀ     dzᵀ·t", 8000, 960, 256, true, false),
        ("input projection     x·W (3 gates)", 960, 256, 768, false, false),
        ("input projection dW  xᵀ·dG", 256, 960, 768, true, false),
        ("input projection dx  dG·Wᵀ", 960, 768, 256, false, true),
        ("annotations          h·U_a", 960, 512, 256, false, false),
    ];
    for (name, m, k, n, at, bt) in shapes {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104729) % 1000) as f32 * 1e-3 - 0.5).collect();
        let am = if at { Mat::new(&a, k, m).t() } else { Mat::new(&a, m, k) };
        let bm = if bt { Mat::new(&b, n, k).t() } else { Mat::new(&b, k, n) };
        let mut c = vec![0f32; m * n];
        let reps = (2e9 / (2.0 * (m * k * n) as f64)).ceil() as usize;
        let (mut f, mut h) = (vec![], vec![]);
        for _ in 0..rounds {
            f.push(ms(reps, || matmul(&mut c, 0, n, am, bm, false, threads)));
            h.push(ms(reps, || matmul_bf16(&mut c, 0, n, am, bm, false, threads)));
        }
        let gf = |t: f64| 2.0 * (m * k * n) as f64 / t / 1e6;
        let (fm, hm) = (f.iter().cloned().fold(f64::MAX, f64::min), h.iter().cloned().fold(f64::MAX, f64::min));
        println!(
            "{name:<36} ({m:>4}×{k:>4})·({k:>4}×{n:>4})  f32 {fm:7.3} ms ({:5.1})  bf16 {hm:7.3} ms ({:5.1})  ×{:.2}",
            gf(fm),
            gf(hm),
            fm / hm
        );
    }
}

/// The products `matmul_wide` runs in the demo's recipe (rnnsearch-small, conditional decoder,
/// tied embeddings: emb 256, bi-GRU 256 per direction, context 512, attention 256, maxout 256,
/// 8 000 words), at `n` batch rows: a full batch of 2 000 tokens, the bench's 960, and the short
/// batches at an epoch's end or the start state's products (one row per sentence).
#[cfg(target_arch = "x86_64")]
fn amx() {
    use nmt::kernels::cpu::engine::amx_gemm::{available, matmul_amx};
    if !available() {
        eprintln!("gemm_shapes amx: no AMX tiles here (or NMT_MAX_CPU_ISA caps them)");
        std::process::exit(1);
    }
    let rounds: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let threads = rayon::current_num_threads();
    println!("threads: {threads}; fastest ms per product of {rounds} alternations, f32 then AMX");
    // (name, k, n) of a product `(rows × k)·(k × n)` over the batch's rows, and (name, m, n) of
    // a weight gradient `(m × rows)·(rows × n)`.
    let forward = [
        ("input proj x·W (3 gates)", 256, 768),
        ("context proj c·W", 512, 768),
        ("annotations h·U_a", 512, 256),
        ("deep output [s;c]·W_o", 768, 512),
        ("projection t·Eᵀ", 256, 8000),
        ("candidates t·E'ᵀ", 256, 2000),
        ("projection dx dz·E", 8000, 256),
        ("input proj dx dG·Wᵀ", 768, 256),
    ];
    let grads = [("dW input xᵀ·dG", 256, 768), ("dW context cᵀ·dG", 512, 768), ("dE dzᵀ·t", 8000, 256)];
    let mut rows_cases: Vec<(String, usize, usize, usize, bool)> = vec![];
    for rows in [2000, 960, 256, 80, 32, 16] {
        for &(name, k, n) in &forward {
            rows_cases.push((name.to_string(), rows, k, n, false));
        }
        for &(name, m, n) in &grads {
            rows_cases.push((name.to_string(), m, rows, n, true));
        }
    }
    for (name, m, k, n, at) in rows_cases {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 104729) % 1000) as f32 * 1e-3 - 0.5).collect();
        let am = if at { Mat::new(&a, k, m).t() } else { Mat::new(&a, m, k) };
        let bm = Mat::new(&b, k, n);
        let mut c = vec![0f32; m * n];
        let reps = (1e9 / (2.0 * (m * k * n) as f64)).ceil() as usize;
        let (mut f, mut h) = (vec![], vec![]);
        for _ in 0..rounds {
            f.push(ms(reps, || matmul(&mut c, 0, n, am, bm, false, threads)));
            h.push(ms(reps, || matmul_amx(&mut c, 0, n, am, bm, false, threads)));
        }
        let (fm, hm) = (f.iter().cloned().fold(f64::MAX, f64::min), h.iter().cloned().fold(f64::MAX, f64::min));
        println!("{name:<26} ({m:>4}×{k:>4})·({k:>4}×{n:>4})  f32 {fm:8.3} ms  AMX {hm:8.3} ms  ×{:.2}", fm / hm);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn amx() {
    eprintln!("gemm_shapes amx: x86-64 only");
}

#[cfg(not(target_arch = "x86_64"))]
fn bf16() {
    eprintln!("gemm_shapes bf16: x86-64 only");
}
