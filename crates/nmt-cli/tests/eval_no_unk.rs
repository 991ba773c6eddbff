//! `nmt eval bleu|chrf --src S --no-unk-vocab SV --no-unk-vocab TV` scores exactly the
//! No-UNK subset: the same figures as scoring the kept lines alone, and the same BLEU as
//! `by-length`'s No-UNK table.
mod common;

use common::{fails_with, nmt};

fn first_line(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string()
}

#[test]
fn no_unk_scores_the_kept_lines() {
    let d = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| {
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    // Line 2 has a source word outside the vocabulary, line 4 a reference word: both go.
    let src = w("src", "the house\nthe zebra\na small house\nthe house is small\n");
    let refs = w("ref", "la casa\nla cebra\nuna casa pequeña\nla casa es diminuta\n");
    let hyps = w("hyp", "la casa\nel caballo\nuna casa grande\nla casa es pequeña\n");
    let sv = w("sv", "the\nhouse\na\nsmall\nis\n");
    let tv = w("tv", "la\ncasa\nuna\npequeña\nes\ncebra\n");
    let (kept_refs, kept_hyps) = (w("kr", "la casa\nuna casa pequeña\n"), w("kh", "la casa\nuna casa grande\n"));
    for metric in ["bleu", "chrf"] {
        let subset =
            first_line(&nmt(&["eval", metric, "-r", &refs, "--src", &src, "--no-unk-vocab", &sv, "--no-unk-vocab", &tv, &hyps], None));
        let alone = first_line(&nmt(&["eval", metric, "-r", &kept_refs, &kept_hyps], None));
        let all = first_line(&nmt(&["eval", metric, "-r", &refs, &hyps], None));
        assert_eq!(subset, alone, "{metric}");
        assert_ne!(subset, all, "{metric}: the subset scored like all lines");
    }
    // by-length's No-UNK column agrees (2 sentences kept).
    let table = nmt(&["eval", "by-length", "--src", &src, "-r", &refs, "--no-unk-vocab", &sv, "--no-unk-vocab", &tv, &hyps], None);
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.contains("No UNK (2)"), "{table}");
    // One vocabulary, or no source: clear errors.
    fails_with(&nmt(&["eval", "chrf", "-r", &refs, "--src", &src, "--no-unk-vocab", &sv, &hyps], None), &["two files"]);
    let out = nmt(&["eval", "bleu", "-r", &refs, "--no-unk-vocab", &sv, "--no-unk-vocab", &tv, &hyps], None);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--src"));
}
