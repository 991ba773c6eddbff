//! The GPU form of either RNNsearch decoder's teacher forcing (`kernels::gpu::attention_loop`:
//! Bahdanau's step and the conditional GRU, GRUs without layer normalisation). What does not
//! depend on the previous step runs before the loop on candle's ops, so on cuBLAS as a few
//! large products: `E y W + b` for every target position, `s_0` (`attention_memory.rs`), the
//! keys `h_j U_a`; the loop's output `[s_i; c_i]` is shifted to `s_{i-1}` on candle's ops
//! when the deep output reads it.
use candle_core::Tensor;

use super::attention::Attention;
use super::attention_memory::ForcedIn;
use super::decoder::shift_outputs;
use super::rnn::Rnn;
use crate::config::{CellKind, OutputState, StartState};
use crate::error::{Error, Result};
use crate::kernels::attn_decoder::AttnDims;
use crate::kernels::gpu;

/// A decoder's weights as the loop packs them (`kernels/gpu/attention.rs`).
pub(crate) struct LoopWeights<'a> {
    pub att: &'a Attention,
    /// The cell that reads the context: Bahdanau's only cell, the conditional GRU's second.
    pub cell: &'a Rnn,
    /// `W_c (C, G)`: Bahdanau's `C`, the conditional GRU's second cell's input weights (whose
    /// bias, `b₂`, the loop reads from `cell`).
    pub wc: &'a Tensor,
    /// The conditional GRU's first cell (reads `E y`), or `None` for Bahdanau's.
    pub first: Option<&'a Rnn>,
}

/// Whether `rnn` has the GPU's kernels: a GRU without layer normalisation.
pub(crate) fn has_gpu_cell(rnn: &Rnn) -> bool {
    matches!(rnn.kind(), CellKind::Gru(_)) && rnn.norm().is_none()
}

/// Teacher forcing through the GPU loop from `s_0`: `[s; c] (B·T, H + C)` as `x.output` says,
/// and `gie = E y W + b (B·T, G)`, the input terms of the cell that reads `E y` (the copy
/// mixture's `α` of the conditional GRU reads them again).
pub(crate) fn forced_loop(x: &ForcedIn, w: LoopWeights<'_>, s0: &Tensor, state_mask: Option<Vec<f32>>) -> Result<(Tensor, Tensor)> {
    let (b, t, m) = x.ey.dims3()?;
    let (s, c) = (x.ann.dim(1)?, x.ann.dim(2)?);
    let reads_ey = w.first.unwrap_or(w.cell);
    let (n, CellKind::Gru(form)) = (reads_ey.hidden(), reads_ey.kind()) else {
        return Err(Error::Config("the GPU's decoder loop runs GRUs only".into()));
    };
    let att = w.att;
    let a = att.u_a.dim(1)?;
    let (dw, db) = reads_ey.input_weights();
    let gie = x.ey.reshape((b * t, m))?.matmul(dw)?.broadcast_add(db)?;
    let keys = x.ann.reshape((b * s, c))?.matmul(&att.u_a)?.reshape((b, s, a))?;
    let enc = Tensor::cat(&[x.ann, &keys], 2)?;
    let seq = Tensor::cat(&[gie.flatten_all()?, s0.flatten_all()?], 0)?;
    let (u, b_h) = (w.cell.u_cat()?, w.cell.bias_h()?);
    let mut parts = vec![att.w_a.clone(), att.b_a.clone(), att.v_a.clone(), w.wc.clone(), u, b_h];
    if let Some(first) = w.first {
        parts.extend([first.u_cat()?, first.bias_h()?, w.cell.input_weights().1.clone()]);
    }
    let parts = parts.iter().map(|p| p.flatten_all()).collect::<candle_core::Result<Vec<_>>>()?;
    let lens = x.src.lens.to_vec();
    // The CPU op's sizes; `output` and `start` are this function's (the loop ignores them).
    let spec = AttnDims {
        batch: b,
        tgt_len: t,
        src_len: s,
        hidden: n,
        ctx: c,
        att: a,
        lens,
        kind: CellKind::Gru(form),
        output: OutputState::Current,
        state_mask,
        conditional: w.first.is_some(),
        start: StartState::FirstBackward,
        norm: false,
    };
    let out = gpu::attention_loop(&seq, &enc, &Tensor::cat(&parts, 0)?, spec)?;
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
    /// (`kernels::gpu::attention_loop`, run emulated) against their fused CPU form, in both GRU
    /// forms, both output states, with and without recurrent dropout: the outputs `[s; c]`,
    /// `s_0`, and the gradients of every parameter, the embedded targets and the annotations.
    #[test]
    fn emulated_gpu_attention_decoders_equal_the_fused_decoders() {
        for conditional in [false, true] {
            check_decoder(conditional);
        }
    }

    fn check_decoder(conditional: bool) {
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
        for form in [GruForm::Paper, GruForm::ResetAfter] {
            for output in [OutputState::Current, OutputState::Previous] {
                for dropout in [false, true] {
                    let state_mask: Vec<f32> = (0..b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
                    let run = |gpu: bool| -> Vec<Vec<f32>> {
                        let params = Params::fresh(5, 0.4, false, candle_core::DType::F32, &Device::Cpu);
                        let dims = DecoderDims { emb: m, enc: h, hidden: h, kind: CellKind::Gru(form) };
                        let pb = params.builder();
                        let dec: Box<dyn ForcedDecoder> = match conditional {
                            true => Box::new(ConditionalDecoder::new(dims, a, StartState::Mean, false, &pb).unwrap()),
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
                        let f = if gpu { dec.forward_gpu(&x, sm) } else { dec.forward_fused(&x, sm) }.unwrap();
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
                    let (want, got) = (run(false), run(true));
                    assert_eq!(want.len(), got.len());
                    for (k, (g, e)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g.len(), e.len());
                        for (i, (x, y)) in g.iter().zip(e).enumerate() {
                            let ok = (x - y).abs() <= 2e-5 * (1.0 + y.abs());
                            assert!(
                                ok,
                                "conditional {conditional} {form:?} {output:?} dropout {dropout}: tensor {k} [{i}]: gpu {x}, fused {y}"
                            );
                        }
                    }
                }
            }
        }
    }
}
