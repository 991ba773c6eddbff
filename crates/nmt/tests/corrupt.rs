//! Damaged model files are errors naming the file, never a panic and never a silently wrong
//! model: truncation at every kind of place, a flipped byte in the weights (the checksum) or in
//! the header, another format version, a config that does not fit the tensors, and a checkpoint
//! whose config differs from the command's.
mod common;

use std::path::Path;

use candle_core::{DType, Device};
use nmt::config::Family;
use nmt::model::Seq2Seq;
use nmt::model_file::{load, meta_map, model_tensors, save, to_safetensors, write_atomic, CHECKSUM_KEY};

fn err(path: &Path) -> String {
    match load(path, DType::F32, &Device::Cpu) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(&path.display().to_string()), "the error must name the file: {msg}");
            msg
        }
    }
}

#[test]
fn damaged_model_files_are_named_errors() {
    let d = tempfile::tempdir().unwrap();
    let (meta, cfg) = common::tiny_meta(Family::Rnnsearch);
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
    let good = d.path().join("good.safetensors");
    save(&good, &model, &meta).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    load(&good, DType::F32, &Device::Cpu).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let bad = d.path().join("bad.safetensors");

    // Truncated: empty, inside the length, inside the header, at the data's start, inside the
    // data, one byte short.
    for cut in [0, 4, 8, 8 + header_len / 2, 8 + header_len, 8 + header_len + 7, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&bad, &bytes[..cut]).unwrap();
        err(&bad);
    }
    // One flipped byte in the weights: the checksum.
    for at in [8 + header_len, 8 + header_len + (bytes.len() - 8 - header_len) / 3, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        std::fs::write(&bad, &b).unwrap();
        assert!(err(&bad).contains("checksum"), "byte {at}");
    }
    // One flipped byte in the header's JSON.
    let mut b = bytes.clone();
    let brace = 8 + bytes[8..8 + header_len].iter().position(|&c| c == b'{').unwrap();
    b[brace] = b'[';
    std::fs::write(&bad, &b).unwrap();
    err(&bad);
    // A file from another format version.
    let mut m = meta_map(&meta).unwrap();
    m.insert("format".into(), "nmt-model/0".into());
    write_atomic(&bad, &to_safetensors(&model_tensors(&model), m).unwrap()).unwrap();
    assert!(err(&bad).contains("nmt-model/0"));
    // A config that does not fit the tensors (another hidden size).
    let mut other = meta.clone();
    other.config.hidden_dim += 1;
    write_atomic(&bad, &to_safetensors(&model_tensors(&model), meta_map(&other).unwrap()).unwrap()).unwrap();
    err(&bad);
    // Metadata that is not JSON.
    let mut m = meta_map(&meta).unwrap();
    m.insert("config".into(), "{not json".into());
    write_atomic(&bad, &to_safetensors(&model_tensors(&model), m).unwrap()).unwrap();
    assert!(err(&bad).contains("config"));
    // Random bytes.
    std::fs::write(&bad, b"\xff\x00\x00\x00\x00\x00\x00\x00garbage").unwrap();
    err(&bad);
    // Every saved file carries the checksum.
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    assert!(header.metadata().as_ref().unwrap().contains_key(CHECKSUM_KEY));
}
