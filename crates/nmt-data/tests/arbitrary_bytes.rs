//! Arbitrary bytes never panic the data readers (issue "Nothing lost", fuzzing on stable; the
//! coverage-guided targets are in `fuzz/`): the corpus reader, Moses phrase-table and n-best
//! lines, and segmenter JSON. Each either parses or returns an error.
use std::path::Path;

use nmt_data::moses::nbest::NbestLine;
use nmt_data::moses::phrase_table::PhraseLine;
use nmt_data::{corpus::parallel_from_bytes, Segmenter};
use proptest::prelude::*;

/// Bytes biased towards the formats' own characters, so that cases get past the first check.
fn format_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"|||".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"=".to_vec()),
        Just(b"0.5".to_vec()),
        Just(b"-1e9".to_vec()),
        Just("ñ€".as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn corpus_bytes(src in format_bytes(), tgt in format_bytes(), max in prop::option::of(0usize..5)) {
        let paths = (Path::new("a.src"), Path::new("a.tgt"));
        if let Ok(c) = parallel_from_bytes(&src, &tgt, paths, max) {
            prop_assert_eq!(c.src.len(), c.tgt.len());
        }
    }

    #[test]
    fn moses_lines(bytes in format_bytes(), n in 1usize..100) {
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            if let Ok(p) = PhraseLine::parse(line, n) {
                let out = p.with_feature("0.5");
                prop_assert!(PhraseLine::parse(&out, n).is_ok());
            }
            if let Ok(mut l) = NbestLine::parse(line, n) {
                l.add_feature("f", -1.0, Some(0.5));
                prop_assert!(NbestLine::parse(l.as_str(), n).is_ok());
            }
        }
    }

    #[test]
    fn segmenter_json(s in "\\PC{0,80}", kind in prop_oneof![Just("word"), Just("bpe")]) {
        let _ = Segmenter::from_json(&s);
        let _ = Segmenter::from_json(&format!("{{\"version\":1,\"kind\":\"{kind}\",\"words\":[{s:?}],\"tokenizer\":{s:?}}}"));
    }
}
