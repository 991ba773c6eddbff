//! Checkpoint averaging: the averaged file holds the element-wise mean of the inputs' weights,
//! and models of different configurations are refused with the file named.
mod common;

use candle_core::{DType, Device};
use nmt::config::ArchName;
use nmt::model::Seq2Seq;
use nmt::train::average::{average, average_to};

#[test]
fn average_is_the_elementwise_mean() {
    let tmp = tempfile::tempdir().unwrap();
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let mut paths = Vec::new();
    let mut models = Vec::new();
    for seed in [1, 2, 3] {
        let m = Seq2Seq::fresh(&cfg, seed, DType::F32, &Device::Cpu).unwrap();
        let p = tmp.path().join(format!("m{seed}.safetensors"));
        nmt::model_file::save(&p, &m, &meta).unwrap();
        paths.push(p);
        models.push(m);
    }
    let avg = average(&paths).unwrap();
    for (name, var) in avg.model.params.named_vars() {
        let got: Vec<f32> = var.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
        let inputs: Vec<Vec<f32>> = models
            .iter()
            .map(|m| {
                let v = m.params.named_vars().into_iter().find(|(n, _)| *n == name).unwrap().1;
                v.as_tensor().flatten_all().unwrap().to_vec1().unwrap()
            })
            .collect();
        for (i, g) in got.iter().enumerate() {
            let want = (inputs[0][i] + inputs[1][i] + inputs[2][i]) / 3.0;
            assert!((g - want).abs() < 1e-6, "{name}[{i}]: {g} vs {want}");
        }
    }
    let out = tmp.path().join("avg.safetensors");
    average_to(&paths, &out).unwrap();
    assert!(nmt::model_file::load(&out, DType::F32, &Device::Cpu).is_ok());
}

#[test]
fn average_refuses_models_of_different_configurations() {
    let tmp = tempfile::tempdir().unwrap();
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let a = tmp.path().join("a.safetensors");
    nmt::model_file::save(&a, &Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap(), &meta).unwrap();
    let (meta2, cfg2) = common::tiny_meta(ArchName::Rnnenc);
    let b = tmp.path().join("b.safetensors");
    nmt::model_file::save(&b, &Seq2Seq::fresh(&cfg2, 1, DType::F32, &Device::Cpu).unwrap(), &meta2).unwrap();
    let err = average(&[a, b.clone()]).err().expect("different models must not average").to_string();
    assert!(err.contains("b.safetensors"), "{err}");
    assert!(average(&[]).is_err());
}
