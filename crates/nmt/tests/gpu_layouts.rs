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
