//! bench-rnnsearch: the fused training loss equals the composed-op one, value and gradients.
use candle_core::{DType, Device};
use nmt::bench::model::{loss, Impl};
use nmt::bench::params::{BenchBatch, BenchParams, PARAMS};

#[test]
fn fused_bench_loss_and_gradients_match_composed_ops() {
    let p = BenchParams::load(None, DType::F32, &Device::Cpu).unwrap();
    let batch = BenchBatch::load(None).unwrap();
    let lf = loss(&p, &batch, Impl::Fused).unwrap();
    let lo = loss(&p, &batch, Impl::Ops).unwrap();
    let (vf, vo) = (lf.to_scalar::<f32>().unwrap(), lo.to_scalar::<f32>().unwrap());
    eprintln!("loss fused {vf} composed {vo}");
    assert!((vf - vo).abs() < 1e-4 * vo.abs(), "{vf} vs {vo}");
    // The untrained model's loss is near log(8000) = 8.99.
    assert!((vf - 8.0f32.ln() - 1000f32.ln()).abs() < 0.1);
    let (gf, go) = (lf.backward().unwrap(), lo.backward().unwrap());
    for (i, var) in p.vars.iter().enumerate() {
        let a = gf.get(var.as_tensor()).expect("fused grad").flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let b = go.get(var.as_tensor()).expect("composed grad").flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let scale = b.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-12);
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max) / scale;
        assert!(worst < 2e-3, "{}: max diff {worst} of the largest gradient entry", PARAMS[i].0);
    }
}
