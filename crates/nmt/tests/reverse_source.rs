//! `model.reverse_source`: a model that reads its source backwards translates a sentence exactly
//! as the same weights without reversal translate the reversed sentence, and reports attention in
//! the sentence's own order.
mod common;

use candle_core::{DType, Device};
use nmt::config::{ArchName, SearchConfig};
use nmt::model::Seq2Seq;
use nmt::search::{SearchOptions, Searcher};
use nmt::translate::translate_lines;

#[test]
fn reversed_reading_equals_reading_the_reversed_sentence() {
    let (mut meta, cfg) = common::tiny_meta(ArchName::Rnnsearch);
    let plain = Seq2Seq::fresh(&cfg, 7, DType::F32, &Device::Cpu).unwrap();
    let mut rcfg = cfg.clone();
    rcfg.reverse_source = true;
    let reversing = Seq2Seq::fresh(&rcfg, 7, DType::F32, &Device::Cpu).unwrap();
    let opts = SearchOptions {
        cfg: SearchConfig { beam_size: 3, n_best: 3, ..SearchConfig::default() },
        alignments: true,
        imp: Default::default(),
    };
    let plain_out = translate_lines(&Searcher::new(vec![&plain]).unwrap(), &meta, &["e d c b a".to_string()], &opts).unwrap();
    meta.config = rcfg;
    let rev_out = translate_lines(&Searcher::new(vec![&reversing]).unwrap(), &meta, &["a b c d e".to_string()], &opts).unwrap();
    assert_eq!(rev_out[0].src_pieces[..5], ["a", "b", "c", "d", "e"], "source pieces stay in the input's order");
    assert_eq!(plain_out[0].hyps.len(), rev_out[0].hyps.len());
    for (p, r) in plain_out[0].hyps.iter().zip(&rev_out[0].hyps) {
        assert_eq!(p.hyp.tokens, r.hyp.tokens);
        assert!((p.hyp.log_prob - r.hyp.log_prob).abs() < 1e-6, "{} vs {}", p.hyp.log_prob, r.hyp.log_prob);
        let (pa, ra) = (p.hyp.alignment.as_ref().unwrap(), r.hyp.alignment.as_ref().unwrap());
        for (prow, rrow) in pa.iter().zip(ra) {
            // Word j of "a b c d e" is word 4 − j of "e d c b a"; `</s>` stays last.
            assert_eq!(prow.len(), 6);
            for j in 0..5 {
                assert_eq!(rrow[j], prow[4 - j]);
            }
            assert_eq!(rrow[5], prow[5]);
        }
    }
}
