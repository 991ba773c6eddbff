//! The prepared corpus's manifest (`manifest.json`): parsing, its consistency checks, and the
//! list of files it says `prepare` wrote (what a re-prepare may remove).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nmt::data::shards::{listed_files, Manifest};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(m) = Manifest::from_json(text, std::path::Path::new("manifest.json")) {
            let _ = listed_files(&m);
        }
    }
});
