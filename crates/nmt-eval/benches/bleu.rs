//! Criterion benchmark of corpus BLEU (13a, default options) on synthetic data.
//!
//! `cargo bench -p nmt-eval --bench bleu`
use criterion::{criterion_group, criterion_main, Criterion};
use nmt_eval::{corpus_bleu, corpus_chrf, BleuOptions, ChrfOptions};

fn corpus(lines: usize, words: usize, mut x: u64) -> Vec<String> {
    (0..lines)
        .map(|_| {
            (0..words)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("w{}", x % 300)
                })
                .collect::<Vec<_>>()
                .join(" ")
                + "."
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let refs = corpus(10_000, 30, 7);
    let hyps = corpus(10_000, 30, 11);
    let refs = vec![refs];
    let mut g = c.benchmark_group("corpus");
    g.sample_size(10);
    g.bench_function("bleu_10k_lines_30_words", |b| b.iter(|| corpus_bleu(&hyps, &refs, &BleuOptions::default()).map(|s| s.score)));
    g.bench_function("chrf_10k_lines_30_words", |b| b.iter(|| corpus_chrf(&hyps, &refs, &ChrfOptions::default()).map(|s| s.score)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
