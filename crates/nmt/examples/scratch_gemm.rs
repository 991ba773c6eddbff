use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;
fn main() {
    for &(k, n) in &[(256usize, 768usize), (512, 768), (768, 512), (256, 256)] {
        for m in [8usize, 16, 32] {
            let a = vec![0.01f32; m * k];
            let b = vec![0.02f32; k * n];
            let mut c = vec![0f32; m * n];
            let reps = 2000;
            matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), true, 1);
            let t0 = Instant::now();
            for _ in 0..reps { matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), true, 1); }
            let s = t0.elapsed().as_secs_f64();
            print!("k={k} n={n} m={m}: {:.1} GFLOP/s   ", 2.0 * (m * n * k * reps) as f64 / s / 1e9);
        }
        println!();
    }
}
