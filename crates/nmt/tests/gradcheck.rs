//! Analytic gradients against central finite differences, in f64, for every parameter tensor
//! of tiny RNNsearch and RNNenc models on a padded batch: GRU and LSTM cells, single layers
//! and stacks (with dropout between layers and residual connections).
mod common;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Cell, GruForm, Impl, ModelConfig};
use nmt::data::batch::{Batch, Example};
use nmt::model::regularizer::{DropoutRates, Regularizer};
use nmt::model::{BatchTensors, Seq2Seq};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `recurrent`: recurrent dropout, with the same masks at every evaluation (a fresh
/// regularizer of the same seed and step).
fn check(arch: ArchName, gru: GruForm, imp: Impl, recurrent: f64) {
    check_with(arch, gru, imp, DropoutRates { recurrent, ..DropoutRates::default() }, &|_| {});
}

/// [`check`] with any dropout `rates` and a change to the model's configuration.
fn check_with(arch: ArchName, gru: GruForm, imp: Impl, rates: DropoutRates, tweak: &dyn Fn(&mut ModelConfig)) {
    let dev = Device::Cpu;
    let mut cfg = common::small_config(arch, 12, 5, 4);
    common::set_att_dim(&mut cfg, 3);
    cfg.maxout_dim = 3;
    // Larger weights than the paper's 0.01 so that every term contributes measurably.
    cfg.init_std = 0.5;
    cfg.gru = gru;
    tweak(&mut cfg);
    let mut model = Seq2Seq::fresh(&cfg, 7, DType::F64, &dev).unwrap();
    model.set_impl(imp);
    // Different lengths so that padding and masking are exercised.
    let examples = [
        Example { src: vec![4, 5, 6, 7, 3], tgt: vec![8, 9, 3] },
        Example { src: vec![10, 11, 3], tgt: vec![5, 6, 7, 8, 3] },
        Example { src: vec![4, 3], tgt: vec![11, 3] },
    ];
    let rows: Vec<&Example> = examples.iter().collect();
    let batch = Batch::from_examples(&rows, vec![0, 1, 2]);
    let bt = BatchTensors::new(&batch, DType::F64, &dev).unwrap();
    let reg = || Regularizer::new(rates, 0.0, 5, 2);
    let loss = |m: &Seq2Seq| m.loss(&bt, Some(&mut reg())).unwrap().mean.to_scalar::<f64>().unwrap();
    let grads = model.loss(&bt, Some(&mut reg())).unwrap().mean.backward().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (mut checked, mut worst) = (0, 0.0f64);
    for (name, var) in model.params.named_vars() {
        let grad = grads.get(var.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient"));
        let g: Vec<f64> = grad.flatten_all().unwrap().to_vec1().unwrap();
        let orig: Vec<f64> = var.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
        // Embedding rows only matter for words in the batch: sample those.
        let candidates: Vec<usize> = (0..orig.len()).filter(|&i| g[i] != 0.0 || !name.contains("emb")).collect();
        for _ in 0..6 {
            let i = candidates[rng.gen_range(0..candidates.len())];
            let eps = 1e-5;
            let set = |v: f64| {
                let mut p = orig.clone();
                p[i] = v;
                var.set(&Tensor::from_vec(p, var.shape(), &dev).unwrap()).unwrap();
            };
            set(orig[i] + eps);
            let up = loss(&model);
            set(orig[i] - eps);
            let down = loss(&model);
            set(orig[i]);
            let numeric = (up - down) / (2.0 * eps);
            // The floor: a central difference of an O(1) loss carries ~1e-11 of rounding
            // (measured 3.3e-11 on a 1.1e-7 gradient), which a smaller floor reads as error.
            let rel = (g[i] - numeric).abs() / (g[i].abs() + numeric.abs()).max(1e-6);
            assert!(rel < 1e-4, "{arch:?} {gru:?} {imp:?} {cfg:?} {name}[{i}]: analytic {} numeric {numeric} rel {rel:e}", g[i]);
            worst = worst.max(rel);
            checked += 1;
        }
    }
    let what = format!("{:?} layers {}+{} residual {}", cfg.cell, cfg.enc_layers, cfg.dec_layers, cfg.residual);
    eprintln!("{arch:?} {gru:?} {imp:?} {what}: {checked} entries checked, max relative error {worst:.2e}");
    assert!(checked > 60, "checked only {checked} entries");
}

#[test]
fn rnnsearch_gradients_match_finite_differences() {
    check(ArchName::Rnnsearch, GruForm::Paper, Impl::Composed, 0.0);
}

#[test]
fn rnnenc_gradients_match_finite_differences() {
    check(ArchName::Rnnenc, GruForm::Paper, Impl::Composed, 0.0);
}

/// The fused kernels, both cell forms: finite differences through the kernels' backward passes
/// (the GRU op with lengths and a start state, the bidirectional op, the attention decoder).
#[test]
fn fused_rnnsearch_gradients_match_finite_differences() {
    check(ArchName::Rnnsearch, GruForm::Paper, Impl::Fused, 0.0);
    check(ArchName::Rnnsearch, GruForm::ResetAfter, Impl::Fused, 0.0);
}

#[test]
fn fused_rnnenc_gradients_match_finite_differences() {
    check(ArchName::Rnnenc, GruForm::Paper, Impl::Fused, 0.0);
    check(ArchName::Rnnenc, GruForm::ResetAfter, Impl::Fused, 0.0);
}

/// Recurrent dropout through the fused kernels of both architectures and both cell forms.
#[test]
fn fused_gradients_with_recurrent_dropout_match_finite_differences() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for gru in [GruForm::Paper, GruForm::ResetAfter] {
            check(arch, gru, Impl::Fused, 0.4);
        }
    }
}

/// The LSTM, composed and fused, with recurrent dropout.
#[test]
fn lstm_gradients_match_finite_differences() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for imp in [Impl::Composed, Impl::Fused] {
            let rates = DropoutRates { recurrent: 0.4, ..DropoutRates::default() };
            check_with(arch, GruForm::Paper, imp, rates, &|c| c.cell = Cell::Lstm);
        }
    }
}

/// Stacked encoders and decoders (two layers each), with unit dropout between layers and
/// recurrent dropout, with and without residual connections, both cells, both paths.
#[test]
fn stacked_gradients_match_finite_differences() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for (cell, residual, imp) in [(Cell::Gru, false, Impl::Fused), (Cell::Lstm, true, Impl::Fused), (Cell::Gru, true, Impl::Composed)] {
            let rates = DropoutRates { units: 0.3, recurrent: 0.3, ..DropoutRates::default() };
            check_with(arch, GruForm::Paper, imp, rates, &|c| {
                c.cell = cell;
                (c.enc_layers, c.dec_layers, c.residual) = (2, 2, residual);
            });
        }
    }
}

/// The grConv encoder (Properties §3) under RNNenc's decoder, both paths.
#[test]
fn grconv_gradients_match_finite_differences() {
    for imp in [Impl::Composed, Impl::Fused] {
        check_with(ArchName::Rnnenc, GruForm::Paper, imp, DropoutRates::default(), &|c| common::with_grconv(c));
    }
}

/// The gated-feedback stacks (Chung et al. 2015), their composed form and their kernel
/// (`kernels::cpu::feedback_op`), three decoder layers and three encoder layers (RNNenc's; RNNsearch's
/// stays plain), both GRU forms and the LSTM, with unit and recurrent dropout and residual
/// connections, on a padded batch: the global gates and the other layers' `U^{i→j}` get
/// their gradients.
#[test]
fn gated_feedback_gradients_match_finite_differences() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for (cell, gru, residual, imp) in [
            (Cell::Gru, GruForm::Paper, false, Impl::Fused),
            (Cell::Gru, GruForm::ResetAfter, true, Impl::Composed),
            (Cell::Gru, GruForm::ResetAfter, true, Impl::Fused),
            (Cell::Lstm, GruForm::Paper, true, Impl::Fused),
        ] {
            let rates = DropoutRates { units: 0.3, recurrent: 0.3, ..DropoutRates::default() };
            check_with(arch, gru, imp, rates, &|c| {
                c.cell = cell;
                (c.enc_layers, c.dec_layers, c.residual, c.stack) = (3, 3, residual, nmt::config::StackKind::GatedFeedback);
            });
        }
    }
}

/// The conditional GRU decoder (`model.decoder = "conditional"`; `kernels::cpu::conditional`),
/// both GRU forms, both implementations, with unit and recurrent dropout, and a stack above it
/// (the copy mixture over its attention: `fused_model.rs`, fused = composed).
#[test]
fn conditional_decoder_gradients_match_finite_differences() {
    for (gru, imp, layers) in [
        (GruForm::Paper, Impl::Composed, 1),
        (GruForm::Paper, Impl::Fused, 1),
        (GruForm::ResetAfter, Impl::Fused, 1),
        (GruForm::ResetAfter, Impl::Composed, 2),
        (GruForm::Paper, Impl::Fused, 2),
    ] {
        let rates = DropoutRates { units: 0.3, recurrent: 0.3, ..DropoutRates::default() };
        check_with(ArchName::Rnnsearch, gru, imp, rates, &|c| {
            common::with_conditional(c);
            c.dec_layers = layers;
        });
    }
}

/// The decoder's start summaries (`model.decoder_start`: `kernels::cpu::start_pool`): the mean of
/// the annotations and the forward RNN's last state, under both decoders and implementations,
/// on the padded batch (lengths 5, 3, 2).
#[test]
fn decoder_start_gradients_match_finite_differences() {
    use nmt::config::StartState;
    for (start, conditional, imp) in [
        (StartState::Mean, false, Impl::Composed),
        (StartState::Mean, false, Impl::Fused),
        (StartState::LastForward, false, Impl::Fused),
        (StartState::Mean, true, Impl::Fused),
        (StartState::LastForward, true, Impl::Composed),
    ] {
        check_with(ArchName::Rnnsearch, GruForm::Paper, imp, DropoutRates::default(), &|c| {
            common::with_start(c, start);
            if conditional {
                common::with_conditional(c);
            }
        });
    }
}

/// The tanh deep output (`model.output_layer = "tanh"`), both implementations, both
/// architectures, with dropout on its units.
#[test]
fn tanh_output_gradients_match_finite_differences() {
    for (arch, imp, conditional) in
        [(ArchName::Rnnsearch, Impl::Composed, false), (ArchName::Rnnsearch, Impl::Fused, true), (ArchName::Rnnenc, Impl::Fused, false)]
    {
        let rates = DropoutRates { units: 0.3, ..DropoutRates::default() };
        check_with(arch, GruForm::Paper, imp, rates, &|c| {
            c.output_layer = nmt::config::OutputLayer::Tanh;
            if conditional {
                common::with_conditional(c);
            }
        });
    }
}

/// Layer normalisation (`model.layer_norm`, Marian's `s2s` placement: every GRU product, the
/// attention's, the start state's and the deep output's), on the conditional decoder with the
/// reset-after cell, the mean start and the tanh output, with unit and recurrent dropout: the
/// composed form and the fused one (`kernels::cpu::birnn`, `kernels::cpu::conditional` and
/// `kernels::cpu::attention_op` with their layer-normalisation backward passes).
#[test]
fn layer_norm_gradients_match_finite_differences() {
    let rates = DropoutRates { units: 0.3, recurrent: 0.3, ..DropoutRates::default() };
    for imp in [Impl::Composed, Impl::Fused] {
        check_with(ArchName::Rnnsearch, GruForm::ResetAfter, imp, rates, &|c| {
            common::with_conditional(c);
            common::with_start(c, nmt::config::StartState::Mean);
            c.output_layer = nmt::config::OutputLayer::Tanh;
            c.layer_norm = true;
        });
    }
}
