use candle_core::{Device, Tensor, DType};
use std::time::Instant;
fn t(name: &str, f: impl Fn() -> Tensor) {
    f();
    let t0 = Instant::now();
    for _ in 0..5 { f(); }
    println!("{name}: {:.1} ms", t0.elapsed().as_secs_f64() * 1e3 / 5.0);
}
fn main() {
    let d = Device::Cpu;
    let st = Tensor::randn(0f32, 1.0, (960, 256), &d).unwrap();
    let w = Tensor::randn(0f32, 1.0, (256, 8000), &d).unwrap();
    let g = Tensor::randn(0f32, 1.0, (960, 8000), &d).unwrap();
    let b = Tensor::randn(0f32, 1.0, 8000, &d).unwrap();
    t("fwd st@w", || st.matmul(&w).unwrap());
    t("fwd affine", || st.matmul(&w).unwrap().broadcast_add(&b).unwrap());
    t("g@w.t", || g.matmul(&w.t().unwrap()).unwrap());
    t("st.t@g", || st.t().unwrap().matmul(&g).unwrap());
    t("sum0 g", || g.sum(0).unwrap());
    t("zeros+add g", || g.zeros_like().unwrap().add(&g).unwrap());
    let big = Tensor::randn(0f32, 1.0, (960, 1024), &d).unwrap();
    let ow = Tensor::randn(0f32, 1.0, (1024, 512), &d).unwrap();
    let g2 = Tensor::randn(0f32, 1.0, (960, 512), &d).unwrap();
    t("out fwd", || big.matmul(&ow).unwrap());
    t("out g@w.t", || g2.matmul(&ow.t().unwrap()).unwrap());
    t("out x.t@g", || big.t().unwrap().matmul(&g2).unwrap());
    let emb = Tensor::randn(0f32, 1.0, (8000, 256), &d).unwrap();
    let ids = Tensor::arange(0u32, 960, &d).unwrap();
    let ge = Tensor::randn(0f32, 1.0, (960, 256), &d).unwrap();
    t("emb bwd index_add", || emb.zeros_like().unwrap().index_add(&ids, &ge, 0).unwrap());
    let _ = DType::F32;
}
