//! Arbitrary bytes never panic the config and model-file readers: TOML (with `--set`
//! overrides), and model files — random bytes and single-byte mutations of a valid file (which
//! must then fail loudly or load: the checksum makes a changed weight an error).
mod common;

use std::path::Path;

use candle_core::{DType, Device};
use nmt::config::{Config, Family};
use nmt::model::Seq2Seq;
use nmt::model_file::{load_bytes, meta_map, model_tensors, to_safetensors};
use proptest::prelude::*;

fn valid_file() -> Vec<u8> {
    let (meta, cfg) = common::tiny_meta(Family::Rnnsearch);
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
    to_safetensors(&model_tensors(&model), meta_map(&meta).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn toml_configs(text in "(\\PC|\\[|\\]|=|\"|\\n|[a-z_.]){0,200}", set in "[a-z_.]{0,20}=?[a-z0-9\"]{0,8}") {
        let _ = Config::from_toml_str(&text, &[]);
        let _ = Config::from_toml_str("[model]\npreset = \"tiny\"\n", &[set]);
    }

    #[test]
    fn model_file_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = load_bytes(&bytes, Path::new("x.safetensors"), DType::F32, &Device::Cpu);
    }

    #[test]
    fn mutated_model_files(at in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let mut b = valid_file();
        let i = at.index(b.len());
        let changed = b[i] != byte;
        b[i] = byte;
        let r = load_bytes(&b, Path::new("x.safetensors"), DType::F32, &Device::Cpu);
        // A changed byte in the tensor data can never load silently.
        let header = 8 + u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        if changed && i >= header && i >= 8 {
            prop_assert!(r.is_err());
        }
        let _ = load_bytes(&b[..cut.index(b.len())], Path::new("x.safetensors"), DType::F32, &Device::Cpu);
    }
}
