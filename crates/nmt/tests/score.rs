//! `score_pairs`: a pair's score is what search assigned the same translation (the sum of the
//! teacher-forced token log-probabilities, computed step by step there), and neither batch
//! size nor input order changes any score.
mod common;

use candle_core::{DType, Device};
use nmt::config::{ArchName, SearchConfig};
use nmt::model::Seq2Seq;
use nmt::score::score_pairs;
use nmt::search::{SearchOptions, Searcher};
use nmt::translate::translate_lines;

#[test]
fn scores_equal_search_log_probs_and_ignore_batching() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let (meta, mut cfg) = common::tiny_meta(arch);
        cfg.init_std = 0.5;
        let model = Seq2Seq::fresh(&cfg, 11, DType::F32, &Device::Cpu).unwrap();
        // A likelier `</s>`, so that hypotheses finish at different lengths.
        let (_, b_g) = model.params.named_vars().into_iter().find(|(n, _)| n == "output.b_g").unwrap();
        let mut bias: Vec<f32> = b_g.as_tensor().to_vec1().unwrap();
        bias[nmt::data::EOS as usize] += 1.5;
        b_g.set(&candle_core::Tensor::new(bias, &Device::Cpu).unwrap()).unwrap();
        let meta = nmt::model_file::ModelMeta { config: cfg.clone(), ..meta };
        let sources: Vec<String> = ["a b c", "d", "e f g h i", "", "j a"].iter().map(|s| s.to_string()).collect();
        let opts = SearchOptions {
            cfg: SearchConfig { beam_size: 3, n_best: 3, ..SearchConfig::default() },
            alignments: false,
            imp: Default::default(),
        };
        let out = translate_lines(&Searcher::new(vec![&model]).unwrap(), &meta, &sources, &opts).unwrap();
        // Every finished hypothesis, scored as a given translation of its source.
        let mut pairs = Vec::new();
        let mut want = Vec::new();
        for (src, t) in sources.iter().zip(&out) {
            for h in t.hyps.iter().filter(|h| h.hyp.finished) {
                pairs.push((src.clone(), h.text.clone()));
                want.push(h.hyp.log_prob);
            }
        }
        assert!(pairs.len() >= 5, "{arch:?}: too few finished hypotheses");
        let base = score_pairs(&[&model], &meta, &pairs, 64).unwrap();
        for ((s, w), p) in base.iter().zip(&want).zip(&pairs) {
            assert!((s.log_prob - w).abs() < 1e-4, "{arch:?} {p:?}: scored {} but search said {w}", s.log_prob);
            assert!((s.log_prob - s.tokens.iter().sum::<f64>()).abs() < 1e-9);
        }
        for batch in [1, 2, 7] {
            let again = score_pairs(&[&model], &meta, &pairs, batch).unwrap();
            let reversed: Vec<_> = pairs.iter().rev().cloned().collect();
            let mut back = score_pairs(&[&model], &meta, &reversed, batch).unwrap();
            back.reverse();
            for ((a, b), c) in base.iter().zip(&again).zip(&back) {
                assert!((a.log_prob - b.log_prob).abs() < 1e-5 && (a.log_prob - c.log_prob).abs() < 1e-5, "{arch:?} batch {batch}");
                assert_eq!(a.tokens.len(), b.tokens.len());
            }
        }
    }
}
