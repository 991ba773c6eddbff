//! The TOML config, whole files and `--set` overrides.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = nmt::config::Config::from_toml_str(text, &[]);
        let _ = nmt::config::Config::from_toml_str("[model]\npreset = \"tiny\"\n", &[text.to_string()]);
    }
});
