//! Batching properties: coverage, budgets, determinism, and the examples helper.

use std::path::Path;

use nmt_data::{epoch_batches, examples, inference_batches, read_parallel, BatchConfig, Example, Segmenter, SubwordConfig, BOS, EOS, PAD};
use proptest::prelude::*;

fn arb_examples() -> impl Strategy<Value = Vec<Example>> {
    proptest::collection::vec(
        (1usize..40, 1usize..40).prop_map(|(s, t)| {
            let mut src: Vec<u32> = (0..s - 1).map(|i| 4 + i as u32).collect();
            src.push(EOS);
            let mut tgt: Vec<u32> = (0..t - 1).map(|i| 4 + (i as u32 * 7) % 50).collect();
            tgt.push(EOS);
            Example { src, tgt }
        }),
        0..300,
    )
}

fn arb_cfg() -> impl Strategy<Value = BatchConfig> {
    (1usize..400, 1usize..50).prop_map(|(max_tokens, max_sentences)| BatchConfig { max_tokens, max_sentences })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn epoch_batches_cover_every_example_once(exs in arb_examples(), cfg in arb_cfg(), seed: u64, epoch in 0u64..5) {
        let batches = epoch_batches(&exs, &cfg, seed, epoch);
        let mut seen = vec![0usize; exs.len()];
        for b in &batches {
            prop_assert!(b.size >= 1 && b.size <= cfg.max_sentences);
            prop_assert!(b.size == 1 || b.size * b.src_len.max(b.tgt_len) <= cfg.max_tokens);
            prop_assert_eq!(b.src.len(), b.size * b.src_len);
            prop_assert_eq!(b.tgt_in.len(), b.size * b.tgt_len);
            for (row, &i) in b.indices.iter().enumerate() {
                seen[i] += 1;
                let e = &exs[i];
                let src_row = &b.src[row * b.src_len..(row + 1) * b.src_len];
                prop_assert_eq!(&src_row[..e.src.len()], &e.src[..]);
                prop_assert!(src_row[e.src.len()..].iter().all(|&x| x == PAD));
                let out = &b.tgt_out[row * b.tgt_len..(row + 1) * b.tgt_len];
                let inp = &b.tgt_in[row * b.tgt_len..(row + 1) * b.tgt_len];
                prop_assert_eq!(&out[..e.tgt.len()], &e.tgt[..]);
                prop_assert_eq!(inp[0], BOS);
                prop_assert_eq!(&inp[1..e.tgt.len()], &e.tgt[..e.tgt.len() - 1]);
                prop_assert_eq!(b.src_lengths[row], e.src.len());
                prop_assert_eq!(b.tgt_lengths[row], e.tgt.len());
            }
        }
        prop_assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn epoch_batches_are_deterministic(exs in arb_examples(), cfg in arb_cfg(), seed: u64, epoch in 0u64..5) {
        prop_assert_eq!(epoch_batches(&exs, &cfg, seed, epoch), epoch_batches(&exs, &cfg, seed, epoch));
    }

    #[test]
    fn inference_batches_cover_every_source_once(exs in arb_examples(), cfg in arb_cfg()) {
        let srcs: Vec<Vec<u32>> = exs.into_iter().map(|e| e.src).collect();
        let batches = inference_batches(&srcs, &cfg);
        let mut seen = vec![0usize; srcs.len()];
        for b in &batches {
            prop_assert!(b.size == 1 || (b.size <= cfg.max_sentences && b.size * b.src_len <= cfg.max_tokens));
            prop_assert_eq!(b.tgt_len, 0);
            for (row, &i) in b.indices.iter().enumerate() {
                seen[i] += 1;
                prop_assert_eq!(&b.src[row * b.src_len..row * b.src_len + srcs[i].len()], &srcs[i][..]);
            }
        }
        prop_assert!(seen.iter().all(|&c| c == 1));
    }
}

#[test]
fn epochs_and_seeds_differ_and_buckets_are_tight() {
    let exs: Vec<Example> = (0..2000u32)
        .map(|i| {
            let n = 1 + (i.wrapping_mul(2654435761) % 50) as usize;
            Example { src: vec![5; n], tgt: vec![6; n] }
        })
        .collect();
    let cfg = BatchConfig::default();
    let a = epoch_batches(&exs, &cfg, 7, 0);
    assert_ne!(a, epoch_batches(&exs, &cfg, 7, 1));
    assert_ne!(a, epoch_batches(&exs, &cfg, 8, 0));
    let padded: usize = a.iter().map(|b| b.size * b.tgt_len).sum();
    let real: usize = a.iter().map(|b| b.target_tokens()).sum();
    assert!(padded < real * 11 / 10, "too much padding: {padded} vs {real}");
}

#[test]
fn examples_append_eos_and_drop_long_pairs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/bible-en-es");
    let corpus = read_parallel(&root.join("dev.en.gz"), &root.join("dev.es.gz"), None).unwrap();
    let cfg = SubwordConfig { vocab_size: 500, ..SubwordConfig::default() };
    let src = Segmenter::train(&corpus.src, &cfg).unwrap();
    let tgt = Segmenter::train(&corpus.tgt, &cfg).unwrap();
    let all = examples(&corpus, &src, &tgt, None);
    assert_eq!(all.len(), corpus.len());
    assert!(all.iter().all(|e| e.src.last() == Some(&EOS) && e.tgt.last() == Some(&EOS)));
    assert_eq!(tgt.decode(&all[0].tgt), corpus.tgt[0]);
    let short = examples(&corpus, &src, &tgt, Some(30));
    assert!(short.len() < all.len() && !short.is_empty());
    assert!(short.iter().all(|e| e.src.len() <= 31 && e.tgt.len() <= 31));
    let expected = all.iter().filter(|e| e.src.len() <= 31 && e.tgt.len() <= 31).count();
    assert_eq!(short.len(), expected);
}
