//! Search invariants: beam size 1 is greedy search, and every returned hypothesis's beam score
//! is its teacher-forced log-probability (length-normalised where set).
mod common;

use candle_core::{DType, Device, Tensor};
use nmt::config::{Arch, Impl, SearchConfig};
use nmt::data::batch::{inference_batches, Batch, BatchConfig, Example};
use nmt::data::EOS;
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{beam::beam, greedy::greedy, max_output_len, normalized, SearchOptions};

/// A random model whose `</s>` is likely enough that most hypotheses finish.
fn model(arch: Arch) -> Seq2Seq {
    let mut cfg = common::small_config(arch, 30, 16, 24);
    cfg.init_std = 0.3;
    let m = Seq2Seq::fresh(&cfg, 11, DType::F32, &Device::Cpu).unwrap();
    let (_, b_g) = m.params.named_vars().into_iter().find(|(n, _)| n == "output.b_g").unwrap();
    let mut bias: Vec<f32> = b_g.as_tensor().to_vec1().unwrap();
    bias[EOS as usize] += 4.0;
    b_g.set(&Tensor::new(bias, &Device::Cpu).unwrap()).unwrap();
    m
}

fn sources() -> (Vec<Vec<u32>>, Batch) {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(24, 20, 2..=9, 5).into_iter().map(|e| e.src).collect();
    let batch = inference_batches(&srcs, &BatchConfig { max_tokens: 10_000, max_sentences: 100 }).remove(0);
    (srcs, batch)
}

fn opts(beam_size: usize, normalize: f64, n_best: usize) -> SearchOptions {
    SearchOptions { cfg: SearchConfig { beam_size, normalize, n_best, ..SearchConfig::default() }, alignments: true, imp: Impl::Ops }
}

#[test]
fn beam_of_one_is_greedy() {
    for arch in [Arch::Rnnsearch, Arch::Rnnenc] {
        let m = model(arch);
        let (_, batch) = sources();
        let (src, mask) = BatchTensors::source(&batch, DType::F32, &Device::Cpu).unwrap();
        let enc = m.encode(&src, &mask, None).unwrap();
        let o = opts(1, 1.0, 1);
        let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &o.cfg)).collect();
        let g = greedy(&m, &enc, &limits, &o).unwrap();
        let b = beam(&m, &enc, &limits, &o).unwrap();
        for (gh, bh) in g.iter().zip(&b) {
            assert_eq!(gh.tokens, bh[0].tokens, "{arch:?}");
            assert!((gh.log_prob - bh[0].log_prob).abs() < 1e-9);
            assert_eq!(gh.finished, bh[0].finished);
        }
        assert!(g.iter().filter(|h| h.finished).count() > 12, "most greedy outputs should finish");
    }
}

#[test]
fn beam_scores_equal_teacher_forced_log_probs() {
    for arch in [Arch::Rnnsearch, Arch::Rnnenc] {
        for alpha in [0.0, 1.0] {
            let m = model(arch);
            let (srcs, batch) = sources();
            let (src, mask) = BatchTensors::source(&batch, DType::F32, &Device::Cpu).unwrap();
            let enc = m.encode(&src, &mask, None).unwrap();
            let o = opts(5, alpha, 5);
            let limits: Vec<usize> = batch.src_lengths.iter().map(|&l| max_output_len(l, &o.cfg)).collect();
            let nbest = beam(&m, &enc, &limits, &o).unwrap();
            let mut checked = 0;
            for (row, hyps) in nbest.iter().enumerate() {
                assert!(!hyps.is_empty());
                for w in hyps.windows(2) {
                    assert!(w[0].score >= w[1].score, "n-best must be sorted");
                }
                for h in hyps.iter().filter(|h| h.finished) {
                    let mut tgt = h.tokens.clone();
                    tgt.push(EOS);
                    let len = tgt.len();
                    let ex = Example { src: srcs[batch.indices[row]].clone(), tgt };
                    let b = Batch::from_examples(&[&ex], vec![0]);
                    let tf = m.sentence_log_probs(&BatchTensors::new(&b, DType::F32, &Device::Cpu).unwrap()).unwrap()[0];
                    assert!((tf - h.log_prob).abs() < 1e-3 * (1.0 + tf.abs()), "{arch:?}: beam {} vs teacher-forced {tf}", h.log_prob);
                    assert!((h.score - normalized(h.log_prob, len, alpha)).abs() < 1e-12);
                    assert_eq!(h.alignment.as_ref().map(|a| a.len()), (arch == Arch::Rnnsearch).then_some(len));
                    checked += 1;
                }
            }
            assert!(checked > 30, "{arch:?}: only {checked} finished hypotheses checked");
        }
    }
}
