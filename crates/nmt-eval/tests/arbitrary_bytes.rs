//! Arbitrary bytes never panic the evaluation readers: hypothesis and reference files, BLEU and
//! chrF on whatever text they hold, attention JSON and training logs.
use std::path::Path;

use nmt_eval::io::lines_from_bytes;
use nmt_eval::plot::{read_attention, read_training_log};
use nmt_eval::{corpus_bleu, corpus_chrf, BleuOptions, ChrfOptions};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn scoring_any_text(hyp in prop::collection::vec(any::<u8>(), 0..300), reference in prop::collection::vec(any::<u8>(), 0..300)) {
        let (Ok(h), Ok(r)) = (lines_from_bytes(&hyp, Path::new("h")), lines_from_bytes(&reference, Path::new("r"))) else { return Ok(()) };
        let n = h.len().min(r.len());
        let (h, r) = (h[..n].to_vec(), r[..n].to_vec());
        let _ = corpus_bleu(&h, std::slice::from_ref(&r), &BleuOptions::default());
        let _ = corpus_chrf(&h, &[r], &ChrfOptions::default());
    }

    #[test]
    fn json_line_readers(text in "(\\PC|\\{|\\}|\\[|\\]|\"|:|,|[0-9]){0,200}") {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.jsonl");
        std::fs::write(&p, &text).unwrap();
        let _ = read_attention(&p, 0);
        let _ = read_training_log(&p);
    }
}
