//! The corpus reader: both sides of a parallel corpus from one input (split at its first 0xff).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let (src, tgt) = (&data[..cut], data.get(cut + 1..).unwrap_or_default());
    let paths = (Path::new("a.src"), Path::new("a.tgt"));
    let _ = nmt::data::corpus::parallel_from_bytes(src, tgt, paths, Some(80));
});
