//! The model file's header and metadata past the checksum (issue 44): the input is a model
//! file whose checksums are recomputed (`model_checksum::seal`) before it is loaded, so a
//! mutated header, dtype, shape, offset, config or vocabulary reaches the parsers behind the
//! checksum instead of stopping at it. Seeds: the tiny model and its checkpoint.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    let _ = nmt::model_checksum::seal(&mut bytes);
    let _ = nmt::model_file::load_bytes(&bytes, std::path::Path::new("x.safetensors"), candle_core::DType::F32, &candle_core::Device::Cpu);
});
