//! The model-file loader (safetensors bytes, metadata, checksum, building the model).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = nmt::model_file::load_bytes(data, std::path::Path::new("x.safetensors"), candle_core::DType::F32, &candle_core::Device::Cpu);
});
