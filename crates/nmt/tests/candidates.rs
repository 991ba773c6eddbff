//! The training softmax over a batch's candidate words (`train.candidates`,
//! `model/candidates.rs`): with `V′ = V` it is the full softmax bit for bit (loss and every
//! gradient, f32 and the bf16 products where this CPU runs them); on a strict `V′` the fused
//! form equals its composed twin; and the evaluation paths (scores, the dev loss) never see it.
//! The bf16 case sets its model's precision (`Seq2Seq::set_products`).
mod common;

use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use nmt::config::{ArchName, Impl, Precision};
use nmt::data::batch::Batch;
use nmt::kernels::cpu::engine::products::bf16_available;
use nmt::model::regularizer::{DropoutRates, Regularizer};
use nmt::model::{BatchTensors, CandidateSpec, Candidates, Seq2Seq};

const VOCAB: usize = 40;

/// A shipped-recipe-like RNNsearch (conditional decoder, label smoothing's caller decides),
/// tied or not, and a batch of 5 sentences.
fn setup(tied: bool, dtype: DType) -> (Seq2Seq, BatchTensors) {
    let mut cfg = common::small_config(ArchName::Rnnsearch, VOCAB, 6, 5);
    common::set_att_dim(&mut cfg, 4);
    common::with_conditional(&mut cfg);
    cfg.maxout_dim = 6;
    cfg.tie_target_embeddings = tied;
    cfg.init_std = 0.4;
    cfg.dropout = 0.2;
    cfg.recurrent_dropout = 0.2;
    let model = Seq2Seq::fresh(&cfg, 7, dtype, &Device::Cpu).unwrap();
    let batch: Batch = common::random_batch(5, VOCAB as u32, 2..7, 3);
    let bt = BatchTensors::new(&batch, dtype, &Device::Cpu).unwrap();
    (model, bt)
}

/// The training loss with `cands` (dropout and label smoothing on) and every parameter's gradient.
fn run(model: &Seq2Seq, bt: &BatchTensors, cands: Option<Candidates>) -> (Tensor, Vec<(String, Tensor)>) {
    let rates = DropoutRates { units: 0.2, recurrent: 0.2, ..Default::default() };
    let mut reg = Regularizer::new(rates, 0.1, 9, 4).with_candidates(cands);
    let loss = model.loss(bt, Some(&mut reg)).unwrap().mean;
    let grads = loss.backward().unwrap();
    let g = model
        .params
        .named_vars()
        .into_iter()
        .map(|(name, v)| (name, grads.get(v.as_tensor()).cloned().unwrap_or_else(|| v.zeros_like().unwrap())))
        .collect();
    (loss, g)
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.flatten_all().unwrap().to_dtype(DType::F32).unwrap().to_vec1::<f32>().unwrap().iter().map(|x| x.to_bits()).collect()
}

fn targets(bt_batch: &Batch) -> Vec<u32> {
    bt_batch.tgt_out.clone()
}

#[test]
fn the_whole_vocabulary_as_candidates_is_the_full_softmax_bit_for_bit() {
    let mut precisions = vec![Precision::F32];
    match bf16_available() {
        true => precisions.push(Precision::Bf16),
        false => eprintln!("bf16 case NOT RUN: this CPU runs no bf16 products (kernels/cpu/engine/products.rs)"),
    }
    for precision in precisions {
        for tied in [false, true] {
            let (mut model, bt) = setup(tied, DType::F32);
            assert_eq!(model.set_products(precision), precision);
            let (lf, gf) = run(&model, &bt, None);
            // V′ = V given, and drawn: every word outside the targets drawn, with weight one.
            let all = Candidates::from_ids((0..VOCAB as u32).collect(), VOCAB).unwrap();
            let spec = CandidateSpec { frequent: Arc::new(vec![]), sampled: VOCAB, vocab: VOCAB, proposal: None };
            let drawn = Candidates::for_batch(&targets(&common::random_batch(5, VOCAB as u32, 2..7, 3)), &spec, 1, 2).unwrap();
            assert!(drawn.log_weights().is_some());
            for (how, cands) in [("given", all), ("drawn", drawn)] {
                let (lc, gc) = run(&model, &bt, Some(cands));
                assert_eq!(bits(&lf), bits(&lc), "{precision:?} tied {tied} {how}: the loss");
                for ((name, a), (_, b)) in gf.iter().zip(&gc) {
                    assert_eq!(bits(a), bits(b), "{precision:?} tied {tied} {how}: the gradient of {name}");
                }
            }
        }
    }
}

#[test]
fn a_strict_list_gives_the_composed_twins_loss_and_gradients() {
    let batch = common::random_batch(5, VOCAB as u32, 2..7, 3);
    for (dtype, bound) in [(DType::F64, 1e-10), (DType::F32, 1e-5)] {
        for tied in [false, true] {
            let (mut model, bt) = setup(tied, dtype);
            // The batch's targets and two more words: well under the 40 of the vocabulary.
            let mut ids = targets(&batch);
            ids.extend([30, 31]);
            let strict = Candidates::from_ids(ids, VOCAB).unwrap();
            assert!(strict.len() < VOCAB - 10, "{} candidates", strict.len());
            let (lf, gf) = run(&model, &bt, Some(strict.clone()));
            model.set_impl(Impl::Composed);
            let (lc, gc) = run(&model, &bt, Some(strict.clone()));
            let mut worst = common::max_rel(&lf, &lc);
            for ((name, a), (_, b)) in gf.iter().zip(&gc) {
                let d = common::max_rel(a, b);
                assert!(d.is_finite(), "{name}: {d}");
                worst = worst.max(d);
            }
            eprintln!("{dtype:?} tied {tied}: fused against composed over {} candidates, {worst:.1e}", strict.len());
            assert!(worst < bound, "{dtype:?} tied {tied}: {worst:e}");
            // A strict list is a different loss: a smaller normaliser.
            let (lfull, gfull) = run(&model, &bt, None);
            let (a, b) = (
                lc.to_dtype(DType::F64).unwrap().to_scalar::<f64>().unwrap(),
                lfull.to_dtype(DType::F64).unwrap().to_scalar::<f64>().unwrap(),
            );
            assert!(a < b - 1e-3, "candidates {a} against the full softmax {b}");
            // The output bias outside V′ gets no gradient (its words were not in the softmax).
            let (_, gb) = gc.iter().find(|(n, _)| n.ends_with("b_g")).expect("the output bias");
            let gb = gb.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
            for w in (0..VOCAB).filter(|w| !strict.ids().contains(&(*w as u32))) {
                assert_eq!(gb[w], 0.0, "b_g[{w}] outside V′");
            }
            let (_, gfb) = gfull.iter().find(|(n, _)| n.ends_with("b_g")).unwrap();
            assert!(gfb.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap()[35] != 0.0, "the full softmax reaches every word");
        }
    }
}

/// The scores (`sentence_log_probs`, what `nmt score`, n-best rescoring and phrase tables call)
/// and the dev loss (`loss` without a regulariser, `train/validate.rs`) normalise over the whole
/// vocabulary; only a `Regularizer` carries `V′`, and only the training step builds one.
#[test]
fn evaluation_never_sees_the_candidate_list() {
    let batch = common::random_batch(5, VOCAB as u32, 2..7, 3);
    let (model, bt) = setup(true, DType::F64);
    let dev_loss = model.loss(&bt, None).unwrap().mean.to_scalar::<f64>().unwrap();
    let scores: f64 = model.sentence_log_probs(&bt).unwrap().iter().sum();
    assert!((dev_loss * bt_tokens(&batch) as f64 + scores).abs() < 1e-9, "the dev loss and the scores agree");
    // The same model's training loss without dropout or smoothing, over the batch's targets only.
    let strict = Candidates::from_ids(targets(&batch), VOCAB).unwrap();
    let mut reg = Regularizer::new(DropoutRates::default(), 0.0, 1, 0).with_candidates(Some(strict));
    let train = model.loss(&bt, Some(&mut reg)).unwrap().mean.to_scalar::<f64>().unwrap();
    assert!(train < dev_loss - 1e-3, "training over V′ {train} against the full softmax {dev_loss}");
    let mut plain = Regularizer::new(DropoutRates::default(), 0.0, 1, 0);
    let full = model.loss(&bt, Some(&mut plain)).unwrap().mean.to_scalar::<f64>().unwrap();
    assert_eq!(full.to_bits(), dev_loss.to_bits(), "without candidates the training loss is the dev loss");
}

fn bt_tokens(batch: &Batch) -> usize {
    batch.tgt_out.iter().filter(|&&w| w != nmt::data::PAD).count()
}
