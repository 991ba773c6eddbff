//! UNK replacement on a fixture with known attention: each `<unk>` takes the source word with
//! the highest weight (never `</s>`), or its dictionary entry.
use nmt::data::subword::{Segmenter, SubwordConfig, SubwordKind};
use nmt::data::UNK;
use nmt::unk::UnkReplacer;
use nmt::Hypothesis;

fn words(lines: &[&str]) -> Segmenter {
    let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    Segmenter::train(&lines, &SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None }).unwrap()
}

fn hyp(tokens: Vec<u32>, alignment: Vec<Vec<f32>>) -> Hypothesis {
    Hypothesis { tokens, log_prob: -1.0, score: -1.0, finished: true, alignment: Some(alignment) }
}

#[test]
fn unk_takes_the_most_attended_source_word_or_its_dictionary_entry() {
    let src = words(&["and jesus said"]);
    let tgt = words(&["y dijo"]);
    let words = src.encode_words("and Zebedee said");
    assert_eq!(words.ids[1], UNK, "the fixture's rare word is unknown to the source vocabulary");
    let (y, dijo) = (tgt.encode("y")[0], tgt.encode("dijo")[0]);
    // Output "y <unk> dijo <unk>": the first <unk> attends to "Zebedee", the second mostly to
    // </s> (column 3), then to "and".
    let h = hyp(
        vec![y, UNK, dijo, UNK],
        vec![
            vec![0.9, 0.05, 0.03, 0.02],
            vec![0.1, 0.7, 0.1, 0.1],
            vec![0.0, 0.1, 0.8, 0.1],
            vec![0.3, 0.1, 0.0, 0.6],
            vec![0.0, 0.0, 0.0, 1.0],
        ],
    );
    assert_eq!(tgt.decode(&h.tokens), "y <unk> dijo <unk>");
    assert_eq!(UnkReplacer::new().replace(&h, &words, &tgt).unwrap(), "y Zebedee dijo and");
    let dict = UnkReplacer::parse_dictionary("Zebedee Zebedeo 0.4\nZebedee Zebedeos 0.2\nand y\n\nZebedee Zebedea 0.3\n").unwrap();
    assert_eq!(dict.replace(&h, &words, &tgt).unwrap(), "y Zebedeo dijo y");
}

#[test]
fn bad_dictionary_lines_are_named() {
    let err = UnkReplacer::parse_dictionary("a b 0.5\na b c d\n").unwrap_err();
    assert!(err.contains("line 2"), "{err}");
    let err = UnkReplacer::parse_dictionary("a b x\n").unwrap_err();
    assert!(err.contains("line 1") && err.contains("probability"), "{err}");
}

#[test]
fn no_alignment_is_a_clear_error() {
    let seg = words(&["a b"]);
    let mut h = hyp(vec![UNK], vec![]);
    h.alignment = None;
    let err = UnkReplacer::new().replace(&h, &seg.encode_words("a"), &seg).unwrap_err();
    assert!(err.to_string().contains("attention"), "{err}");
}
