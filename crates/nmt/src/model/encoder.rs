//! Encoders: what the decoder reads of the source.
//!
//! * [`BiGruEncoder`] (RNNsearch appendix A.2.1): a forward and a backward GRU over the shared
//!   source embeddings; annotation `h_j = [→h_j ; ←h_j]`, `(batch, src_len, 2n)`.
//! * [`GruEncoder`] (RNNenc appendix A): one GRU; its last state `h^(T)`, `(batch, n)`.
use candle_core::Tensor;

use super::gru::Gru;
use super::params::ParamBuilder;
use crate::config::GruForm;
use crate::error::Result;

/// Bidirectional GRU encoder.
#[derive(Clone, Debug)]
pub struct BiGruEncoder {
    pub fwd: Gru,
    pub bwd: Gru,
}

impl BiGruEncoder {
    pub fn new(emb: usize, hidden: usize, form: GruForm, pb: &ParamBuilder) -> Result<Self> {
        Ok(BiGruEncoder { fwd: Gru::new(emb, hidden, form, &pb.pp("fwd"))?, bwd: Gru::new(emb, hidden, form, &pb.pp("bwd"))? })
    }

    /// `x: (batch, src_len, m)`, `mask: (batch, src_len)` → annotations `(batch, src_len, 2n)` and
    /// `←h_1`, the backward GRU's state at the first word `(batch, n)` (it has read the whole
    /// sentence; RNNsearch initialises the decoder from it). `state_masks`: each direction's
    /// recurrent-dropout mask `(batch, n)` (training only).
    pub fn forward(&self, x: &Tensor, mask: &Tensor, state_masks: [Option<&Tensor>; 2]) -> Result<(Tensor, Tensor)> {
        let (fwd, _) = self.fwd.run(&self.fwd.project(x)?, mask, false, state_masks[0])?;
        let (bwd, back_first) = self.bwd.run(&self.bwd.project(x)?, mask, true, state_masks[1])?;
        Ok((Tensor::cat(&[fwd, bwd], 2)?, back_first))
    }
}

/// Unidirectional GRU encoder (RNNenc).
#[derive(Clone, Debug)]
pub struct GruEncoder {
    pub gru: Gru,
}

impl GruEncoder {
    pub fn new(emb: usize, hidden: usize, form: GruForm, pb: &ParamBuilder) -> Result<Self> {
        Ok(GruEncoder { gru: Gru::new(emb, hidden, form, &pb.pp("gru"))? })
    }

    /// `x: (batch, src_len, m)` → `h^(T)` `(batch, n)`, each sentence's state after its last word.
    pub fn forward(&self, x: &Tensor, mask: &Tensor, state_mask: Option<&Tensor>) -> Result<Tensor> {
        let (_, last) = self.gru.run(&self.gru.project(x)?, mask, false, state_mask)?;
        Ok(last)
    }
}
