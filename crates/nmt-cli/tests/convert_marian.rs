//! `nmt convert --from marian` on a real Marian model: a tiny `s2s` (emb 16, GRU 16, 500
//! SentencePiece pieces, tied embeddings) trained by pymarian 1.12.42 on the bundled Bible, with
//! Marian's own outputs on 100 test verses (`scripts/marian-models.sh`, `TINY=…`; the folder's
//! README.txt has the command). The converted model must translate as `pymarian decode` did,
//! greedy and beam 5, and score as `pymarian score` (marian-scorer) did.
use std::path::{Path, PathBuf};
use std::process::Command;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/marian-tiny")
}

/// The three models: tied target embeddings (`marian-tiny`), untied with its own output
/// matrix (`marian-tiny-untied`), and with `--layer-normalization` (`marian-tiny-ln`); the same
/// vocabularies and test verses.
fn models() -> [PathBuf; 3] {
    let dir = |name: &str| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    [data(), dir("marian-tiny-untied"), dir("marian-tiny-ln")]
}

fn nmt(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nmt")).args(args).output().unwrap();
    assert!(out.status.success(), "nmt {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap().lines().map(str::to_owned).collect()
}

fn converted(dir: &Path) -> String {
    converted_from(&data(), dir)
}

fn converted_from(model_dir: &Path, dir: &Path) -> String {
    let d = data();
    let out = dir.join("tiny.safetensors");
    let (m, v1, v2) = (model_dir.join("model.npz"), d.join("vocab.en.spm"), d.join("vocab.es.spm"));
    nmt(&[
        "convert",
        "--from",
        "marian",
        m.to_str().unwrap(),
        "--vocabs",
        v1.to_str().unwrap(),
        v2.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    out.to_str().unwrap().to_owned()
}

/// Lines equal, as a count out of all.
fn same(a: &[String], b: &[String]) -> usize {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).filter(|(x, y)| x == y).count()
}

#[test]
fn converted_marian_model_translates_as_marian() {
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("src.en");
    for model_dir in models() {
        let model = converted_from(&model_dir, dir.path());
        for (flags, theirs, needed) in [(&["-b", "1"][..], "greedy.es", 100), (&["-b", "5", "--normalize", "1"][..], "beam5.es", 98)] {
            let out = dir.path().join("out.es");
            let mut args = vec!["translate", "-m", &model, "-i", src.to_str().unwrap(), "-o", out.to_str().unwrap(), "--threads", "1"];
            args.extend_from_slice(flags);
            nmt(&args);
            let k = same(&lines(&model_dir.join(theirs)), &lines(&out));
            assert!(k >= needed, "{}: {k} of 100 lines as Marian's, at least {needed} needed", model_dir.join(theirs).display());
        }
    }
}

/// What runs on nmt's own models runs on a converted one: int8 products, the shortlist learned
/// by `nmt shortlist`, an ensemble (of the model with itself: the same translations), the
/// attention matrices; and the file keeps where it came from through the shortlist's rewrite.
#[test]
fn converted_marian_model_runs_every_search_mode() {
    let dir = tempfile::tempdir().unwrap();
    let model = converted(dir.path());
    let (src, tgt) = (data().join("src.en"), data().join("ref.es"));
    let translate = |extra: &[&str]| -> Vec<String> {
        let out = dir.path().join("out.es");
        let mut args =
            vec!["translate", "-m", &model, "-i", src.to_str().unwrap(), "-o", out.to_str().unwrap(), "-b", "5", "--threads", "1"];
        args.extend_from_slice(extra);
        nmt(&args);
        lines(&out)
    };
    let f32 = translate(&[]);
    assert_eq!(translate(&["-m", &model]), f32, "an ensemble of one model twice is the model");
    // The tiny model's repetitive output is full of near-ties, so int8 changes many lines a
    // little (BLEU 78 against the f32 output when written); a wrong int8 model would not be close.
    let int8 = translate(&["--int8"]);
    let bleu = nmt::eval::bleu::corpus_bleu(&int8, std::slice::from_ref(&f32), &Default::default()).unwrap().score;
    assert!(bleu >= 60.0, "int8 output against f32 output: BLEU {bleu}");
    let att = dir.path().join("att.jsonl");
    translate(&["--alignments", att.to_str().unwrap()]);
    assert_eq!(lines(&att).len(), 100);
    nmt(&["shortlist", "-m", &model, "--src", src.to_str().unwrap(), "--tgt", tgt.to_str().unwrap()]);
    let sl = translate(&["--shortlist", "--int8"]);
    assert_eq!(sl.len(), 100);
    let meta = nmt::model_file::load(Path::new(&model), nmt::candle_core::DType::F32, &nmt::candle_core::Device::Cpu).unwrap().meta;
    assert!(meta.converted_from.as_deref().is_some_and(|c| c.starts_with("Marian v1.12.42")), "{:?}", meta.converted_from);
    assert!(meta.shortlist.is_some());
}

/// `nmt score` against `marian-scorer`, with the exact scores (the converted model in f64) as
/// the judge: both float32 scores are within rounding of them, nmt's at least as close as
/// Marian's. (Their difference reaches 1.3e-4 on these long sentences, Marian's float32 error:
/// docs/MARIAN.md.)
#[test]
fn converted_marian_model_scores_as_marian_scorer() {
    let dir = tempfile::tempdir().unwrap();
    for model_dir in models() {
        scores_as_marian_scorer(&model_dir, dir.path());
    }
}

fn scores_as_marian_scorer(model_dir: &Path, dir: &Path) {
    let model = converted_from(model_dir, dir);
    let (src, tgt) = (data().join("src.en"), data().join("ref.es"));
    let out = nmt(&["score", "-m", &model, "--src", src.to_str().unwrap(), "--tgt", tgt.to_str().unwrap(), "--threads", "1"]);
    let ours: Vec<f64> = String::from_utf8(out.stdout).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    let theirs: Vec<f64> = lines(&model_dir.join("scores.txt")).iter().map(|l| l.trim().parse().unwrap()).collect();
    let loaded = nmt::model_file::load(Path::new(&model), nmt::candle_core::DType::F64, &nmt::candle_core::Device::Cpu).unwrap();
    let pairs: Vec<(String, String)> = lines(&src).into_iter().zip(lines(&tgt)).collect();
    let exact: Vec<f64> = nmt::score::score_pairs(&[&loaded.model], &loaded.meta, &pairs, 16).unwrap().iter().map(|p| p.log_prob).collect();
    assert_eq!((ours.len(), theirs.len()), (exact.len(), exact.len()));
    let worst = |a: &[f64]| a.iter().zip(&exact).map(|(x, e)| (x - e).abs()).fold(0.0, f64::max);
    let (nmt_err, marian_err) = (worst(&ours), worst(&theirs));
    assert!(nmt_err <= 5e-5, "nmt's float32 scores are {nmt_err} from the exact ones");
    assert!(marian_err <= 2e-4, "marian-scorer's scores are {marian_err} from the exact ones: another network?");
    assert!(nmt_err <= marian_err, "nmt {nmt_err} further from the exact scores than Marian {marian_err}");
}

#[test]
fn unsupported_marian_options_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = data();
    let npz = d.join("model.npz");
    let (v1, v2) = (d.join("vocab.en.spm"), d.join("vocab.es.spm"));
    let convert = |archive: &Path| {
        Command::new(env!("CARGO_BIN_EXE_nmt"))
            .args(["convert", "--from", "marian", archive.to_str().unwrap(), "--vocabs", v1.to_str().unwrap(), v2.to_str().unwrap(), "-o"])
            .arg(dir.path().join("x.safetensors"))
            .output()
            .unwrap()
    };
    // The same archive with its options changed: a decoder stack nmt does not convert is
    // refused by its option; layer normalisation without its gains, by the array it lacks.
    for (from, to, named) in
        [("dec-depth: 1", "dec-depth: 2", "--dec-depth"), ("layer-normalization: false", "layer-normalization: true", "gamma1")]
    {
        let changed = dir.path().join("changed.npz");
        rewrite_options(&npz, &changed, |yml| yml.replace(from, to));
        let out = convert(&changed);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(named), "{to}: {err}");
        assert!(!dir.path().join("x.safetensors").exists());
    }
    // Vocabularies swapped for ones of another size: refused, naming the file.
    let out = Command::new(env!("CARGO_BIN_EXE_nmt"))
        .args(["convert", "--from", "marian", npz.to_str().unwrap(), "--vocabs", v1.to_str().unwrap(), "/dev/null", "-o"])
        .arg(dir.path().join("x.safetensors"))
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// Copies an `.npz`, its `special:model.yml` passed through `f` (the other entries unchanged).
fn rewrite_options(from: &Path, to: &Path, f: impl Fn(&str) -> String) {
    use npyz::WriterBuilder;
    use std::io::{Read, Write};
    let mut zin = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut zout = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..zin.len() {
        let mut e = zin.by_index(i).unwrap();
        let name = e.name().unwrap().into_owned();
        let mut raw = Vec::new();
        e.read_to_end(&mut raw).unwrap();
        if name == "special:model.yml.npy" {
            let npy = npyz::NpyFile::new(&raw[..]).unwrap();
            let bytes: Vec<u8> = npy.into_vec::<i8>().unwrap().into_iter().map(|b| b as u8).collect();
            let text = f(&String::from_utf8(bytes).unwrap());
            let data: Vec<i8> = text.bytes().map(|b| b as i8).collect();
            raw.clear();
            let mut w = npyz::WriteOptions::new().default_dtype().shape(&[data.len() as u64]).writer(&mut raw).begin_nd().unwrap();
            w.extend(data).unwrap();
            w.finish().unwrap();
        }
        zout.start_file(name, opts).unwrap();
        zout.write_all(&raw).unwrap();
    }
    zout.finish().unwrap();
}
