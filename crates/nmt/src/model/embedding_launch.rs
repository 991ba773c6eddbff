//! The embeddings' launch form (issue 77), the recorded GPU step's twin of `embedding.rs`:
//! `x = E[ids] ⊙ m` `(rows, m)` by `kernels::gpu::lookup`, and the gradient of `E (V, m)`
//! scattered from `dx` into the embedding's slot of the arena.
use candle_core::Result;

use super::launch_tape::{Node, Param, Tape};
use super::regularizer::Dropout;
use crate::kernels::gpu::launch::{Addr, Launch, Staged};
use crate::kernels::gpu::lookup::Lookup;

/// One side's embedding lookup, run: its slot and the op's pass.
pub(crate) struct EmbeddingLaunch<L: Launch> {
    slot: Param,
    node: Node<L, Lookup>,
}

/// The lookup of `ids` (`rows` of them) in slot `slot`'s table of `vocab` rows of `t.sizes.emb`,
/// each row times its row of `mask` when given.
pub(crate) fn forward<L: Launch>(
    t: &Tape<'_, L>,
    slot: Param,
    ids: Staged<i64>,
    mask: Option<Staged<f32>>,
    rows: usize,
    vocab: usize,
) -> Result<EmbeddingLaunch<L>> {
    let op = Lookup::new(ids, mask, rows, (vocab, t.sizes.emb));
    Ok(EmbeddingLaunch { slot, node: Node::forward(t.l, op, [t.slot(slot)?, Addr::NULL, Addr::NULL])? })
}

/// The embedding's dropout mask (`regularizer.rs`'s source or target site), one per batch.
pub(crate) fn mask(d: Option<&mut Dropout>, source: bool, rows: usize, emb: usize) -> Option<Vec<f32>> {
    let d = d?;
    if source {
        d.source_mask(rows, emb)
    } else {
        d.target_mask(rows, emb)
    }
}

impl<L: Launch> EmbeddingLaunch<L> {
    /// The embedded rows `(rows, m)`.
    pub fn at(&self, l: &L) -> Addr {
        self.node.at(l)
    }

    /// Writes the table's gradient from `dx (rows, m)` into the slot.
    pub fn backward(self, t: &Tape<'_, L>, dx: Addr) -> Result<()> {
        let slot = self.slot;
        let [de, _, _] = self.node.backward(t.l, dx)?;
        t.put(slot, &de)
    }
}
