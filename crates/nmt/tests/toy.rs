//! Sanity: the models learn to reverse random sequences (JoeyNMT's reverse task).
//! RNNsearch must reach ≥ 98 % exact-match greedy accuracy on lengths 3–10, RNNenc ≥ 90 % on
//! lengths ≤ 6 (a fixed-size summary has to hold the whole sequence), with either cell.
mod common;

use std::time::Instant;

use candle_core::{DType, Device};
use nmt::config::{ArchName, Cell, ModelConfig, SearchConfig, TrainConfig};
use nmt::data::batch::{epoch_batches, BatchConfig, Example};
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{SearchOptions, Searcher};
use nmt::train::optim::Optimizer;

/// Trains until `target` accuracy on the held-out set or `max_steps`; returns the accuracy.
fn train_reversal(arch: ArchName, cell: Cell, lens: std::ops::RangeInclusive<usize>, hidden: usize, lr: f64, target: f64) -> f64 {
    train_reversal_with(arch, lens, hidden, lr, target, &|c| c.cell = cell)
}

/// [`train_reversal`] for any configuration change (`tweak`); sources are put in the order
/// the model reads them (`model.reverse_source`), as the trainer and the translator do.
fn train_reversal_with(
    arch: ArchName,
    lens: std::ops::RangeInclusive<usize>,
    hidden: usize,
    lr: f64,
    target: f64,
    tweak: &dyn Fn(&mut ModelConfig),
) -> f64 {
    let max_steps = 3000;
    // Tiny matrices: gemm's thread pool costs more than it gains (measured 2x per step).
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let dev = Device::Cpu;
    let mut cfg = common::small_config(arch, 24, 32, hidden);
    // N(0, 0.1²) rather than the paper's 0.01²: the tiny model otherwise sits on a plateau for
    // ~800 updates before attention breaks symmetry (measured), which the time budget can't afford.
    cfg.init_std = 0.1;
    tweak(&mut cfg);
    let model = Seq2Seq::fresh(&cfg, 1, DType::F32, &dev).unwrap();
    let (mut train, mut test) = (common::reversal_examples(20_000, 20, lens.clone(), 1), common::reversal_examples(500, 20, lens, 2));
    for e in train.iter_mut().chain(test.iter_mut()) {
        cfg.order_source(&mut e.src);
    }
    let tcfg = TrainConfig { lr, ..TrainConfig::default() };
    let mut opt = Optimizer::new(model.params.named_vars(), &tcfg).unwrap();
    let bcfg = BatchConfig { max_tokens: 64 * 11, max_sentences: 64 };
    let started = Instant::now();
    let (mut step, mut acc, mut first_loss, mut last_loss) = (0u64, 0.0, None, 0.0);
    'train: for epoch in 0.. {
        for batch in epoch_batches(&train, &bcfg, 1, epoch) {
            let bt = BatchTensors::new(&batch, DType::F32, &dev).unwrap();
            let loss = model.loss(&bt, None).unwrap();
            last_loss = loss.mean.to_scalar::<f32>().unwrap();
            first_loss.get_or_insert(last_loss);
            let grads = loss.mean.backward().unwrap();
            opt.clip(&grads).unwrap();
            opt.update(&grads).unwrap();
            step += 1;
            if step % 100 == 0 || step >= max_steps {
                acc = accuracy(&model, &test);
                let (secs, shape) =
                    (started.elapsed().as_secs_f64(), format!("{:?} {:?}×{}+{}", cfg.arch, cfg.cell, cfg.enc_layers, cfg.dec_layers));
                eprintln!("{arch:?} {shape} step {step} loss {last_loss:.4} acc {acc:.3} ({secs:.1}s)");
                if acc >= target || step >= max_steps {
                    break 'train;
                }
            }
        }
    }
    assert!(last_loss < first_loss.unwrap() / 4.0, "loss did not fall: {first_loss:?} -> {last_loss}");
    acc
}

fn accuracy(model: &Seq2Seq, test: &[Example]) -> f64 {
    let srcs: Vec<Vec<u32>> = test.iter().map(|e| e.src.clone()).collect();
    let opts = SearchOptions {
        cfg: SearchConfig { beam_size: 1, batch_size: 100, ..SearchConfig::default() },
        alignments: false,
        imp: Default::default(),
    };
    let hyps = Searcher::new(vec![model]).unwrap().search(&srcs, None, &opts).unwrap();
    let right = test.iter().zip(&hyps).filter(|(e, h)| h[0].finished && h[0].tokens == e.tgt[..e.tgt.len() - 1]).count();
    right as f64 / test.len() as f64
}

#[test]
fn rnnsearch_learns_to_reverse() {
    let acc = train_reversal(ArchName::Rnnsearch, Cell::Gru, 3..=10, 64, 3e-3, 0.99);
    assert!(acc >= 0.98, "RNNsearch exact-match accuracy {acc}");
}

#[test]
fn lstm_rnnsearch_learns_to_reverse() {
    let acc = train_reversal(ArchName::Rnnsearch, Cell::Lstm, 3..=10, 64, 3e-3, 0.99);
    assert!(acc >= 0.98, "LSTM RNNsearch exact-match accuracy {acc}");
}

#[test]
fn rnnenc_learns_to_reverse_short_sequences() {
    let acc = train_reversal(ArchName::Rnnenc, Cell::Gru, 3..=6, 128, 1e-3, 0.95);
    assert!(acc >= 0.90, "RNNenc exact-match accuracy {acc}");
}

/// The lstm-seq2seq preset's shape (Sutskever et al.): 2+2 LSTM layers, no attention, the
/// source read backwards, so that the reversal becomes a copy of what was read last.
#[test]
fn lstm_seq2seq_learns_to_reverse_short_sequences() {
    let acc = train_reversal_with(ArchName::Rnnenc, 3..=6, 128, 1e-3, 0.95, &|c| {
        c.cell = Cell::Lstm;
        (c.enc_layers, c.dec_layers, c.reverse_source) = (2, 2, true);
    });
    assert!(acc >= 0.90, "lstm-seq2seq exact-match accuracy {acc}");
}

/// grconv-small's shape (Properties §3): grConv's summary under RNNenc's decoder.
#[test]
fn grconv_learns_to_reverse_short_sequences() {
    let acc = train_reversal_with(ArchName::Rnnenc, 3..=6, 128, 1e-3, 0.95, &|c| common::with_grconv(c));
    assert!(acc >= 0.90, "grConv exact-match accuracy {acc}");
}

/// The gated-feedback decoder stack (Chung et al. 2015): RNNsearch with a 2-layer decoder
/// whose upper layer reads both layers' states through global reset gates.
#[test]
fn gated_feedback_rnnsearch_learns_to_reverse() {
    let acc = train_reversal_with(ArchName::Rnnsearch, 3..=10, 64, 3e-3, 0.99, &|c| {
        (c.dec_layers, c.stack) = (2, nmt::config::StackKind::GatedFeedback);
    });
    assert!(acc >= 0.98, "gated-feedback RNNsearch exact-match accuracy {acc}");
}

/// The lstm-seq2seq shape with both stacks gated-feedback (the encoder's and the decoder's
/// upper layers read their stack's states at `t − 1`): the encoder's kernel and summary at
/// each sentence's last word, learned end to end.
#[test]
fn gated_feedback_seq2seq_learns_to_reverse_short_sequences() {
    let acc = train_reversal_with(ArchName::Rnnenc, 3..=6, 128, 1e-3, 0.95, &|c| {
        c.cell = Cell::Lstm;
        (c.enc_layers, c.dec_layers, c.reverse_source, c.stack) = (2, 2, true, nmt::config::StackKind::GatedFeedback);
    });
    assert!(acc >= 0.90, "gated-feedback lstm-seq2seq exact-match accuracy {acc}");
}

/// Marian's `s2s` shape: the conditional GRU decoder (Sennrich et al. 2017) with the tanh deep
/// output (`model.output_layer = "tanh"`) on its `s_i`. (One test for both: the toy tests are
/// the slowest part of CI.)
#[test]
fn tanh_output_rnnsearch_learns_to_reverse() {
    let acc = train_reversal_with(ArchName::Rnnsearch, 3..=10, 64, 3e-3, 0.99, &|c| {
        common::with_conditional(c);
        c.output_state = nmt::config::OutputState::Current;
        c.output_layer = nmt::config::OutputLayer::Tanh;
    });
    assert!(acc >= 0.98, "tanh-output RNNsearch exact-match accuracy {acc}");
}

/// Marian's `s2s` with `--layer-normalization` (`model.layer_norm`: the reset-after GRU, the
/// mean start, the tanh output on `s_i`), trained on its composed form (the fused kernels do
/// not have layer normalisation): it learns.
#[test]
fn layer_norm_rnnsearch_learns_to_reverse() {
    let acc = train_reversal_with(ArchName::Rnnsearch, 3..=8, 48, 3e-3, 0.95, &|c| {
        common::with_conditional(c);
        common::with_start(c, nmt::config::StartState::Mean);
        c.gru = nmt::config::GruForm::ResetAfter;
        c.output_state = nmt::config::OutputState::Current;
        c.output_layer = nmt::config::OutputLayer::Tanh;
        c.layer_norm = true;
    });
    assert!(acc >= 0.95, "layer-normalised RNNsearch exact-match accuracy {acc}");
}
