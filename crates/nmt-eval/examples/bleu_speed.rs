//! Times corpus BLEU on 100 000 synthetic lines of 30 words (issue 3's speed target: < 2 s).
//!
//! `cargo run --release -p nmt-eval --example bleu_speed`
use std::time::Instant;

use nmt_eval::{corpus_bleu, BleuOptions};

/// A deterministic pseudo-random corpus: `lines` lines of `words` words, with punctuation.
fn corpus(lines: usize, words: usize, seed: u64) -> Vec<String> {
    let vocab: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..lines)
        .map(|_| {
            let mut s = String::new();
            for j in 0..words {
                if j > 0 {
                    s.push(' ');
                }
                s.push_str(&vocab[(next() % 300) as usize]);
                if next() % 10 == 0 {
                    s.push(',');
                }
            }
            s.push('.');
            s
        })
        .collect()
}

fn main() -> Result<(), nmt_eval::Error> {
    let refs = corpus(100_000, 30, 0x9e37_79b9_7f4a_7c15);
    let hyps: Vec<String> = refs
        .iter()
        .zip(corpus(100_000, 30, 42))
        .enumerate()
        .map(|(i, (r, h))| if i % 3 == 0 { h } else { r.replacen("w1", "w2", 3) })
        .collect();
    let start = Instant::now();
    let score = corpus_bleu(&hyps, &[refs], &BleuOptions::default())?;
    let elapsed = start.elapsed();
    println!("{}", score.format(2, true));
    println!("corpus BLEU of 100000 lines x 30 words: {:.3} s", elapsed.as_secs_f64());
    Ok(())
}
