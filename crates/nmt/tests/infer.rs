//! The fused host search (`HostModel`, `model/snapshot.rs`) against the candle search it replaces on the CPU: the
//! same hypotheses, scores and attention weights, for both architectures, both cells, both deep-output
//! state choices, both GRU forms, greedy and beam, n-best lists, `--no-unk`, several batches.
mod common;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Cell, CellKind, GruForm, Impl, OutputState, SearchConfig};
use nmt::data::EOS;
use nmt::model::Seq2Seq;
use nmt::search::{Hypothesis, SearchOptions, Searcher};

/// A random model with a likely `</s>`, so that hypotheses finish at different steps.
fn model(arch: ArchName, output_state: OutputState, cell: CellKind) -> Seq2Seq {
    model_with(arch, output_state, cell, 1.0, &|_| {})
}

/// [`model`] after a change to the configuration.
fn model_with(
    arch: ArchName,
    output_state: OutputState,
    cell: CellKind,
    eos_boost: f32,
    tweak: &dyn Fn(&mut nmt::config::ModelConfig),
) -> Seq2Seq {
    let mut cfg = common::small_config(arch, 30, 16, 24);
    cfg.init_std = 0.3;
    cfg.output_state = output_state;
    (cfg.cell, cfg.gru) = match cell {
        CellKind::Gru(form) => (Cell::Gru, form),
        CellKind::Lstm => (Cell::Lstm, GruForm::Paper),
    };
    tweak(&mut cfg);
    // A seed whose random models give both finished and long hypotheses in every setting
    // below (each test asserts it): seeds 1–13 each left some setting degenerate after the
    // initial draws changed to rand_distr's sampler (2026-11-23); 14 and 15 did not.
    let m = Seq2Seq::fresh(&cfg, 14, DType::F32, &Device::Cpu).unwrap();
    let (_, b_g) = m.params.named_vars().into_iter().find(|(n, _)| n == "output.b_g").unwrap();
    let mut bias: Vec<f32> = b_g.as_tensor().to_vec1().unwrap();
    bias[EOS as usize] += eos_boost;
    b_g.set(&Tensor::new(bias, &Device::Cpu).unwrap()).unwrap();
    m
}

fn run(m: &Seq2Seq, srcs: &[Vec<u32>], cfg: &SearchConfig, imp: Impl) -> Vec<Vec<Hypothesis>> {
    gpu_layouts(imp, || {
        Searcher::new(vec![m]).unwrap().search(srcs, None, &SearchOptions { cfg: cfg.clone(), alignments: true, imp }).unwrap()
    })
}

/// Runs `f`; for the composed search, the GPU's search, with the products refusing what
/// candle's CUDA matmul refuses (vendor/candle-core/NMT-PATCH.md, second change).
fn gpu_layouts<R>(imp: Impl, f: impl FnOnce() -> R) -> R {
    match imp {
        Impl::Composed => candle_core::cpu_backend::cuda_layouts::checked(f),
        Impl::Fused => f(),
    }
}

fn assert_same(a: &[Vec<Hypothesis>], b: &[Vec<Hypothesis>], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (ha, hb)) in a.iter().zip(b).enumerate() {
        assert_eq!(ha.len(), hb.len(), "{what}: sentence {i}: n-best sizes");
        for (x, y) in ha.iter().zip(hb) {
            assert_eq!(x.tokens, y.tokens, "{what}: sentence {i}");
            assert_eq!(x.finished, y.finished, "{what}: sentence {i}");
            assert!((x.log_prob - y.log_prob).abs() < 1e-4 * (1.0 + y.log_prob.abs()), "{what}: {} vs {}", x.log_prob, y.log_prob);
            assert!((x.score - y.score).abs() < 1e-4 * (1.0 + y.score.abs()), "{what}: {} vs {}", x.score, y.score);
            match (&x.alignment, &y.alignment) {
                (Some(p), Some(q)) => {
                    assert_eq!(p.len(), q.len(), "{what}: alignment rows");
                    for (rp, rq) in p.iter().zip(q) {
                        assert_eq!(rp.len(), rq.len(), "{what}: alignment width");
                        for (u, v) in rp.iter().zip(rq) {
                            assert!((u - v).abs() < 1e-5, "{what}: alignment {u} vs {v}");
                        }
                    }
                }
                (None, None) => {}
                _ => panic!("{what}: one engine gave alignments, the other not"),
            }
        }
    }
}

#[test]
fn fused_search_equals_candle_search() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(30, 20, 1..=11, 9).into_iter().map(|e| e.src).collect();
    let mut checked = 0;
    for (arch, state, gru) in [ArchName::Rnnsearch, ArchName::Rnnenc]
        .into_iter()
        .flat_map(|a| [OutputState::Previous, OutputState::Current].map(|s| (a, s)))
        .flat_map(|(a, s)| [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm].map(|g| (a, s, g)))
    {
        {
            let m = model(arch, state, gru);
            for (beam_size, n_best, normalize, no_unk) in [(1, 1, 1.0, false), (3, 3, 0.0, true), (5, 2, 1.0, false)] {
                // Batches of 7 sentences: several batches, padded, restored to input order.
                let cfg = SearchConfig { beam_size, n_best, normalize, no_unk, batch_size: 7, ..SearchConfig::default() };
                let what = format!("{arch:?} {state:?} {gru:?} beam {beam_size}");
                let fused = run(&m, &srcs, &cfg, Impl::Fused);
                let ops = run(&m, &srcs, &cfg, Impl::Composed);
                assert_same(&fused, &ops, &what);
                let finished = ops.iter().flatten().filter(|h| h.finished).count();
                let long = ops.iter().flatten().filter(|h| h.tokens.len() > 3).count();
                assert!(finished > 0 && long > 0, "{what}: degenerate: {finished} finished, {long} longer than 3");
                checked += ops.len();
            }
        }
    }
    assert_eq!(checked, 36 * 30);
}

/// With tied target embeddings the host search reads `G = Eᵀ` from the layer and still agrees.
#[test]
fn fused_search_equals_candle_search_with_tied_embeddings() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(12, 20, 1..=9, 4).into_iter().map(|e| e.src).collect();
    let mut cfg = common::small_config(ArchName::Rnnsearch, 30, 16, 24);
    cfg.init_std = 0.3;
    cfg.maxout_dim = 16;
    cfg.tie_target_embeddings = true;
    // A seed whose random models give both finished and long hypotheses in every setting
    // below (each test asserts it): seeds 1–13 each left some setting degenerate after the
    // initial draws changed to rand_distr's sampler (2026-11-23); 14 and 15 did not.
    let m = Seq2Seq::fresh(&cfg, 14, DType::F32, &Device::Cpu).unwrap();
    assert!(!m.params.named_vars().iter().any(|(n, _)| n == "output.g"), "a tied model has no G of its own");
    let search = SearchConfig { beam_size: 4, n_best: 2, batch_size: 5, ..SearchConfig::default() };
    assert_same(&run(&m, &srcs, &search, Impl::Fused), &run(&m, &srcs, &search, Impl::Composed), "tied");
}

/// One cell, output state and residual setting of a stack.
type Variant = (CellKind, OutputState, bool);

/// The host search against the candle search on both architectures and each `variant`, the
/// model's stack set by `stack`; at least one variant must give finished and long hypotheses.
fn check_stacks(name: &str, variants: &[Variant], stack: &dyn Fn(&mut nmt::config::ModelConfig, bool)) {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(20, 20, 1..=11, 4).into_iter().map(|e| e.src).collect();
    let (mut finished, mut long) = (false, false);
    for arch in [ArchName::Rnnsearch, ArchName::Rnnenc] {
        for &(cell, state, residual) in variants {
            let m = model_with(arch, state, cell, 1.8, &|c| stack(c, residual));
            let cfg = SearchConfig { beam_size: 4, n_best: 2, batch_size: 6, ..SearchConfig::default() };
            let what = format!("{name} {arch:?} {cell:?} {state:?} residual {residual}");
            let (fused, ops) = (run(&m, &srcs, &cfg, Impl::Fused), run(&m, &srcs, &cfg, Impl::Composed));
            assert_same(&fused, &ops, &what);
            let lens: Vec<usize> = ops.iter().flatten().map(|h| h.tokens.len()).collect();
            eprintln!("{what}: lengths {lens:?}");
            finished |= ops.iter().flatten().any(|h| h.finished && h.tokens.len() > 1);
            long |= lens.iter().any(|&l| l > 3);
        }
    }
    assert!(finished && long, "degenerate: no variant gave both finished and long hypotheses");
}

/// Stacked encoders and decoders, with and without residual connections.
#[test]
fn fused_search_equals_candle_search_for_stacks() {
    let variants = [
        (CellKind::Gru(GruForm::Paper), OutputState::Previous, false),
        (CellKind::Lstm, OutputState::Current, true),
        (CellKind::Gru(GruForm::ResetAfter), OutputState::Current, true),
        (CellKind::Lstm, OutputState::Previous, false),
    ];
    check_stacks("stack", &variants, &|c, residual| (c.enc_layers, c.dec_layers, c.residual) = (2, 3, residual));
}

/// The gated-feedback stacks (their host forms against their composed forms), three decoder
/// layers and, under RNNenc, three encoder layers, both GRU forms and the LSTM, with and
/// without residual connections.
#[test]
fn fused_search_equals_candle_search_for_gated_feedback() {
    let variants = [
        (CellKind::Gru(GruForm::Paper), OutputState::Previous, false),
        (CellKind::Lstm, OutputState::Current, true),
        (CellKind::Gru(GruForm::ResetAfter), OutputState::Previous, true),
    ];
    check_stacks("gated feedback", &variants, &|c, residual| {
        (c.enc_layers, c.dec_layers, c.residual, c.stack) = (3, 3, residual, nmt::config::StackKind::GatedFeedback)
    });
}

/// Padding never reaches a gated-feedback encoder's summary (its kernel has no lengths; the
/// summary is read at each sentence's last word): each sentence alone and in padded batches
/// of 6 give the same hypotheses, on both searches.
#[test]
fn gated_feedback_encoder_ignores_padding() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(20, 20, 1..=11, 4).into_iter().map(|e| e.src).collect();
    for cell in [CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm] {
        let m = model_with(ArchName::Rnnenc, OutputState::Previous, cell, 1.8, &|c| {
            (c.enc_layers, c.dec_layers, c.stack) = (3, 1, nmt::config::StackKind::GatedFeedback)
        });
        for imp in [Impl::Fused, Impl::Composed] {
            let alone = SearchConfig { beam_size: 4, n_best: 2, batch_size: 1, ..SearchConfig::default() };
            let padded = SearchConfig { batch_size: 6, ..alone.clone() };
            assert_same(&run(&m, &srcs, &alone, imp), &run(&m, &srcs, &padded, imp), &format!("{cell:?} {imp:?}: alone, padded"));
        }
    }
}

/// grConv under RNNenc's decoder: the host encoder (`HostGrConv`) equals the candle one.
#[test]
fn fused_search_equals_candle_search_for_grconv() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(25, 20, 1..=11, 6).into_iter().map(|e| e.src).collect();
    for (cell, state) in [(CellKind::Gru(GruForm::Paper), OutputState::Current), (CellKind::Lstm, OutputState::Previous)] {
        let m = model_with(ArchName::Rnnenc, state, cell, 1.0, &|c| common::with_grconv(c));
        let cfg = SearchConfig { beam_size: 3, n_best: 2, batch_size: 7, ..SearchConfig::default() };
        let what = format!("grconv {cell:?} {state:?}");
        let (fused, ops) = (run(&m, &srcs, &cfg, Impl::Fused), run(&m, &srcs, &cfg, Impl::Composed));
        assert_same(&fused, &ops, &what);
        assert!(ops.iter().flatten().any(|h| h.finished) && ops.iter().flatten().any(|h| h.tokens.len() > 2), "{what}: degenerate");
    }
}

/// The copy mixture in the host search (`HostCopy` in `model/copy.rs`) equals the candle search, with
/// source words outside the target vocabulary (extended ids) and without alignments.
#[test]
fn fused_search_equals_candle_search_for_copy() {
    let mut srcs: Vec<Vec<u32>> = common::reversal_examples(25, 26, 1..=11, 8).into_iter().map(|e| e.src).collect();
    srcs.iter_mut().for_each(|s| s.iter_mut().for_each(|w| *w = (*w).min(29)));
    for (state, layers) in [(OutputState::Previous, 1), (OutputState::Current, 2)] {
        let m = model_with(ArchName::Rnnsearch, state, CellKind::Gru(GruForm::Paper), 1.0, &|c| {
            common::with_copy(c);
            (c.tgt_vocab, c.dec_layers) = (24, layers);
        });
        // Source words 24‥29 are outside the 24-word target vocabulary: extended ids from 24.
        let exts: Vec<Vec<u32>> = srcs.iter().map(|s| s.iter().map(|&w| if w >= 24 { 24 + (w - 24) % 3 } else { w }).collect()).collect();
        for alignments in [false, true] {
            let cfg = SearchConfig { beam_size: 3, n_best: 2, batch_size: 7, ..SearchConfig::default() };
            let searcher = Searcher::new(vec![&m]).unwrap();
            let run_ext = |imp| {
                gpu_layouts(imp, || searcher.search(&srcs, Some(&exts), &SearchOptions { cfg: cfg.clone(), alignments, imp }).unwrap())
            };
            let (fused, ops) = (run_ext(Impl::Fused), run_ext(Impl::Composed));
            assert_same(&fused, &ops, &format!("copy {state:?} layers {layers} alignments {alignments}"));
            assert!(ops.iter().flatten().any(|h| h.tokens.iter().any(|&t| t >= 24)), "no extended id was ever chosen");
        }
    }
}

/// The conditional GRU decoder's host step (`HostConditional`) in the search equals the candle
/// search: both GRU forms, both output states, a stack above it, each start summary
/// (`model.decoder_start`), greedy and beam, n-best.
#[test]
fn fused_search_equals_candle_search_for_the_conditional_decoder() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(20, 20, 1..=11, 5).into_iter().map(|e| e.src).collect();
    let (mut finished, mut long) = (false, false);
    use nmt::config::{OutputLayer, StartState};
    // The last setting is Marian's `s2s` shape: the tanh deep output on `s_i`, the mean start.
    for (form, state, layers, start, layer) in [
        (GruForm::Paper, OutputState::Previous, 1, StartState::FirstBackward, OutputLayer::Maxout),
        (GruForm::ResetAfter, OutputState::Current, 1, StartState::Mean, OutputLayer::Maxout),
        (GruForm::Paper, OutputState::Current, 2, StartState::LastForward, OutputLayer::Maxout),
        (GruForm::ResetAfter, OutputState::Previous, 2, StartState::FirstBackward, OutputLayer::Maxout),
        (GruForm::ResetAfter, OutputState::Current, 1, StartState::Mean, OutputLayer::Tanh),
    ] {
        let m = model_with(ArchName::Rnnsearch, state, CellKind::Gru(form), 1.0, &|c| {
            common::with_conditional(c);
            common::with_start(c, start);
            c.dec_layers = layers;
            c.output_layer = layer;
        });
        for (beam_size, n_best) in [(1, 1), (4, 2)] {
            let cfg = SearchConfig { beam_size, n_best, batch_size: 6, ..SearchConfig::default() };
            let what = format!("conditional {form:?} {state:?} layers {layers} {layer:?} beam {beam_size}");
            let (fused, ops) = (run(&m, &srcs, &cfg, Impl::Fused), run(&m, &srcs, &cfg, Impl::Composed));
            assert_same(&fused, &ops, &what);
            finished |= ops.iter().flatten().any(|h| h.finished && h.tokens.len() > 1);
            long |= ops.iter().flatten().any(|h| h.tokens.len() > 3);
        }
    }
    assert!(finished && long, "degenerate: no setting gave both finished and long hypotheses");
}

/// RNNenc's host step with the tanh deep output (`model.output_layer = "tanh"`) equals the
/// candle search, greedy and beam.
#[test]
fn fused_search_equals_candle_search_for_the_tanh_output() {
    let srcs: Vec<Vec<u32>> = common::reversal_examples(20, 20, 1..=11, 5).into_iter().map(|e| e.src).collect();
    let m = model_with(ArchName::Rnnenc, OutputState::Current, CellKind::Gru(GruForm::Paper), 1.0, &|c| {
        c.output_layer = nmt::config::OutputLayer::Tanh;
    });
    let mut long = false;
    for (beam_size, n_best) in [(1, 1), (4, 2)] {
        let cfg = SearchConfig { beam_size, n_best, batch_size: 6, ..SearchConfig::default() };
        let (fused, ops) = (run(&m, &srcs, &cfg, Impl::Fused), run(&m, &srcs, &cfg, Impl::Composed));
        assert_same(&fused, &ops, &format!("rnnenc tanh beam {beam_size}"));
        long |= ops.iter().flatten().any(|h| h.tokens.len() > 3);
    }
    assert!(long, "degenerate: no hypothesis longer than 3 tokens");
}

/// Layer normalisation (`model.layer_norm`, Marian's `s2s` with `--layer-normalization`): the
/// host search (the bidirectional kernel's forward pass with its gains, the normalised blocks
/// of `HostConditional`) equals the candle search, greedy and beam, with gains and biases
/// moved away from their initial ones and zeros so that each one's place is tested.
#[test]
fn fused_search_equals_candle_search_with_layer_norm() {
    use nmt::config::{OutputLayer, StartState};
    let srcs: Vec<Vec<u32>> = common::reversal_examples(20, 20, 1..=11, 5).into_iter().map(|e| e.src).collect();
    let m = model_with(ArchName::Rnnsearch, OutputState::Current, CellKind::Gru(GruForm::ResetAfter), 1.0, &|c| {
        common::with_conditional(c);
        common::with_start(c, StartState::Mean);
        c.output_layer = OutputLayer::Tanh;
        c.layer_norm = true;
    });
    for (k, (name, var)) in m.params.named_vars().into_iter().enumerate() {
        let moved = |base: f32| -> Vec<f32> { (0..var.elem_count()).map(|i| base + 0.3 * ((i * 7 + k * 3) as f32).sin()).collect() };
        let values = match name.rsplit('.').next().unwrap_or("") {
            g if g.starts_with("ln_") => moved(1.0),
            "b" | "b_h" | "b_a" | "b_s" => moved(0.0),
            _ => continue,
        };
        var.set(&Tensor::from_vec(values, var.shape(), &Device::Cpu).unwrap()).unwrap();
    }
    let mut long = false;
    for (beam_size, n_best) in [(1, 1), (4, 2)] {
        let cfg = SearchConfig { beam_size, n_best, batch_size: 6, ..SearchConfig::default() };
        let (fused, ops) = (run(&m, &srcs, &cfg, Impl::Fused), run(&m, &srcs, &cfg, Impl::Composed));
        assert_same(&fused, &ops, &format!("layer norm beam {beam_size}"));
        long |= ops.iter().flatten().any(|h| h.tokens.len() > 3);
    }
    assert!(long, "degenerate: no hypothesis longer than 3 tokens");
}
