//! grConv (Properties §3): the batched, level-by-level encoder gives each sentence the summary
//! it has alone (padding never leaks into a tree), its gates are distributions, and a one-word
//! sentence's summary is its leaf.
use candle_core::{DType, Device, Tensor};
use nmt::model::grconv::GrConv;
use nmt::model::params::Params;
use nmt::model::Backend;

fn encoder() -> (Params, GrConv) {
    let params = Params::fresh(3, 0.3, true, DType::F64, &Device::Cpu);
    let g = GrConv::new(4, 5, &params.builder().pp("grconv")).unwrap();
    (params, g)
}

/// Both forms: the composed levels and the fused tree (`kernels::cpu::grconv_tree`).
#[test]
fn batched_summaries_equal_each_sentence_alone() {
    let (p, g) = encoder();
    let (b, s, m) = (4, 6, 4);
    let data: Vec<f64> = (0..b * s * m).map(|i| ((i * 37 % 23) as f64 / 11.0) - 1.0).collect();
    let x = Tensor::from_vec(data, (b, s, m), &Device::Cpu).unwrap();
    let lens = [6, 3, 1, 4];
    for backend in [Backend::Composed, Backend::FusedF64] {
        let batched = g.forward(&x, &lens, backend).unwrap();
        for (i, &l) in lens.iter().enumerate() {
            let alone = g.forward(&x.narrow(0, i, 1).unwrap().narrow(1, 0, l).unwrap(), &[l], backend).unwrap();
            let d = (batched.narrow(0, i, 1).unwrap() - &alone).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
            assert!(d < 1e-12, "{backend:?}: sentence {i} (length {l}): batched and alone differ by {d}");
        }
        // A one-word sentence's summary is its leaf, x U (`U` read by its checkpoint key).
        let u = p.named_vars().into_iter().find(|(k, _)| k == "grconv.u").expect("grconv.u").1;
        let leaf = x.narrow(0, 2, 1).unwrap().narrow(1, 0, 1).unwrap().squeeze(1).unwrap().matmul(u.as_tensor()).unwrap();
        let d = (batched.narrow(0, 2, 1).unwrap() - leaf).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        assert!(d < 1e-12, "{backend:?}: {d}");
    }
}

#[test]
fn gates_are_distributions_over_three_choices() {
    let (_p, g) = encoder();
    let x = Tensor::ones((2, 5, 4), DType::F64, &Device::Cpu).unwrap();
    let (_, tree) = g.run(&x, &[5, 2], true).unwrap();
    assert_eq!(tree.gates.len(), 4);
    for (t, gates) in tree.gates.iter().enumerate() {
        assert_eq!(gates.dims(), [2, 4 - t, 3]);
        let sums = gates.sum(2).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-12), "{sums:?}");
    }
}

/// The summaries and every gradient (of `x`, `U`, `W^l`, `W^r`, `G^l`, `G^r`) of the fused tree
/// (`kernels::cpu::grconv_tree`) against the composed levels, in `dtype`, over lengths from one
/// word to the whole `S` and beyond it (clamped, as the composed form reads them), under a
/// random weighting of the summaries; the largest difference relative to the largest value.
fn fused_against_composed(dtype: DType) -> f64 {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let (b, s, m, n) = (6, 7, 4, 5);
    let params = Params::fresh(11, 0.5, true, dtype, &Device::Cpu);
    let g = GrConv::new(m, n, &params.builder().pp("grconv")).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let normal = rand_distr::Normal::new(0f64, 1.0).unwrap();
    let mut draw = |k: usize| Tensor::from_vec((0..k).map(|_| normal.sample(&mut rng)).collect::<Vec<f64>>(), k, &Device::Cpu).unwrap();
    let x = candle_core::Var::from_tensor(&draw(b * s * m).reshape((b, s, m)).unwrap().to_dtype(dtype).unwrap()).unwrap();
    let r = draw(b * n).reshape((b, n)).unwrap().to_dtype(dtype).unwrap();
    let lens = [7, 1, 3, 2, 6, 9];
    let vars: Vec<candle_core::Var> = std::iter::once(x.clone()).chain(params.named_vars().into_iter().map(|(_, v)| v)).collect();
    let run = |backend: Backend| -> Vec<Vec<f64>> {
        let out = g.forward(x.as_tensor(), &lens, backend).unwrap();
        let grads = (&out * &r).unwrap().sum_all().unwrap().backward().unwrap();
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
        std::iter::once(flat(&out)).chain(vars.iter().map(|v| flat(grads.get(v.as_tensor()).expect("a gradient")))).collect()
    };
    let fused = if dtype == DType::F64 { Backend::FusedF64 } else { Backend::FusedF32(nmt::config::Precision::F32) };
    let (want, got) = (run(Backend::Composed), run(fused));
    let mut worst = 0f64;
    for (k, (w, g)) in want.iter().zip(&got).enumerate() {
        let scale = w.iter().fold(1e-30f64, |a, v| a.max(v.abs()));
        let d = w.iter().zip(g).fold(0f64, |a, (p, q)| a.max((p - q).abs()));
        assert!(scale > 1e-6, "value {k}: all zero, so this comparison could not fail");
        worst = worst.max(d / scale);
    }
    worst
}

#[test]
fn the_fused_tree_equals_the_composed_levels() {
    let (e64, e32) = (fused_against_composed(DType::F64), fused_against_composed(DType::F32));
    eprintln!("fused tree against composed levels: f64 {e64:.1e}, f32 {e32:.1e}");
    assert!(e64 < 1e-12 && e32 < 1e-5, "f64 {e64:e}, f32 {e32:e}");
}

/// The fused tree gives the same bits on any number of threads (its levels' products are split
/// over the pool above 2^18 multiply-adds, its sentences over the pool always): 1, 2 and 5.
#[test]
fn the_fused_tree_is_the_same_on_any_number_of_threads() {
    let (b, s, m, n) = (8, 12, 6, 48);
    let params = Params::fresh(21, 0.3, true, DType::F32, &Device::Cpu);
    let g = GrConv::new(m, n, &params.builder().pp("grconv")).unwrap();
    let data: Vec<f32> = (0..b * s * m).map(|i| ((i * 37 % 23) as f32 / 11.0) - 1.0).collect();
    let x = candle_core::Var::from_tensor(&Tensor::from_vec(data, (b, s, m), &Device::Cpu).unwrap()).unwrap();
    let lens = [12, 1, 5, 9, 12, 3, 7, 2];
    let run = |threads: usize| -> Vec<Vec<f32>> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let out = g.forward(x.as_tensor(), &lens, Backend::FusedF32(nmt::config::Precision::F32)).unwrap();
            let grads = out.sqr().unwrap().sum_all().unwrap().backward().unwrap();
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let mut all = vec![flat(&out), flat(grads.get(x.as_tensor()).unwrap())];
            all.extend(params.named_vars().into_iter().map(|(_, v)| flat(grads.get(v.as_tensor()).unwrap())));
            all
        })
    };
    let one = run(1);
    for threads in [2, 5] {
        assert!(run(threads) == one, "{threads} threads differ from one");
    }
}
