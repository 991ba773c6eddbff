//! The bodies of `tests/cuda.rs`'s tests of the device itself: the context as `context::open`
//! sets it, and cuBLAS's bf16 products.
use candle_core::Device;

/// The context as nmt sets it (`kernels::gpu::context`): event tracking off, the pool's release
/// threshold at its maximum (where the context allocates stream-ordered); under
/// `NMT_CUDA_OVERHEADS=cudarc`, in a child process of this test, cudarc's defaults: tracking on,
/// threshold 0.
pub fn context_is_set_as_nmt_sets_it(dev: &Device, test: &str) {
    let seen = nmt::kernels::gpu::context::describe(dev);
    eprintln!("context: {seen}");
    let (tracking, threshold) = (seen["event_tracking"].as_bool(), seen["release_threshold"].as_u64());
    let pooled = seen["async_alloc"].as_bool() == Some(true);
    if std::env::var("NMT_CUDA_OVERHEADS").is_ok_and(|v| v == "cudarc") {
        assert_eq!(seen["overheads"], "cudarc");
        assert_eq!(tracking, Some(true), "cudarc's default is event tracking on");
        assert!(!pooled || threshold == Some(0), "cudarc's default threshold is 0: {seen}");
        return;
    }
    assert_eq!(seen["overheads"], "nmt");
    assert_eq!(tracking, Some(false), "event tracking still on");
    assert!(!pooled || threshold == Some(u64::MAX), "the pool's release threshold: {seen}");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .env("NMT_CUDA_OVERHEADS", "cudarc")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "under NMT_CUDA_OVERHEADS=cudarc: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// cuBLAS's bf16 product (`kernels::gpu::bf16::gemm_in` in bf16: `bf16.cu`'s rounding, then
/// `cublasGemmEx`) on random strided views: both transpositions of each operand, leading
/// dimensions above the width, with and without accumulating into `C`, whose columns past the
/// view must stay untouched. The reference is what the emulation computes: the same bf16
/// operands (`half`'s rounding, which is `bf16.cu`'s bit for bit, `kernels::gpu::bf16`'s test),
/// whose products are exact, summed here in f64. The bound is `tests/gpu_bf16.rs`'s,
/// `2·(terms + 1)·2⁻²⁴·Σ|term|`; the largest difference as a fraction of it is printed.
#[cfg(feature = "cuda")]
pub fn bf16_products_equal_the_emulated_ones(dev: &Device) {
    use nmt::config::Precision;
    use nmt::kernels::gpu::cuda::Cuda;
    use nmt::kernels::gpu::launch::{Gemm, Launch, View};
    use rand::{Rng, SeedableRng};
    let Device::Cuda(cd) = dev else { panic!("not a CUDA device: {dev:?}") };
    let l = Cuda::new(cd);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(74);
    let bf = |x: f32| half::bf16::from_f32(x).to_f64();
    let mut worst = 0f64;
    for (m, n, k) in [(1, 1, 1), (7, 13, 33), (64, 96, 80), (130, 70, 300)] {
        for (ta, tb, acc) in [(false, false, false), (true, false, true), (false, true, false), (true, true, true)] {
            let (sa, sb) = (if ta { (k, m) } else { (m, k) }, if tb { (n, k) } else { (k, n) });
            let (lda, ldb, ldc) = (sa.1 + 3, sb.1 + 5, n + 2);
            let mut draw = |len: usize| (0..len).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<f32>>();
            let (a, b, c0) = (draw(sa.0 * lda), draw(sb.0 * ldb), draw(m * ldc));
            let (da, db, dc) = (l.upload(&a).unwrap(), l.upload(&b).unwrap(), l.upload(&c0).unwrap());
            let view = |addr, ld, t| View { addr, ld, t };
            let g = Gemm {
                m,
                n,
                k,
                a: view(l.addr(&da), lda, ta),
                b: view(l.addr(&db), ldb, tb),
                c: View::new(l.addr(&dc), ldc),
                accumulate: acc,
            };
            nmt::kernels::gpu::bf16::gemm_in(&l, g, Precision::Bf16).unwrap();
            let got = l.read(l.addr(&dc), c0.len()).unwrap();
            let at = |x: &[f32], ld: usize, t: bool, r: usize, c: usize| if t { x[c * ld + r] } else { x[r * ld + c] };
            for i in 0..m {
                for j in 0..ldc {
                    let (g, c) = (got[i * ldc + j], c0[i * ldc + j]);
                    if j >= n {
                        assert_eq!(g.to_bits(), c.to_bits(), "({m}, {n}, {k}) ta {ta} tb {tb}: C[{i}][{j}] past the view was written");
                        continue;
                    }
                    let terms: Vec<f64> = (0..k).map(|p| bf(at(&a, lda, ta, i, p)) * bf(at(&b, ldb, tb, p, j))).collect();
                    let (sum, abs) = (terms.iter().sum::<f64>(), terms.iter().map(|t| t.abs()).sum::<f64>());
                    let (want, abs) = if acc { (sum + f64::from(c), abs + f64::from(c).abs()) } else { (sum, abs) };
                    let bound = 2.0 * (k as f64 + 2.0) * 2f64.powi(-24) * abs;
                    let diff = (f64::from(g) - want).abs();
                    assert!(
                        diff <= bound,
                        "({m}, {n}, {k}) ta {ta} tb {tb} acc {acc}: C[{i}][{j}] = {g}, emulated {want}, bound {bound:e}"
                    );
                    worst = worst.max(diff / bound.max(f64::MIN_POSITIVE));
                }
            }
        }
    }
    eprintln!("bf16 products: largest difference {worst:.3} of the bound");
}

/// Without `--features cuda` there is no device to reach here (`gpu()` returned `None`).
#[cfg(not(feature = "cuda"))]
pub fn bf16_products_equal_the_emulated_ones(dev: &Device) {
    panic!("a CUDA device {dev:?} in a build without the cuda feature");
}
