//! Golden tests against fixtures written by the real sacreBLEU 2.6.0
//! (`scripts/gen_bleu_fixtures.py`). Statistics and signatures must match
//! exactly; scores to 1e-9 and their 2-decimal text and JSON forms exactly.
use nmt_eval::{corpus_bleu, corpus_chrf, sentence_bleu, sentence_chrf, BleuOptions, ChrfOptions, Tokenize, SACREBLEU_VERSION};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["sacrebleu_version"], SACREBLEU_VERSION);
    v
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

fn bleu_opts(case: &Value) -> BleuOptions {
    BleuOptions {
        lowercase: case["lowercase"].as_bool().unwrap(),
        tokenize: case["tokenize"].as_str().unwrap().parse().unwrap(),
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn check_bleu(name: &str, got: &nmt_eval::BleuScore, exp: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let mut check = |what: &str, ok: bool, g: String, e: String| {
        if !ok {
            errs.push(format!("{name}: {what}: got {g}, expected {e}"));
        }
    };
    let ec = u64s(&exp["counts"]);
    let et = u64s(&exp["totals"]);
    check("counts", got.counts[..] == ec[..], format!("{:?}", got.counts), format!("{ec:?}"));
    check("totals", got.totals[..] == et[..], format!("{:?}", got.totals), format!("{et:?}"));
    let (sl, rl) = (exp["sys_len"].as_u64().unwrap(), exp["ref_len"].as_u64().unwrap());
    check("sys_len", got.sys_len == sl, got.sys_len.to_string(), sl.to_string());
    check("ref_len", got.ref_len == rl, got.ref_len.to_string(), rl.to_string());
    let es = exp["score"].as_f64().unwrap();
    check("score", close(got.score, es), got.score.to_string(), es.to_string());
    let ebp = exp["bp"].as_f64().unwrap();
    check("bp", close(got.bp, ebp), got.bp.to_string(), ebp.to_string());
    for (i, p) in exp["precisions"].as_array().unwrap().iter().enumerate() {
        let p = p.as_f64().unwrap();
        check("precision", close(got.precisions[i], p), got.precisions[i].to_string(), p.to_string());
    }
    let sig = exp["signature"].as_str().unwrap();
    check("signature", got.signature() == sig, got.signature(), sig.to_string());
    let text = exp["text"].as_str().unwrap();
    check("text", got.format(2, true) == text, got.format(2, true), text.to_string());
    let plain = exp["text_plain"].as_str().unwrap();
    check("display", got.to_string() == plain, got.to_string(), plain.to_string());
    let json = exp["json"].as_str().unwrap();
    check("json", got.to_json(2) == json, got.to_json(2), json.to_string());
    errs
}

#[test]
fn tokenizers_match_sacrebleu() {
    let v = load("tokenize");
    let mut errs = Vec::new();
    for case in v["cases"].as_array().unwrap() {
        let line = case["line"].as_str().unwrap();
        for tok in [Tokenize::None, Tokenize::Tok13a, Tokenize::Intl] {
            let want = case[tok.name()].as_str().unwrap();
            let got = tok.apply(line);
            if got != want {
                errs.push(format!("{tok} {line:?}: got {got:?}, expected {want:?}"));
            }
        }
    }
    assert!(errs.is_empty(), "{} mismatches:\n{}", errs.len(), errs.join("\n"));
}

#[test]
fn corpus_bleu_matches_sacrebleu() {
    let v = load("bleu_corpus");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 90);
    let mut errs = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let hyps = strings(&case["hyps"]);
        let refs: Vec<Vec<String>> = case["refs"].as_array().unwrap().iter().map(strings).collect();
        let got = corpus_bleu(&hyps, &refs, &bleu_opts(case)).unwrap();
        errs.extend(check_bleu(name, &got, &case["expected"]));
    }
    assert!(errs.is_empty(), "{} mismatches:\n{}", errs.len(), errs.join("\n"));
}

#[test]
fn sentence_bleu_matches_sacrebleu() {
    let v = load("bleu_sentence");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 200);
    let mut errs = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let refs = strings(&case["refs"]);
        let got = sentence_bleu(case["hyp"].as_str().unwrap(), &refs, &bleu_opts(case)).unwrap();
        errs.extend(check_bleu(name, &got, &case["expected"]));
    }
    assert!(errs.is_empty(), "{} mismatches:\n{}", errs.len(), errs.join("\n"));
}

#[test]
fn chrf_matches_sacrebleu() {
    let v = load("chrf");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 100);
    let mut errs = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let opts = ChrfOptions { lowercase: case["lowercase"].as_bool().unwrap(), ..Default::default() };
        let hyps = strings(&case["hyps"]);
        let refs: Vec<Vec<String>> = case["refs"].as_array().unwrap().iter().map(strings).collect();
        let got = if case["sentence"].as_bool().unwrap() {
            let rs: Vec<String> = refs.iter().map(|r| r[0].clone()).collect();
            sentence_chrf(&hyps[0], &rs, &opts).unwrap()
        } else {
            corpus_chrf(&hyps, &refs, &opts).unwrap()
        };
        let exp = &case["expected"];
        let es = u64s(&exp["stats"]);
        if got.stats != es {
            errs.push(format!("{name}: stats {:?} != {es:?}", got.stats));
        }
        let score = exp["score"].as_f64().unwrap();
        if !close(got.score, score) {
            errs.push(format!("{name}: score {} != {score}", got.score));
        }
        for (what, g, e) in [
            ("signature", got.signature(), &exp["signature"]),
            ("text", got.format(2, true), &exp["text"]),
            ("json", got.to_json(2), &exp["json"]),
        ] {
            if g != e.as_str().unwrap() {
                errs.push(format!("{name}: {what}: {g:?} != {e}"));
            }
        }
    }
    assert!(errs.is_empty(), "{} mismatches:\n{}", errs.len(), errs.join("\n"));
}
