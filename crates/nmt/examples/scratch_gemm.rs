use nmt::kernels::gemm::{matmul, transpose, Mat};
use std::time::Instant;
fn time(reps: usize, mut f: impl FnMut()) -> f64 { f(); let t0 = Instant::now(); for _ in 0..reps { f(); } t0.elapsed().as_secs_f64() / reps as f64 * 1e3 }
fn main() {
    for &(m, k, n) in &[(32usize, 256usize, 8000usize), (160, 256, 8000), (32, 1024, 512), (160, 1024, 512)] {
        let a = vec![0.01f32; m * k];
        let b = vec![0.02f32; k * n];
        let bt = transpose(&b, k, n);
        let mut c = vec![0f32; m * n];
        for th in [1, 2] {
            let x = time(50, || matmul(&mut c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, th));
            let y = time(50, || matmul(&mut c, 0, m, Mat::new(&bt, n, k), Mat::new(&a, m, k).t(), false, th));
            println!("({m}x{k})@({k}x{n}) th={th}: direct {x:.3} ms, transposed problem {y:.3} ms");
        }
    }
}
