//! The search's output projection at its shapes, f32 against int8 (`kernels/int8.rs`):
//! `cargo run --release -p nmt --example int8_shapes` (2 threads by RAYON_NUM_THREADS).
//! Times `Projection::best` (scores, normaliser and best tokens), the bare products (int8 on
//! each path this CPU has), and
//! the maintained libraries that could replace `kernels/int8.rs` at the same shapes: candle's
//! quantised matmul (`QMatMul`, GGML `Q8_0`: int8 blocks of 32 with `f16` scales) and
//! `rten-gemm`'s u8 × i8 → i32 GEMM (AVX2 and AVX-512 VNNI kernels) on prepacked weights.
use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use nmt::kernels::gemm::{matmul, Mat};
use nmt::kernels::int8::{block, quantize_row, Isa, Out, QActs, QWeights};
use nmt::kernels::int8_linear::QLinear;
use nmt::kernels::projection::Projection;

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
        // Each int8 path this CPU has, forced.
        let d: Vec<String> = Isa::available()
            .into_iter()
            .filter(|&p| p != Isa::Scalar)
            .map(|p| format!("{p:?} {:.2}", time(50, || block(p, &qw, 0, vocab, &qa, Out::columns(&mut z, n)))))
            .collect();
        let d = d.join(", ");
        // candle's Q8_0 matmul, `x (n, l) · Wᵀ` with `W (V, l)`, on its own threads (rayon's 2).
        let w = Tensor::from_slice(&wt, (vocab, l), &Device::Cpu).unwrap();
        let qmm = QMatMul::from_qtensor(QTensor::quantize(&w, GgmlDType::Q8_0).unwrap()).unwrap();
        let x = Tensor::from_slice(&t, (n, l), &Device::Cpu).unwrap();
        let e = time(20, || drop(qmm.forward(&x).unwrap()));
        let (r, rs) = rten_product(&wt, vocab, l, &t, n);
        println!(
            "n = {n:>3}: best f32 {a:.2} ms, int8 {b:.2} ms; one-thread product f32 {c:.2} ms, int8 {d} ms, rten-gemm {r:.2} ms (scaled to f32 as ours: {rs:.2} ms); candle Q8_0 matmul (all threads) {e:.2} ms"
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
}

/// `rten-gemm`'s int8 product `A (n, l) u8 · Wᵀ (l, V) i8 → i32` on one thread, with the weights
/// quantised as `kernels/int8.rs` does (7 bits per row) and prepacked once, the activations
/// 8 bits shifted to unsigned (zero point 128, which rten corrects with the weights' column
/// sums, as ours does). Returns the bare product's time, then with the pass that ours does
/// inside its own: the scaling of the `i32` sums to `f32`, added into the projection's
/// column-major block `(V, n)`.
fn rten_product(w: &[f32], vocab: usize, l: usize, t: &[f32], n: usize) -> (f64, f64) {
    use rten_gemm::{GemmExecutor, GemmInputA, GemmInputB, GemmOptions, QuantParams};
    use rten_tensor::NdTensorView;
    let mut q = vec![0i8; vocab * l];
    let sw: Vec<f32> = w.chunks_exact(l).zip(q.chunks_exact_mut(l)).map(|(row, out)| quantize_row(row, out)).collect();
    let mut sa = Vec::with_capacity(n);
    let mut acts = Vec::with_capacity(n * l);
    for row in t.chunks_exact(l) {
        let s = row.iter().fold(0f32, |m, &x| m.max(x.abs())).max(f32::MIN_POSITIVE) / 127.0;
        sa.push(s);
        acts.extend(row.iter().map(|&x| ((x / s).round().clamp(-127.0, 127.0) as i32 + 128) as u8));
    }
    let gemm = GemmExecutor::<u8, i8, i32>::default();
    let packed = gemm.prepack_b(NdTensorView::from_data([vocab, l], q.as_slice()).transposed());
    let a = NdTensorView::from_data([n, l], acts.as_slice());
    let zero = vec![128u8; n];
    let mut out = vec![0i32; n * vocab];
    let mut z = vec![0f32; vocab * n];
    let product = |out: &mut [i32]| {
        let opts = GemmOptions { a_quant: Some(QuantParams { zero_point: &zero }), ..Default::default() };
        gemm.gemm(out, GemmInputA::Unpacked(a), GemmInputB::Packed(&packed), opts).expect("rten-gemm's shapes");
    };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    one.install(|| {
        let bare = time(50, || product(&mut out));
        let scaled = time(50, || {
            product(&mut out);
            for (r, row) in out.chunks_exact(vocab).enumerate() {
                for (j, &acc) in row.iter().enumerate() {
                    z[j * n + r] += sw[j] * sa[r] * acc as f32;
                }
            }
        });
        (bare, scaled)
    })
}
