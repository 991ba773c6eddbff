//! The emulation's own checks: the argument structs' layouts against their C twins, and the
//! emulated product's refusals against cuBLAS's. The kernels against their CPU twins are
//! `kernels/recurrent_twin_tests.rs` and `kernels/output_twin_tests.rs`, which stand on both rooms.
/// The Rust mirrors of the nested argument structs have their C twins' layouts (the kernels'
/// own structs are checked as each first runs, `emulated::check_layout`), and the check
/// refuses a mirror that drifted: fields swapped, a field dropped, or no C twin at all.
#[test]
fn argument_structs_match_their_c_layouts() {
    use super::args::{FbStep, GradRows, StepRows};
    use super::emulated::check_layout;
    use super::launch::{ArgLayout, ArgStruct};
    for l in [&StepRows::LAYOUT, &GradRows::LAYOUT, &FbStep::LAYOUT, &super::args::FillRows::LAYOUT] {
        check_layout(l).unwrap();
    }
    let swapped = ArgLayout { name: "GradRows", size: 32, fields: &[("dgi", 0), ("dgh", 8), ("dgi_ld", 16), ("dgh_ld", 24)] };
    let short = ArgLayout { name: "GradRows", size: 24, fields: &[("dgi", 0), ("dgi_ld", 8), ("dgh", 16)] };
    let unknown = ArgLayout { name: "NoSuchStruct", size: 8, fields: &[("x", 0)] };
    for bad in [swapped, short, unknown] {
        assert!(check_layout(&bad).is_err(), "{bad:?} passed");
    }
}

/// The emulated product refuses what cuBLAS refuses: a leading dimension below the stored row's
/// width, and an output that overlaps an input; the same product with honest views runs.
#[test]
fn emulated_gemm_refuses_what_cublas_refuses() {
    use super::emulated::Emulated;
    use super::launch::{Gemm, Launch, View};
    let l = Emulated;
    let (a, b, c) = (l.upload(&[1.0; 6]).unwrap(), l.upload(&[1.0; 6]).unwrap(), l.zeros(4).unwrap());
    let [pa, pb, pc] = [&a, &b, &c].map(|x| l.addr(x));
    // C (2 × 2) = A (2 × 3) · B (3 × 2).
    let g = Gemm { m: 2, n: 2, k: 3, a: View::new(pa, 3), b: View::new(pb, 2), c: View::new(pc, 2), accumulate: false };
    l.gemm(g).unwrap();
    assert_eq!(c.to_vec(), vec![3.0; 4]);
    assert!(l.gemm(Gemm { a: View::new(pa, 2), ..g }).is_err(), "A's ld 2 below its 3 columns");
    assert!(l.gemm(Gemm { c: View::new(pc, 1), ..g }).is_err(), "C's ld 1 below its 2 columns");
    assert!(l.gemm(Gemm { b: View::new(pb, 3).t(), ..g }).is_ok(), "B stored 2 × 3, ld 3");
    assert!(l.gemm(Gemm { b: View::new(pb, 2).t(), ..g }).is_err(), "B stored 2 × 3, ld 2");
    assert!(l.gemm(Gemm { c: View::new(pa.at(2), 2), ..g }).is_err(), "C overlaps A");
}
