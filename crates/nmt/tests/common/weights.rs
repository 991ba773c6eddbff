//! The weights of two model files compared, for the data-parallel tests (`ranks.rs` here and
//! `crates/nmt-cli/tests/mpi.rs`, which includes this file by its path).
use std::path::Path;

use nmt::candle_core::{DType, Device};

/// Every tensor of a model file, flattened, by name.
fn weights(path: &Path) -> Vec<(String, Vec<f32>)> {
    let m = nmt::model_file::load(path, DType::F32, &Device::Cpu).unwrap();
    nmt::model_file::model_tensors(&m.model).into_iter().map(|(k, t)| (k, t.flatten_all().unwrap().to_vec1::<f32>().unwrap())).collect()
}

/// The largest difference between the weights of two model files.
pub fn max_weight_diff(a: &Path, b: &Path) -> f32 {
    let (a, b) = (weights(a), weights(b));
    assert_eq!(a.len(), b.len());
    let mut worst = 0f32;
    for ((ka, va), (kb, vb)) in a.iter().zip(&b) {
        assert_eq!(ka, kb);
        worst = va.iter().zip(vb).map(|(x, y)| (x - y).abs()).fold(worst, f32::max);
    }
    worst
}

/// The `n` tensors whose weights differ most between two model files, with their largest
/// difference and largest weight, for a failing test's message.
#[allow(dead_code)] // mpi.rs includes this file and does not call it
pub fn worst_tensors(a: &Path, b: &Path, n: usize) -> String {
    let (a, b) = (weights(a), weights(b));
    let mut d: Vec<(f32, f32, &str)> = a
        .iter()
        .zip(&b)
        .map(|((k, va), (_, vb))| {
            let diff = va.iter().zip(vb).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            (diff, va.iter().fold(0f32, |m, x| m.max(x.abs())), k.as_str())
        })
        .collect();
    d.sort_by(|x, y| y.0.total_cmp(&x.0));
    d.iter().take(n).map(|(diff, max, k)| format!("{k} {diff:e} (largest |w| {max:e})")).collect::<Vec<_>>().join(", ")
}
