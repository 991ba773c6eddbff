//! The recording launcher (`recording.rs`) against fresh eager steps, emulated: a training step
//! of a bidirectional GRU layer (both directions forward and backward, recurrent dropout,
//! padded sentences), its loss gradient `w` and Adam with warm-up and normalised updates, the
//! step's scalars on the device (`optim_step::DeviceUpdate`). Three replays of new batches of
//! one bucket must equal fresh steps bit for bit; a stale input, an upload inside the step or an
//! allocation after the recording must fail.
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::args::{self, MaskRows};
use super::birnn::{BiGru, Dims};
use super::emulated::{Emulated, HostBuf};
use super::launch::{Addr, Launch, Staged};
use super::optim_step::{DeviceUpdate, UpdateConfig};
use super::recording::Recording;
use crate::config::{CellKind, GruForm};
use crate::kernels::fused_op::FusedOp;

const DIMS: Dims = Dims { batch: 3, len: 5, hidden: 4, kind: CellKind::Gru(GruForm::ResetAfter), norm: false };

/// One batch of the bucket: input projections `gi (B·S, 2G)`, the loss gradient `w (B, S, 2H)`,
/// the lengths and the recurrent dropout mask `(2, B, H)`.
struct Batch {
    gi: Vec<f32>,
    w: Vec<f32>,
    lens: Vec<i64>,
    mask: Vec<f32>,
}

fn batch(rng: &mut ChaCha8Rng) -> Batch {
    let (b, s, h, g) = (DIMS.batch, DIMS.len, DIMS.hidden, DIMS.g());
    let mut v = |n: usize| (0..n).map(|_| rng.gen_range(-1f32..1.0)).collect::<Vec<_>>();
    let (gi, w) = (v(b * s * 2 * g), v(b * s * 2 * h));
    let lens = (0..b).map(|i| if i == 0 { s as i64 } else { rng.gen_range(1..=s as i64) }).collect();
    let mask = (0..2 * b * h).map(|_| if rng.gen_bool(0.3) { 0.0 } else { 1.0 / 0.7 }).collect();
    Batch { gi, w, lens, mask }
}

/// The arena's sizes: `u (2, H, G)` then `bh (2, G)`.
fn sizes() -> (usize, usize) {
    (2 * DIMS.hidden * DIMS.g(), 2 * DIMS.g())
}

const CFG: UpdateConfig = UpdateConfig { adam: true, beta: 0.9, beta2: 0.98, eps: 1e-9, warmup: 3, clip: 1.0, normalize: true };

/// The parameters, moments and gradients of the layer, and its device update.
struct Model {
    params: HostBuf<f32>,
    m: HostBuf<f32>,
    v: HostBuf<f32>,
    grads: HostBuf<f32>,
    opt: DeviceUpdate<HostBuf<f32>, HostBuf<i64>>,
}

impl Model {
    fn new(seed: u64) -> Model {
        let l = Emulated;
        let (nu, nb) = sizes();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let p: Vec<f32> = (0..nu + nb).map(|_| rng.gen_range(-0.5f32..0.5)).collect();
        let opt = DeviceUpdate::new(&l, CFG, nu + nb, 0.05).unwrap();
        Model {
            params: HostBuf::from_slice(&p),
            m: l.zeros(nu + nb).unwrap(),
            v: l.zeros(nu + nb).unwrap(),
            grads: l.zeros(nu + nb).unwrap(),
            opt,
        }
    }

    fn addrs(&self) -> [Addr; 4] {
        let l = Emulated;
        [l.addr(&self.params), l.addr(&self.m), l.addr(&self.v), l.addr(&self.grads)]
    }
}

/// Copies `n` values from `src` to `dst` (one row).
fn copy(l: &impl Launch, dst: Addr, src: Addr, n: usize) -> candle_core::Result<()> {
    let a = MaskRows { dst, dst_ld: n as i64, src, src_ld: n as i64, mask: Addr::NULL, rows: 1, width: n as i64 };
    l.launch(&args::MASK_ROWS, n, a)
}

/// The step on launcher `l`: forward, backward from `dout = w`, the gradients copied into the
/// arena, the update. `inputs`: the addresses of `gi` and `w`; `op` carries the lengths and mask.
fn step(l: &impl Launch, model: &Model, op: &BiGru, [gi, w]: [Addr; 2]) -> candle_core::Result<()> {
    let [p, m, v, g] = model.addrs();
    let (nu, nb) = sizes();
    let x = [gi, p, p.at(nu)];
    let (out, saved) = FusedOp::forward(op, l, x)?;
    let [_dgi, du, dbh] = op.backward(l, x, saved, l.addr(&out), w)?;
    copy(l, g, l.addr(&du), nu)?;
    copy(l, g.at(nu), l.addr(&dbh), nb)?;
    model.opt.step(l, p, [m, v], g)
}

/// After each of `batches`' updates by fresh eager steps: the parameters and the norm.
fn eager(batches: &[Batch]) -> Vec<(Vec<f32>, f64)> {
    let (l, model) = (Emulated, Model::new(7));
    let mut after = Vec::new();
    for bt in batches {
        let (gi, w) = (HostBuf::from_slice(&bt.gi), HostBuf::from_slice(&bt.w));
        let op = BiGru { d: DIMS, lens: Staged::Host(bt.lens.clone()), mask: Some(Staged::Host(bt.mask.clone())) };
        step(&l, &model, &op, [l.addr(&gi), l.addr(&w)]).unwrap();
        after.push((model.params.to_vec(), model.opt.norm(&l).unwrap()));
    }
    after
}

/// The same updates, the first recorded, the others replayed; `restage`: whether each batch
/// is staged (else the first batch's inputs stay: a graph with stale inputs).
fn replayed(batches: &[Batch], restage: bool) -> Vec<(Vec<f32>, f64)> {
    let (inner, model) = (Emulated, Model::new(7));
    let rec = Recording::new(&inner);
    let (b, s, h, g) = (DIMS.batch, DIMS.len, DIMS.hidden, DIMS.g());
    let (gi, w, mask) = (rec.buffer(b * s * 2 * g).unwrap(), rec.buffer(b * s * 2 * h).unwrap(), rec.buffer(2 * b * h).unwrap());
    let lens = rec.int_buffer(b).unwrap();
    let op = BiGru { d: DIMS, lens: Staged::Device(lens.addr), mask: Some(Staged::Device(mask.addr)) };
    let mut after = Vec::new();
    for (k, bt) in batches.iter().enumerate() {
        if k == 0 || restage {
            rec.stage(gi, &bt.gi).unwrap();
            rec.stage(w, &bt.w).unwrap();
            rec.stage(mask, &bt.mask).unwrap();
            rec.stage_ints(lens, &bt.lens).unwrap();
        }
        match k {
            0 => rec.record(|r| step(r, &model, &op, [gi.addr, w.addr])).unwrap(),
            _ => rec.replay().unwrap(),
        }
        after.push((model.params.to_vec(), model.opt.norm(&rec).unwrap()));
    }
    after
}

fn batches() -> Vec<Batch> {
    let mut rng = ChaCha8Rng::seed_from_u64(69);
    (0..4).map(|_| batch(&mut rng)).collect()
}

/// Recorded once, replayed three times with new batches: each update's parameters and norm are
/// a fresh step's, bit for bit (warm-up, bias corrections and the clip factor change every
/// update, so a scalar baked into a launch would differ).
#[test]
fn replayed_steps_equal_fresh_steps_bit_for_bit() {
    let bs = batches();
    let (want, got) = (eager(&bs), replayed(&bs, true));
    for (k, ((wp, wn), (gp, gn))) in want.iter().zip(&got).enumerate() {
        assert!(wn.is_finite() && *wn > 0.0, "update {k}: norm {wn}");
        assert_eq!(wn.to_bits(), gn.to_bits(), "update {k}: norm {wn} against {gn}");
        let same = wp.iter().zip(gp).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "update {k}: the replayed parameters differ from the fresh step's");
    }
    // The updates moved the parameters: the comparison is not of constants.
    assert!(want[0].0 != want[3].0);
}

/// The comparison catches a replay that reads stale inputs (the first batch's).
#[test]
fn a_replay_of_stale_inputs_differs() {
    let bs = batches();
    let (want, got) = (eager(&bs), replayed(&bs, false));
    assert_eq!(want[0].0, got[0].0);
    assert!(want[1].0 != got[1].0, "a stale batch went unnoticed");
}

/// Host data uploaded inside the step, or an allocation after it was recorded, is refused.
#[test]
fn uploads_and_late_allocations_are_refused() {
    let (inner, model) = (Emulated, Model::new(7));
    let bt = &batches()[0];
    let rec = Recording::new(&inner);
    let (gi, w) = (rec.buffer(bt.gi.len()).unwrap(), rec.buffer(bt.w.len()).unwrap());
    let host = BiGru { d: DIMS, lens: Staged::Host(bt.lens.clone()), mask: None };
    let err = rec.record(|r| step(r, &model, &host, [gi.addr, w.addr])).unwrap_err();
    assert!(err.to_string().contains("upload inside a recorded step"), "{err}");
    let lens = rec.int_buffer(DIMS.batch).unwrap();
    rec.stage_ints(lens, &bt.lens).unwrap();
    let staged = BiGru { d: DIMS, lens: Staged::Device(lens.addr), mask: None };
    rec.record(|r| step(r, &model, &staged, [gi.addr, w.addr])).unwrap();
    assert!(rec.tape_len() > 0);
    assert!(rec.zeros(4).is_err() && rec.buffer(4).is_err());
    rec.replay().unwrap();
}
