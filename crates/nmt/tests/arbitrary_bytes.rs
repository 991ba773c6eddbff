//! Arbitrary bytes never panic the config and model-file readers: TOML (with `--set`
//! overrides), and model files — random bytes and single-byte mutations of a valid file (which
//! must then fail loudly: the whole file's checksum makes any changed byte an error).
mod common;

use std::path::Path;

use candle_core::{DType, Device};
use nmt::config::{ArchName, Config};
use nmt::model::Seq2Seq;
use nmt::model_file::{load_bytes, meta_map, model_tensors, to_safetensors};
use proptest::prelude::*;

fn valid_file() -> Vec<u8> {
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
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
        // A changed byte anywhere (header, metadata or data: the whole file's checksum) can
        // never load silently.
        if changed {
            prop_assert!(r.is_err(), "byte {i} changed and the file loaded");
        }
        let _ = load_bytes(&b[..cut.index(b.len())], Path::new("x.safetensors"), DType::F32, &Device::Cpu);
    }

    /// Issue 44: a changed header byte with the checksums recomputed over it (what the
    /// `model_header` fuzz target does) reaches the parsers behind the checksum: an error or a
    /// model, never a panic.
    #[test]
    fn resealed_header_mutations(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut b = valid_file();
        let header = 8 + u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        b[at.index(header)] = byte;
        let _ = nmt::model_checksum::seal(&mut b);
        let _ = load_bytes(&b, Path::new("x.safetensors"), DType::F32, &Device::Cpu);
    }
}
