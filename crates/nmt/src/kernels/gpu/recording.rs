//! A launcher that records one training step and replays it: what a CUDA graph is, checked on
//! any machine (issue 69). PyTorch's `torch.cuda.graphs` makes the same three promises, and
//! this launcher is where they are kept:
//!
//! - **Buffers allocated once per bucket** (batch, source length, target length). The first
//!   step of a bucket runs eagerly ([`Recording::record`]): every `zeros`/`scratch` it asks for
//!   is allocated then and kept for the bucket's life, and every product, launch and fill is
//!   run and written to a tape. The replay ([`Recording::replay`]) runs the tape again on the
//!   same addresses: a `zeros` becomes a fill (a memset node of the graph), a `scratch` a
//!   refill with NaN under the emulation (`Launch::POISONS_SCRATCH`), so that a kernel reading
//!   what the step did not write fails the comparison.
//! - **No host↔device traffic inside the step.** An `upload`, a `write` or a `read` between
//!   the start of the recording and its end is refused with an error, and once recorded every
//!   allocation is refused too: a graph would have baked the first step's lengths, masks or
//!   scalars into its nodes, or could not hold the allocation at all. Host data reaches the
//!   step through buffers allocated before the recording ([`Recording::buffer`]) and written
//!   before each replay ([`Recording::stage`], [`Launch::write`]); ops take them as
//!   `Staged::Device` (`launch.rs`). The step's results (the loss) are read after the replay.
//! - **New inputs each replay, nothing else.** A launch argument is recorded by value, so a
//!   scalar that changes between steps (Adam's bias-corrected step size, the clip scale) must
//!   live in device memory and be computed there: the tests replay three updates of new batches
//!   and compare each with a fresh eager step bit for bit, which fails on a baked scalar.
//!
//! On a GPU the tape is what stream capture turns into a graph: the capture glue replays it
//! once on a capturing stream (`cuda.rs`); under the emulation the tape itself is replayed.
use std::cell::RefCell;

use candle_core::{bail, Result};

use super::launch::{Addr, Gemm, Kernel, KernelArgs, Launch};
use crate::kernels::fused_op::Device;

/// A launcher that can replay a recorded step in its fastest form: on a GPU a CUDA graph
/// captured once from the recording (`cuda.rs`), under the emulation the tape itself.
pub trait Replay: Launch + Sized {
    /// What a capture gives: a graph, or nothing (the tape is replayed).
    type Graph;
    /// Captures `rec`'s step.
    fn capture(&self, rec: &Recording<'_, Self>) -> Result<Self::Graph>;
    /// Runs the step captured as `g` from `rec`.
    fn replay(&self, rec: &Recording<'_, Self>, g: &Self::Graph) -> Result<()>;
}

impl Replay for super::emulated::Emulated {
    type Graph = ();
    fn capture(&self, _: &Recording<'_, Self>) -> Result<()> {
        Ok(())
    }
    fn replay(&self, rec: &Recording<'_, Self>, _: &()) -> Result<()> {
        rec.replay()
    }
}

/// A buffer of the bucket: its address and length. The recording owns the memory; an op's
/// handle neither frees it nor outlives the recording's use of it.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub addr: Addr,
    pub len: usize,
}

/// A recorded kernel launch: the kernel and its arguments, as they were.
type Launched<L> = Box<dyn Fn(&L) -> Result<()>>;

/// Refuses `n` values staged into `dst` of another length: a replay reads all of `dst`.
fn fits(dst: Slot, n: usize) -> Result<()> {
    if n != dst.len {
        bail!("{n} values staged into a bucket buffer of {}", dst.len);
    }
    Ok(())
}

/// One recorded operation, replayed on the inner launcher.
enum Entry<L> {
    Launch(Launched<L>),
    Gemm(Gemm),
    GemmBf16(Gemm),
    Fill(Addr, usize, f32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Before the step is recorded: the bucket's input buffers are allocated and written.
    Setup,
    /// The step's eager run: its buffers allocated, its operations run and taped.
    Recording,
    /// Recorded: only replays and the staging of new inputs.
    Recorded,
}

struct State<L: Launch> {
    mode: Mode,
    floats: Vec<L::Floats>,
    ints: Vec<L::Ints>,
    tape: Vec<Entry<L>>,
}

/// `L` as a recording launcher for one bucket.
pub struct Recording<'l, L: Launch> {
    inner: &'l L,
    state: RefCell<State<L>>,
}

impl<'l, L: Launch> Recording<'l, L> {
    pub fn new(inner: &'l L) -> Self {
        Recording { inner, state: RefCell::new(State { mode: Mode::Setup, floats: Vec::new(), ints: Vec::new(), tape: Vec::new() }) }
    }

    fn mode(&self) -> Mode {
        self.state.borrow().mode
    }

    /// Refuses `what` inside the recorded region.
    fn outside(&self, what: &str) -> Result<()> {
        match self.mode() {
            Mode::Setup | Mode::Recorded => Ok(()),
            Mode::Recording => bail!("{what} inside a recorded step: a CUDA graph would bake it (stage it before the step)"),
        }
    }

    /// Allocates a buffer of `n` values kept for the bucket's life; before the recording
    /// only (the bucket's inputs, staged before each step).
    pub fn buffer(&self, n: usize) -> Result<Slot> {
        if self.mode() != Mode::Setup {
            bail!("a bucket's input buffer allocated after its step was recorded");
        }
        self.alloc(n, false)
    }

    /// A buffer of `n` integers kept for the bucket's life; before the recording only.
    pub fn int_buffer(&self, n: usize) -> Result<Slot> {
        if self.mode() != Mode::Setup {
            bail!("a bucket's input buffer allocated after its step was recorded");
        }
        let b = self.inner.upload_ints(&vec![0; n.max(1)])?;
        let addr = self.inner.ints_addr(&b);
        self.state.borrow_mut().ints.push(b);
        Ok(Slot { addr, len: n })
    }

    /// Writes a step's host inputs into a bucket buffer of the same length, outside the
    /// recorded region.
    pub fn stage(&self, dst: Slot, x: &[f32]) -> Result<()> {
        fits(dst, x.len())?;
        self.write(dst.addr, x)
    }

    /// As [`Recording::stage`], for integers.
    pub fn stage_ints(&self, dst: Slot, x: &[i64]) -> Result<()> {
        fits(dst, x.len())?;
        self.write_ints(dst.addr, x)
    }

    fn alloc(&self, n: usize, nan: bool) -> Result<Slot> {
        let mode = self.mode();
        if mode == Mode::Recorded {
            bail!("an allocation of {n} values inside a replayed step (the bucket's buffers are allocated once)");
        }
        let b = if nan { self.inner.scratch(n)? } else { self.inner.zeros(n)? };
        let addr = self.inner.addr(&b);
        let mut st = self.state.borrow_mut();
        st.floats.push(b);
        if mode == Mode::Recording {
            // Replayed as a refill: zeros for `zeros`, NaN for `scratch` under the emulation.
            if !nan {
                st.tape.push(Entry::Fill(addr, n, 0.0));
            } else if L::POISONS_SCRATCH {
                st.tape.push(Entry::Fill(addr, n, f32::NAN));
            }
        }
        Ok(Slot { addr, len: n })
    }

    /// Runs `step` eagerly once, allocating its buffers and recording its operations; the
    /// replays then run the same operations on the same buffers.
    pub fn record<R>(&self, step: impl FnOnce(&Self) -> Result<R>) -> Result<R> {
        if self.mode() != Mode::Setup {
            bail!("a bucket's step is recorded once");
        }
        self.state.borrow_mut().mode = Mode::Recording;
        let r = step(self);
        // A failed recording leaves nothing to replay.
        let mut st = self.state.borrow_mut();
        st.mode = if r.is_ok() { Mode::Recorded } else { Mode::Setup };
        if r.is_err() {
            st.tape.clear();
        }
        r
    }

    /// Runs the recorded step again on the inner launcher (or, on a GPU, on a capturing stream:
    /// then it is the graph's content).
    pub fn replay(&self) -> Result<()> {
        let st = self.state.borrow();
        if st.mode != Mode::Recorded {
            bail!("no recorded step to replay");
        }
        for e in &st.tape {
            match e {
                Entry::Launch(f) => f(self.inner)?,
                Entry::Gemm(g) => self.inner.gemm(*g)?,
                Entry::GemmBf16(g) => self.inner.gemm_bf16(*g)?,
                &Entry::Fill(a, n, v) => self.inner.fill(a, n, v)?,
            }
        }
        Ok(())
    }

    /// The recorded operations: products, launches and fills.
    pub fn tape_len(&self) -> usize {
        self.state.borrow().tape.len()
    }

    /// Runs `f` on the inner launcher now and, while recording, tapes it.
    fn run(&self, entry: impl FnOnce() -> Entry<L>, now: impl FnOnce() -> Result<()>) -> Result<()> {
        now()?;
        let mut st = self.state.borrow_mut();
        if st.mode == Mode::Recording {
            st.tape.push(entry());
        }
        Ok(())
    }
}

impl<L: Launch> Device for Recording<'_, L> {
    type In<'a> = Addr;
    type Floats = Slot;
}

impl<L: Launch> Launch for Recording<'_, L> {
    type Ints = Slot;
    const POISONS_SCRATCH: bool = L::POISONS_SCRATCH;

    fn zeros(&self, n: usize) -> Result<Slot> {
        self.alloc(n, false)
    }

    fn scratch(&self, n: usize) -> Result<Slot> {
        self.alloc(n, true)
    }

    fn upload(&self, x: &[f32]) -> Result<Slot> {
        self.outside("an upload")?;
        let s = self.alloc(x.len(), false)?;
        self.inner.write(s.addr, x)?;
        Ok(s)
    }

    fn upload_ints(&self, x: &[i64]) -> Result<Slot> {
        self.outside("an upload")?;
        if self.mode() == Mode::Recorded {
            bail!("an allocation inside a replayed step (the bucket's buffers are allocated once)");
        }
        let b = self.inner.upload_ints(x)?;
        let addr = self.inner.ints_addr(&b);
        self.state.borrow_mut().ints.push(b);
        Ok(Slot { addr, len: x.len() })
    }

    fn addr(&self, b: &Slot) -> Addr {
        b.addr
    }

    fn ints_addr(&self, b: &Slot) -> Addr {
        b.addr
    }

    fn gemm(&self, g: Gemm) -> Result<()> {
        self.run(|| Entry::Gemm(g), || self.inner.gemm(g))
    }

    fn gemm_bf16(&self, g: Gemm) -> Result<()> {
        self.run(|| Entry::GemmBf16(g), || self.inner.gemm_bf16(g))
    }

    fn launch<A: KernelArgs>(&self, k: &Kernel<A>, threads: usize, a: A) -> Result<()> {
        let kernel = Kernel { module: k.module, name: k.name, host: k.host };
        self.run(|| Entry::Launch(Box::new(move |l: &L| l.launch(&kernel, threads, a))), || self.inner.launch(k, threads, a))
    }

    fn fill(&self, dst: Addr, n: usize, value: f32) -> Result<()> {
        self.run(|| Entry::Fill(dst, n, value), || self.inner.fill(dst, n, value))
    }

    fn write(&self, dst: Addr, x: &[f32]) -> Result<()> {
        self.outside("a host-to-device copy")?;
        self.inner.write(dst, x)
    }

    fn write_ints(&self, dst: Addr, x: &[i64]) -> Result<()> {
        self.outside("a host-to-device copy")?;
        self.inner.write_ints(dst, x)
    }

    fn read(&self, src: Addr, n: usize) -> Result<Vec<f32>> {
        self.outside("a device-to-host read")?;
        self.inner.read(src, n)
    }
}
