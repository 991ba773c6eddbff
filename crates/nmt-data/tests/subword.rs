//! Subword segmenters: special ids, round trips, unknowns, JSON persistence and configs.

use std::path::Path;
use std::sync::OnceLock;

use nmt_data::{read_lines, Error, Segmenter, SubwordConfig, SubwordKind, BOS, EOS, PAD, SPECIALS, UNK};
use proptest::prelude::*;

fn dev_en() -> &'static Vec<String> {
    static LINES: OnceLock<Vec<String>> = OnceLock::new();
    LINES.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es/dev.en.gz");
        read_lines(&p).unwrap()
    })
}

fn bpe() -> &'static Segmenter {
    static SEG: OnceLock<Segmenter> = OnceLock::new();
    SEG.get_or_init(|| {
        let cfg = SubwordConfig { kind: SubwordKind::Bpe, vocab_size: 1000, min_frequency: 2, model: None };
        Segmenter::train(dev_en(), &cfg).unwrap()
    })
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn bpe_special_ids_are_fixed() {
    let seg = bpe();
    assert_eq!(seg.kind(), SubwordKind::Bpe);
    assert_eq!(seg.pieces(&[PAD, UNK, BOS, EOS]), SPECIALS.to_vec());
    assert!(seg.vocab_size() <= 1000 && seg.vocab_size() > 100, "{}", seg.vocab_size());
}

#[test]
fn bpe_round_trips_training_text_and_segments_into_subwords() {
    let seg = bpe();
    let mut pieces_total = 0;
    let mut words_total = 0;
    for line in dev_en().iter().take(200) {
        let ids = seg.encode(line);
        assert!(!ids.contains(&UNK), "unexpected <unk> in {line:?}");
        assert!(ids.iter().all(|&id| (id as usize) < seg.vocab_size() && id > EOS));
        assert_eq!(seg.decode(&ids), normalise(line));
        pieces_total += ids.len();
        words_total += line.split_whitespace().count();
    }
    // Merges were learned: far fewer pieces than characters, at least one per word.
    assert!(pieces_total >= words_total && pieces_total < 2 * words_total, "{pieces_total} {words_total}");
}

#[test]
fn bpe_unknown_characters_become_unk() {
    let seg = bpe();
    let ids = seg.encode("and 日本 God");
    assert!(ids.contains(&UNK), "{:?}", seg.pieces(&ids));
    assert_eq!(seg.decode(&ids), "and <unk> God");
    assert!(seg.knows_word("Jerusalem"));
    assert!(!seg.knows_word("日本"));
    assert!(!seg.knows_word(""));
}

#[test]
fn bpe_decode_drops_specials_and_tolerates_bad_ids() {
    let seg = bpe();
    let mut ids = vec![BOS];
    ids.extend(seg.encode("the LORD said"));
    ids.extend([EOS, PAD, PAD, u32::MAX]);
    // A BPE <unk> is a piece like any other: without a preceding '▁' it continues the word.
    assert_eq!(seg.decode(&ids), "the LORD said<unk>");
    assert_eq!(seg.pieces(&[u32::MAX]), vec!["<unk>"]);
}

#[test]
fn literal_special_strings_are_not_specials() {
    let ids = bpe().encode("<s> and </s>");
    assert!(!ids.contains(&BOS) && !ids.contains(&EOS), "{ids:?}");
}

#[test]
fn bpe_json_round_trip() {
    let seg = bpe();
    let json = seg.to_json().unwrap();
    assert!(json.contains("\"kind\":\"bpe\""));
    let back = Segmenter::from_json(&json).unwrap();
    assert_eq!(back.kind(), SubwordKind::Bpe);
    assert_eq!(back.vocab_size(), seg.vocab_size());
    for line in dev_en().iter().take(50) {
        assert_eq!(back.encode(line), seg.encode(line));
    }
}

#[test]
fn word_segmenter() {
    let lines: Vec<String> = ["the cat sat", "the dog sat", "a  cat\tran"].iter().map(|s| s.to_string()).collect();
    let cfg = SubwordConfig { kind: SubwordKind::Word, vocab_size: 7, min_frequency: 1, model: None };
    let seg = Segmenter::train(&lines, &cfg).unwrap();
    assert_eq!(seg.kind(), SubwordKind::Word);
    assert_eq!(seg.vocab_size(), 7);
    // the:2, cat:2, sat:2 kept (ties by byte order: cat < sat < the).
    assert_eq!(seg.pieces(&[4, 5, 6]), vec!["cat", "sat", "the"]);
    let ids = seg.encode("the dog sat");
    assert_eq!(ids, vec![6, UNK, 5]);
    assert_eq!(seg.decode(&ids), "the <unk> sat");
    assert!(seg.knows_word("cat") && !seg.knows_word("dog"));

    let back = Segmenter::from_json(&seg.to_json().unwrap()).unwrap();
    assert_eq!(back.kind(), SubwordKind::Word);
    assert_eq!(back.encode("a cat sat the"), seg.encode("a cat sat the"));
}

#[test]
fn training_errors() {
    let lines = vec!["a b".to_string()];
    let tiny = SubwordConfig { vocab_size: 4, ..SubwordConfig::default() };
    assert!(matches!(Segmenter::train(&lines, &tiny), Err(Error::InvalidConfig(_))));
    let blank = vec![" ".to_string(), String::new()];
    for kind in [SubwordKind::Bpe, SubwordKind::Word] {
        let cfg = SubwordConfig { kind, ..SubwordConfig::default() };
        assert!(matches!(Segmenter::train(&blank, &cfg), Err(Error::NoTrainingData(_))));
        assert!(matches!(Segmenter::train(&[], &cfg), Err(Error::NoTrainingData(_))));
    }
}

#[test]
fn bad_json_is_rejected() {
    for bad in [
        "",
        "{}",
        "not json",
        r#"{"version":1,"kind":"word","words":["a"]}"#,
        r#"{"version":2,"kind":"word","words":["<pad>","<unk>","<s>","</s>"]}"#,
        r#"{"version":1,"kind":"bpe","tokenizer":{"nonsense":true}}"#,
    ] {
        assert!(matches!(Segmenter::from_json(bad), Err(Error::Json(_))), "{bad:?}");
    }
}

#[test]
fn config_serde() {
    let cfg: SubwordConfig = serde_json::from_str(r#"{"kind":"word","vocab_size":50}"#).unwrap();
    assert_eq!(cfg, SubwordConfig { kind: SubwordKind::Word, vocab_size: 50, min_frequency: 2, model: None });
    let def: SubwordConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(def, SubwordConfig { kind: SubwordKind::Bpe, vocab_size: 8000, min_frequency: 2, model: None });
    assert!(serde_json::from_str::<SubwordConfig>(r#"{"vocab":5}"#).is_err());
    assert!(serde_json::from_str::<SubwordConfig>(r#"{"kind":"BPE"}"#).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Text made of characters seen in training (and arbitrary whitespace) survives
    /// encode→decode up to whitespace normalisation.
    #[test]
    fn bpe_round_trip(words in proptest::collection::vec("[a-zA-Z,.;:]{1,12}", 0..12),
                      seps in proptest::collection::vec("[ \t]{1,3}", 12)) {
        let mut text = String::from("  ");
        for (w, s) in words.iter().zip(&seps) {
            text.push_str(w);
            text.push_str(s);
        }
        let seg = bpe();
        prop_assume!(text.split_whitespace().all(|w| seg.knows_word(w)));
        let ids = seg.encode(&text);
        prop_assert!(!ids.contains(&UNK));
        prop_assert_eq!(seg.decode(&ids), normalise(&text));
    }
}

/// Full-size training speed check (run with `--ignored`): 26k sentences, 8000 symbols.
#[test]
#[ignore]
fn bpe_trains_full_corpus_quickly() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es/train.es.gz");
    let lines = read_lines(&p).unwrap();
    let start = std::time::Instant::now();
    let seg = Segmenter::train(&lines, &SubwordConfig::default()).unwrap();
    let secs = start.elapsed().as_secs_f64();
    eprintln!("trained {} symbols on {} lines in {secs:.2}s", seg.vocab_size(), lines.len());
    assert_eq!(seg.vocab_size(), 8000);
    assert!(secs < 10.0);
}

#[test]
fn encode_words_equals_encode_and_maps_every_id_to_its_word() {
    let word =
        Segmenter::train(dev_en(), &SubwordConfig { kind: SubwordKind::Word, vocab_size: 500, min_frequency: 1, model: None }).unwrap();
    for seg in [bpe(), &word] {
        for line in dev_en().iter().take(300).chain([&"  odd   spacing, Zebedee's ñandú  ".to_string()]) {
            let w = seg.encode_words(line);
            assert_eq!(w.ids, seg.encode(line), "{line:?}");
            assert_eq!(w.word_of.len(), w.ids.len());
            assert_eq!(w.words, line.split_whitespace().collect::<Vec<_>>());
            // Word indices start at 0, never decrease and cover every word.
            assert!(w.word_of.windows(2).all(|p| p[1] == p[0] || p[1] == p[0] + 1));
            assert_eq!(w.word_of.last().map(|&i| i + 1).unwrap_or(0), w.words.len());
        }
    }
}
