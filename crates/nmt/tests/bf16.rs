//! The bf16 products of the training step (issue 42, `kernels/cpu/engine/bf16_gemm.rs`): against an f64
//! product within bf16's bound, on random shapes with every edge (rows, columns, odd `k`) and
//! every packing path (contiguous, transposed view, general strides) forced by the operands'
//! layouts; exact where the operands are bf16 numbers; and `matmul_wide`'s dispatch.
//! The model-level loss and gradients in bf16 are in `tests/bf16_model.rs`.
//!
//! On a CPU without AVX512_BF16 each test prints that it did not run, and passes.
#![cfg(target_arch = "x86_64")]

use nmt::kernels::cpu::engine::bf16_gemm::{available, matmul_bf16};
use nmt::kernels::gemm::{matmul, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn skip() -> bool {
    if !available() {
        eprintln!("NOT RUN: this CPU has no AVX512_BF16; the bf16 products are untested here");
    }
    !available()
}

/// How an operand is stored: as the product reads it, transposed (read through `Mat::t`), or
/// with both strides above one (every other element of a wider transposed buffer).
#[derive(Clone, Copy, Debug)]
enum Layout {
    Plain,
    Transposed,
    Strided,
}

/// A `(rows, cols)` operand with values `f`, stored as `layout`: its buffer and view.
fn operand(rows: usize, cols: usize, layout: Layout, f: &mut dyn FnMut() -> f32) -> (Vec<f32>, Vec<f64>, Layout) {
    let vals: Vec<f64> = (0..rows * cols).map(|_| f() as f64).collect();
    let buf = match layout {
        Layout::Plain => vals.iter().map(|&x| x as f32).collect(),
        Layout::Transposed => (0..rows * cols).map(|i| vals[(i % rows) * cols + i / rows] as f32).collect(),
        Layout::Strided => {
            let mut b = vec![f32::NAN; 2 * rows * cols + 3];
            for r in 0..rows {
                for c in 0..cols {
                    b[3 + 2 * (c * rows + r)] = vals[r * cols + c] as f32;
                }
            }
            b
        }
    };
    (buf, vals, layout)
}

fn view(buf: &[f32], rows: usize, cols: usize, layout: Layout) -> Mat<'_, f32> {
    match layout {
        Layout::Plain => Mat::new(buf, rows, cols),
        Layout::Transposed => Mat::new(buf, cols, rows).t(),
        Layout::Strided => Mat { data: buf, off: 3, rows, cols, rs: 2, cs: 2 * rows },
    }
}

/// `c0 + a·b` and the bound `Σ|a||b| · (2⁻⁷ + k·2⁻²³)` per element, in f64.
fn reference(a: &[f64], b: &[f64], c0: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut bound) = (c0.to_vec(), vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for kk in 0..k {
                c[i * n + j] += a[i * k + kk] * b[kk * n + j];
                bound[i * n + j] += (a[i * k + kk] * b[kk * n + j]).abs();
            }
            bound[i * n + j] = bound[i * n + j] * (2f64.powi(-7) + k as f64 * 2f64.powi(-23)) + 1e-6;
        }
    }
    (c, bound)
}

#[test]
fn bf16_products_are_within_bf16s_bound_on_every_shape_and_layout() {
    if skip() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let layouts = [Layout::Plain, Layout::Transposed, Layout::Strided];
    let mut rounded = 0usize;
    // The last shape is large enough (outer × k ≥ 2¹⁶) for the packing to run in parallel.
    for (m, k, n) in [(4, 0, 5), (1, 1, 1), (12, 2, 32), (13, 7, 33), (5, 64, 17), (25, 33, 70), (40, 130, 96), (3, 300, 5), (70, 1031, 66)]
    {
        for (la, lb) in layouts.iter().flat_map(|&x| layouts.iter().map(move |&y| (x, y))) {
            for accumulate in [false, true] {
                let mut f = || rng.gen_range(-1.0f32..1.0);
                let (abuf, a, _) = operand(m, k, la, &mut f);
                let (bbuf, b, _) = operand(k, n, lb, &mut f);
                // A destination wider than the product (row stride n + 3, offset 2): the
                // columns outside it must keep their value.
                let rs = n + 3;
                let mut dst: Vec<f32> = (0..2 + m * rs).map(|_| f()).collect();
                let c0: Vec<f64> = (0..m * n).map(|i| if accumulate { dst[2 + (i / n) * rs + i % n] as f64 } else { 0.0 }).collect();
                let before = dst.clone();
                matmul_bf16(&mut dst, 2, rs, view(&abuf, m, k, la), view(&bbuf, k, n, lb), accumulate, 2);
                let (want, bound) = reference(&a, &b, &c0, m, k, n);
                for i in 0..m {
                    for j in 0..rs {
                        let got = dst[2 + i * rs + j];
                        if j >= n {
                            assert_eq!(got.to_bits(), before[2 + i * rs + j].to_bits(), "({m},{k},{n}) {la:?}·{lb:?}: column {j} outside");
                            continue;
                        }
                        let err = (got as f64 - want[i * n + j]).abs();
                        assert!(
                            err <= bound[i * n + j],
                            "({m},{k},{n}) {la:?}·{lb:?} acc {accumulate}: ({i},{j}) {got} vs {} (bound {})",
                            want[i * n + j],
                            bound[i * n + j]
                        );
                        rounded += (err > 1e-5) as usize;
                    }
                }
                assert_eq!(dst[..2], before[..2]);
            }
        }
    }
    // The operands really were rounded: an f32 product would be within 1e-5 everywhere.
    assert!(rounded > 1000, "only {rounded} elements differ from the f64 product by more than 1e-5");
}

#[test]
fn bf16_products_of_bf16_numbers_equal_the_f32_product() {
    if skip() {
        return;
    }
    // Small integers times powers of two are bf16 numbers, and their sums are exact in f32.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (m, k, n) = (37, 129, 75);
    let mut f = || rng.gen_range(-16i32..=16) as f32 * 0.25;
    let a: Vec<f32> = (0..m * k).map(|_| f()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| f()).collect();
    let mut want = vec![0f32; m * n];
    matmul(&mut want, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, 1);
    for threads in [1, 2] {
        let mut got = vec![0f32; m * n];
        matmul_bf16(&mut got, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, threads);
        assert_eq!(got, want, "{threads} threads");
    }
}

#[test]
fn matmul_wide_follows_the_precision_it_is_given() {
    use nmt::kernels::cpu::engine::products::{bf16_available, bf16_path, in_effect, matmul_wide, Bf16Path, Precision};
    if !bf16_available() {
        eprintln!("NOT RUN: {}; matmul_wide's bf16 dispatch is untested here", bf16_path());
        return;
    }
    // The kernel that this CPU's path runs (issue 70): AMX tiles or `vdpbf16ps`.
    let chosen = if bf16_path() == Bf16Path::Amx { nmt::kernels::cpu::engine::amx_gemm::matmul_amx } else { matmul_bf16 };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Every dimension at least `amx_gemm::MIN_DIM`, so that the tiles run it on AMX.
    let (m, k, n) = (70, 80, 96);
    let a: Vec<f32> = (0..m * k).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let run = |f: &dyn Fn(&mut [f32])| {
        let mut c = vec![0f32; m * n];
        f(&mut c);
        c
    };
    let f32_c = run(&|c| matmul(c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, 1));
    let bf16_c = run(&|c| chosen(c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, 1));
    assert_ne!(f32_c, bf16_c);
    assert_eq!(in_effect(Precision::Bf16), Precision::Bf16);
    assert_eq!(run(&|c| matmul_wide(Precision::Bf16, c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, 1)), bf16_c);
    // f64 is never rounded.
    let (a64, b64): (Vec<f64>, Vec<f64>) = (a.iter().map(|&x| x as f64).collect(), b.iter().map(|&x| x as f64).collect());
    let (mut w, mut p) = (vec![0f64; m * n], vec![0f64; m * n]);
    matmul_wide(Precision::Bf16, &mut w, 0, n, Mat::new(&a64, m, k), Mat::new(&b64, k, n), false, 1);
    matmul(&mut p, 0, n, Mat::new(&a64, m, k), Mat::new(&b64, k, n), false, 1);
    assert_eq!(w, p);
    // On AMX a product with a dimension under `MIN_DIM` stays f32 (issue 76: the tiles are
    // slower there); the `vdpbf16ps` path takes every product.
    let small = nmt::kernels::cpu::engine::amx_gemm::MIN_DIM - 1;
    let (sa, sb) = (Mat::new(&a, small, k), Mat::new(&b, k, n));
    let mut want = vec![0f32; small * n];
    matmul(&mut want, 0, n, sa, sb, false, 1);
    let mut got = vec![0f32; small * n];
    matmul_wide(Precision::Bf16, &mut got, 0, n, sa, sb, false, 1);
    assert_eq!(got == want, bf16_path() == Bf16Path::Amx, "{} rows in bf16 on {}", small, bf16_path());
    assert_eq!(run(&|c| matmul_wide(Precision::F32, c, 0, n, Mat::new(&a, m, k), Mat::new(&b, k, n), false, 1)), f32_c);
}
