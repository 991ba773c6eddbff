//! Each layer's launch form (`*_launch.rs`, issue 77), run emulated, against the layer's composed
//! form alone: the same output, and from a random output gradient `R` the same gradients of the
//! layer's inputs and of its arena slots (the composed gradients of `Σ out ⊙ R`, packed as the
//! arena). The whole step's test is `launch_tests.rs`; these find which layer a difference is in.
use candle_core::{DType, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::attention_memory::ForcedIn;
use super::backend::Backend;
use super::embedding_launch;
use super::encoder::{BiRnnEncoder, Source};
use super::inputs::BatchTensors;
use super::launch_arena::{pack_model, positions};
use super::launch_bucket::{host_batch, uploaded};
use super::launch_step::{packed_gradients, sizes};
use super::launch_tape::{MaskSizes, Param, StepBatch, Tape};
use super::launch_tests::batch;
use super::output::{Context, DeepOutput};
use super::rnnsearch::Decoder;
use super::seq2seq::Seq2Seq;
use crate::config::{Config, ModelConfig, WeightInit};
use crate::kernels::gpu::emulated::Emulated;
use crate::kernels::gpu::launch::{Launch, Staged};

/// What a layer's test reads: the model, its batch as tensors, its sources' lengths (at least
/// 1, as the kernels read them) and as the step reads it.
struct Case {
    cfg: ModelConfig,
    model: Seq2Seq,
    bt: BatchTensors,
    lens: Vec<usize>,
    x: StepBatch<Staged<i64>, Staged<f32>>,
}

/// Bahdanau's decoder with separate embeddings (`bench-rnnsearch`'s form) and the conditional
/// GRU with tied embeddings from the annotations' mean (`rnnsearch-s2s`'s), small, N(0, 0.3²).
fn cases() -> Vec<Case> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s2s = Config::from_file(&root.join("configs/rnnsearch-s2s.toml"), &[]).unwrap().model;
    let bench = ModelConfig::preset("bench-rnnsearch").unwrap();
    [bench, s2s]
        .into_iter()
        .map(|base| {
            let units = if base.tie_target_embeddings { 6 } else { 4 };
            let cfg = ModelConfig {
                emb_dim: 6,
                hidden_dim: 5,
                maxout_dim: units,
                src_vocab: 23,
                tgt_vocab: 19,
                init: WeightInit::Paper,
                init_std: 0.3,
                ..base
            };
            let model = Seq2Seq::fresh(&cfg, 11, DType::F32, &Device::Cpu).unwrap();
            let b = batch(&mut ChaCha8Rng::seed_from_u64(3), &cfg, (3, 5, 4));
            let bt = BatchTensors::new(&b, DType::F32, &Device::Cpu).unwrap();
            let z = MaskSizes { emb: cfg.emb_dim, hidden: cfg.hidden_dim, units: cfg.maxout_dim };
            let x = uploaded(&host_batch(&b, z, None));
            let lens = b.src_lengths.iter().map(|&n| n.max(1)).collect();
            Case { cfg, model, bt, lens, x }
        })
        .collect()
}

/// A random `(shape)` tensor, a variable so that the composed form's gradient reaches it.
fn var(rng: &mut ChaCha8Rng, shape: &[usize]) -> Var {
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// `got` against `want`, relative to `want`'s largest entry.
fn close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-20);
    let diff = got.iter().zip(want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(diff <= 1e-4 * scale, "{what}: differs by {:.2e} of its scale", diff / scale);
}

/// Runs `launch` on a fresh arena of the case's model, then compares each of `slots`' gradients
/// with the composed gradients `grads` packed as the arena.
fn with_arena(c: &Case, grads: &candle_core::backprop::GradStore, slots: &[Param], launch: impl FnOnce(&Tape<'_, Emulated>)) {
    let l = Emulated;
    let (params, layout) = pack_model(&c.model).unwrap();
    let (p, g) = (l.upload(&params).unwrap(), l.zeros(layout.len).unwrap());
    let tape = Tape::new(&l, sizes(&c.model).unwrap(), 0.1, (l.addr(&p), l.addr(&g)), &layout);
    launch(&tape);
    let (want, _) = packed_gradients(&c.model, grads).unwrap();
    // The packing's constants (the paper GRU's zero `b_h`) have no gradient: the step zeroes
    // theirs before the update.
    let frozen = positions(&c.model).unwrap();
    let got: Vec<f32> =
        l.read(l.addr(&g), layout.len).unwrap().into_iter().zip(&frozen).map(|(x, p)| if p.is_some() { x } else { 0.0 }).collect();
    for &s in slots {
        let (at, len) = layout.span(s).unwrap();
        close(&format!("{:?} {s:?}", c.cfg.arch), &got[at..at + len], &want[at..at + len]);
    }
}

#[test]
fn each_embeddings_launch_form_equals_its_composed_form() {
    for c in cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (src, _) = c.model.embeddings();
        let (b, s, _) = c.x.shape;
        let want = super::embedding::lookup(src, &c.bt.src, None, Backend::Composed).unwrap();
        let r = var(&mut rng, want.dims());
        let grads = (&want * r.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
        with_arena(&c, &grads, &[Param::SrcEmb], |t| {
            let e = embedding_launch::forward(t, Param::SrcEmb, c.x.ints.src.clone(), None, b * s, c.cfg.src_vocab).unwrap();
            close("lookup", &t.l.read(e.at(t.l), b * s * c.cfg.emb_dim).unwrap(), &flat(&want));
            let dr = t.l.upload(&flat(r.as_tensor())).unwrap();
            e.backward(t, t.l.addr(&dr)).unwrap();
        });
    }
}

#[test]
fn each_encoders_launch_form_equals_its_composed_form() {
    for c in cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let net = c.model.rnnsearch().unwrap();
        let (b, s, _) = c.x.shape;
        let xs = var(&mut rng, &[b, s, c.cfg.emb_dim]);
        let src = Source { mask: &c.bt.src_mask, lens: &c.lens };
        let ann = net.enc.forward(xs.as_tensor(), src, None, Backend::Composed).unwrap();
        let r = var(&mut rng, ann.dims());
        let grads = (&ann * r.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
        let slots = [Param::EncW, Param::EncB, Param::EncU, Param::EncBh];
        with_arena(&c, &grads, &slots, |t| {
            let x = t.l.upload(&flat(xs.as_tensor())).unwrap();
            let enc = BiRnnEncoder::launch(t, &c.x, t.l.addr(&x), None).unwrap();
            close("annotations", &t.l.read(enc.at(t.l), ann.elem_count()).unwrap(), &flat(&ann));
            let dr = t.l.upload(&flat(r.as_tensor())).unwrap();
            let dx = enc.backward(t, t.l.addr(&dr)).unwrap();
            close("dx", &t.l.read(t.l.addr(&dx), b * s * c.cfg.emb_dim).unwrap(), &flat(grads.get(xs.as_tensor()).unwrap()));
        });
    }
}

#[test]
fn each_decoders_launch_form_equals_its_composed_form() {
    for c in cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let net = c.model.rnnsearch().unwrap();
        let (b, s, tl) = c.x.shape;
        let (h, m) = (c.cfg.hidden_dim, c.cfg.emb_dim);
        let (ann, ey) = (var(&mut rng, &[b, s, 2 * h]), var(&mut rng, &[b, tl, m]));
        let src = Source { mask: &c.bt.src_mask, lens: &c.lens };
        let x_dec = ForcedIn { ey: ey.as_tensor(), ann: ann.as_tensor(), src, output: c.cfg.output_state, want_alpha: false };
        let sc = net.dec.forward(&x_dec, None, Backend::Composed).unwrap().state_ctx;
        let r = var(&mut rng, sc.dims());
        let grads = (&sc * r.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
        let slots = [Param::StartW, Param::StartB, Param::Keys, Param::DecW, Param::DecB, Param::Loop];
        with_arena(&c, &grads, &slots, |t| {
            let (a, e) = (t.l.upload(&flat(ann.as_tensor())).unwrap(), t.l.upload(&flat(ey.as_tensor())).unwrap());
            let dec = Decoder::launch(t, &c.x, (t.l.addr(&a), t.l.addr(&e)), None).unwrap();
            close("states and contexts", &t.l.read(dec.at(t.l), sc.elem_count()).unwrap(), &flat(&sc));
            let dr = t.l.upload(&flat(r.as_tensor())).unwrap();
            let (dann, dey) = dec.backward(t, &c.x, t.l.addr(&dr)).unwrap();
            close("dann", &t.l.read(t.l.addr(&dann), ann.elem_count()).unwrap(), &flat(grads.get(ann.as_tensor()).unwrap()));
            close("dey", &t.l.read(t.l.addr(&dey), ey.elem_count()).unwrap(), &flat(grads.get(ey.as_tensor()).unwrap()));
        });
    }
}

#[test]
fn each_output_layers_launch_form_equals_its_composed_form() {
    for c in cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let net = c.model.rnnsearch().unwrap();
        let (b, _, tl) = c.x.shape;
        let (h, m, n) = (c.cfg.hidden_dim, c.cfg.emb_dim, b * tl);
        let (sc, ey) = (var(&mut rng, &[n, 3 * h]), var(&mut rng, &[n, m]));
        let hidden = net.out.forward(Context::PerStep(sc.as_tensor()), ey.as_tensor(), None, Backend::Composed).unwrap();
        let nll = net.out.nll(&hidden, &c.bt.tgt_out, 0.1, None, Backend::Composed).unwrap();
        // The step's loss weights: `mask_r / tokens`.
        let Staged::Host(w) = &c.x.weights else { unreachable!("uploaded batches are on the host") };
        let wt = Tensor::from_vec(w.clone(), n, &Device::Cpu).unwrap();
        let grads = (&nll * &wt).unwrap().sum_all().unwrap().backward().unwrap();
        let tied = c.cfg.tie_target_embeddings;
        let slots = [Param::OutWb, Param::ProjB, if tied { Param::TgtEmb } else { Param::Proj }];
        with_arena(&c, &grads, &slots, |t| {
            let (s_, e) = (t.l.upload(&flat(sc.as_tensor())).unwrap(), t.l.upload(&flat(ey.as_tensor())).unwrap());
            let out = DeepOutput::launch(t, &c.x, (t.l.addr(&s_), t.l.addr(&e)), None).unwrap();
            close("nll", &t.l.read(out.at(t.l), n).unwrap(), &flat(&nll));
            let (wd, _held) = c.x.weights.addr(t.l).unwrap();
            let g = out.backward(t, wd).unwrap();
            close("dsc", &t.l.read(t.l.addr(&g.dsc), sc.elem_count()).unwrap(), &flat(grads.get(sc.as_tensor()).unwrap()));
            close("dey", &t.l.read(t.l.addr(&g.dey), ey.elem_count()).unwrap(), &flat(grads.get(ey.as_tensor()).unwrap()));
            // Tied: the projection's gradient leaves the layer; the caller adds it to `E`'s.
            if let Some(dproj) = &g.tied {
                t.add(Param::TgtEmb, dproj).unwrap();
            }
        });
    }
}
