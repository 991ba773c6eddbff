//! GEMM rates for the shapes bench-rnnsearch uses, through the project's GEMM
//! (`nmt::kernels::gemm::matmul`): the numbers behind the layout choices in docs/PERF.md.
//!
//! `cargo run --release -p nmt --example gemm_shapes` (RAYON_NUM_THREADS sets the pool size)
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
    // Search logits: t·W_p row-major against zᵀ = W_pᵀ·tᵀ (what kernels::projection does, per vocabulary block).
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
