//! Prepared corpora: the shards hold exactly what the in-memory path encodes, several shards
//! and corpora line up, and every kind of damage is an error naming the damaged file.
use std::path::{Path, PathBuf};

use nmt_data::shards::{encode_cached, prepare, Corpus, Encoding, Manifest, PrepareOptions, Prepared, TokenType};
use nmt_data::subword::{SubwordConfig, SubwordKind};
use nmt_data::{examples, read_parallel, Error, PairFiles};

fn bible() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es")
}

fn options(kind: SubwordKind, corpora: Vec<Corpus>) -> PrepareOptions {
    let sub = SubwordConfig { kind, vocab_size: 600, min_frequency: 2, model: None };
    let encoding =
        Encoding { src_subword: sub.clone(), tgt_subword: sub, max_words: Some(60), max_len: 40, subword_sample: 2_000_000, copy: false };
    PrepareOptions { corpora, encoding, shard_pairs: 100 }
}

fn dev() -> Corpus {
    Corpus { files: PairFiles::Aligned { src: bible().join("dev.en.gz"), tgt: bible().join("dev.es.gz") }, weight: 1.0 }
}

fn quiet(_: &str) {}

#[test]
fn shards_hold_what_the_in_memory_path_encodes() {
    for kind in [SubwordKind::Bpe, SubwordKind::Word] {
        let dir = tempfile::tempdir().unwrap();
        let m = prepare(&options(kind, vec![dev()]), dir.path(), None, &mut quiet).unwrap();
        assert_eq!(m.token_type, TokenType::U16);
        assert!(m.shards.len() > 2, "{} shards", m.shards.len());
        let p = Prepared::open(dir.path()).unwrap();
        let (src, tgt) = p.segmenters();
        let corpus = read_parallel(&bible().join("dev.en.gz"), &bible().join("dev.es.gz"), Some(60)).unwrap();
        // The word cache gives the segmenter's own ids.
        let mut cache = Default::default();
        for line in corpus.src.iter().take(300) {
            assert_eq!(encode_cached(src, line, &mut cache), src.encode(line));
        }
        let want = examples(&corpus, src, tgt, Some(40));
        assert_eq!(p.len(), want.len());
        for (i, e) in want.iter().enumerate() {
            let got = p.pair(i).unwrap();
            assert_eq!((&got.src, &got.tgt), (&e.src, &e.tgt), "pair {i}");
            assert_eq!(p.lengths(i), (e.src.len(), e.tgt.len()));
        }
        let r = &m.corpora[0];
        assert_eq!(r.skipped_long + r.skipped_empty, corpus.skipped_long as u64 + corpus.skipped_empty as u64);
        assert_eq!(r.skipped_subwords as usize, corpus.len() - want.len());
    }
}

#[test]
fn tsv_and_several_weighted_corpora() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("x.tsv");
    std::fs::write(&tsv, "in the beginning\ten el principio\nand God said\ty dijo Dios\n").unwrap();
    let corpora = vec![dev(), Corpus { files: PairFiles::Tsv(tsv), weight: 3.0 }];
    let out = dir.path().join("p");
    let m = prepare(&options(SubwordKind::Word, corpora), &out, None, &mut quiet).unwrap();
    assert_eq!(m.corpora.len(), 2);
    assert_eq!(m.corpora[1].pairs, 2);
    assert_eq!(m.corpora[1].first, m.corpora[0].pairs);
    let p = Prepared::open(&out).unwrap();
    let last = p.pair(p.len() - 1).unwrap();
    assert_eq!(p.segmenters().1.decode(&last.tgt), "y dijo Dios");
    let w = p.weighted();
    assert_eq!((w[1].first, w[1].len, w[1].weight), (m.corpora[0].pairs as usize, 2, 3.0));
}

/// Prepares a small directory and returns it with its manifest.
fn prepared() -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let m = prepare(&options(SubwordKind::Word, vec![dev()]), dir.path(), None, &mut quiet).unwrap();
    (dir, m)
}

fn open_error(dir: &Path) -> String {
    match Prepared::open(dir) {
        Ok(_) => panic!("a damaged directory opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_flipped_byte_or_a_truncated_shard_names_the_file() {
    let (dir, m) = prepared();
    for name in [&m.shards[1].tokens.name, &m.shards[0].offsets.name, &m.shards[2].lengths.name, &m.tgt_segmenter.name] {
        let path = dir.path().join(name);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        bad[good.len() / 2] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let err = open_error(dir.path());
        assert!(err.contains(name.as_str()) && err.contains("corrupt"), "{err}");
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        let err = open_error(dir.path());
        assert!(err.contains(name.as_str()) && err.contains("truncated"), "{err}");
        std::fs::write(&path, &good).unwrap();
    }
    std::fs::remove_file(dir.path().join(&m.shards[0].tokens.name)).unwrap();
    let err = Prepared::open(dir.path()).err().unwrap();
    assert!(matches!(&err, Error::Io { path, .. } if path.ends_with(&m.shards[0].tokens.name)), "{err}");
}

#[test]
fn a_manifest_that_does_not_match_names_the_manifest() {
    let (dir, m) = prepared();
    let path = dir.path().join("manifest.json");
    let edit = |f: &dyn Fn(&mut Manifest)| {
        let mut changed = m.clone();
        f(&mut changed);
        std::fs::write(&path, serde_json::to_string(&changed).unwrap()).unwrap();
        open_error(dir.path())
    };
    let err = edit(&|x| x.pairs += 1);
    assert!(err.contains("manifest.json") && err.contains("pair counts"), "{err}");
    let err = edit(&|x| x.version = 99);
    assert!(err.contains("manifest.json") && err.contains("version 99"), "{err}");
    let err = edit(&|x| x.tgt_vocab += 1);
    assert!(err.contains("manifest.json") && err.contains("vocabularies"), "{err}");
    let err = edit(&|x| x.shards[0].offsets.crc32 ^= 1);
    assert!(err.contains(&m.shards[0].offsets.name) && err.contains("corrupt"), "{err}");
    std::fs::write(&path, b"{ not json").unwrap();
    let err = open_error(dir.path());
    assert!(err.contains("manifest.json") && err.contains("not a manifest"), "{err}");
}

#[test]
fn errors_in_the_text_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("bad.tsv");
    std::fs::write(&tsv, "a\tb\nc d\n").unwrap();
    let opts = options(SubwordKind::Word, vec![Corpus { files: PairFiles::Tsv(tsv), weight: 1.0 }]);
    let err = prepare(&opts, &dir.path().join("p"), None, &mut quiet).unwrap_err();
    assert!(matches!(err, Error::Malformed { line: 2, .. }), "{err}");
}
