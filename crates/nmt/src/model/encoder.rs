//! Encoders: what the decoder reads of the source. Either cell (`model.cell`, `rnn.rs`).
//!
//! * [`BiRnnEncoder`] (RNNsearch appendix A.2.1): a forward and a backward layer over the
//!   shared source embeddings; annotation `h_j = [→h_j ; ←h_j]`, `(batch, src_len, 2n)`.
//! * [`RnnEncoder`] (RNNenc appendix A): one layer; its last output `h^(T)`, `(batch, n)`.
use candle_core::Tensor;

use super::params::ParamBuilder;
use super::rnn::Rnn;
use crate::config::CellKind;
use crate::error::Result;

/// The checkpoint name of a layer of this cell (`gru` keeps the files of GRU models as they were).
pub(crate) fn cell_name(kind: CellKind) -> &'static str {
    match kind {
        CellKind::Gru(_) => "gru",
        CellKind::Lstm => "lstm",
    }
}

/// Bidirectional encoder.
#[derive(Clone, Debug)]
pub struct BiRnnEncoder {
    pub fwd: Rnn,
    pub bwd: Rnn,
}

impl BiRnnEncoder {
    pub fn new(emb: usize, hidden: usize, kind: CellKind, pb: &ParamBuilder) -> Result<Self> {
        Ok(BiRnnEncoder { fwd: Rnn::new(emb, hidden, kind, &pb.pp("fwd"))?, bwd: Rnn::new(emb, hidden, kind, &pb.pp("bwd"))? })
    }

    /// `x: (batch, src_len, m)`, `mask: (batch, src_len)` → annotations `(batch, src_len, 2n)` and
    /// `←h_1`, the backward layer's output at the first word `(batch, n)` (it has read the whole
    /// sentence; RNNsearch initialises the decoder from it). `state_masks`: each direction's
    /// recurrent-dropout mask `(batch, n)` (training only).
    pub fn forward(&self, x: &Tensor, mask: &Tensor, state_masks: [Option<&Tensor>; 2]) -> Result<(Tensor, Tensor)> {
        let (fwd, _) = self.fwd.run(&self.fwd.project(x)?, mask, false, state_masks[0])?;
        let (bwd, back_first) = self.bwd.run(&self.bwd.project(x)?, mask, true, state_masks[1])?;
        Ok((Tensor::cat(&[fwd, bwd], 2)?, self.bwd.output(&back_first)?))
    }
}

/// Unidirectional encoder (RNNenc).
#[derive(Clone, Debug)]
pub struct RnnEncoder {
    pub rnn: Rnn,
}

impl RnnEncoder {
    pub fn new(emb: usize, hidden: usize, kind: CellKind, pb: &ParamBuilder) -> Result<Self> {
        Ok(RnnEncoder { rnn: Rnn::new(emb, hidden, kind, &pb.pp(cell_name(kind)))? })
    }

    /// `x: (batch, src_len, m)` → `h^(T)` `(batch, n)`, each sentence's output after its last word.
    pub fn forward(&self, x: &Tensor, mask: &Tensor, state_mask: Option<&Tensor>) -> Result<Tensor> {
        let (_, last) = self.rnn.run(&self.rnn.project(x)?, mask, false, state_mask)?;
        self.rnn.output(&last)
    }
}
