//! The search's output projection at its shapes, f32 against int8 (`kernels/cpu/engine/int8.rs`):
//! `cargo run --release -p nmt --example int8_shapes` (2 threads by RAYON_NUM_THREADS).
//! Times `Projection::best` (scores, normaliser and best tokens), the products alone on one
//! thread (`kernels/cpu/engine/int8.rs`: rten-gemm's u8 × i8 → i32 on prepacked weights, then the scaling
//! to `f32`), and candle's quantised matmul (`QMatMul`, GGML `Q8_0`: int8 blocks of 32 with `f16`
//! scales), the other library that does int8 products, at the same shape. Where AMX-INT8 runs
//! (issue 76), the projection's products on rten-gemm against the tiles, by rows per step.
use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use nmt::kernels::cpu::engine::int8::{block, QActs, QWeights};
use nmt::kernels::cpu::projection::Projection;
use nmt::kernels::gemm::{matmul, Mat};
use nmt::model::QLinear;

fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() * 1e3 / reps as f64
}

fn main() {
    let (vocab, l) = (8000, 256);
    let g = data(l * vocab, 1);
    let bias = vec![0f32; vocab];
    let f32p = Projection::new(&g, &bias);
    let q8p = Projection::new(&g, &bias).quantized();
    let wt: Vec<f32> = data(vocab * l, 2);
    let qw = QWeights::new(&wt, vocab, l);
    for n in [5, 32, 160] {
        let t = data(n * l, 3 + n as u64);
        let want = vec![5; n];
        let a = time(20, || drop(f32p.best(&t, n, &want, &[], rayon::current_num_threads())));
        let b = time(20, || drop(q8p.best(&t, n, &want, &[], rayon::current_num_threads())));
        let mut z = vec![0f32; vocab * n];
        let c = time(20, || matmul(&mut z, 0, n, Mat::new(&wt, vocab, l), Mat::new(&t, n, l).t(), false, 1));
        let qa = QActs::new(&t, n, &qw);
        // rten-gemm's threads follow rayon's: one, as the f32 product here.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
        let d = one.install(|| time(50, || block(&qw, 0, vocab, &qa, &mut z, vocab)));
        // candle's Q8_0 matmul, `x (n, l) · Wᵀ` with `W (V, l)`, on its own threads (rayon's 2).
        let w = Tensor::from_slice(&wt, (vocab, l), &Device::Cpu).unwrap();
        let qmm = QMatMul::from_qtensor(QTensor::quantize(&w, GgmlDType::Q8_0).unwrap()).unwrap();
        let x = Tensor::from_slice(&t, (n, l), &Device::Cpu).unwrap();
        let e = time(20, || drop(qmm.forward(&x).unwrap()));
        println!(
            "n = {n:>3}: best f32 {a:.2} ms, int8 {b:.2} ms; one-thread product f32 {c:.2} ms, int8 {d:.2} ms; candle Q8_0 matmul (all threads) {e:.2} ms"
        );
    }
    // A step's other products (rnnsearch-small, beam 5 over 32 sentences: R = 160 rows) on
    // rayon's threads: `s W` of the query and recurrent gates, `E y W'` and `c C'` of the
    // cell's inputs and the deep output's terms.
    let threads = rayon::current_num_threads();
    for (name, k, cols) in [("s · [W_a | U_rz | O_h]", 256, 1280), ("E y · [W | O_y]", 256, 1280), ("c · [C | O_c]", 512, 1280)] {
        let w = data(k * cols, 7);
        let q = QLinear::new(&w, k, cols);
        for r in [32, 160] {
            let x = data(r * k, 9);
            let mut y = vec![0f32; r * cols];
            let f = time(50, || matmul(&mut y, 0, cols, Mat::new(&x, r, k), Mat::new(&w, k, cols), true, threads));
            let i = time(50, || q.mul_add(&mut y, 0, cols, Mat::new(&x, r, k), threads));
            println!("{name:<24} ({r:>3}×{k})·({k}×{cols}): f32 {f:.3} ms, int8 {i:.3} ms ({threads} threads)");
        }
    }
    // The projection's products, rten-gemm's `vpdpbusd` against AMX's `tdpbusd` (both exact),
    // on rayon's threads, alternated: where the tiles pay (`amx_int8::MIN_ROWS`).
    if let Some(tiles) = nmt::kernels::cpu::engine::amx_int8::I8Tiles::for_search() {
        let rten = QWeights::with_tiles(&wt, vocab, l, None);
        let amx = QWeights::with_tiles(&wt, vocab, l, Some(tiles));
        for n in [8, 16, 32, 80, 160, 400] {
            let t = data(n * l, 11 + n as u64);
            let mut z = vec![0f32; vocab * n];
            let (mut r, mut a) = (f64::MAX, f64::MAX);
            for _ in 0..5 {
                r = r.min(time(20, || block(&rten, 0, vocab, &QActs::new(&t, n, &rten), &mut z, vocab)));
                a = a.min(time(20, || block(&amx, 0, vocab, &QActs::new(&t, n, &amx), &mut z, vocab)));
            }
            println!("projection int8 n = {n:>3} ({threads} threads, fastest of 5): rten-gemm {r:.3} ms, AMX {a:.3} ms, ×{:.2}", r / a);
        }
    }
}
