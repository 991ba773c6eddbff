//! The bf16 products (`kernels/bf16_gemm.rs`) against the f32 `gemm` crate on the training
//! step's large shapes (issue 42), alternated, packing and conversion included in the bf16 time.
//!
//! `cargo run --release -p nmt --example bf16_shapes [ROUNDS]` (RAYON_NUM_THREADS sets the pool)
use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;

fn ms(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t0 = Instant::now();
    for _ in 0..reps {
        f();
    }
    t0.elapsed().as_secs_f64() / reps as f64 * 1e3
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use nmt::kernels::bf16_gemm::{available, matmul_bf16};
    if !available() {
        eprintln!("bf16_shapes: this CPU has no AVX512_BF16");
        std::process::exit(1);
    }
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
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

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("bf16_shapes: x86-64 only");
}
