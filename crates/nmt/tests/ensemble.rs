//! Ensembles (`search/ensemble.rs`, `score::score_pairs` with several models): an ensemble of
//! a model with itself decodes and scores as the model does; a mixed ensemble's search reports,
//! for each translation, the score that teacher-forced ensemble scoring gives it (two different
//! computations: the host search's step by step, candle's over whole sequences); the members'
//! order changes nothing, reading directions and copy models included; the candle scorer's
//! ensemble (`--impl ops`, the GPU path) searches as the host one does.
mod common;

use candle_core::{DType, Device};
use nmt::config::{ArchName, ModelConfig, SearchConfig};
use nmt::data::subword::{Segmenter, SubwordConfig, SubwordKind};
use nmt::model::Seq2Seq;
use nmt::model_file::ModelMeta;
use nmt::score::score_pairs;
use nmt::search::{SearchOptions, Searcher};
use nmt::translate::{translate_lines, Translation};

/// A model with an easier `</s>`, so that hypotheses finish at different lengths.
fn model(cfg: &ModelConfig, seed: u64) -> Seq2Seq {
    let mut cfg = cfg.clone();
    cfg.init_std = 0.5;
    let m = Seq2Seq::fresh(&cfg, seed, DType::F32, &Device::Cpu).unwrap();
    let (_, b_g) = m.params.named_vars().into_iter().find(|(n, _)| n == "output.b_g").unwrap();
    let mut bias: Vec<f32> = b_g.as_tensor().to_vec1().unwrap();
    bias[nmt::data::EOS as usize] += 1.5;
    b_g.set(&candle_core::Tensor::new(bias, &Device::Cpu).unwrap()).unwrap();
    m
}

fn opts(alignments: bool) -> SearchOptions {
    SearchOptions { cfg: SearchConfig { beam_size: 3, n_best: 3, ..SearchConfig::default() }, alignments, imp: Default::default() }
}

fn sources() -> Vec<String> {
    ["a b c", "d", "e f g h i", "", "j a x", "y b z z"].iter().map(|s| s.to_string()).collect()
}

/// Word vocabularies where the source knows `x y z` and the target does not (copy models
/// extend the target with them).
fn meta(cfg: &ModelConfig) -> ModelMeta {
    let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None };
    let src = Segmenter::train(&["a b c d e f g h i j x y z".to_string()], &sub).unwrap();
    let tgt = Segmenter::train(&["a b c d e f g h i j".to_string()], &sub).unwrap();
    ModelMeta {
        config: cfg.clone(),
        search: SearchConfig::default(),
        src,
        tgt,
        step: 0,
        languages: None,
        shortlist: None,
        converted_from: None,
    }
}

fn config(arch: ArchName, meta_src: usize, meta_tgt: usize) -> ModelConfig {
    let mut c = common::small_config(arch, meta_src, 6, 5);
    c.tgt_vocab = meta_tgt;
    c
}

/// Hypotheses of two translations agree: tokens, log-probabilities, alignments.
fn assert_same(a: &[Translation], b: &[Translation], what: &str) {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.hyps.len(), y.hyps.len(), "{what}: sentence {i}");
        for (h, g) in x.hyps.iter().zip(&y.hyps) {
            assert_eq!(h.text, g.text, "{what}: sentence {i}");
            assert!((h.hyp.log_prob - g.hyp.log_prob).abs() < 1e-4, "{what}: {} vs {}", h.hyp.log_prob, g.hyp.log_prob);
            match (&h.hyp.alignment, &g.hyp.alignment) {
                (Some(p), Some(q)) => {
                    for (r, s) in p.iter().flatten().zip(q.iter().flatten()) {
                        assert!((r - s).abs() < 1e-4, "{what}: alignment {r} vs {s}");
                    }
                }
                (p, q) => assert_eq!(p.is_some(), q.is_some(), "{what}"),
            }
        }
    }
}

/// Every finished hypothesis scores, under ensemble scoring, what the ensemble search said.
fn assert_scores_match_search(models: &[&Seq2Seq], meta: &ModelMeta, out: &[Translation], what: &str) {
    let mut pairs = Vec::new();
    let mut want = Vec::new();
    for (src, t) in sources().iter().zip(out) {
        for h in t.hyps.iter().filter(|h| h.hyp.finished) {
            pairs.push((src.clone(), h.text.clone()));
            want.push(h.hyp.log_prob);
        }
    }
    assert!(pairs.len() >= 6, "{what}: too few finished hypotheses");
    for batch in [1, 64] {
        let got = score_pairs(models, meta, &pairs, batch).unwrap();
        for ((s, w), p) in got.iter().zip(&want).zip(&pairs) {
            assert!((s.log_prob - w).abs() < 2e-4, "{what} {p:?}: scored {} but search said {w}", s.log_prob);
        }
    }
}

#[test]
fn a_model_with_itself_is_the_model() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let (meta, cfg) = common::tiny_meta(arch);
        let m = model(&cfg, 3);
        let one = translate_lines(&Searcher::new(vec![&m]).unwrap(), &meta, &sources(), &opts(true)).unwrap();
        let two = translate_lines(&Searcher::new(vec![&m, &m]).unwrap(), &meta, &sources(), &opts(true)).unwrap();
        assert_same(&one, &two, &format!("{arch:?} with itself"));
        let pairs: Vec<(String, String)> = sources().into_iter().map(|s| (s.clone(), s)).collect();
        let a = score_pairs(&[&m], &meta, &pairs, 4).unwrap();
        let b = score_pairs(&[&m, &m, &m], &meta, &pairs, 4).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!((x.log_prob - y.log_prob).abs() < 1e-9);
        }
    }
}

#[test]
fn mixed_ensembles_search_what_they_score_in_any_order() {
    let m0 = meta(&config(ArchName::Rnnsearch, 1, 1));
    let (ks, ky) = (m0.src.vocab_size(), m0.tgt.vocab_size());
    let search = config(ArchName::Rnnsearch, ks, ky);
    let mut reversed = config(ArchName::Rnnsearch, ks, ky);
    reversed.reverse_source = true;
    let mut lstm = config(ArchName::Rnnsearch, ks, ky);
    lstm.cell = nmt::config::Cell::Lstm;
    let enc = config(ArchName::Rnnenc, ks, ky);
    let mut copy = config(ArchName::Rnnsearch, ks, ky);
    common::with_copy(&mut copy);
    let (a, b, c, d, e) = (model(&search, 1), model(&reversed, 2), model(&lstm, 3), model(&enc, 4), model(&copy, 5));
    let sets: [(&str, Vec<&Seq2Seq>); 3] =
        [("search + reversed + rnnenc", vec![&a, &b, &d]), ("lstm + search", vec![&c, &a]), ("copy + reversed", vec![&e, &b])];
    for (what, models) in sets {
        let out = translate_lines(&Searcher::new(models.clone()).unwrap(), &m0, &sources(), &opts(true)).unwrap();
        assert_scores_match_search(&models, &m0, &out, what);
        let back: Vec<&Seq2Seq> = models.iter().rev().copied().collect();
        let out_back = translate_lines(&Searcher::new(back.clone()).unwrap(), &m0, &sources(), &opts(true)).unwrap();
        assert_same(&out, &out_back, &format!("{what}, members reversed"));
        for t in &out {
            for h in &t.hyps {
                for row in h.hyp.alignment.iter().flatten() {
                    assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{what}: attention rows sum to 1");
                }
            }
        }
    }
}

#[test]
fn ensembles_search_alike_on_both_scorers() {
    let m0 = meta(&config(ArchName::Rnnsearch, 1, 1));
    let (ks, ky) = (m0.src.vocab_size(), m0.tgt.vocab_size());
    let mut reversed = config(ArchName::Rnnsearch, ks, ky);
    reversed.reverse_source = true;
    let mut copy = config(ArchName::Rnnsearch, ks, ky);
    common::with_copy(&mut copy);
    let (a, b, c) = (model(&config(ArchName::Rnnsearch, ks, ky), 1), model(&reversed, 2), model(&copy, 5));
    let searcher = Searcher::new(vec![&c, &b, &a]).unwrap();
    let host = translate_lines(&searcher, &m0, &sources(), &opts(true)).unwrap();
    let ops = translate_lines(&searcher, &m0, &sources(), &SearchOptions { imp: nmt::config::Impl::Composed, ..opts(true) }).unwrap();
    assert_same(&host, &ops, "copy + reversed + search, host against candle");
}
