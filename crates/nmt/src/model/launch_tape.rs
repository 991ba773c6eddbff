//! What a layer's launch form runs on (issue 77): the recorded GPU step's launcher, its
//! parameter arena by slot, the batch as the step reads it, and [`Node`], one op's forward pass
//! kept for its backward pass. The layers' launch forms (`embedding_launch.rs`,
//! `encoder_launch.rs`, `decoder_launch.rs`, `output_launch.rs`) stand on this floor, RNNsearch
//! composes them (`Rnnsearch::launch`), and `launch_step.rs` owns the arena, the optimiser and
//! the replay. Nothing here knows a layer.
use candle_core::Result;

use super::decoder_loop_gpu::LoopDims;
use crate::config::{CellKind, OutputLayer, StartState};
use crate::kernels::fused_op::FusedOp;
use crate::kernels::gpu::args::{self, AddRows, MaskRows};
use crate::kernels::gpu::launch::{Addr, Launch, Staged};

/// The arena's regions, in order: each layer names its own (`launch_slots`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Param {
    SrcEmb,
    EncW,
    EncB,
    EncU,
    EncBh,
    StartW,
    StartB,
    Keys,
    DecW,
    DecB,
    Loop,
    OutWb,
    Proj,
    ProjB,
    TgtEmb,
}

/// Where each slot lies in the arena: `(slot, offset, length)`.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub regions: Vec<(Param, usize, usize)>,
    pub len: usize,
}

impl Layout {
    /// The offset and length of `s`; a slot the model lacks (`Proj` when tied) is an error.
    pub fn span(&self, s: Param) -> Result<(usize, usize)> {
        let r = self.regions.iter().find(|r| r.0 == s);
        r.map(|r| (r.1, r.2)).ok_or_else(|| candle_core::Error::Msg(format!("no {s:?} in this model's arena")))
    }
}

/// A batch's host data as the step reads it (ids `i64`, masks `0` or `1/(1−p)`).
#[derive(Clone, Debug)]
pub struct StepInputs<T> {
    pub src: T,
    pub tgt_in: T,
    pub tgt_out: T,
    pub src_lens: T,
    /// `T` for every sentence (the loop's target lengths).
    pub all: T,
}

/// A batch for the step: its shape `(B, S, T)`, ids and lengths, the loss weights
/// `mask_r / tokens` and the dropout masks, each `None` when off, in the order the layers
/// take them (`Rnnsearch::launch_masks`: each layer draws its own, as many as it has).
#[derive(Clone, Debug)]
pub struct StepBatch<I, F> {
    pub shape: (usize, usize, usize),
    pub ints: StepInputs<I>,
    pub weights: F,
    pub masks: Vec<Option<F>>,
}

/// The model sizes a batch's masks take: embeddings `m`, hidden `H`, deep-output units `l`.
#[derive(Clone, Copy, Debug)]
pub struct MaskSizes {
    pub emb: usize,
    pub hidden: usize,
    pub units: usize,
}

/// The model's sizes the launch forms read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    pub emb: usize,
    pub hidden: usize,
    pub att: usize,
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    pub units: usize,
    pub kind: CellKind,
    pub start: StartState,
    pub layer: OutputLayer,
    pub tied: bool,
    pub looped: LoopDims,
}

/// One step's launcher and parameter arena: where each slot's parameters are read and its
/// gradient written.
pub(crate) struct Tape<'a, L: Launch> {
    pub l: &'a L,
    pub sizes: Sizes,
    pub smoothing: f64,
    params: Addr,
    grads: Addr,
    layout: &'a Layout,
}

impl<'a, L: Launch> Tape<'a, L> {
    /// The tape over the arena whose parameters start at `params` and gradients at `grads`.
    pub fn new(l: &'a L, sizes: Sizes, smoothing: f64, (params, grads): (Addr, Addr), layout: &'a Layout) -> Self {
        Tape { l, sizes, smoothing, params, grads, layout }
    }

    /// The parameters of slot `s`.
    pub fn slot(&self, s: Param) -> Result<Addr> {
        Ok(self.params.at(self.layout.span(s)?.0))
    }

    /// The gradient of slot `s`.
    pub fn grad(&self, s: Param) -> Result<Addr> {
        Ok(self.grads.at(self.layout.span(s)?.0))
    }

    /// Writes `from`, the whole gradient of slot `s`, into the arena.
    pub fn put(&self, s: Param, from: &L::Floats) -> Result<()> {
        let len = self.layout.span(s)?.1;
        self.copy_rows((self.grad(s)?, len), (self.l.addr(from), len), 1, len)
    }

    /// Adds `from` into slot `s`'s gradient (a parameter read by two layers).
    pub fn add(&self, s: Param, from: &L::Floats) -> Result<()> {
        let len = self.layout.span(s)?.1;
        self.add_rows((self.grad(s)?, len), (self.l.addr(from), len), 1, len)
    }

    /// `dst[r][..width] = src[r][..width]` for `rows` rows, each side `(address, row stride)`.
    pub fn copy_rows(&self, (dst, dst_ld): (Addr, usize), (src, src_ld): (Addr, usize), rows: usize, width: usize) -> Result<()> {
        let a =
            MaskRows { dst, dst_ld: dst_ld as i64, src, src_ld: src_ld as i64, mask: Addr::NULL, rows: rows as i64, width: width as i64 };
        self.l.launch(&args::MASK_ROWS, rows * width, a)
    }

    /// `dst[r][..width] += src[r][..width]`, as [`Tape::copy_rows`].
    pub fn add_rows(&self, (dst, dst_ld): (Addr, usize), (src, src_ld): (Addr, usize), rows: usize, width: usize) -> Result<()> {
        let a =
            AddRows { dst, dst_ld: dst_ld as i64, src, src_ld: src_ld as i64, mask: Addr::NULL, rows: rows as i64, width: width as i64 };
        self.l.launch(&args::ADD_ROWS, rows * width, a)
    }
}

/// One op's forward pass, with what its backward pass reads: the op, its inputs' addresses, its
/// output and what it kept. The inputs' buffers are the caller's to keep alive until the
/// backward pass (`DecoderLaunch` holds the loop's two for that reason).
pub(crate) struct Node<L: Launch, O: FusedOp<L>> {
    pub op: O,
    pub x: [Addr; 3],
    pub out: L::Floats,
    saved: O::Saved,
}

impl<L: Launch, O: FusedOp<L>> Node<L, O> {
    /// `op`'s forward pass on inputs `x`.
    pub fn forward(l: &L, op: O, x: [Addr; 3]) -> Result<Self> {
        let (out, saved) = op.forward(l, x)?;
        Ok(Node { op, x, out, saved })
    }

    /// The output's address.
    pub fn at(&self, l: &L) -> Addr {
        l.addr(&self.out)
    }

    /// The inputs' gradients from the output's gradient `dout`.
    pub fn backward(self, l: &L, dout: Addr) -> Result<[L::Floats; 3]> {
        let out = l.addr(&self.out);
        self.op.backward(l, self.x, self.saved, out, dout)
    }
}

/// The next mask of a batch's list (`None` when off, or past the list's end).
pub(crate) fn take_mask(masks: &mut std::slice::Iter<'_, Option<Staged<f32>>>) -> Option<Staged<f32>> {
    masks.next().cloned().flatten()
}
