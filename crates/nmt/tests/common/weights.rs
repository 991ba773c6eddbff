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
