//! Test support for the layer files' own tests: each layer's host form against its composed
//! form on random weights, so that when one breaks, its layer's test fails, not only the
//! whole-search comparison (`tests/infer.rs`).
use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::params::{ParamBuilder, Params};
use crate::error::Result;

/// A layer built by `build` with every parameter random, biases included: drawn by the layer's
/// own initialisation (σ = 0.3), then each tensor shifted by noise of σ = 0.2 and the layer
/// built again from those tensors, so no bias or gate starts at zero.
pub fn random_layer<T>(seed: u64, build: impl Fn(&ParamBuilder) -> Result<T>) -> T {
    let fresh = Params::fresh(seed, 0.3, true, DType::F32, &Device::Cpu);
    build(&fresh.builder()).expect("build the layer");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let noise = Normal::new(0.0f32, 0.2).expect("σ > 0");
    let tensors = fresh
        .named_vars()
        .into_iter()
        .map(|(k, v)| {
            let t = v.as_tensor();
            let shifted: Vec<f32> = t.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().map(|x| x + noise.sample(&mut rng)).collect();
            (k, Tensor::from_vec(shifted, t.shape(), &Device::Cpu).unwrap())
        })
        .collect();
    let params = Params::from_tensors(tensors, DType::F32, &Device::Cpu);
    build(&params.builder()).expect("rebuild the layer")
}

/// A random `f32` tensor of `shape`, N(0, 1), and its values row-major.
pub fn randn(seed: u64, shape: &[usize]) -> (Tensor, Vec<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, 1.0).expect("σ > 0");
    let v: Vec<f32> = (0..shape.iter().product::<usize>()).map(|_| normal.sample(&mut rng)).collect();
    (Tensor::from_vec(v.clone(), shape, &Device::Cpu).unwrap(), v)
}

/// A tensor's values as host `f32`, row-major.
pub fn values(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_dtype(DType::F32).unwrap().to_vec1::<f32>().unwrap()
}

/// `a` and `b` agree element by element within `tol` (absolute), with the place that differs.
pub fn assert_close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol, "{what}: element {i} differs: {x} against {y}");
    }
}

/// A decoder's upper layers (`stack`, cell `kind`, `n` units) step on the host as the composed
/// stack does: from random states before the step and a random new first-layer state, the
/// upper layers' new states and the top output.
pub fn check_upper_step(kind: crate::config::CellKind, stack: super::encoder::Stack, seed: u64) {
    use super::upper::UpperLayers;
    use super::upper_host::HostUpper;
    let (n, r) = (4, 5);
    let w = if kind == crate::config::CellKind::Lstm { 2 * n } else { n };
    let upper = random_layer(seed, |pb| UpperLayers::new(n, kind, stack, pb));
    let (prev, prev_v) = randn(seed + 1, &[r, stack.layers * w]);
    let (first, first_v) = randn(seed + 2, &[r, w]);
    let x = first.narrow(1, 0, n).unwrap().contiguous().unwrap();
    let h1_prev = prev.narrow(1, 0, n).unwrap().contiguous().unwrap();
    let rest = prev.narrow(1, w, (stack.layers - 1) * w).unwrap().contiguous().unwrap();
    let (new_rest, top) = upper.step(&x, &h1_prev, &rest).unwrap();
    let host = HostUpper::new(&upper, kind, n).unwrap();
    let (full, host_top) = host.step(&prev_v, &first_v, 1);
    let host_rest: Vec<f32> = full.chunks_exact(stack.layers * w).flat_map(|row| row[w..].iter().copied()).collect();
    let what = format!("{kind:?} {stack:?}");
    assert_close(&format!("{what}: states"), &host_rest, &values(&new_rest), 1e-5);
    assert_close(&format!("{what}: top output"), &host_top, &values(&top), 1e-5);
}

/// Sizes of the decoder twins' checks: embedding, hidden, attention, maxout, vocabulary, rows,
/// source length; rows 0–1 read sentence 0 (all `S` words), rows 2–3 sentence 1 (3 words).
const M: usize = 3;
const N: usize = 4;
const A: usize = 5;
const L: usize = 3;
const V: usize = 7;
const S: usize = 6;
const SENT: [usize; 4] = [0, 0, 1, 1];
const LENS: [usize; 2] = [S, 3];

/// A one-layer decoder's config for the host forms that read one.
fn decoder_config(kind: crate::config::CellKind, which: crate::config::OutputState) -> crate::config::ModelConfig {
    let mut cfg = crate::config::ModelConfig::preset("rnnsearch-small").unwrap();
    (cfg.emb_dim, cfg.hidden_dim, cfg.maxout_dim, cfg.tgt_vocab, cfg.dec_layers, cfg.output_state) = (M, N, L, V, 1, which);
    (cfg.cell, cfg.gru) = match kind {
        crate::config::CellKind::Lstm => (crate::config::Cell::Lstm, cfg.gru),
        crate::config::CellKind::Gru(form) => (crate::config::Cell::Gru, form),
    };
    cfg
}

/// Rows `SENT` of a batch tensor.
fn rows_of(t: &Tensor) -> Tensor {
    t.index_select(&Tensor::new(&[0u32, 0, 1, 1], &Device::Cpu).unwrap(), 0).unwrap()
}

/// The deep output's composed pre-activation `s O_h + E y O_y + O_c c + b` `(R, 2l)`, `s` the
/// output before the step (`s_prev`) or after it (the new state's `h` part), as `which` says.
fn composed_pre(
    out: &super::output::DeepOutput,
    which: crate::config::OutputState,
    (s_prev, new_state): (&Tensor, &Tensor),
    ey: &Tensor,
    ctx_proj: &Tensor,
) -> Vec<f32> {
    let s = match which {
        crate::config::OutputState::Previous => s_prev.clone(),
        crate::config::OutputState::Current => new_state.narrow(1, 0, N).unwrap().contiguous().unwrap(),
    };
    use super::layer_norm::maybe_norm;
    let (gh, gy) = (out.norm.as_ref().map(|g| &g.h), out.norm.as_ref().map(|g| &g.y));
    let (sh, yy) = (maybe_norm(s.matmul(&out.o_h).unwrap(), gh).unwrap(), maybe_norm(ey.matmul(&out.o_y).unwrap(), gy).unwrap());
    values(&(sh + yy).unwrap().broadcast_add(ctx_proj).unwrap().broadcast_add(&out.b).unwrap())
}

/// What the host step reads for the rows `SENT`: the outputs and states before the step and the
/// previous words' embeddings, the deep output's state term added for one layer as `which` says.
fn host_in<'a>(s_prev: &'a [f32], state: &'a [f32], ey: &'a [f32], which: crate::config::OutputState) -> super::decoder::HostStepIn<'a> {
    let width = state.len() / SENT.len();
    // The decoders' word terms multiply `ey` (no table over a vocabulary here), so the ids are not read.
    super::decoder::HostStepIn { s_prev, state, width, y: &[0; SENT.len()], ey, sent: &SENT, out_state: Some(which), threads: 1 }
}

/// The random state before a step `(R, w)`, its output part `(R, n)`, and both as values.
fn prev_state(kind: crate::config::CellKind, seed: u64) -> (Tensor, Tensor, Vec<f32>, Vec<f32>) {
    let w = if kind == crate::config::CellKind::Lstm { 2 * N } else { N };
    let (state, sv) = randn(seed, &[SENT.len(), w]);
    let s = state.narrow(1, 0, N).unwrap().contiguous().unwrap();
    let s_v = values(&s);
    (state, s, sv, s_v)
}

/// What both RNNsearch decoders' step checks share: a random deep output, annotations of the
/// sentences `LENS` with their mask, the previous states and embeddings of the rows `SENT`.
struct AttnCase {
    cfg: crate::config::ModelConfig,
    out: super::output::DeepOutput,
    ann: (Tensor, Vec<f32>),
    mask: Tensor,
    state: (Tensor, Tensor, Vec<f32>, Vec<f32>),
    ey: (Tensor, Vec<f32>),
}

/// `norm`: the deep output with layer normalisation (and the config saying so).
fn attn_case(kind: crate::config::CellKind, which: crate::config::OutputState, seed: u64, norm: bool) -> AttnCase {
    use super::output::{DeepOutput, OutputDims};
    let out = random_layer(seed + 1, |pb| {
        DeepOutput::new(
            OutputDims { state: N, emb: M, ctx: 2 * N, maxout: L, vocab: V, layer: crate::config::OutputLayer::Maxout, norm },
            None,
            pb,
        )
    });
    let mask: Vec<f32> = LENS.iter().flat_map(|&l| (0..S).map(move |j| if j < l { 1.0 } else { 0.0 })).collect();
    let mask = Tensor::from_vec(mask, (LENS.len(), S), &Device::Cpu).unwrap();
    let (ann, state, ey) = (randn(seed + 2, &[LENS.len(), S, 2 * N]), prev_state(kind, seed + 3), randn(seed + 4, &[SENT.len(), M]));
    let mut cfg = decoder_config(kind, which);
    cfg.layer_norm = norm;
    AttnCase { cfg, out, ann, mask, state, ey }
}

/// A decoder's memory of the case's sentences, at the rows `SENT`.
fn memory_rows(mem: &super::decoder::AttentionMemory) -> super::decoder::AttentionMemory {
    super::decoder::AttentionMemory {
        annotations: rows_of(&mem.annotations),
        uh: rows_of(&mem.uh),
        mask_bias: rows_of(&mem.mask_bias),
        src_ext: None,
        n_ext: 0,
        gpu: None,
    }
}

/// Checks a host step's `s_0`, states, contexts, weights and `t~` against the composed step's.
fn assert_step(what: &str, host: (&[f32], &super::decoder::HostStepOut), composed: (&Tensor, &super::decoder::StepOut), pre: &[f32]) {
    let (h0, got) = host;
    let (s0, step) = composed;
    assert_close(&format!("{what}: s_0"), h0, &values(s0), 1e-5);
    assert_close(&format!("{what}: states"), &got.state, &values(&step.state), 1e-5);
    assert_close(&format!("{what}: contexts"), &got.ctx, &values(step.ctx.as_ref().unwrap()), 1e-5);
    assert_close(&format!("{what}: weights"), got.alpha.as_ref().unwrap(), &values(step.alpha.as_ref().unwrap()), 1e-5);
    assert_close(&format!("{what}: t~"), &got.pre, pre, 1e-5);
}

/// RNNsearch's attention decoder steps on the host as its composed step does: start output,
/// new states, contexts, weights and the deep output's pre-activation.
pub fn check_attention_step(kind: crate::config::CellKind, which: crate::config::OutputState, start: crate::config::StartState, seed: u64) {
    use super::attention_decoder::{AttentionDecoder, HostAttention};
    use super::decoder::{DecoderDims, HostMemory};
    use super::output::HostOutput;
    let c = attn_case(kind, which, seed, false);
    let dec = random_layer(seed, |pb| AttentionDecoder::new(DecoderDims { emb: M, enc: N, hidden: N, kind }, A, start, pb));
    let mem = memory_rows(&dec.memory(&c.ann.0, &c.mask).unwrap());
    let gi = dec.rnn.project(&c.ey.0.unsqueeze(1).unwrap()).unwrap().squeeze(1).unwrap();
    let step = dec.step(&mem, &gi, &c.state.0, None).unwrap();
    let pre = composed_pre(&c.out, which, (&c.state.1, &step.state), &c.ey.0, &step.ctx.as_ref().unwrap().matmul(&c.out.o_c).unwrap());
    let host_out = HostOutput::new(&c.out).unwrap();
    let host = HostAttention::new(&dec, &c.cfg, &host_out).unwrap();
    let (HostMemory::Attention(host_mem), h0) = host.memory(&c.ann.1, (LENS.len(), S), &LENS, 1) else { panic!("an attention memory") };
    let got = host.step(&host_mem, &LENS, &host_in(&c.state.3, &c.state.2, &c.ey.1, which), &host_out, true);
    let s0 = dec.start_output(&c.ann.0, super::encoder::Source { mask: &c.mask, lens: &LENS }).unwrap();
    assert_step(&format!("{kind:?} {which:?} {start:?}"), (&h0, &got), (&s0, &step), &pre);
}

/// The conditional GRU decoder steps on the host as its composed step does; `norm`: with
/// layer normalisation in every layer (`layer_norm.rs`; the reset-after GRU).
pub fn check_conditional_step(
    kind: crate::config::CellKind,
    which: crate::config::OutputState,
    start: crate::config::StartState,
    norm: bool,
    seed: u64,
) {
    use super::conditional_decoder::ConditionalDecoder;
    use super::conditional_host::HostConditional;
    use super::decoder::{DecoderDims, HostMemory};
    use super::output::HostOutput;
    let c = attn_case(kind, which, seed, norm);
    let dec = random_layer(seed, |pb| ConditionalDecoder::new(DecoderDims { emb: M, enc: N, hidden: N, kind }, A, start, norm, pb));
    let mem = memory_rows(&dec.memory(&c.ann.0, &c.mask).unwrap());
    let gi = dec.project(&c.ey.0.unsqueeze(1).unwrap()).unwrap().squeeze(1).unwrap();
    let step = dec.step(&mem, &gi, &c.state.0, None).unwrap();
    let pre = composed_pre(&c.out, which, (&c.state.1, &step.state), &c.ey.0, &c.out.project_context(step.ctx.as_ref().unwrap()).unwrap());
    let host_out = HostOutput::new(&c.out).unwrap();
    let host = HostConditional::new(&dec, &c.cfg, &host_out).unwrap();
    let (HostMemory::Attention(host_mem), h0) = host.memory(&c.ann.1, (LENS.len(), S), &LENS, 1) else { panic!("an attention memory") };
    let got = host.step(&host_mem, &LENS, &host_in(&c.state.3, &c.state.2, &c.ey.1, which), &host_out, true);
    let s0 = dec.init_state(&c.ann.0, super::encoder::Source { mask: &c.mask, lens: &LENS }).unwrap();
    assert_step(&format!("conditional {kind:?} {which:?} {start:?}"), (&h0, &got), (&s0, &step), &pre);
}

/// RNNenc's summary decoder steps on the host as its composed step does: the summary's start
/// output, new states and the deep output's pre-activation.
pub fn check_summary_step(kind: crate::config::CellKind, which: crate::config::OutputState, seed: u64) {
    use super::decoder::{DecoderDims, HostMemory};
    use super::output::{DeepOutput, HostOutput, OutputDims};
    use super::summary_decoder::{HostSummary, SummaryDecoder};
    let dec = random_layer(seed, |pb| SummaryDecoder::new(DecoderDims { emb: M, enc: N, hidden: N, kind }, pb));
    let out = random_layer(seed + 1, |pb| {
        DeepOutput::new(
            OutputDims { state: N, emb: M, ctx: N, maxout: L, vocab: V, layer: crate::config::OutputLayer::Maxout, norm: false },
            None,
            pb,
        )
    });
    let (last, last_v) = randn(seed + 2, &[LENS.len(), N]);
    let (state, s_prev, state_v, s_prev_v) = prev_state(kind, seed + 3);
    let (ey, ey_v) = randn(seed + 4, &[SENT.len(), M]);
    // Composed.
    let (c, h0) = dec.summarise(&last).unwrap();
    let mem = dec.memory(&c, out.project_context(&c).unwrap()).unwrap();
    let gi = dec.project(&ey.unsqueeze(1).unwrap()).unwrap().squeeze(1).unwrap();
    let step = dec.step(&rows_of(&mem.gate_ctx), &gi, &state, None).unwrap();
    let pre = composed_pre(&out, which, (&s_prev, &step.state), &ey, &rows_of(&mem.out_ctx));
    // Host.
    let host_out = HostOutput::new(&out).unwrap();
    let host = HostSummary::new(&dec, N).unwrap();
    let (HostMemory::Summary { gate_ctx, out_ctx }, host_h0) = host.memory(&last_v, &host_out, 1) else { panic!("a summary memory") };
    let x = host_in(&s_prev_v, &state_v, &ey_v, which);
    let got = host.step(&gate_ctx, &out_ctx, &x, &host_out);
    let what = format!("{kind:?} {which:?}");
    assert_close(&format!("{what}: h'_0"), &host_h0, &values(&h0), 1e-5);
    assert_close(&format!("{what}: states"), &got.state, &values(&step.state), 1e-5);
    assert_close(&format!("{what}: t~"), &got.pre, &pre, 1e-5);
}
