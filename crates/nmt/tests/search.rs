//! Search invariants: beam size 1 is greedy search (against a greedy loop written here), and every returned hypothesis's beam score
//! is its teacher-forced log-probability (length-normalised where set).
mod common;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Impl, SearchConfig};
use nmt::data::batch::{inference_batches, Batch, BatchConfig, Example};
use nmt::data::{BOS, EOS, PAD};
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{max_output_len, normalized, SearchOptions, Searcher};

/// A random model whose `</s>` is likely enough that most hypotheses finish.
fn model(arch: ArchName) -> Seq2Seq {
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

fn opts(beam_size: usize, normalize: f64, n_best: usize, imp: Impl) -> SearchOptions {
    SearchOptions { cfg: SearchConfig { beam_size, normalize, n_best, ..SearchConfig::default() }, alignments: true, imp }
}

/// Greedy search written out here over `Seq2Seq::decode_step`: each row takes its most probable
/// word other than `<pad>` and `<s>` until `</s>` or its length limit. Returns `(tokens, log p,
/// finished)` per row.
fn reference_greedy(m: &Seq2Seq, batch: &Batch, o: &SearchOptions) -> Vec<(Vec<u32>, f64, bool)> {
    let enc = m.encode(batch).unwrap();
    let mut out = Vec::new();
    for row in 0..batch.size {
        let one = enc.select(&[row]).unwrap();
        let (mut state, mut y, mut h) = (one.init.clone(), BOS, (Vec::new(), 0f64, false));
        for _ in 0..max_output_len(batch.src_lengths[row], &o.cfg) {
            let step = m.decode_step(&one, &state, &Tensor::new(&[y], &Device::Cpu).unwrap()).unwrap();
            let lp: Vec<f32> = step.log_probs.squeeze(0).unwrap().to_vec1().unwrap();
            let (w, p) = lp
                .iter()
                .enumerate()
                .filter(|&(w, _)| w as u32 != PAD && w as u32 != BOS)
                .fold((0, f32::NEG_INFINITY), |b, (w, &p)| if p > b.1 { (w, p) } else { b });
            h.1 += p as f64;
            if w as u32 == EOS {
                h.2 = true;
                break;
            }
            h.0.push(w as u32);
            (state, y) = (step.state, w as u32);
        }
        out.push(h);
    }
    out
}

#[test]
fn beam_of_one_is_greedy() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let m = model(arch);
        let (_, batch) = sources();
        let want = reference_greedy(&m, &batch, &opts(1, 1.0, 1, Impl::Composed));
        assert!(want.iter().filter(|h| h.2).count() > 12, "most greedy outputs should finish");
        for imp in [Impl::Composed, Impl::Fused] {
            let got = Searcher::new(vec![&m]).unwrap().search_batch(&batch, &opts(1, 1.0, 1, imp)).unwrap();
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(w.0, g[0].tokens, "{arch:?} {imp:?} row {i}");
                assert!((w.1 - g[0].log_prob).abs() < 1e-4 * (1.0 + w.1.abs()), "{arch:?} {imp:?} row {i}: {} vs {}", w.1, g[0].log_prob);
                assert_eq!(w.2, g[0].finished);
            }
        }
    }
}

#[test]
fn beam_scores_equal_teacher_forced_log_probs() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for (alpha, imp) in [(0.0, Impl::Composed), (1.0, Impl::Composed), (1.0, Impl::Fused)] {
            let m = model(arch);
            let (srcs, batch) = sources();
            let nbest = Searcher::new(vec![&m]).unwrap().search_batch(&batch, &opts(5, alpha, 5, imp)).unwrap();
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
                    assert_eq!(h.alignment.as_ref().map(|a| a.len()), (arch == ArchName::Rnnsearch).then_some(len));
                    checked += 1;
                }
            }
            assert!(checked > 30, "{arch:?}: only {checked} finished hypotheses checked");
        }
    }
}
