//! Issue 58, point 5: every file a command reads may be gzipped (the bundled corpus is), and
//! gives what the same text uncompressed gives: `translate -i`, `eval bleu -r` and its
//! hypotheses, `eval chrf`, `score --src/--tgt`, `rescore --nbest/--src`, `embed -i`.
mod common;

use std::io::Write;
use std::path::Path;

use common::nmt;

fn model() -> &'static str {
    common::tiny_model().to_str().unwrap()
}

/// `text` written to `dir/name` and gzipped to `dir/name.gz`: both paths.
fn both(dir: &Path, name: &str, text: &str) -> (String, String) {
    let plain = dir.join(name);
    std::fs::write(&plain, text).unwrap();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    let gz = dir.join(format!("{name}.gz"));
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    (plain.display().to_string(), gz.display().to_string())
}

/// Runs `args` and returns stdout, failing on an error.
fn ok(args: &[&str]) -> String {
    let out = nmt(args, None);
    assert!(out.status.success(), "nmt {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn gzipped_inputs_read_as_their_text() {
    let d = tempfile::tempdir().unwrap();
    let (src, src_gz) = both(d.path(), "in.src", "uno dos\ntres cuatro\ndos tres\n");
    let (tgt, tgt_gz) = both(d.path(), "in.tgt", "UNO DOS\nTRES CUATRO\nDOS TRES\n");
    let m = model();

    let hyps = ok(&["translate", "-m", m, "-i", &src]);
    assert_eq!(hyps.lines().count(), 3, "{hyps:?}");
    assert_eq!(ok(&["translate", "-m", m, "-i", &src_gz]), hyps);

    let (hyp, hyp_gz) = both(d.path(), "hyp", &hyps);
    let bleu = ok(&["eval", "bleu", "-r", &tgt, &hyp]);
    assert!(bleu.starts_with("BLEU"), "{bleu}");
    assert_eq!(ok(&["eval", "bleu", "-r", &tgt_gz, &hyp_gz]), bleu);
    assert_eq!(ok(&["eval", "chrf", "-r", &tgt_gz, &hyp]), ok(&["eval", "chrf", "-r", &tgt, &hyp]));

    let scores = ok(&["score", "-m", m, "--src", &src, "--tgt", &tgt]);
    assert_eq!(scores.lines().count(), 3);
    assert_eq!(ok(&["score", "-m", m, "--src", &src_gz, "--tgt", &tgt_gz]), scores);

    let nbest = ok(&["translate", "-m", m, "-i", &src, "--n-best", "2"]);
    let (nb, nb_gz) = both(d.path(), "nbest", &nbest);
    let rescored = ok(&["rescore", "-m", m, "--nbest", &nb, "--src", &src]);
    assert_eq!(rescored.lines().count(), nbest.lines().count());
    assert_eq!(ok(&["rescore", "-m", m, "--nbest", &nb_gz, "--src", &src_gz]), rescored);

    let vectors = ok(&["embed", "-m", m, "-i", &src]);
    assert_eq!(vectors.lines().count(), 3);
    assert_eq!(ok(&["embed", "-m", m, "-i", &src_gz]), vectors);
}
