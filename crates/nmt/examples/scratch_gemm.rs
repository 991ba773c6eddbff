use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;
fn main() {
    let (m, k, n) = (16usize, 768usize, 256usize);
    let a = vec![0.01f32; m * k];
    let w = vec![0.02f32; n * k]; // as (n, k) -> use transposed view to get (k, n)
    let wt = vec![0.02f32; k * n];
    let mut c = vec![0f32; m * n];
    let reps = 3000;
    for (name, b) in [("transposed view", Mat::new(&w, n, k).t()), ("contiguous", Mat::new(&wt, k, n))] {
        let t0 = Instant::now();
        for _ in 0..reps { matmul(&mut c, 0, n, Mat::new(&a, m, k), b, true, 1); }
        let s = t0.elapsed().as_secs_f64();
        println!("{name}: {:.1} us/call, {:.1} GFLOP/s", s / reps as f64 * 1e6, 2.0 * (m * n * k * reps) as f64 / s / 1e9);
    }
    // m=16, k=256, n=768 (forward h@U)
    let (m, k, n) = (16usize, 256usize, 768usize);
    let a = vec![0.01f32; m * k];
    let wt = vec![0.02f32; k * n];
    let mut c = vec![0f32; m * n];
    let t0 = Instant::now();
    for _ in 0..reps { matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&wt, k, n), true, 1); }
    let s = t0.elapsed().as_secs_f64();
    println!("fwd h@U m16: {:.1} us/call, {:.1} GFLOP/s", s / reps as f64 * 1e6, 2.0 * (m * n * k * reps) as f64 / s / 1e9);
}
