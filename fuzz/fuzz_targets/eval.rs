//! The evaluation readers: hypothesis and reference lines (split at the first 0xff), BLEU and
//! chrF on them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nmt::eval::{corpus_bleu, corpus_chrf, io::lines_from_bytes, BleuOptions, ChrfOptions};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let cut = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let (h, r) = (&data[..cut], data.get(cut + 1..).unwrap_or_default());
    let (Ok(h), Ok(r)) = (lines_from_bytes(h, Path::new("h")), lines_from_bytes(r, Path::new("r"))) else { return };
    let n = h.len().min(r.len());
    let (h, r) = (h[..n].to_vec(), vec![r[..n].to_vec()]);
    let _ = corpus_bleu(&h, &r, &BleuOptions::default());
    let _ = corpus_chrf(&h, &r, &ChrfOptions::default());
});
