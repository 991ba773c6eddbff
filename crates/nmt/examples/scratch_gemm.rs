use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;
fn run(name: &str, m: usize, k: usize, n: usize, th: usize) {
    let a = vec![0.01f32; m * k];
    let b = vec![0.02f32; k * n];
    let mut c = vec![0f32; m * n];
    matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, th);
    let reps = (4e9 / (2.0 * (m * n * k) as f64)).max(3.0) as usize;
    let t0 = Instant::now();
    for _ in 0..reps { matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, th); }
    let s = t0.elapsed().as_secs_f64();
    println!("{name} ({m}x{k})@({k}x{n}) th={th}: {:.2} ms, {:.1} GFLOP/s", s / reps as f64 * 1e3, 2.0 * (m * n * k * reps) as f64 / s / 1e9);
}
fn main() {
    for th in [1, 2] {
        run("proj fwd", 960, 256, 8000, th);
        run("proj dx", 960, 8000, 256, th);
        run("proj dw", 256, 960, 8000, th);
        run("square", 1024, 1024, 1024, th);
    }
}
