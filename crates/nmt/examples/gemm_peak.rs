use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;
fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    for &n in &[256usize, 512, 1024, 2048] {
        let a: Vec<f32> = (0..n * n).map(|i| (i % 17) as f32 * 0.01).collect();
        let b = a.clone();
        let mut c = vec![0f32; n * n];
        let reps = (2048 / n).pow(3).max(3);
        matmul(&mut c, 0, n, Mat::new(&a, n, n), Mat::new(&b, n, n), false, threads);
        let t = Instant::now();
        for _ in 0..reps {
            matmul(&mut c, 0, n, Mat::new(&a, n, n), Mat::new(&b, n, n), false, threads);
        }
        let s = t.elapsed().as_secs_f64();
        println!("n={n} threads={threads} {:.1} GFLOP/s", 2.0 * (n * n * n * reps) as f64 / s / 1e9);
    }
}
