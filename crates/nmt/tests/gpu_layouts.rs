//! What a GPU runs, checked on the CPU (issue 57, point 1): the composed path of every shipped
//! recipe (`configs/*.toml`, shrunk) — the training loss with the recipe's dropout and label
//! smoothing, its backward pass, gradient clipping and the optimiser's update, then greedy and
//! beam search — inside `cuda_layouts::checked` (vendor/candle-core/NMT-PATCH.md), where every
//! matrix product refuses the operand layouts candle's CUDA matmul refuses and the fused CPU
//! ops refuse to run (they have no GPU form). Twice a strided view passed every CPU test and
//! failed at the first GPU update; here it fails on any machine. `tests/fused_model.rs` and
//! `tests/infer.rs` run the composed loss and search of the other variants (gated feedback,
//! copy, tanh output, decoder starts) under the same check.
mod common;

use candle_core::cpu_backend::cuda_layouts::checked;
use candle_core::{DType, Device};
use nmt::config::{Impl, SearchConfig};
use nmt::data::batch::{Batch, Example};
use nmt::model::regularizer::{DropoutRates, Regularizer};
use nmt::model::{BatchTensors, Seq2Seq};
use nmt::search::{SearchOptions, Searcher};
use nmt::train::optim::Optimizer;

#[test]
fn every_shipped_recipe_trains_and_searches_as_a_gpu_allows() {
    let configs = common::shipped_configs(20);
    assert!(configs.len() >= 9, "{} configs", configs.len());
    let examples = common::reversal_examples(6, 14, 2..=7, 4);
    let rows: Vec<&Example> = examples.iter().collect();
    let batch = Batch::from_examples(&rows, (0..rows.len()).collect());
    let srcs: Vec<Vec<u32>> = examples.iter().map(|e| e.src.clone()).collect();
    for (name, cfg) in &configs {
        let mut model = Seq2Seq::fresh(&cfg.model, 3, DType::F32, &Device::Cpu).unwrap();
        model.set_impl(Impl::Composed);
        let train = nmt::config::TrainConfig { imp: Impl::Composed, ..cfg.train.clone() };
        let rates = DropoutRates {
            units: cfg.model.dropout,
            src_words: train.src_word_dropout,
            tgt_words: train.tgt_word_dropout,
            recurrent: cfg.model.recurrent_dropout,
        };
        let bt = BatchTensors::new(&batch, DType::F32, &Device::Cpu).unwrap();
        let mut opt = Optimizer::new(model.params.named_vars(), &train).unwrap();
        let loss = checked(|| -> candle_core::Result<f32> {
            let mut reg = Regularizer::new(rates, train.label_smoothing, 5, 1);
            let loss = model.loss(&bt, Some(&mut reg)).map_err(candle_core::Error::wrap)?.mean;
            let grads = loss.backward()?;
            opt.clip(&grads).map_err(candle_core::Error::wrap)?;
            opt.update(&grads).map_err(candle_core::Error::wrap)?;
            loss.to_scalar::<f32>()
        })
        .unwrap_or_else(|e| panic!("{name}: training step: {e}"));
        assert!(loss.is_finite(), "{name}: loss {loss}");
        for beam_size in [1, 5] {
            let opts = SearchOptions { cfg: SearchConfig { beam_size, ..SearchConfig::default() }, alignments: true, imp: Impl::Composed };
            let found = checked(|| Searcher::new(vec![&model]).unwrap().search(&srcs, None, &opts))
                .unwrap_or_else(|e| panic!("{name}: beam {beam_size}: {e}"));
            assert_eq!(found.len(), srcs.len(), "{name}");
        }
        eprintln!("{name}: composed step and search pass the GPU's layout check (loss {loss:.4})");
    }
}

/// A loss and each parameter's gradient, by name.
type LossGrads = (f32, Vec<(String, Vec<f32>)>);

/// The GPU form of every shipped recipe's training loss (`Seq2Seq::emulate_gpu`: the GPU kernels
/// of `kernels::gpu` run emulated, the other layers composed, all inside the layout check)
/// against its fused CPU form, with the recipe's dropout (the same masks) and label smoothing:
/// the loss and every gradient within 1e-4 (relative), what issue 57 asks of a GPU; and its
/// greedy and beam search (the encoder's GPU form) find the composed search's translations.
/// The weights start at N(0, 0.3²), not at the recipes' 0.01: at that scale every state is
/// near zero and a wrong recurrence (a gated-feedback cell that halves its previous state,
/// 2026-11-28) moved the loss and the gradients by less than the bound.
#[test]
fn every_shipped_recipes_gpu_form_equals_its_fused_form() {
    let configs = common::with_gpu_variants(common::shipped_configs(20));
    let examples = common::reversal_examples(6, 14, 2..=7, 4);
    let rows: Vec<&Example> = examples.iter().collect();
    let batch = Batch::from_examples(&rows, (0..rows.len()).collect());
    for (name, cfg) in &configs {
        let rates = DropoutRates {
            units: cfg.model.dropout,
            src_words: cfg.train.src_word_dropout,
            tgt_words: cfg.train.tgt_word_dropout,
            recurrent: cfg.model.recurrent_dropout,
        };
        let loss_cfg = nmt::config::ModelConfig { init: nmt::config::WeightInit::Paper, init_std: 0.3, ..cfg.model.clone() };
        let run = |gpu: bool| -> LossGrads {
            let mut model = Seq2Seq::fresh(&loss_cfg, 3, DType::F32, &Device::Cpu).unwrap();
            if gpu {
                model.emulate_gpu();
            }
            let bt = BatchTensors::new(&batch, DType::F32, &Device::Cpu).unwrap();
            let body = || -> candle_core::Result<LossGrads> {
                let mut reg = Regularizer::new(rates, cfg.train.label_smoothing, 5, 1);
                let loss = model.loss(&bt, Some(&mut reg)).map_err(candle_core::Error::wrap)?.mean;
                let grads = loss.backward()?;
                let mut all = Vec::new();
                for (k, v) in model.params.named_vars() {
                    let g = match grads.get(v.as_tensor()) {
                        Some(g) => g.flatten_all()?.to_vec1::<f32>()?,
                        None => vec![0.0; v.elem_count()],
                    };
                    all.push((k, g));
                }
                Ok((loss.to_scalar::<f32>()?, all))
            };
            match gpu {
                true => checked(body).unwrap_or_else(|e| panic!("{name}: the GPU form: {e}")),
                false => body().unwrap(),
            }
        };
        let ((want, wg), (got, gg)) = (run(false), run(true));
        assert!((want - got).abs() <= 1e-4 * want.abs(), "{name}: loss gpu {got}, fused {want}");
        let mut worst = 0f32;
        for ((k, e), (_, a)) in wg.iter().zip(&gg) {
            let scale = e.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-3);
            for (x, y) in a.iter().zip(e) {
                let rel = (x - y).abs() / scale;
                worst = worst.max(rel);
                assert!(rel <= 1e-4, "{name}: {k}: gpu {x}, fused {y} (tensor max {scale})");
            }
        }
        // The candle search with the encoder's GPU form (`Seq2Seq::encode`) finds what the
        // composed search finds.
        let srcs: Vec<Vec<u32>> = examples.iter().map(|e| e.src.clone()).collect();
        // Weights of σ 0.3 (as tests/cuda.rs's search): at the recipes' own small initialisation
        // every source gets nearly the same output, whatever the encoder computes.
        let search_cfg = nmt::config::ModelConfig { init_std: 0.3, ..cfg.model.clone() };
        let search = |gpu: bool, beam_size: usize| -> Vec<Vec<u32>> {
            let mut model = Seq2Seq::fresh(&search_cfg, 3, DType::F32, &Device::Cpu).unwrap();
            match gpu {
                true => model.emulate_gpu(),
                false => model.set_impl(Impl::Composed),
            }
            let opts = SearchOptions { cfg: SearchConfig { beam_size, ..SearchConfig::default() }, alignments: false, imp: Impl::Composed };
            let run = || Searcher::new(vec![&model]).unwrap().search(&srcs, None, &opts);
            let found = if gpu { checked(run) } else { run() }.unwrap_or_else(|e| panic!("{name}: beam {beam_size}: {e}"));
            found.into_iter().map(|h| h[0].tokens.clone()).collect()
        };
        for beam in [1, 5] {
            assert_eq!(search(true, beam), search(false, beam), "{name}: beam {beam}");
        }
        eprintln!("{name}: the GPU form's loss {got:.6} (fused {want:.6}); largest gradient difference {worst:.2e} of its tensor's max; its search finds the composed search's");
    }
}
