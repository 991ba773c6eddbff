//! Arbitrary bytes never panic the data readers (issue "Nothing lost", fuzzing on stable; the
//! coverage-guided targets are in `fuzz/`): the corpus reader, Moses phrase-table and n-best
//! lines, and segmenter JSON. Each either parses or returns an error.
use std::path::Path;

use nmt_data::moses::nbest::NbestLine;
use nmt_data::moses::phrase_table::PhraseLine;
use nmt_data::shards::{listed_files, prepare, Corpus, Encoding, Manifest, PrepareOptions};
use nmt_data::subword::{SubwordConfig, SubwordKind};
use nmt_data::PairFiles;
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

    /// Issue 44: a prepared corpus's manifest with one byte changed parses to an error or a
    /// manifest (whose listed files are what a re-prepare may remove), never a panic.
    #[test]
    fn mutated_manifests(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut text = manifest_text().as_bytes().to_vec();
        let i = at.index(text.len());
        text[i] = byte;
        if let Ok(m) = Manifest::from_json(&String::from_utf8_lossy(&text), Path::new("manifest.json")) {
            let _ = listed_files(&m);
        }
    }
}

/// The manifest of a small real preparation (made once).
fn manifest_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        let (src, tgt) = (d.path().join("a.en"), d.path().join("a.es"));
        std::fs::write(&src, "a b\nc d e\nf\n").unwrap();
        std::fs::write(&tgt, "x y\nz\nw v\n").unwrap();
        let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 50, min_frequency: 1, model: None };
        let encoding =
            Encoding { src_subword: sub.clone(), tgt_subword: sub, max_words: None, max_len: 20, subword_sample: 100, copy: false };
        let opts =
            PrepareOptions { corpora: vec![Corpus { files: PairFiles::Aligned { src, tgt }, weight: 1.0 }], encoding, shard_pairs: 2 };
        let out = d.path().join("p");
        prepare(&opts, &out, None, &mut |_| {}).unwrap();
        std::fs::read_to_string(out.join("manifest.json")).unwrap()
    })
}
