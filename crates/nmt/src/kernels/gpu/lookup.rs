//! An embedding lookup with its dropout mask on a [`Launch`] (`embedding.cu`): the GPU twin of
//! `kernels::cpu::lookup`. `x_r = E[id_r] ⊙ m_r` for `E (V, m)` and `N` ids → `x (N, m)`; the
//! backward pass scatters `g_r ⊙ m_r` into one zeroed `dE (V, m)`, one thread per column
//! walking the rows in order (deterministic, no atomics; the CPU op's order of sums).
//!
//! The ids and the mask are host data: the op holds them as [`Staged`], so that a recorded
//! training step can stage them into device buffers before it runs and the op uploads nothing
//! ([`Staged::Device`]); the candle form ([`lookup_op`]) hands [`Staged::Host`] values, which the
//! op uploads in each pass.
use candle_core::{bail, DType, Result, Shape, Tensor};

use super::args::kernels;
use super::launch::{Addr, Launch, Staged};
use crate::kernels::fused_op::FusedOp;

kernels! {
    Embedding:
    EMBED_FWD = nmt_embed_fwd, EmbedFwd { out: Addr, table: Addr, ids: Addr, mask: Addr, rows: i64, dim: i64 }
    EMBED_BWD = nmt_embed_bwd, EmbedBwd { de: Addr, g: Addr, ids: Addr, mask: Addr, rows: i64, dim: i64 }
}

/// Rows `ids` of `table (V, m)` (`f32`), each times its row of `mask (N, m)` when given: the
/// signature of `kernels::cpu::lookup::lookup_op`.
pub fn lookup_op(table: &Tensor, ids: &[u32], mask: Option<&[f32]>) -> Result<Tensor> {
    let (vocab, dim) = table.dims2()?;
    if table.dtype() != DType::F32 || ids.iter().any(|&i| i as usize >= vocab) || mask.is_some_and(|m| m.len() != ids.len() * dim) {
        bail!("gpu embed: ids or mask do not fit an f32 table of {:?}", table.dims());
    }
    let n = ids.len();
    let ids = Staged::Host(ids.iter().map(|&i| i64::from(i)).collect());
    let op = Lookup::new(ids, mask.map(|m| Staged::Host(m.to_vec())), n, (vocab, dim));
    // The op's second and third inputs are unused (`Lookup`'s doc).
    let unused = placeholder(table)?;
    super::op::apply(op, table, &unused, &unused)
}

/// A one-element tensor on `like`'s device: the input an op of fewer than three tensors passes
/// for the others (`op::apply` wraps three), whose gradient is a zero.
fn placeholder(like: &Tensor) -> Result<Tensor> {
    Tensor::zeros(1, DType::F32, like.device())
}

/// A mask's address (and the buffer it was uploaded into, kept alive while the launches that
/// read it run), or [`Addr::NULL`] when there is none: the kernels' "no mask".
pub(super) fn mask_addr<L: Launch>(mask: &Option<Staged<f32>>, l: &L) -> Result<(Addr, Option<L::Floats>)> {
    match mask {
        Some(m) => m.addr(l),
        None => Ok((Addr::NULL, None)),
    }
}

/// The lookup as a [`FusedOp`] of inputs `[table (V, m), _, _]`: the second and third are
/// placeholders (one element each, their gradients a zero each), read by neither pass.
pub(crate) struct Lookup {
    /// `N` ids below `V`, `i64` on the device.
    ids: Staged<i64>,
    /// `(N, m)`, contiguous.
    mask: Option<Staged<f32>>,
    rows: usize,
    vocab: usize,
    dim: usize,
}

impl Lookup {
    /// The lookup of `rows` ids (host values, or `rows` `i64`s on the device) in a table of
    /// `vocab × dim`, masked by `mask (rows, dim)` when given. Ids on the device are the
    /// caller's to check (below `vocab`): the kernels read them unchecked.
    pub(crate) fn new(ids: Staged<i64>, mask: Option<Staged<f32>>, rows: usize, (vocab, dim): (usize, usize)) -> Lookup {
        Lookup { ids, mask, rows, vocab, dim }
    }
}

impl<L: Launch> FusedOp<L> for Lookup {
    const NAME: &'static str = "gpu-embed";
    type Saved = ();

    fn out_shape(&self) -> Shape {
        Shape::from((self.rows, self.dim))
    }

    fn forward(&self, l: &L, [table, _, _]: [Addr; 3]) -> Result<(L::Floats, ())> {
        let (ids, _ids_buf) = self.ids.addr(l)?;
        let (mask, _mask_buf) = mask_addr(&self.mask, l)?;
        let out = l.scratch(self.rows * self.dim)?;
        let a = EmbedFwd { out: l.addr(&out), table, ids, mask, rows: self.rows as i64, dim: self.dim as i64 };
        l.launch(&EMBED_FWD, self.rows * self.dim, a)?;
        Ok((out, ()))
    }

    /// `dE (V, m)`; zeros for the placeholders.
    fn backward(&self, l: &L, _: [Addr; 3], _: (), _: Addr, dout: Addr) -> Result<[L::Floats; 3]> {
        let (ids, _ids_buf) = self.ids.addr(l)?;
        let (mask, _mask_buf) = mask_addr(&self.mask, l)?;
        let de = l.zeros(self.vocab * self.dim)?;
        let a = EmbedBwd { de: l.addr(&de), g: dout, ids, mask, rows: self.rows as i64, dim: self.dim as i64 };
        l.launch(&EMBED_BWD, self.dim, a)?;
        Ok([de, l.zeros(1)?, l.zeros(1)?])
    }
}
