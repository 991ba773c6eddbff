//! The GPU form of either RNNsearch decoder's teacher forcing (`kernels::gpu::attention_op::attention_loop`:
//! Bahdanau's step with a GRU or an LSTM, and the conditional GRU, also layer-normalised).
//! What does not depend on the previous step runs before the loop on candle's ops, so on
//! cuBLAS as a few large products: `E y W + b` for every target position, `s_0`
//! (`attention_memory.rs`), the keys `h_j U_a` (layer-normalised where the model is, composed); the loop's output `[s_i; c_i]` is shifted to `s_{i-1}` on candle's ops
//! when the deep output reads it.
use candle_core::Tensor;

use super::attention_memory::ForcedIn;
use super::decoder::shift_outputs;
use super::decoder_loop_gpu::LoopWeights;
use super::rnn::Rnn;
use crate::config::OutputState;
use crate::error::Result;
use crate::kernels::gpu;
use crate::kernels::shapes::attn_dims::AttnDims;

/// Whether the GPU's loop and search step run Bahdanau's decoder cell `rnn`: a GRU or an
/// LSTM (layer normalisation is the conditional GRU's, `config/checks.rs`).
pub(crate) fn has_gpu_cell(rnn: &Rnn) -> bool {
    rnn.norm().is_none()
}

/// Teacher forcing through the GPU loop from `s_0`: `[s; c] (B·T, H + C)` as `x.output` says,
/// and `gie = E y W + b (B·T, G)`, the input terms of the cell that reads `E y` (the copy
/// mixture's `α` of the conditional GRU reads them again).
pub(crate) fn forced_loop(x: &ForcedIn, w: LoopWeights<'_>, s0: &Tensor, state_mask: Option<Vec<f32>>) -> Result<(Tensor, Tensor)> {
    let (b, t, _) = x.ey.dims3()?;
    let (s, c) = (x.ann.dim(1)?, x.ann.dim(2)?);
    let reads_ey = w.first.unwrap_or(w.cell);
    let n = reads_ey.hidden();
    // `E y W + b` and `U_a h_j`, each layer-normalised where the model is.
    let gie = reads_ey.project(x.ey)?.reshape((b * t, reads_ey.kind().gates() * n))?;
    let keys = w.att.precompute(x.ann)?;
    let enc = Tensor::cat(&[x.ann, &keys], 2)?;
    let seq = Tensor::cat(&[gie.flatten_all()?, s0.flatten_all()?], 0)?;
    let spec = w.dims(c)?.at(b, t, s, x.src.lens);
    let out = gpu::attention_op::attention_loop(&seq, &enc, &w.packed()?, AttnDims { state_mask, ..spec })?;
    let state_ctx = match x.output {
        OutputState::Current => out,
        OutputState::Previous => {
            let states = out.narrow(1, 0, n)?.reshape((b, t, n))?;
            let prev = shift_outputs(&states, s0, OutputState::Previous)?.reshape((b * t, n))?;
            Tensor::cat(&[prev, out.narrow(1, n, c)?], 1)?
        }
    };
    Ok((state_ctx, gie))
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor, Var};
    use rand::{Rng, SeedableRng};

    use crate::config::{CellKind, GruForm};

    fn random(rng: &mut impl Rng, shape: &[usize], scale: f32) -> Var {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
        Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
    }

    /// RNNsearch's decoders (`attention_decoder.rs`, `conditional_decoder.rs`): their GPU form
    /// (`kernels::gpu::attention_op::attention_loop`, run emulated) against their fused CPU form, in both GRU
    /// forms (Bahdanau's also with an LSTM, the conditional GRU's also layer-normalised), both
    /// output states, with and without recurrent dropout: the outputs `[s; c]`, `s_0`, and
    /// the gradients of every parameter, the embedded targets and the annotations.
    #[test]
    fn emulated_gpu_attention_decoders_equal_the_fused_decoders() {
        for (conditional, norm) in [(false, false), (true, false), (true, true)] {
            check_decoder(conditional, norm);
        }
    }

    /// The search's GPU step (`StepMemory::step`, `kernels::gpu::attention_op::attention_step` run
    /// emulated) against each decoder's composed step, both GRU forms (Bahdanau's also with an
    /// LSTM, the conditional GRU also layer-normalised), on rows gathered as a
    /// beam gathers them (`Encoded::select`: repeated sentences of different lengths): `s_i`,
    /// `c_i` and `α_i`.
    #[test]
    fn emulated_gpu_search_step_equals_the_composed_step() {
        use crate::config::StartState;
        use crate::model::attention_decoder::AttentionDecoder;
        use crate::model::conditional_decoder::ConditionalDecoder;
        use crate::model::decoder::{AttentionMemory, DecoderDims, Encoded, Memory, StepOut};
        use crate::model::decoder_loop_gpu::StepMemory;
        use crate::model::params::Params;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(60);
        let (b, s, m, h, a) = (3usize, 5usize, 4usize, 6usize, 7usize);
        let (lens, rows) = ([5usize, 2, 3], [2usize, 0, 0, 1, 2]);
        let mask: Vec<f32> = (0..b * s).map(|i| if i % s < lens[i / s] { 1.0 } else { 0.0 }).collect();
        let src_mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap();
        let ann = random(&mut rng, &[b, s, 2 * h], 1.0);
        let (ey, prev) = (random(&mut rng, &[rows.len(), m], 1.0), random(&mut rng, &[rows.len(), h], 1.0));
        let prev2 = random(&mut rng, &[rows.len(), 2 * h], 1.0);
        let ey = ey.as_tensor().unsqueeze(1).unwrap();
        // The rows of a memory with the GPU step's part, and the same rows without it.
        let gathered = |mut mem: AttentionMemory, gpu: StepMemory| -> (AttentionMemory, StepMemory) {
            mem.gpu = Some(gpu);
            let enc =
                Encoded { memory: Memory::Attention(mem), init: Tensor::zeros((b, h), candle_core::DType::F32, &Device::Cpu).unwrap() };
            let Memory::Attention(mut sel) = enc.select(&rows).unwrap().memory else { unreachable!() };
            let gpu = sel.gpu.take().unwrap();
            (sel, gpu)
        };
        let (paper, reset_after) = (CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter));
        for (conditional, norm) in [(false, false), (true, false), (true, true)] {
            let kinds = match (conditional, norm) {
                (false, _) => vec![paper, reset_after, CellKind::Lstm],
                (true, false) => vec![paper, reset_after],
                (true, true) => vec![reset_after],
            };
            for form in kinds {
                // An LSTM's state is `[s; m]`.
                let prev = if form == CellKind::Lstm { &prev2 } else { &prev };
                let params = Params::fresh(5, 0.4, false, candle_core::DType::F32, &Device::Cpu);
                let dims = DecoderDims { emb: m, enc: h, hidden: h, kind: form };
                let pb = params.builder();
                let run = |step: &dyn Fn(&AttentionMemory, &Tensor) -> StepOut, mem: AttentionMemory, gpu: StepMemory, gi: Tensor| {
                    let (sel, gpu) = gathered(mem, gpu);
                    (step(&sel, &gi), gpu.step(&gi, prev.as_tensor()).unwrap())
                };
                let (composed, gpu) = if conditional {
                    let d = ConditionalDecoder::new(dims, a, StartState::Mean, norm, &pb).unwrap();
                    shift(&params);
                    let mem = d.memory(ann.as_tensor(), &src_mask).unwrap();
                    let gpu = StepMemory::new(d.loop_weights(), ann.as_tensor(), &mem.uh, &lens).unwrap();
                    let gi = d.project(&ey).unwrap().squeeze(1).unwrap();
                    run(&|sel, gi| d.step(sel, gi, prev.as_tensor(), None).unwrap(), mem, gpu, gi)
                } else {
                    let d = AttentionDecoder::new(dims, a, StartState::FirstBackward, &pb).unwrap();
                    shift(&params);
                    let mem = d.memory(ann.as_tensor(), &src_mask).unwrap();
                    let gpu = StepMemory::new(d.loop_weights(), ann.as_tensor(), &mem.uh, &lens).unwrap();
                    let gi = d.rnn.project(&ey).unwrap().squeeze(1).unwrap();
                    run(&|sel, gi| d.step(sel, gi, prev.as_tensor(), None).unwrap(), mem, gpu, gi)
                };
                let want = [composed.state, composed.ctx.unwrap(), composed.alpha.unwrap()];
                for (k, (want, got)) in want.iter().zip(&gpu).enumerate() {
                    assert_eq!(want.dims(), got.dims(), "conditional {conditional} norm {norm} {form:?}: output {k}");
                    let [want, got] = [want, got].map(|t| t.flatten_all().unwrap().to_vec1::<f32>().unwrap());
                    for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (x - y).abs() <= 2e-5 * (1.0 + y.abs()),
                            "conditional {conditional} norm {norm} {form:?}: output {k} [{i}]: gpu {x}, composed {y}"
                        );
                    }
                }
            }
        }
    }

    /// Shifts every parameter by noise, so that no bias is zero.
    fn shift(params: &crate::model::params::Params) {
        let mut noise = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for (_, v) in params.named_vars() {
            v.set(&(v.as_tensor() + random(&mut noise, v.dims(), 0.2).as_tensor()).unwrap()).unwrap();
        }
    }

    fn check_decoder(conditional: bool, norm: bool) {
        use crate::config::{OutputState, StartState};
        use crate::model::attention_decoder::AttentionDecoder;
        use crate::model::attention_memory::{ForcedDecoder, ForcedIn};
        use crate::model::conditional_decoder::ConditionalDecoder;
        use crate::model::decoder::DecoderDims;
        use crate::model::encoder::Source;
        use crate::model::params::Params;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(58);
        let (b, t, s, m, h, a) = (3usize, 4usize, 5usize, 4usize, 6usize, 7usize);
        let lens = [5usize, 2, 3];
        let mask: Vec<f32> = (0..b * s).map(|i| if i % s < lens[i / s] { 1.0 } else { 0.0 }).collect();
        let src_mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap();
        let (ey, ann) = (random(&mut rng, &[b, t, m], 1.0), random(&mut rng, &[b, s, 2 * h], 1.0));
        let w1 = random(&mut rng, &[b * t, 3 * h], 1.0);
        let w2 = random(&mut rng, &[b, h], 1.0);
        let (paper, reset_after) = (CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter));
        let kinds = match (conditional, norm) {
            (false, _) => vec![paper, reset_after, CellKind::Lstm],
            (true, false) => vec![paper, reset_after],
            (true, true) => vec![reset_after],
        };
        for form in kinds {
            for output in [OutputState::Current, OutputState::Previous] {
                for dropout in [false, true] {
                    let state_mask: Vec<f32> = (0..b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
                    let run = |gpu: bool| -> Vec<Vec<f32>> {
                        let params = Params::fresh(5, 0.4, false, candle_core::DType::F32, &Device::Cpu);
                        let dims = DecoderDims { emb: m, enc: h, hidden: h, kind: form };
                        let pb = params.builder();
                        let dec: Box<dyn ForcedDecoder> = match conditional {
                            true => Box::new(ConditionalDecoder::new(dims, a, StartState::Mean, norm, &pb).unwrap()),
                            false => Box::new(AttentionDecoder::new(dims, a, StartState::FirstBackward, &pb).unwrap()),
                        };
                        // Biases start at zero: shift every parameter so that none is.
                        let mut noise = rand_chacha::ChaCha8Rng::seed_from_u64(9);
                        for (_, v) in params.named_vars() {
                            let shifted = (v.as_tensor() + random(&mut noise, v.dims(), 0.2).as_tensor()).unwrap();
                            v.set(&shifted).unwrap();
                        }
                        let src = Source { mask: &src_mask, lens: &lens };
                        let x = ForcedIn { ey: ey.as_tensor(), ann: ann.as_tensor(), src, output, want_alpha: false };
                        let sm = dropout.then(|| state_mask.clone());
                        let f =
                            if gpu { dec.forward_gpu(&x, sm) } else { dec.forward_fused(&x, sm, crate::config::Precision::F32) }.unwrap();
                        let loss = ((&f.state_ctx * w1.as_tensor()).unwrap().sum_all().unwrap()
                            + (&f.start * w2.as_tensor()).unwrap().sum_all().unwrap())
                        .unwrap();
                        let grads = loss.backward().unwrap();
                        let mut all = vec![f.state_ctx.flatten_all().unwrap().to_vec1::<f32>().unwrap()];
                        let vars = params.named_vars().into_iter().map(|(_, v)| v).chain([ey.clone(), ann.clone()]);
                        for v in vars {
                            all.push(grads.get(v.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap());
                        }
                        all
                    };
                    let got =
                        crate::kernels::gpu::emulated::same_bits_in_any_order(crate::kernels::gpu::launch::Module::Attention, || run(true));
                    let want = run(false);
                    assert_eq!(want.len(), got.len());
                    for (k, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g.len(), e.len());
                        for (i, (x, y)) in g.iter().zip(e).enumerate() {
                            let ok = (x - y).abs() <= 2e-5 * (1.0 + y.abs());
                            assert!(
                                ok,
                                "conditional {conditional} norm {norm} {form:?} {output:?} dropout {dropout}: tensor {k} [{i}]: gpu {x}, fused {y}"
                            );
                        }
                    }
                }
            }
        }
    }
}
