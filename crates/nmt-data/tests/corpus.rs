//! Corpus reading: every error path, gzip, CRLF and the skip counters.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;
use nmt_data::{read_lines, read_parallel, Error};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn write_gz(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    let mut enc = GzEncoder::new(std::fs::File::create(&path).unwrap(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap();
    path
}

#[test]
fn reads_plain_lines_with_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "a.txt", "uno dos\r\ntrés\r\n".as_bytes());
    assert_eq!(read_lines(&p).unwrap(), vec!["uno dos", "trés"]);
}

#[test]
fn reads_gzip_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_gz(dir.path(), "a.en.gz", "In the beginning\nGod created\n".as_bytes());
    assert_eq!(read_lines(&p).unwrap(), vec!["In the beginning", "God created"]);
}

#[test]
fn missing_file_is_io_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nope.txt");
    let err = read_lines(&p).unwrap_err();
    assert!(matches!(err, Error::Io { ref path, .. } if path == &p), "{err:?}");
    assert!(err.to_string().contains("nope.txt"), "{err}");
}

#[test]
fn corrupt_gzip_is_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "bad.gz", b"this is not gzip data at all");
    assert!(matches!(read_lines(&p), Err(Error::Io { .. })));
}

#[test]
fn empty_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "empty.txt", b"");
    let err = read_lines(&p).unwrap_err();
    assert!(matches!(err, Error::EmptyFile { ref path } if path == &p), "{err:?}");
    assert!(err.to_string().contains("empty.txt"));
    // An empty gzip stream is just as empty.
    let g = write_gz(dir.path(), "empty.gz", b"");
    assert!(matches!(read_lines(&g), Err(Error::EmptyFile { .. })));
}

#[test]
fn invalid_utf8_names_the_one_based_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "bad.txt", b"fine\nalso fine\nbroken \xc3\x28 here\nok\n");
    let err = read_lines(&p).unwrap_err();
    assert!(matches!(err, Error::InvalidUtf8 { line: 3, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("line 3") && msg.contains("bad.txt"), "{msg}");
    let g = write_gz(dir.path(), "bad.gz", b"\xff\n");
    assert!(matches!(read_lines(&g), Err(Error::InvalidUtf8 { line: 1, .. })));
}

#[test]
fn line_count_mismatch_names_both_files_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "corpus.en", b"a\nb\nc\n");
    let t = write(dir.path(), "corpus.es", b"x\ny\n");
    let err = read_parallel(&s, &t, None).unwrap_err();
    assert!(matches!(err, Error::LineCountMismatch { src_lines: 3, tgt_lines: 2, .. }), "{err:?}");
    let msg = err.to_string();
    for needle in ["corpus.en", "corpus.es", "3", "2"] {
        assert!(msg.contains(needle), "{needle:?} missing from {msg}");
    }
}

#[test]
fn parallel_skips_empty_and_long_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s", b"a b\n\nc d e f\n  \ng\nh\n");
    let t = write_gz(dir.path(), "t.gz", b"x\ny\nz\n w \n\nv w\n");
    let c = read_parallel(&s, &t, Some(3)).unwrap();
    assert_eq!(c.src, vec!["a b", "h"]);
    assert_eq!(c.tgt, vec!["x", "v w"]);
    assert_eq!(c.skipped_empty, 3);
    assert_eq!(c.skipped_long, 1);
    let c = read_parallel(&s, &t, None).unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c.skipped_long, 0);
}

#[test]
fn reads_the_real_dev_set() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es");
    let c = read_parallel(&root.join("dev.en.gz"), &root.join("dev.es.gz"), None).unwrap();
    assert_eq!(c.len() + c.skipped_empty, 1000);
    assert!(c.tgt.iter().any(|l| l.contains('ó')));
}
