//! Times bench-rnnsearch's training step by phase (forward, backward, Adam) for the fused path.
//! `cargo run --release -p nmt --example bench_phases -- [DATA_DIR]`
use candle_core::{DType, Device};
use nmt::bench::model::{loss, Impl};
use nmt::bench::params::{BenchBatch, BenchParams};
use nmt::kernels::adam::{adam_update, AdamStep};
use std::time::Instant;

fn main() -> nmt::Result<()> {
    let data = std::env::args().nth(1).map(std::path::PathBuf::from);
    let imp = if std::env::var("OPS").is_ok() { Impl::Ops } else { Impl::Fused };
    let p = BenchParams::load(data.as_deref(), DType::F32, &Device::Cpu)?;
    let batch = BenchBatch::load(data.as_deref())?;
    let mut mom: Vec<(Vec<f32>, Vec<f32>)> = p.vars.iter().map(|v| (vec![0.0; v.elem_count()], vec![0.0; v.elem_count()])).collect();
    for it in 0..8 {
        let t0 = Instant::now();
        let l = loss(&p, &batch, imp)?;
        let t1 = Instant::now();
        let g = l.backward()?;
        let t2 = Instant::now();
        for (i, v) in p.vars.iter().enumerate() {
            if let Some(gr) = g.get(v.as_tensor()) {
                let (m, vv) = &mut mom[i];
                adam_update(v.as_tensor(), gr, m, vv, AdamStep { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, step: it + 1 })?;
            }
        }
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!("fwd {:.1} ms  bwd {:.1} ms  adam {:.1} ms  total {:.1}", ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t0, t3));
    }
    Ok(())
}
