//! A training step to check replays with (`recording.rs`), on any launcher: a bidirectional GRU
//! layer forward and backward (recurrent dropout, padded sentences), the loss gradient `w`
//! and Adam with warm-up and normalised updates, its scalars on the device
//! (`optim_step::DeviceUpdate`). [`eager`] runs fresh steps; [`replayed`] records the first
//! step of a bucket and replays it with each new batch staged. The emulated tests
//! (`recording_tests.rs`) and the GPU test (`tests/cuda.rs`, where the replay is a captured
//! CUDA graph: `cuda.rs`) compare the two bit for bit.
use candle_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::args::{self, MaskRows};
use super::birnn::{BiRnn, Dims};
use super::launch::{Addr, Launch, Staged};
use super::optim_step::{DeviceUpdate, UpdateConfig};
use super::recording::Recording;
use crate::config::{CellKind, GruForm};
use crate::kernels::fused_op::FusedOp;

const DIMS: Dims = Dims { batch: 3, len: 5, hidden: 4, kind: CellKind::Gru(GruForm::ResetAfter), norm: false };

/// One batch of the bucket: input projections `gi (B·S, 2G)`, the loss gradient `w (B, S, 2H)`,
/// the lengths and the recurrent dropout mask `(2, B, H)`.
pub struct Batch {
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

/// The parameters, moments and gradients of the layer (an arena `[u; bh]`), and its device update.
struct Model<L: Launch> {
    bufs: [L::Floats; 4],
    opt: DeviceUpdate<L::Floats, L::Ints>,
}

impl<L: Launch> Model<L> {
    fn new(l: &L) -> Result<Self> {
        let (nu, nb) = sizes();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let p: Vec<f32> = (0..nu + nb).map(|_| rng.gen_range(-0.5f32..0.5)).collect();
        let opt = DeviceUpdate::new(l, CFG, nu + nb, 0.05)?;
        Ok(Model { bufs: [l.upload(&p)?, l.zeros(nu + nb)?, l.zeros(nu + nb)?, l.zeros(nu + nb)?], opt })
    }

    /// `[θ, m, v, g]`.
    fn addrs(&self, l: &L) -> [Addr; 4] {
        self.bufs.each_ref().map(|b| l.addr(b))
    }
}

/// Copies `n` values from `src` to `dst` (one row).
fn copy(l: &impl Launch, dst: Addr, src: Addr, n: usize) -> Result<()> {
    let a = MaskRows { dst, dst_ld: n as i64, src, src_ld: n as i64, mask: Addr::NULL, rows: 1, width: n as i64 };
    l.launch(&args::MASK_ROWS, n, a)
}

/// The step on launcher `l`: forward, backward from `dout = w`, the gradients copied into the
/// arena, the update. `inputs`: the addresses of `gi` and `w`; `op` carries the lengths and mask.
fn step(
    l: &impl Launch,
    [p, m, v, g]: [Addr; 4],
    opt: &DeviceUpdate<impl Sized, impl Sized>,
    op: &BiRnn,
    [gi, w]: [Addr; 2],
) -> Result<()> {
    let (nu, nb) = sizes();
    let x = [gi, p, p.at(nu)];
    let (out, saved) = FusedOp::forward(op, l, x)?;
    let [_dgi, du, dbh] = op.backward(l, x, saved, l.addr(&out), w)?;
    copy(l, g, l.addr(&du), nu)?;
    copy(l, g.at(nu), l.addr(&dbh), nb)?;
    opt.step(l, p, [m, v], g)
}

/// What each update leaves: the parameters and the gradient norm.
pub type After = Vec<(Vec<f32>, f64)>;

/// Four batches of one bucket.
pub fn batches() -> Vec<Batch> {
    let mut rng = ChaCha8Rng::seed_from_u64(69);
    (0..4).map(|_| batch(&mut rng)).collect()
}

/// The updates of `batches` by fresh eager steps on `l`.
pub fn eager<L: Launch>(l: &L, batches: &[Batch]) -> Result<After> {
    let model = Model::new(l)?;
    let at = model.addrs(l);
    let mut after = Vec::new();
    for bt in batches {
        let (gi, w) = (l.upload(&bt.gi)?, l.upload(&bt.w)?);
        let op = BiRnn { d: DIMS, lens: Staged::Host(bt.lens.clone()), mask: Some(Staged::Host(bt.mask.clone())) };
        step(l, at, &model.opt, &op, [l.addr(&gi), l.addr(&w)])?;
        after.push((l.read(at[0], sizes().0 + sizes().1)?, model.opt.norm(l)?));
    }
    Ok(after)
}

/// How [`replayed`] hands a batch to the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// Each batch staged into the bucket's buffers before its step.
    Each,
    /// The first batch's inputs left in place: a replay of stale inputs, which must differ.
    Stale,
    /// The lengths given as host data, uploaded inside the step: refused.
    Upload,
}

/// The same updates on `l`, the first recorded, each later one `replay`ed (the tape, or a
/// graph captured from it) after its batch is staged as `staging` says.
pub fn replayed<'l, L: Launch>(
    l: &'l L,
    batches: &[Batch],
    staging: Staging,
    replay: &dyn Fn(&Recording<'l, L>, usize) -> Result<()>,
) -> Result<After> {
    let model = Model::new(l)?;
    let at = model.addrs(l);
    let rec = Recording::new(l);
    let (b, s, h, g) = (DIMS.batch, DIMS.len, DIMS.hidden, DIMS.g());
    let (gi, w, mask) = (rec.buffer(b * s * 2 * g)?, rec.buffer(b * s * 2 * h)?, rec.buffer(2 * b * h)?);
    let lens = rec.int_buffer(b)?;
    let mut op = BiRnn { d: DIMS, lens: Staged::Device(lens.addr), mask: Some(Staged::Device(mask.addr)) };
    let mut after = Vec::new();
    for (k, bt) in batches.iter().enumerate() {
        if staging == Staging::Upload {
            op.lens = Staged::Host(bt.lens.clone());
        }
        if k == 0 || staging != Staging::Stale {
            rec.stage(gi, &bt.gi)?;
            rec.stage(w, &bt.w)?;
            rec.stage(mask, &bt.mask)?;
            rec.stage_ints(lens, &bt.lens)?;
        }
        match k {
            0 => rec.record(|r| step(r, at, &model.opt, &op, [gi.addr, w.addr]))?,
            _ => replay(&rec, k)?,
        }
        after.push((l.read(at[0], sizes().0 + sizes().1)?, model.opt.norm(l)?));
    }
    Ok(after)
}

/// Whether two runs left the same bits after every update; else the first update that differs.
pub fn first_difference(want: &After, got: &After) -> Option<usize> {
    want.iter().zip(got).position(|((wp, wn), (gp, gn))| {
        wn.to_bits() != gn.to_bits() || wp.len() != gp.len() || wp.iter().zip(gp).any(|(a, b)| a.to_bits() != b.to_bits())
    })
}
