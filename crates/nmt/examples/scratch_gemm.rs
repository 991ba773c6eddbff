use nmt::kernels::gemm::{matmul, transpose, Mat};
use std::time::Instant;
fn time(reps: usize, mut f: impl FnMut()) -> f64 { f(); let t0 = Instant::now(); for _ in 0..reps { f(); } t0.elapsed().as_secs_f64() / reps as f64 * 1e3 }
fn main() {
    let (m, k, v) = (160usize, 256usize, 8000usize);
    let t = vec![0.01f32; m * k];
    let w = vec![0.02f32; k * v];
    let wt = transpose(&w, k, v);
    let mut z = vec![0f32; m * v];
    let mut zt = vec![0f32; m * v];
    for th in [1usize, 2] {
        let a = time(20, || matmul(&mut z, 0, v, Mat::new(&t, m, k), Mat::new(&w, k, v), false, th));
        let b = time(20, || matmul(&mut z, 0, v, Mat::new(&t, m, k), Mat::new(&wt, v, k).t(), false, th));
        let c = time(20, || matmul(&mut zt, 0, m, Mat::new(&wt, v, k), Mat::new(&t, m, k).t(), false, th));
        println!("th={th}: t@W {a:.2} ms; t@(Wt view) {b:.2} ms; Wt@t^T -> z^T {c:.2} ms  ({:.1} GFLOP/s best)", 2.0*(m*k*v) as f64 / a.min(b).min(c) / 1e6);
    }
}
