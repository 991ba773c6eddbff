//! grConv (Properties §3): the batched, level-by-level encoder gives each sentence the summary
//! it has alone (padding never leaks into a tree), its gates are distributions, and a one-word
//! sentence's summary is its leaf.
use candle_core::{DType, Device, Tensor};
use nmt::model::grconv::GrConv;
use nmt::model::params::Params;

fn encoder() -> (Params, GrConv) {
    let params = Params::fresh(3, 0.3, true, DType::F64, &Device::Cpu);
    let g = GrConv::new(4, 5, &params.builder().pp("grconv")).unwrap();
    (params, g)
}

#[test]
fn batched_summaries_equal_each_sentence_alone() {
    let (p, g) = encoder();
    let (b, s, m) = (4, 6, 4);
    let data: Vec<f64> = (0..b * s * m).map(|i| ((i * 37 % 23) as f64 / 11.0) - 1.0).collect();
    let x = Tensor::from_vec(data, (b, s, m), &Device::Cpu).unwrap();
    let lens = [6, 3, 1, 4];
    let batched = g.forward(&x, &lens).unwrap();
    for (i, &l) in lens.iter().enumerate() {
        let alone = g.forward(&x.narrow(0, i, 1).unwrap().narrow(1, 0, l).unwrap(), &[l]).unwrap();
        let d = (batched.narrow(0, i, 1).unwrap() - &alone).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        assert!(d < 1e-12, "sentence {i} (length {l}): batched and alone differ by {d}");
    }
    // A one-word sentence's summary is its leaf, x U (`U` read by its checkpoint key).
    let u = p.named_vars().into_iter().find(|(k, _)| k == "grconv.u").expect("grconv.u").1;
    let leaf = x.narrow(0, 2, 1).unwrap().narrow(1, 0, 1).unwrap().squeeze(1).unwrap().matmul(u.as_tensor()).unwrap();
    let d = (batched.narrow(0, 2, 1).unwrap() - leaf).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
    assert!(d < 1e-12, "{d}");
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
