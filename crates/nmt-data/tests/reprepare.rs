//! Issue 44, rows 5, 6 and 12: `prepare` writes into a temporary directory beside DIR and
//! swaps it in only when complete; a failed run leaves an earlier preparation byte-identical;
//! files it did not write (no manifest lists them) are never deleted or overwritten.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nmt_data::shards::{prepare, Corpus, Encoding, PrepareOptions, Prepared};
use nmt_data::subword::{SubwordConfig, SubwordKind};
use nmt_data::PairFiles;

fn bible() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es")
}

fn options(files: PairFiles, shard_pairs: u64) -> PrepareOptions {
    let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 600, min_frequency: 1, model: None };
    let encoding =
        Encoding { src_subword: sub.clone(), tgt_subword: sub, max_words: Some(60), max_len: 40, subword_sample: 2_000_000, copy: false };
    PrepareOptions { corpora: vec![Corpus { files, weight: 1.0 }], encoding, shard_pairs }
}

fn dev(shard_pairs: u64) -> PrepareOptions {
    options(PairFiles::Aligned { src: bible().join("dev.en.gz"), tgt: bible().join("dev.es.gz") }, shard_pairs)
}

/// Every file of `dir` (and of the folder holding it, for leftovers) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            all.extend(snapshot(&e.path()));
        } else {
            all.insert(e.path(), std::fs::read(e.path()).unwrap());
        }
    }
    all
}

#[test]
fn a_failed_reprepare_leaves_the_earlier_one_byte_identical() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("prep");
    prepare(&dev(100), &out, None, &mut |_| {}).unwrap();
    let before = snapshot(d.path());
    // Invalid UTF-8, then an empty corpus.
    let (bad_src, bad_tgt) = (d.path().join("bad.en"), d.path().join("bad.es"));
    std::fs::write(&bad_src, b"a b\nc \xff d\n").unwrap();
    std::fs::write(&bad_tgt, "x y\nz w\n").unwrap();
    let before_inputs = snapshot(d.path());
    assert!(prepare(&options(PairFiles::Aligned { src: bad_src.clone(), tgt: bad_tgt.clone() }, 100), &out, None, &mut |_| {}).is_err());
    assert_eq!(snapshot(d.path()), before_inputs, "the failed run changed or left files");
    std::fs::write(&bad_src, "").unwrap();
    std::fs::write(&bad_tgt, "").unwrap();
    let before_inputs = snapshot(d.path());
    assert!(prepare(&options(PairFiles::Aligned { src: bad_src, tgt: bad_tgt }, 100), &out, None, &mut |_| {}).is_err());
    assert_eq!(snapshot(d.path()), before_inputs);
    let prep: BTreeMap<_, _> = snapshot(&out);
    assert_eq!(prep, before.into_iter().filter(|(p, _)| p.starts_with(&out)).collect::<BTreeMap<_, _>>());
    Prepared::open(&out).unwrap();
}

#[test]
fn files_prepare_did_not_write_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("prep");
    std::fs::create_dir(&out).unwrap();
    // Names that look like a preparation's, but no manifest lists them.
    let mine = [("shard-99999.tok", "mine"), ("notes.subword.json", "{}"), ("keep.txt", "keep")];
    for (name, text) in mine {
        std::fs::write(out.join(name), text).unwrap();
    }
    prepare(&dev(100), &out, None, &mut |_| {}).unwrap();
    // Again, with fewer shards: the first run's extra shards go, the user's files stay.
    let first = snapshot(&out);
    prepare(&dev(1000), &out, None, &mut |_| {}).unwrap();
    for (name, text) in mine {
        assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), text, "{name}");
    }
    assert!(!out.join("shard-00001.tok").exists(), "the earlier preparation's own extra shard is removed");
    assert!(first.contains_key(&out.join("shard-00001.tok")));
    Prepared::open(&out).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().filter(|e| e.file_name() != "prep").collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_clash_with_a_foreign_file_is_refused_and_nothing_moves() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("prep");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("shard-00000.tok"), "mine").unwrap();
    let err = prepare(&dev(100), &out, None, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("shard-00000.tok") && err.contains("not written by"), "{err}");
    assert_eq!(std::fs::read_to_string(out.join("shard-00000.tok")).unwrap(), "mine");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    // A manifest.json that is not ours.
    std::fs::remove_file(out.join("shard-00000.tok")).unwrap();
    std::fs::write(out.join("manifest.json"), "{\"mine\": true}").unwrap();
    let err = prepare(&dev(100), &out, None, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("manifest.json") && err.contains("not a manifest"), "{err}");
    assert_eq!(std::fs::read_to_string(out.join("manifest.json")).unwrap(), "{\"mine\": true}");
}

#[test]
fn a_file_as_the_output_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("out.txt");
    std::fs::write(&file, "x").unwrap();
    let err = prepare(&dev(100), &file, None, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("out.txt") && err.contains("is a file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}
