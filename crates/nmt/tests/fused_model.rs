//! `Seq2Seq`'s loss on the fused kernels against its composed-op twin: the loss and the gradient
//! of every parameter, for both architectures, both GRU forms and the LSTM, both output states, batches whose
//! sentences differ in length on both sides, and dropout on (the same masks on both paths);
//! then the training recipe's options: word dropout, label smoothing and tied embeddings. The
//! composed run refuses, as a GPU would, a matrix product whose operand is a strided view.
mod common;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Cell, CellKind, GruForm, Impl, OutputState};
use nmt::data::batch::{Batch, Example};
use nmt::model::regularizer::{DropoutRates, Regularizer};
use nmt::model::{BatchTensors, Seq2Seq};

struct Case {
    arch: ArchName,
    cell: CellKind,
    output: OutputState,
    dropout: f64,
    /// Recurrent dropout.
    recurrent: f64,
    /// Source and target word dropout, label smoothing, tied target embeddings.
    recipe: Option<(f64, f64, bool)>,
}

/// The worst relative difference between the two paths over the loss and every gradient.
fn compare(case: &Case, dtype: DType) -> f64 {
    compare_with(case, dtype, &|_| {})
}

/// [`compare`] after a change to the model's configuration.
fn compare_with(case: &Case, dtype: DType, tweak: &dyn Fn(&mut nmt::config::ModelConfig)) -> f64 {
    let dev = Device::Cpu;
    let mut cfg = common::small_config(case.arch, 14, 6, 5);
    common::set_att_dim(&mut cfg, 4);
    cfg.maxout_dim = 3;
    let (word, smoothing, tied) = case.recipe.unwrap_or((0.0, 0.0, false));
    if tied {
        cfg.emb_dim = cfg.maxout_dim;
    }
    cfg.tie_target_embeddings = tied;
    cfg.init_std = 0.4;
    (cfg.cell, cfg.gru) = match case.cell {
        CellKind::Gru(form) => (Cell::Gru, form),
        CellKind::Lstm => (Cell::Lstm, GruForm::Paper),
    };
    cfg.output_state = case.output;
    cfg.dropout = case.dropout;
    cfg.recurrent_dropout = case.recurrent;
    tweak(&mut cfg);
    if cfg.copy() {
        cfg.tgt_vocab = 12;
    }
    let mut model = Seq2Seq::fresh(&cfg, 3, dtype, &dev).unwrap();
    if cfg.layer_norm {
        // Its gains start at one and the shifts at zero, where a wrong place for either would
        // not show: every parameter moves by a little noise.
        use rand::SeedableRng;
        use rand_distr::Distribution;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let normal = rand_distr::Normal::new(0f64, 0.2).unwrap();
        for (_, v) in model.params.named_vars() {
            let t = v.as_tensor();
            let noise: Vec<f64> = (0..t.elem_count()).map(|_| normal.sample(&mut rng)).collect();
            let noise = Tensor::from_vec(noise, t.shape(), &dev).unwrap().to_dtype(dtype).unwrap();
            v.set(&(t + noise).unwrap()).unwrap();
        }
    }
    let examples = [
        Example { src: vec![4, 5, 6, 7, 8, 3], tgt: vec![8, 9, 3] },
        Example { src: vec![10, 11, 3], tgt: vec![5, 6, 7, 8, 9, 13, 3] },
        Example { src: vec![4, 3], tgt: vec![11, 3] },
        Example { src: vec![12, 13, 9, 3], tgt: vec![4, 12, 6, 3] },
    ];
    let rows: Vec<&Example> = examples.iter().collect();
    let mut batch = Batch::from_examples(&rows, vec![0, 1, 2, 3]);
    if cfg.copy() {
        // Target vocabulary 12: source words 12 and 13 are copied as extended ids 12, 13.
        cfg.tgt_vocab = 12;
        let ext = |v: &[u32]| v.to_vec();
        batch.set_source_ext(&examples.iter().map(|e| ext(&e.src)).collect::<Vec<_>>());
    }
    let bt = BatchTensors::new(&batch, dtype, &dev).unwrap();
    let mut run = |imp: Impl| {
        model.set_impl(imp);
        let rates = DropoutRates { units: cfg.dropout, src_words: word, tgt_words: word, recurrent: cfg.recurrent_dropout };
        let mut reg = Regularizer::new(rates, smoothing, 9, 4);
        let loss = model.loss(&bt, Some(&mut reg)).unwrap().mean;
        let grads = loss.backward().unwrap();
        let g: Vec<(String, Tensor)> = model
            .params
            .named_vars()
            .into_iter()
            .map(|(name, v)| {
                let g = grads.get(v.as_tensor()).unwrap_or_else(|| panic!("{name}: no gradient")).clone();
                (name, g)
            })
            .collect();
        (loss, g)
    };
    let (lf, gf) = run(Impl::Fused);
    // The composed path is what a GPU runs: its products must hand candle's CUDA matmul the
    // layouts it takes, checked here on the CPU (vendor/candle-core/NMT-PATCH.md, second change).
    let (lc, gc) = candle_core::cpu_backend::cuda_layouts::checked(|| run(Impl::Composed));
    let mut worst = common::max_rel(&lf, &lc);
    for ((name, a), (_, b)) in gf.iter().zip(&gc) {
        let d = common::max_rel(a, b);
        assert!(d.is_finite(), "{name}: {d}");
        worst = worst.max(d);
    }
    worst
}

#[test]
fn fused_loss_and_gradients_equal_composed() {
    let mut n = 0;
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for gru in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm] {
            for output in [OutputState::Previous, OutputState::Current] {
                for dropout in [0.0, 0.3] {
                    // Dropout on: units and the recurrent states, the same masks on both paths.
                    let case = Case { arch, cell: gru, output, dropout, recurrent: dropout, recipe: None };
                    let e64 = compare(&case, DType::F64);
                    let e32 = compare(&case, DType::F32);
                    eprintln!("{arch:?} {gru:?} {output:?} dropout {dropout}: f64 {e64:.1e}, f32 {e32:.1e}");
                    assert!(e64 < 1e-10, "{arch:?} {gru:?} {output:?} {dropout}: f64 differs by {e64:e}");
                    assert!(e32 < 2e-5, "{arch:?} {gru:?} {output:?} {dropout}: f32 differs by {e32:e}");
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 24);
}

#[test]
fn fused_equals_composed_with_word_dropout_label_smoothing_and_tied_embeddings() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for recipe in [(0.25, 0.0, false), (0.0, 0.1, false), (0.0, 0.0, true), (0.2, 0.1, true)] {
            let case = Case {
                arch,
                cell: CellKind::Gru(GruForm::Paper),
                output: OutputState::Previous,
                dropout: 0.2,
                recurrent: 0.0,
                recipe: Some(recipe),
            };
            let e64 = compare(&case, DType::F64);
            let e32 = compare(&case, DType::F32);
            eprintln!("{arch:?} {recipe:?}: f64 {e64:.1e}, f32 {e32:.1e}");
            assert!(e64 < 1e-10, "{arch:?} {recipe:?}: f64 differs by {e64:e}");
            assert!(e32 < 2e-5, "{arch:?} {recipe:?}: f32 differs by {e32:e}");
        }
    }
}

#[test]
fn label_smoothing_changes_the_training_loss_but_not_the_dev_loss() {
    let dev = Device::Cpu;
    let mut cfg = common::small_config(ArchName::Rnnsearch, 14, 6, 5);
    cfg.init_std = 0.5; // far from uniform, where smoothing would change little
    let model = Seq2Seq::fresh(&cfg, 3, DType::F64, &dev).unwrap();
    let ex = [Example { src: vec![4, 5, 3], tgt: vec![8, 9, 3] }];
    let rows: Vec<&Example> = ex.iter().collect();
    let bt = BatchTensors::new(&Batch::from_examples(&rows, vec![0]), DType::F64, &dev).unwrap();
    let value = |reg: Option<&mut Regularizer>| model.loss(&bt, reg).unwrap().mean.to_scalar::<f64>().unwrap();
    let plain = value(None);
    let none = value(Some(&mut Regularizer::new(DropoutRates::default(), 0.0, 1, 1)));
    let smoothed = value(Some(&mut Regularizer::new(DropoutRates::default(), 0.1, 1, 1)));
    assert_eq!(plain, none);
    assert!((smoothed - plain).abs() > 1e-3, "smoothing had no effect: {smoothed} vs {plain}");
}

#[test]
fn recurrent_dropout_changes_the_training_loss_on_both_paths() {
    let dev = Device::Cpu;
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        let mut cfg = common::small_config(arch, 14, 6, 5);
        cfg.init_std = 0.5;
        let mut model = Seq2Seq::fresh(&cfg, 3, DType::F64, &dev).unwrap();
        let ex = [Example { src: vec![4, 5, 6, 3], tgt: vec![8, 9, 10, 3] }];
        let rows: Vec<&Example> = ex.iter().collect();
        let bt = BatchTensors::new(&Batch::from_examples(&rows, vec![0]), DType::F64, &dev).unwrap();
        for imp in [Impl::Fused, Impl::Composed] {
            model.set_impl(imp);
            let value = |p: f64| {
                let rates = DropoutRates { recurrent: p, ..DropoutRates::default() };
                model.loss(&bt, Some(&mut Regularizer::new(rates, 0.0, 2, 3))).unwrap().mean.to_scalar::<f64>().unwrap()
            };
            let (plain, dropped) = (value(0.0), value(0.5));
            assert!((plain - dropped).abs() > 1e-4, "{arch:?} {imp:?}: recurrent dropout had no effect ({plain} vs {dropped})");
        }
    }
}

/// Stacked layers (2 + 2, 3 + 2), with and without residual connections, both cells, both
/// architectures, dropout between layers: fused equals composed.
#[test]
fn stacked_fused_equals_composed() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for (cell, layers, residual, output) in [
            (CellKind::Gru(GruForm::Paper), (2, 2), false, OutputState::Previous),
            (CellKind::Lstm, (3, 2), true, OutputState::Current),
            (CellKind::Gru(GruForm::ResetAfter), (2, 3), true, OutputState::Previous),
        ] {
            let case = Case { arch, cell, output, dropout: 0.3, recurrent: 0.2, recipe: None };
            let stack = |c: &mut nmt::config::ModelConfig| (c.enc_layers, c.dec_layers, c.residual) = (layers.0, layers.1, residual);
            let (e64, e32) = (compare_with(&case, DType::F64, &stack), compare_with(&case, DType::F32, &stack));
            eprintln!("{arch:?} {cell:?} layers {layers:?} residual {residual}: f64 {e64:.1e}, f32 {e32:.1e}");
            assert!(e64 < 1e-10 && e32 < 2e-5, "{arch:?} {cell:?} {layers:?} {residual}: {e64:e} {e32:e}");
        }
    }
}

/// A state of 21 units: the cells' backward rows run 16 units at a time and the rest one by
/// one (`kernels::math::lanes`); the other cases' 5 units reach only the second loop.
#[test]
fn wide_states_fused_equal_composed() {
    for cell in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm] {
        let case = Case { arch: ArchName::Rnnsearch, cell, output: OutputState::Current, dropout: 0.3, recurrent: 0.2, recipe: None };
        let wide = |c: &mut nmt::config::ModelConfig| c.hidden_dim = 21;
        let (e64, e32) = (compare_with(&case, DType::F64, &wide), compare_with(&case, DType::F32, &wide));
        eprintln!("{cell:?} hidden 21: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "{cell:?}: {e64:e} {e32:e}");
    }
}

/// grConv (composed on both paths) under the fused decoder equals the composed model.
#[test]
fn grconv_fused_equals_composed() {
    for cell in [CellKind::Gru(GruForm::Paper), CellKind::Lstm] {
        let case = Case { arch: ArchName::Rnnenc, cell, output: OutputState::Current, dropout: 0.3, recurrent: 0.2, recipe: None };
        let grconv = |c: &mut nmt::config::ModelConfig| common::with_grconv(c);
        let (e64, e32) = (compare_with(&case, DType::F64, &grconv), compare_with(&case, DType::F32, &grconv));
        eprintln!("grconv {cell:?}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "grconv {cell:?}: {e64:e} {e32:e}");
    }
}

/// The copy mixture: the fused decoder with the attention recomputed outside equals the
/// composed model, stacked or not, both output states, dropout and label smoothing on.
#[test]
fn copy_fused_equals_composed() {
    for (output, layers) in [(OutputState::Previous, 1), (OutputState::Current, 1), (OutputState::Previous, 2)] {
        let case = Case {
            arch: ArchName::Rnnsearch,
            cell: CellKind::Gru(GruForm::Paper),
            output,
            dropout: 0.2,
            recurrent: 0.2,
            recipe: Some((0.1, 0.1, false)),
        };
        let copy = |c: &mut nmt::config::ModelConfig| {
            common::with_copy(c);
            c.dec_layers = layers;
        };
        let (e64, e32) = (compare_with(&case, DType::F64, &copy), compare_with(&case, DType::F32, &copy));
        eprintln!("copy {output:?} layers {layers}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "copy {output:?} {layers}: {e64:e} {e32:e}");
    }
}

/// The gated-feedback stacks, the decoder's and (under RNNenc) the encoder's, as the kernel
/// (`kernels::cpu::feedback_op`) inside the fused model against the composed model: fused equals
/// composed, dropout drawn alike, both cells, both architectures.
#[test]
fn gated_feedback_fused_equals_composed() {
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for (cell, layers, residual) in
            [(CellKind::Gru(GruForm::Paper), 2, false), (CellKind::Lstm, 3, true), (CellKind::Gru(GruForm::ResetAfter), 3, false)]
        {
            let case = Case { arch, cell, output: OutputState::Previous, dropout: 0.3, recurrent: 0.2, recipe: None };
            let gf = |c: &mut nmt::config::ModelConfig| {
                (c.enc_layers, c.dec_layers, c.residual, c.stack) = (layers, layers, residual, nmt::config::StackKind::GatedFeedback)
            };
            let (e64, e32) = (compare_with(&case, DType::F64, &gf), compare_with(&case, DType::F32, &gf));
            eprintln!("gated feedback {arch:?} {cell:?} layers {layers} residual {residual}: f64 {e64:.1e}, f32 {e32:.1e}");
            assert!(e64 < 1e-10 && e32 < 2e-5, "gated feedback {arch:?} {cell:?} {layers}: {e64:e} {e32:e}");
        }
    }
}

/// The conditional GRU decoder's kernel (`kernels::cpu::conditional`) inside the fused model
/// against the composed model: both GRU forms, both output states, dropout, a stack above it
/// and the copy mixture.
#[test]
fn conditional_fused_equals_composed() {
    for (form, output, layers, copy) in [
        (GruForm::Paper, OutputState::Current, 1, false),
        (GruForm::Paper, OutputState::Previous, 1, false),
        (GruForm::ResetAfter, OutputState::Current, 1, false),
        (GruForm::ResetAfter, OutputState::Current, 2, false),
        (GruForm::Paper, OutputState::Current, 1, true),
    ] {
        let case = Case {
            arch: ArchName::Rnnsearch,
            cell: CellKind::Gru(form),
            output,
            dropout: 0.2,
            recurrent: 0.2,
            recipe: Some((0.1, 0.1, false)),
        };
        let cond = |c: &mut nmt::config::ModelConfig| {
            common::with_conditional(c);
            c.dec_layers = layers;
            if copy {
                common::with_copy(c);
            }
        };
        let (e64, e32) = (compare_with(&case, DType::F64, &cond), compare_with(&case, DType::F32, &cond));
        eprintln!("conditional {form:?} {output:?} layers {layers} copy {copy}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "conditional {form:?} {output:?} {layers} {copy}: {e64:e} {e32:e}");
    }
}

/// The decoder's start summaries inside the fused op (`attention_op.rs` with `kernels::cpu::start_pool`)
/// against the composed `DecoderStart::output`, both decoders, padded sentences.
#[test]
fn decoder_start_fused_equals_composed() {
    use nmt::config::StartState;
    for (start, conditional, cell) in [
        (StartState::Mean, false, CellKind::Gru(GruForm::Paper)),
        (StartState::LastForward, false, CellKind::Lstm),
        (StartState::Mean, true, CellKind::Gru(GruForm::ResetAfter)),
        (StartState::LastForward, true, CellKind::Gru(GruForm::Paper)),
    ] {
        let case = Case { arch: ArchName::Rnnsearch, cell, output: OutputState::Current, dropout: 0.2, recurrent: 0.2, recipe: None };
        let tweak = |c: &mut nmt::config::ModelConfig| {
            common::with_start(c, start);
            if conditional {
                common::with_conditional(c);
            }
        };
        let (e64, e32) = (compare_with(&case, DType::F64, &tweak), compare_with(&case, DType::F32, &tweak));
        eprintln!("start {start:?} conditional {conditional} {cell:?}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "start {start:?} {conditional}: {e64:e} {e32:e}");
    }
}

/// The tanh deep output (`model.output_layer = "tanh"`, Nematus' and Marian's `ff_logit_l1`)
/// inside the fused model against the composed one: both decoders of RNNsearch, RNNenc's
/// per-sentence context, unit dropout on its units, tied embeddings and label smoothing.
#[test]
fn tanh_output_fused_equals_composed() {
    use nmt::config::OutputLayer;
    for (arch, conditional, tied) in
        [(ArchName::Rnnsearch, false, false), (ArchName::Rnnsearch, true, true), (ArchName::Rnnenc, false, false)]
    {
        let case = Case {
            arch,
            cell: CellKind::Gru(GruForm::ResetAfter),
            output: OutputState::Current,
            dropout: 0.2,
            recurrent: 0.2,
            recipe: Some((0.1, 0.1, tied)),
        };
        let tweak = |c: &mut nmt::config::ModelConfig| {
            c.output_layer = OutputLayer::Tanh;
            if conditional {
                common::with_conditional(c);
            }
        };
        let (e64, e32) = (compare_with(&case, DType::F64, &tweak), compare_with(&case, DType::F32, &tweak));
        eprintln!("tanh output {arch:?} conditional {conditional} tied {tied}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "tanh output {arch:?} {conditional} {tied}: {e64:e} {e32:e}");
    }
}

/// Layer normalisation (Marian's `s2s`) inside the fused model — `kernels::cpu::birnn` with each
/// direction's `γ_h`, `kernels::cpu::conditional`'s four normalised products and `kernels::cpu::attention_op`'s
/// start state and keys, their backward passes — against the composed model: both output
/// states, both start states, tied embeddings, dropout and label smoothing, every parameter
/// (gains and shifts included) away from its initial value.
#[test]
fn layer_norm_fused_equals_composed() {
    use nmt::config::{OutputLayer, StartState};
    for (output, start, tied) in [(OutputState::Current, StartState::Mean, false), (OutputState::Previous, StartState::FirstBackward, true)]
    {
        let case = Case {
            arch: ArchName::Rnnsearch,
            cell: CellKind::Gru(GruForm::ResetAfter),
            output,
            dropout: 0.2,
            recurrent: 0.2,
            recipe: Some((0.1, 0.1, tied)),
        };
        let tweak = |c: &mut nmt::config::ModelConfig| {
            common::with_conditional(c);
            common::with_start(c, start);
            c.output_layer = OutputLayer::Tanh;
            c.layer_norm = true;
        };
        let (e64, e32) = (compare_with(&case, DType::F64, &tweak), compare_with(&case, DType::F32, &tweak));
        eprintln!("layer norm {output:?} {start:?} tied {tied}: f64 {e64:.1e}, f32 {e32:.1e}");
        assert!(e64 < 1e-10 && e32 < 2e-5, "layer norm {output:?} {start:?} {tied}: {e64:e} {e32:e}");
    }
}
