//! Damaged model files are errors naming the file, never a panic and never a silently wrong
//! model: truncation at every kind of place, a flipped byte in the weights (the checksum) or in
//! the header, another format version, a config that does not fit the tensors, and a checkpoint
//! whose config differs from the command's.
mod common;

use std::path::Path;

use candle_core::{DType, Device};
use nmt::config::ArchName;
use nmt::model::Seq2Seq;
use nmt::model_checksum;
use nmt::model_file::{load, load_bytes, meta_map, model_tensors, save, to_safetensors, write_atomic, CHECKSUM_KEY, FORMAT_V1};

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
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
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

/// Issue 44, row 4: the checksum covers the whole file. Every byte of the 8-byte length and the
/// header (tensor names, dtypes, shapes, offsets, config, vocabularies) changed, one at a time,
/// is refused, naming the file.
#[test]
fn every_changed_header_byte_is_refused() {
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
    let bytes = to_safetensors(&model_tensors(&model), meta_map(&meta).unwrap()).unwrap();
    let path = Path::new("/models/m.safetensors");
    load_bytes(&bytes, path, DType::F32, &Device::Cpu).unwrap();
    let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    for at in 0..header_end {
        for flip in [0x01u8, 0x20] {
            let mut b = bytes.clone();
            b[at] ^= flip;
            match load_bytes(&b, path, DType::F32, &Device::Cpu) {
                Ok(_) => panic!("byte {at} ^ {flip:#x} ({:?}) loaded", b[at] as char),
                Err(e) => assert!(e.to_string().contains("/models/m.safetensors"), "byte {at}: {e}"),
            }
        }
    }
    // The two cases: a dtype, and a vocabulary entry in the metadata.
    let text = std::str::from_utf8(&bytes[8..header_end]).unwrap();
    let at = 8 + text.find("\"F32\"").unwrap();
    let mut b = bytes.clone();
    b[at + 1..at + 4].copy_from_slice(b"I32");
    let e = load_bytes(&b, path, DType::F32, &Device::Cpu).err().unwrap().to_string();
    assert!(e.contains("checksum"), "{e}");
    let at = 8 + text.find("\\\"a\\\"").unwrap();
    let mut b = bytes.clone();
    b[at + 2] = b'z';
    assert!(load_bytes(&b, path, DType::F32, &Device::Cpu).err().unwrap().to_string().contains("checksum"));
}

/// A file of the older format (`nmt-model/1`, the tensor data's checksum only) still loads; a
/// flipped weight in it is still refused.
#[test]
fn an_older_file_still_loads() {
    let (meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &Device::Cpu).unwrap();
    let tensors = model_tensors(&model);
    let mut m = meta_map(&meta).unwrap();
    m.insert("format".into(), FORMAT_V1.into());
    let serialize = |m: &std::collections::HashMap<String, String>| {
        safetensors::serialize(tensors.iter().map(|(k, t)| (k.clone(), t)), Some(m.clone())).unwrap()
    };
    let plain = serialize(&m);
    let data = model_checksum::data_section(&plain).unwrap();
    m.insert(CHECKSUM_KEY.into(), format!("{:08x}", crc32fast::hash(data)));
    let old = serialize(&m);
    let path = Path::new("old.safetensors");
    load_bytes(&old, path, DType::F32, &Device::Cpu).unwrap();
    let mut b = old.clone();
    *b.last_mut().unwrap() ^= 0x10;
    assert!(load_bytes(&b, path, DType::F32, &Device::Cpu).err().unwrap().to_string().contains("checksum"));
}
