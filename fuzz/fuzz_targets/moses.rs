//! Moses phrase-table and n-best lines, and the lines they become with a new feature.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nmt::data::moses::{nbest::NbestLine, phrase_table::PhraseLine};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for (i, line) in text.lines().enumerate() {
        if let Ok(p) = PhraseLine::parse(line, i + 1) {
            assert!(PhraseLine::parse(&p.with_feature("0.5"), i + 1).is_ok());
        }
        if let Ok(mut l) = NbestLine::parse(line, i + 1) {
            l.add_feature("f", -1.0, Some(0.5));
            assert!(NbestLine::parse(l.as_str(), i + 1).is_ok());
        }
    }
});
