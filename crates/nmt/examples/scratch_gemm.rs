use nmt::kernels::gemm::{matmul, Mat};
use std::time::Instant;
fn time(reps: usize, mut f: impl FnMut()) -> f64 { f(); let t0 = Instant::now(); for _ in 0..reps { f(); } t0.elapsed().as_secs_f64() / reps as f64 * 1e3 }
fn split_cols(dst: &mut [f32], n: usize, a: Mat<f32>, b: Mat<f32>) {
    // two column halves, one thread each
    let half = n / 2;
    let m = a.rows;
    let mut left = vec![0f32; m * half];
    let mut right = vec![0f32; m * (n - half)];
    rayon::join(
        || matmul(&mut left, 0, half, a, Mat { cols: half, ..b }, false, 1),
        || matmul(&mut right, 0, n - half, a, Mat { cols: n - half, off: b.off + half * b.cs, ..b }, false, 1),
    );
    for r in 0..m {
        dst[r * n..r * n + half].copy_from_slice(&left[r * half..(r + 1) * half]);
        dst[r * n + half..(r + 1) * n].copy_from_slice(&right[r * (n - half)..(r + 1) * (n - half)]);
    }
}
fn main() {
    for &(name, m, k, n, ta) in &[("proj fwd", 960usize, 256usize, 8000usize, false), ("proj dw", 256, 960, 8000, true), ("proj dx", 960, 8000, 256, false), ("out_w dw", 1024, 960, 512, true), ("enc gi", 960, 256, 1536, false)] {
        let a = vec![0.01f32; m * k];
        let b = vec![0.02f32; k * n];
        let mut c = vec![0f32; m * n];
        let am = if ta { Mat::new(&a, k, m).t() } else { Mat::new(&a, m, k) };
        let x = time(5, || matmul(&mut c, 0, n, am, Mat::new(&b, k, n), false, 2));
        let y = time(5, || split_cols(&mut c, n, am, Mat::new(&b, k, n)));
        println!("{name}: gemm-parallel {x:.2} ms, column split {y:.2} ms");
    }
}
