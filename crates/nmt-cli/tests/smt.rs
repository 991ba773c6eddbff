//! SMT integration through the real binary: a Moses phrase table gains the model's column and
//! nothing else, n-best lists are rescored and re-ranked, ensembles of a model with itself
//! change nothing, and malformed lines are named without leaving an output file.
mod common;

use std::io::{Read, Write};
use std::path::Path;

use common::{fails_with, nmt, train};

/// A tiny trained model in `dir/m` (2 updates on a toy corpus).
fn model(dir: &Path, words: &[&str]) -> String {
    let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    std::fs::write(dir.join("t.src"), &src).unwrap();
    std::fs::write(dir.join("t.tgt"), src.to_uppercase()).unwrap();
    let out = train(dir, "t.src", "t.tgt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir.join("m/model.safetensors").display().to_string()
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut v).unwrap();
    v
}

/// The line without its last feature (what the phrase-table column added).
fn drop_last_feature(line: &str) -> (String, f64) {
    let mut f: Vec<&str> = line.split("|||").collect();
    let field = f[2];
    let end = field.trim_end().len();
    let tok = field[..end].rfind(char::is_whitespace).map_or(0, |k| k + 1);
    let cut = if field[..tok].trim().is_empty() { tok } else { tok - 1 };
    let value: f64 = field[tok..end].parse().unwrap();
    let kept = format!("{}{}", &field[..cut], &field[end..]);
    f[2] = &kept;
    (f.join("|||"), value)
}

const TABLE: &str = "uno dos ||| UNO DOS ||| 0.5 0.25 0.1 0.3\n\
    tres ||| TRES ||| 0.5 0.25 ||| 0-0\n\
    cuatro   uno|||CUATRO   UNO|||0.2   0.1|||  0-0 1-1  |||3 4 2   \n\
    dos ñandú ||| DOS 孩子 ||| 1e-05 -0.5 ||| ||| 1 1 1\r\n\
    uno ||| UNO |||  ||| 0-0\n\
    tres uno ||| TRES UNO ||| 0.9 ||| 0-0 ||| 1 1 1 ||| {{extra}}";

#[test]
fn phrase_tables_gain_one_column_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path(), &["uno dos", "tres cuatro", "dos tres", "cuatro uno"]);
    let input = d.path().join("pt.gz");
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&input).unwrap(), flate2::Compression::fast());
    gz.write_all(TABLE.as_bytes()).unwrap();
    gz.finish().unwrap();
    let (out, out_log) = (d.path().join("out.gz"), d.path().join("out.log.txt"));
    ok(&nmt(&["score", "-m", &m, "--phrase-table", input.to_str().unwrap(), "-o", out.to_str().unwrap()], None));
    ok(&nmt(&["score", "-m", &m, "--phrase-table", input.to_str().unwrap(), "--log", "-o", out_log.to_str().unwrap()], None));
    let text = String::from_utf8(gunzip(&out)).unwrap();
    let logs = std::fs::read_to_string(&out_log).unwrap();
    // The round trip, byte for byte (CRLF and the missing final newline included).
    let mut back = String::new();
    let mut values = Vec::new();
    for (line, log_line) in text.split_inclusive('\n').zip(logs.split_inclusive('\n')) {
        let body = line.trim_end_matches(['\n', '\r']);
        let (kept, p) = drop_last_feature(body);
        let (_, lp) = drop_last_feature(log_line.trim_end_matches(['\n', '\r']));
        assert!((p.ln() - lp).abs() < 1e-4, "{line}: p {p} but log p {lp}");
        back.push_str(&kept);
        back.push_str(&line[body.len()..]);
        values.push(lp);
    }
    assert_eq!(back, TABLE);
    // The column is what `nmt score` gives the trimmed pair.
    let pairs: String = TABLE
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split("|||").collect();
            format!("{}\t{}\n", f[0].trim(), f[1].trim())
        })
        .collect();
    let scores: Vec<f64> = ok(&nmt(&["score", "-m", &m], Some(pairs.as_bytes()))).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(scores.len(), values.len());
    for (s, v) in scores.iter().zip(&values) {
        assert!((s - v).abs() < 1e-4, "{s} vs {v}");
    }
    // A malformed line is named; no output is left, and an existing file is untouched.
    let bad = d.path().join("bad.txt");
    std::fs::write(&bad, "uno ||| UNO ||| 0.5\ntres ||| TRES ||| 0.1\ndos ||| DOS\n").unwrap();
    let target = d.path().join("new.txt");
    fails_with(
        &nmt(&["score", "-m", &m, "--phrase-table", bad.to_str().unwrap(), "-o", target.to_str().unwrap()], None),
        &["bad.txt", "line 3"],
    );
    assert!(!target.exists());
    std::fs::write(&bad, "uno ||| UNO ||| 0.5 x\n").unwrap();
    std::fs::write(&target, "previous").unwrap();
    fails_with(
        &nmt(&["score", "-m", &m, "--phrase-table", bad.to_str().unwrap(), "-o", target.to_str().unwrap()], None),
        &["line 1", "`x`"],
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "previous");
    let leftovers: Vec<_> =
        std::fs::read_dir(d.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".tmp")).collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn nbest_lists_are_rescored_and_ensembles_of_one_model_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path(), &["uno dos", "tres cuatro", "dos tres", "cuatro uno"]);
    let sources = "uno dos\ntres cuatro uno\ndos\n";
    let src = d.path().join("src.txt");
    std::fs::write(&src, sources).unwrap();
    let nbest_text = ok(&nmt(&["translate", "-m", &m, "-b", "4", "--n-best", "4"], Some(sources.as_bytes())));
    let nbest = d.path().join("nbest.txt");
    std::fs::write(&nbest, &nbest_text).unwrap();
    let (nb, s) = (nbest.to_str().unwrap(), src.to_str().unwrap());
    let out = ok(&nmt(&["rescore", "--nbest", nb, "--src", s, "-m", &m, "--weight", "0.5", "--feature-name", "rnn"], None));
    let old: Vec<&str> = nbest_text.lines().collect();
    let new: Vec<&str> = out.lines().collect();
    assert_eq!(old.len(), new.len());
    let srcs: Vec<&str> = sources.lines().collect();
    let mut totals: Vec<(usize, f64)> = Vec::new();
    for line in &new {
        let f: Vec<&str> = line.split(" ||| ").collect();
        let id: usize = f[0].parse().unwrap();
        let before = old.iter().find(|o| o.starts_with(&format!("{id} ||| {} |||", f[1]))).unwrap();
        let b: Vec<&str> = before.split(" ||| ").collect();
        // Features: the old ones, then `rnn= v` with v the pair's score.
        let (feats, v) = f[2].rsplit_once(" rnn= ").unwrap();
        assert_eq!(feats, b[2]);
        let v: f64 = v.parse().unwrap();
        let want: f64 = ok(&nmt(&["score", "-m", &m], Some(format!("{}\t{}\n", srcs[id], f[1]).as_bytes()))).trim().parse().unwrap();
        assert!((v - want).abs() < 1e-4, "{line}: {v} vs {want}");
        let total: f64 = f[3].parse().unwrap();
        assert!((total - (b[3].parse::<f64>().unwrap() + 0.5 * v)).abs() < 1e-5, "{line}");
        totals.push((id, total));
    }
    // Re-ranked: ids in order, totals descending within each.
    for w in totals.windows(2) {
        assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 >= w[1].1), "{totals:?}");
    }
    let best = ok(&nmt(&["rescore", "--nbest", nb, "--src", s, "-m", &m, "--weight", "0.5", "--best"], None));
    let firsts: Vec<String> = (0..3)
        .map(|id| new.iter().find(|l| l.starts_with(&format!("{id} ||| "))).unwrap().split(" ||| ").nth(1).unwrap().to_string())
        .collect();
    assert_eq!(best.lines().collect::<Vec<_>>(), firsts);
    // Malformed lines are named, and no output file is left.
    std::fs::write(&nbest, "0 ||| a ||| f= 1 ||| -1\n0 ||| b ||| f= one ||| -2\n").unwrap();
    let target = d.path().join("out.txt");
    fails_with(
        &nmt(&["rescore", "--nbest", nb, "--src", s, "-m", &m, "-o", target.to_str().unwrap()], None),
        &["nbest.txt", "line 2", "`one`"],
    );
    std::fs::write(&nbest, "7 ||| a ||| f= 1 ||| -1\n").unwrap();
    fails_with(&nmt(&["rescore", "--nbest", nb, "--src", s, "-m", &m, "-o", target.to_str().unwrap()], None), &["line 1", "sentence 7"]);
    assert!(!target.exists());
    // An ensemble of the model with itself: the same n-best lists and scores.
    let twice = ok(&nmt(&["translate", "-m", &m, "-m", &m, "-b", "4", "--n-best", "4"], Some(sources.as_bytes())));
    let fields = |t: &str| -> Vec<(String, f64)> {
        t.lines()
            .map(|l| {
                let f: Vec<&str> = l.split(" ||| ").collect();
                (format!("{} {}", f[0], f[1]), f[2].trim_start_matches("logprob= ").parse().unwrap())
            })
            .collect()
    };
    for ((a, x), (b, y)) in fields(&nbest_text).iter().zip(fields(&twice).iter()) {
        assert_eq!(a, b);
        assert!((x - y).abs() < 1e-4, "{a}: {x} vs {y}");
    }
    let pairs = b"uno dos\tUNO DOS\ntres\tTRES CUATRO\n";
    let one: Vec<f64> = ok(&nmt(&["score", "-m", &m], Some(pairs))).lines().map(|l| l.parse().unwrap()).collect();
    let two: Vec<f64> = ok(&nmt(&["score", "-m", &m, "-m", &m], Some(pairs))).lines().map(|l| l.parse().unwrap()).collect();
    assert!(one.iter().zip(&two).all(|(a, b)| (a - b).abs() < 1e-6), "{one:?} {two:?}");
    // Models with other vocabularies do not form an ensemble.
    let other_dir = d.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let other = model(&other_dir, &["cinco seis", "siete"]);
    fails_with(&nmt(&["translate", "-m", &m, "-m", &other], Some(b"uno\n")), &["vocabularies"]);
}

#[test]
fn embed_writes_tsv_npy_and_a_map() {
    let d = tempfile::tempdir().unwrap();
    let m = model(d.path(), &["uno dos", "tres cuatro", "dos tres", "cuatro uno"]);
    let phrases = "uno dos\ntres\ncuatro uno dos\n";
    let tsv = ok(&nmt(&["embed", "-m", &m], Some(phrases.as_bytes())));
    let rows: Vec<Vec<f64>> = tsv.lines().map(|l| l.split('\t').map(|x| x.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), 3);
    let dim = rows[0].len();
    assert!(dim > 0 && rows.iter().all(|r| r.len() == dim));
    let (npy, png) = (d.path().join("v.npy"), d.path().join("map.png"));
    ok(&nmt(&["embed", "-m", &m, "-o", npy.to_str().unwrap(), "--plot", png.to_str().unwrap()], Some(phrases.as_bytes())));
    let bytes = std::fs::read(&npy).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    // `(3, 32)` or, as npyz writes it, `(3, 32, )`: both are that tuple in Python.
    assert!(
        header.replace(' ', "").contains(&format!("'shape':(3,{dim},)")) || header.contains(&format!("'shape': (3, {dim})")),
        "{header}"
    );
    let data = &bytes[10 + header_len..];
    assert_eq!(data.len(), 3 * dim * 4);
    let first = f32::from_le_bytes([data[0], data[1], data[2], data[3]]) as f64;
    assert!((first - rows[0][0]).abs() < 1e-5);
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
}
