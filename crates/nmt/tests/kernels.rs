//! Every fused kernel against its composed-op twin: values and gradients, in f64 (to rounding)
//! and f32 (to the fast tanh/exp's accuracy), plus finite differences on the fused ops.
mod common;

use common::twins::{compare, mask_tensor, rand_var, state_mask, KINDS};

use candle_core::{DType, Device, Tensor, Var};
use nmt::config::{CellKind, GruForm, OutputState};
use nmt::kernels::cpu::{attention_op, rnn_sequence};
use nmt::kernels::math;
use nmt::kernels::shapes::attn_dims::AttnDims;
use nmt::kernels::shapes::rnn_dims::RnnSpec;
use nmt::model::gru::{cell_step, Recurrent};
use nmt::model::lstm::lstm_step;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn fast_tanh_and_exp_are_accurate() {
    let mut worst_t: f64 = 0.0;
    let mut worst_e: f64 = 0.0;
    for i in -200_000..200_000 {
        let x = i as f32 * 1e-4;
        worst_t = worst_t.max((math::tanh_f32(x) as f64 - (x as f64).tanh()).abs());
        let e = (x as f64).exp();
        worst_e = worst_e.max((math::exp_f32(x) as f64 - e).abs() / e);
    }
    for x in [-100.0f32, -30.0, 30.0, 100.0] {
        worst_t = worst_t.max((math::tanh_f32(x) as f64 - (x as f64).tanh()).abs());
    }
    assert!(math::exp_f32(-200.0) >= 0.0 && math::exp_f32(-200.0) < 1e-37);
    eprintln!("tanh max abs error {worst_t:.2e}, exp max rel error {worst_e:.2e}");
    assert!(worst_t < 2e-6, "tanh error {worst_t}");
    assert!(worst_e < 1e-6, "exp error {worst_e}");
}

/// One composed step of either cell: `model::gru::cell_step` on `h`, or `model::lstm::lstm_step`
/// on the state `[h; c]`; `u (H, G)`, `ghb (G)` or `(rows, G)`.
fn composed_step(kind: CellKind, gi: &Tensor, st: &Tensor, u: &Tensor, ghb: &Tensor, drop: Option<&Tensor>) -> Tensor {
    match kind {
        CellKind::Gru(form) => {
            let h = u.dim(0).unwrap();
            let (u_rz, u_n) = (u.narrow(1, 0, 2 * h).unwrap(), u.narrow(1, 2 * h, h).unwrap());
            let rec = Recurrent { u_rz: &u_rz, u_n: &u_n, ghb: Some(ghb), state_mask: drop, norm: None };
            cell_step(form, gi, st, &rec).unwrap()
        }
        CellKind::Lstm => lstm_step(gi, st, u, Some(ghb), drop).unwrap(),
    }
}

/// A cell's start state from `h_0 (rows, H)`: `h_0` itself, or the LSTM's `[h_0; 0]`.
fn start_state(kind: CellKind, h0: &Tensor) -> Tensor {
    match kind {
        CellKind::Gru(_) => h0.clone(),
        CellKind::Lstm => Tensor::cat(&[h0, &h0.zeros_like().unwrap()], 1).unwrap(),
    }
}

/// The composed-op twin of the sequence op: [`composed_step`] with the masked carry of
/// `model/gru.rs`, from per-row `rows = [ghb; h_0]`, with an optional recurrent-dropout mask.
fn gru_seq_composed(
    kind: CellKind,
    gi: &Tensor,
    u: &Tensor,
    rows: &Tensor,
    reverse: bool,
    lens: &[usize],
    drop: Option<&Tensor>,
) -> Tensor {
    let (b, s, gw) = gi.dims3().unwrap();
    let h = u.dim(0).unwrap();
    let ghb = rows.narrow(1, 0, gw).unwrap();
    let mut st = start_state(kind, &rows.narrow(1, gw, h).unwrap());
    let mut out = vec![None; s];
    for step in 0..s {
        let t = if reverse { s - 1 - step } else { step };
        let m: Vec<f64> = lens.iter().map(|&l| f64::from(u8::from(t < l))).collect();
        let m = Tensor::from_vec(m, (b, 1), &Device::Cpu).unwrap().to_dtype(gi.dtype()).unwrap();
        let gi_t = gi.narrow(1, t, 1).unwrap().squeeze(1).unwrap();
        let new = composed_step(kind, &gi_t, &st, u, &ghb, drop);
        st = (&st + m.broadcast_mul(&(new - &st).unwrap()).unwrap()).unwrap();
        out[t] = Some(st.narrow(1, 0, h).unwrap());
    }
    let out: Vec<Tensor> = out.into_iter().flatten().collect();
    Tensor::stack(&out, 1).unwrap()
}

const LENS: [usize; 5] = [6, 3, 1, 6, 2];

fn gru_case(dtype: DType, form: CellKind, reverse: bool, dropout: bool, tol: f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (b, s, h) = (5, 6, 8);
    let g = form.gates() * h;
    let gi = rand_var(&[b, s, g], 1.0, dtype, &mut rng);
    let u = rand_var(&[h, g], 0.5, dtype, &mut rng);
    let rows = rand_var(&[b, g + h], 0.5, dtype, &mut rng);
    let mask = dropout.then(|| state_mask(b * h, 31));
    let spec = RnnSpec { kind: form, lens: &LENS, state_mask: mask.as_deref(), products: nmt::config::Precision::F32 };
    let drop = mask.as_ref().map(|m| mask_tensor(m, b, h, dtype));
    let err = compare(
        &[&gi, &u, &rows],
        || rnn_sequence::rnn_sequence(gi.as_tensor(), u.as_tensor(), rows.as_tensor(), reverse, spec).unwrap(),
        || gru_seq_composed(form, gi.as_tensor(), u.as_tensor(), rows.as_tensor(), reverse, &LENS, drop.as_ref()),
        1,
    );
    eprintln!("gru {dtype:?} {form:?} reverse={reverse} dropout={dropout}: max rel diff {err:.2e}");
    assert!(err < tol, "gru {dtype:?} {form:?} reverse={reverse} dropout={dropout}: {err}");
}

#[test]
fn fused_gru_matches_composed_ops() {
    for form in KINDS {
        for reverse in [false, true] {
            for dropout in [false, true] {
                gru_case(DType::F64, form, reverse, dropout, 1e-12);
                gru_case(DType::F32, form, reverse, dropout, 2e-5);
            }
        }
    }
}

/// Central finite differences on sampled entries of each input of `f` (f64).
fn finite_differences(vars: &[&Var], f: impl Fn() -> Tensor, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let grads = f().backward().unwrap();
    let mut worst: f64 = 0.0;
    for var in vars {
        let g = grads.get(var.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let base = var.as_tensor().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        for _ in 0..40 {
            let i = rng.gen_range(0..base.len());
            let eps = 1e-6;
            let at = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu).unwrap()).unwrap();
                f().to_scalar::<f64>().unwrap()
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            var.set(&Tensor::from_vec(base.clone(), var.shape(), &Device::Cpu).unwrap()).unwrap();
            worst = worst.max((fd - g[i]).abs() / fd.abs().max(g[i].abs()).max(1e-3));
        }
    }
    worst
}

/// The GRU op's variants (paper cell, lengths, per-row recurrent term and start state,
/// recurrent dropout) against finite differences.
#[test]
fn fused_gru_gradient_matches_finite_differences() {
    for form in KINDS {
        for (reverse, dropout) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut rng = ChaCha8Rng::seed_from_u64(23);
            let (b, s, h) = (5, 6, 4);
            let g = form.gates() * h;
            let gi = rand_var(&[b, s, g], 1.0, DType::F64, &mut rng);
            let u = rand_var(&[h, g], 0.7, DType::F64, &mut rng);
            let rows = rand_var(&[b, g + h], 0.7, DType::F64, &mut rng);
            let probe = rand_var(&[b, s, h], 1.0, DType::F64, &mut rng);
            let mask = dropout.then(|| state_mask(b * h, 37));
            let spec = RnnSpec { kind: form, lens: &LENS, state_mask: mask.as_deref(), products: nmt::config::Precision::F32 };
            let f = || {
                let y = rnn_sequence::rnn_sequence(gi.as_tensor(), u.as_tensor(), rows.as_tensor(), reverse, spec).unwrap();
                (y * probe.as_tensor()).unwrap().sum_all().unwrap()
            };
            let worst = finite_differences(&[&gi, &u, &rows], f, 29);
            eprintln!("gru {form:?} reverse={reverse} dropout={dropout} finite differences: {worst:.2e}");
            assert!(worst < 1e-6, "{form:?} {reverse} {dropout}: {worst}");
        }
    }
}

struct AttnCase {
    gie: Var,
    ann: Var,
    w: Var,
    dims: AttnDims,
}

fn attn_case(dtype: DType, kind: CellKind, output: OutputState, dropout: bool) -> AttnCase {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (b, t, s, h, c, a) = (3, 4, 5, 6, 7, 5);
    let state_mask = dropout.then(|| state_mask(b * h, 41));
    let lens = vec![5, 3, 1];
    let dims = AttnDims {
        batch: b,
        tgt_len: t,
        src_len: s,
        hidden: h,
        ctx: c,
        att: a,
        lens,
        kind,
        output,
        state_mask,
        conditional: false,
        start: nmt::config::StartState::FirstBackward,
        norm: false,
        products: nmt::config::Precision::F32,
    };
    let gie = rand_var(&[b * t, kind.gates() * h], 1.0, dtype, &mut rng);
    let ann = rand_var(&[b, s, c], 1.0, dtype, &mut rng);
    let w = rand_var(&[dims.weights_len()], 0.5, dtype, &mut rng);
    AttnCase { gie, ann, w, dims }
}

/// The composed-op twin of the fused decoder, unpacking the same inputs.
fn attn_composed(k: &AttnCase) -> Tensor {
    let d = &k.dims;
    let (b, t, s, h, c, a) = (d.batch, d.tgt_len, d.src_len, d.hidden, d.ctx, d.att);
    let g = d.kind.gates() * h;
    let w = k.w.as_tensor();
    let mut off = 0;
    let mut take = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        let x = w.narrow(0, off, n).unwrap().reshape(shape).unwrap();
        off += n;
        x
    };
    let (wa, ba, va, wc, u, bh) = (take(&[h, a]), take(&[a]), take(&[a, 1]), take(&[c, g]), take(&[h, g]), take(&[g]));
    let (ua, ws_init, bs_init) = (take(&[c, a]), take(&[h, h]), take(&[h]));
    let gie = k.gie.reshape((b, t, g)).unwrap();
    let hs = k.ann.as_tensor();
    let back_first = hs.narrow(1, 0, 1).unwrap().squeeze(1).unwrap().narrow(1, c - h, h).unwrap();
    let s0 = back_first.matmul(&ws_init).unwrap().broadcast_add(&bs_init).unwrap().tanh().unwrap();
    let uh = hs.reshape((b * s, c)).unwrap().matmul(&ua).unwrap().reshape((b, s, a)).unwrap();
    let mut st = start_state(d.kind, &s0);
    let drop = d.state_mask.as_ref().map(|m| mask_tensor(m, b, h, gie.dtype()));
    let mask: Vec<f64> = (0..b).flat_map(|bi| (0..s).map(move |j| if j < d.lens[bi] { 0.0 } else { -1e9 })).collect();
    let mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap().to_dtype(gie.dtype()).unwrap();
    let mut outs = Vec::new();
    for i in 0..t {
        let sh = st.narrow(1, 0, h).unwrap();
        let ws = sh.matmul(&wa).unwrap().broadcast_add(&ba).unwrap();
        let x = uh.broadcast_add(&ws.unsqueeze(1).unwrap()).unwrap().tanh().unwrap();
        let e = (x.reshape((b * s, a)).unwrap().matmul(&va).unwrap().reshape((b, s)).unwrap() + &mask).unwrap();
        // Not candle_nn::ops::softmax_last_dim: it has no backward in candle-nn 0.11.1 and the
        // gradient silently stops there (found by this test).
        let al = nmt::model::attention::softmax_last(&e).unwrap();
        let ctx = al.unsqueeze(1).unwrap().matmul(&hs.contiguous().unwrap()).unwrap().squeeze(1).unwrap();
        let gi = (gie.narrow(1, i, 1).unwrap().squeeze(1).unwrap() + ctx.matmul(&wc).unwrap()).unwrap();
        let next = composed_step(d.kind, &gi, &st, &u, &bh, drop.as_ref());
        let shown = if d.output == OutputState::Previous { sh } else { next.narrow(1, 0, h).unwrap() };
        outs.push(Tensor::cat(&[&shown, &ctx], 1).unwrap());
        st = next;
    }
    Tensor::stack(&outs, 1).unwrap().reshape((b * t, h + c)).unwrap()
}

fn attn_fused(k: &AttnCase) -> Tensor {
    attention_op::attention_decoder(k.gie.as_tensor(), k.ann.as_tensor(), k.w.as_tensor(), k.dims.clone()).unwrap()
}

/// Cell, output state and recurrent dropout.
const ATTN_VARIANTS: [(CellKind, OutputState, bool); 7] = [
    (CellKind::Gru(GruForm::Paper), OutputState::Previous, false),
    (CellKind::Gru(GruForm::Paper), OutputState::Current, false),
    (CellKind::Gru(GruForm::ResetAfter), OutputState::Previous, false),
    (CellKind::Gru(GruForm::Paper), OutputState::Previous, true),
    (CellKind::Gru(GruForm::ResetAfter), OutputState::Current, true),
    (CellKind::Lstm, OutputState::Previous, false),
    (CellKind::Lstm, OutputState::Current, true),
];

#[test]
fn fused_attention_decoder_matches_composed_ops() {
    for (form, output, dropout) in ATTN_VARIANTS {
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
            let k = attn_case(dtype, form, output, dropout);
            let err = compare(&[&k.gie, &k.ann, &k.w], || attn_fused(&k), || attn_composed(&k), 2);
            eprintln!("attention decoder {dtype:?} {form:?} {output:?} dropout={dropout}: max rel diff {err:.2e}");
            assert!(err < tol, "attention decoder {dtype:?} {form:?} {output:?} dropout={dropout}: {err}");
        }
    }
}

/// Central finite differences on sampled entries of each input of the fused decoder (f64).
#[test]
fn fused_attention_decoder_gradient_matches_finite_differences() {
    for (form, output, dropout) in ATTN_VARIANTS {
        let k = attn_case(DType::F64, form, output, dropout);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let probe = rand_var(&[12, 13], 1.0, DType::F64, &mut rng);
        let f = || (attn_fused(&k) * probe.as_tensor()).unwrap().sum_all().unwrap();
        let worst = finite_differences(&[&k.gie, &k.ann, &k.w], f, 5);
        eprintln!("attention decoder {form:?} {output:?} dropout={dropout} finite differences: max rel err {worst:.2e}");
        assert!(worst < 1e-6, "{form:?} {output:?} {dropout}: {worst}");
    }
}

#[test]
fn fused_bidirectional_gru_matches_composed_ops() {
    use nmt::kernels::cpu::birnn::birnn_sequence;
    let lens = [7, 2, 5, 1];
    for form in KINDS {
        for dropout in [false, true] {
            for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
                let mut rng = ChaCha8Rng::seed_from_u64(19);
                let (b, s, h) = (4, 7, 5);
                let gw = form.gates() * h;
                let mask = dropout.then(|| state_mask(2 * b * h, 43));
                let gi = rand_var(&[b, s, 2 * gw], 1.0, dtype, &mut rng);
                let u = rand_var(&[2, h, gw], 0.5, dtype, &mut rng);
                let bh = rand_var(&[2, gw], 0.5, dtype, &mut rng);
                let composed = || {
                    let dir = |k: usize| {
                        let g = gi.as_tensor().narrow(2, gw * k, gw).unwrap().contiguous().unwrap();
                        let bk = bh.as_tensor().get(k).unwrap().unsqueeze(0).unwrap().broadcast_as((b, gw)).unwrap();
                        let rows = Tensor::cat(&[&bk, &Tensor::zeros((b, h), dtype, &Device::Cpu).unwrap()], 1).unwrap();
                        let drop = mask.as_ref().map(|m| mask_tensor(&m[k * b * h..(k + 1) * b * h], b, h, dtype));
                        gru_seq_composed(form, &g, &u.as_tensor().get(k).unwrap(), &rows, k == 1, &lens, drop.as_ref())
                    };
                    Tensor::cat(&[dir(0), dir(1)], 2).unwrap()
                };
                let spec = RnnSpec { kind: form, lens: &lens, state_mask: mask.as_deref(), products: nmt::config::Precision::F32 };
                let fused = || birnn_sequence(gi.as_tensor(), u.as_tensor(), bh.as_tensor(), spec).unwrap();
                let err = compare(&[&gi, &u, &bh], fused, composed, 12);
                eprintln!("bidirectional gru {dtype:?} {form:?} dropout={dropout}: {err:.2e}");
                assert!(err < tol, "bidirectional gru {dtype:?} {form:?} dropout={dropout}: {err}");
            }
        }
    }
}

/// A second backward through the same graph has no saved forward state and recomputes it.
#[test]
fn fused_ops_recompute_when_backward_runs_twice() {
    let k = attn_case(DType::F64, CellKind::Gru(GruForm::Paper), OutputState::Previous, true);
    let y = (attn_fused(&k) * 1.5).unwrap().sum_all().unwrap();
    let g1 = y.backward().unwrap();
    let g2 = y.backward().unwrap();
    for v in [&k.gie, &k.ann, &k.w] {
        assert!(common::max_rel(g1.get(v.as_tensor()).unwrap(), g2.get(v.as_tensor()).unwrap()) < 1e-12);
    }
}
