//! The copy toy task (issue: "Copy toy task"): targets repeat their source, and a third of the
//! source words are names outside the target vocabulary. With `model.copy` the names come out
//! right (≥ 90 %); without it they cannot (≈ 0 %: the target side only knows `<unk>`).
mod common;

use candle_core::{DType, Device};
use nmt::config::{ArchName, SearchConfig, TrainConfig};
use nmt::data::batch::{epoch_batches, BatchConfig, Example};
use nmt::data::{EOS, UNK};
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{SearchOptions, Searcher};
use nmt::train::optim::Optimizer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Target vocabulary: the specials and 20 words (ids 4‥23). The source has those words and
/// 16 names (ids 24‥39) the target vocabulary lacks.
const K_Y: u32 = 24;
const NAMES: std::ops::Range<u32> = 24..40;

/// `n` pairs: the example (targets in the extended space when `copy`, else names as
/// `<unk>`), and the source's extended ids.
fn data(n: usize, seed: u64, copy: bool) -> (Vec<Example>, Vec<Vec<u32>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut examples = Vec::new();
    let mut exts = Vec::new();
    for _ in 0..n {
        let len = rng.gen_range(3..=8);
        let src: Vec<u32> = (0..len).map(|_| if rng.gen_bool(0.35) { rng.gen_range(NAMES) } else { rng.gen_range(4..K_Y) }).collect();
        let mut names: Vec<u32> = Vec::new();
        let ext: Vec<u32> = src
            .iter()
            .map(|&w| {
                if w < K_Y {
                    return w;
                }
                let k = names.iter().position(|&x| x == w).unwrap_or_else(|| {
                    names.push(w);
                    names.len() - 1
                });
                K_Y + k as u32
            })
            .collect();
        let tgt: Vec<u32> = if copy { ext.clone() } else { ext.iter().map(|&w| if w >= K_Y { UNK } else { w }).collect() };
        let with_eos = |mut v: Vec<u32>| {
            v.push(EOS);
            v
        };
        examples.push(Example { src: with_eos(src), tgt: with_eos(tgt) });
        exts.push(with_eos(ext));
    }
    (examples, exts)
}

/// Trains for `steps` updates; returns the share of name tokens output right (greedy).
fn names_right(copy: bool, steps: usize) -> f64 {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let dev = Device::Cpu;
    let mut cfg = common::small_config(ArchName::Rnnsearch, 40, 32, 64);
    cfg.tgt_vocab = K_Y as usize;
    cfg.init_std = 0.1;
    if copy {
        common::with_copy(&mut cfg);
    }
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &dev).unwrap();
    let (train, train_ext) = data(20_000, 1, copy);
    let (test, test_ext) = data(300, 2, true);
    let mut opt = Optimizer::new(model.params.named_vars(), &TrainConfig { lr: 3e-3, ..TrainConfig::default() }).unwrap();
    let bcfg = BatchConfig { max_tokens: 64 * 9, max_sentences: 64 };
    let mut step = 0;
    'train: for epoch in 0.. {
        for mut batch in epoch_batches(&train, &bcfg, 1, epoch) {
            batch.set_source_ext(&train_ext);
            let loss = model.loss(&BatchTensors::new(&batch, DType::F32, &dev).unwrap(), None).unwrap();
            let grads = loss.mean.backward().unwrap();
            opt.clip(&grads).unwrap();
            opt.update(&grads).unwrap();
            step += 1;
            if step >= steps {
                break 'train;
            }
        }
    }
    let srcs: Vec<Vec<u32>> = test.iter().map(|e| e.src.clone()).collect();
    let opts = SearchOptions {
        cfg: SearchConfig { beam_size: 1, batch_size: 50, ..SearchConfig::default() },
        alignments: false,
        imp: Default::default(),
    };
    let hyps = Searcher::new(vec![&model]).unwrap().search(&srcs, copy.then_some(&test_ext[..]), &opts).unwrap();
    let (mut right, mut total) = (0, 0);
    for (e, h) in test.iter().zip(&hyps) {
        for (i, &want) in e.tgt.iter().enumerate().filter(|(_, &w)| w >= K_Y) {
            total += 1;
            right += usize::from(h[0].tokens.get(i) == Some(&want));
        }
    }
    let share = right as f64 / total as f64;
    eprintln!("copy={copy}: {right}/{total} name tokens right after {steps} updates ({share:.3})");
    share
}

#[test]
fn copy_mixture_outputs_names_outside_the_vocabulary() {
    let with = names_right(true, 1500);
    assert!(with >= 0.90, "with copy: {with}");
    let without = names_right(false, 300);
    assert!(without <= 0.01, "without copy: {without}");
}

/// The copy mixture's loss against central finite differences (f64), every parameter tensor,
/// with extended targets (copy only) and in-vocabulary ones (both parts), label smoothing on.
#[test]
fn copy_gradients_match_finite_differences() {
    use candle_core::Tensor;
    use nmt::data::batch::Batch;
    use nmt::model::regularizer::{DropoutRates, Regularizer};
    let dev = Device::Cpu;
    let mut cfg = common::small_config(ArchName::Rnnsearch, 14, 5, 4);
    (cfg.tgt_vocab, cfg.maxout_dim, cfg.init_std) = (10, 3, 0.5);
    common::set_att_dim(&mut cfg, 3);
    common::with_copy(&mut cfg);
    let model = Seq2Seq::fresh(&cfg, 7, DType::F64, &dev).unwrap();
    // Source words 11, 12, 13 are outside the 10-word target vocabulary: ids 10, 11, … .
    let examples = [Example { src: vec![4, 11, 6, 3], tgt: vec![4, 10, 3] }, Example { src: vec![12, 13, 3], tgt: vec![11, 5, 10, 3] }];
    let exts = vec![vec![4, 10, 6, 3], vec![10, 11, 3]];
    let rows: Vec<&Example> = examples.iter().collect();
    let mut batch = Batch::from_examples(&rows, vec![0, 1]);
    batch.set_source_ext(&exts);
    let bt = BatchTensors::new(&batch, DType::F64, &dev).unwrap();
    let reg = || Regularizer::new(DropoutRates::default(), 0.1, 5, 2);
    let loss = |m: &Seq2Seq| m.loss(&bt, Some(&mut reg())).unwrap().mean.to_scalar::<f64>().unwrap();
    let grads = model.loss(&bt, Some(&mut reg())).unwrap().mean.backward().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (mut checked, mut worst) = (0, 0f64);
    for (name, var) in model.params.named_vars() {
        let g: Vec<f64> =
            grads.get(var.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient")).flatten_all().unwrap().to_vec1().unwrap();
        let orig: Vec<f64> = var.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
        let candidates: Vec<usize> = (0..orig.len()).filter(|&i| g[i] != 0.0 || !name.contains("emb")).collect();
        for _ in 0..5 {
            let i = candidates[rng.gen_range(0..candidates.len())];
            let set = |v: f64| {
                let mut p = orig.clone();
                p[i] = v;
                var.set(&Tensor::from_vec(p, var.shape(), &dev).unwrap()).unwrap();
            };
            set(orig[i] + 1e-5);
            let up = loss(&model);
            set(orig[i] - 1e-5);
            let down = loss(&model);
            set(orig[i]);
            let numeric = (up - down) / 2e-5;
            let rel = (g[i] - numeric).abs() / (g[i].abs() + numeric.abs()).max(1e-7);
            assert!(rel < 1e-4, "{name}[{i}]: analytic {} numeric {numeric}", g[i]);
            worst = worst.max(rel);
            checked += 1;
        }
    }
    eprintln!("copy: {checked} entries checked, max relative error {worst:.2e}");
    assert!(checked > 60 && model.params.named_vars().iter().any(|(n, _)| n == "copy.w_g"));
}
