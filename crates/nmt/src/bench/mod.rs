//! `nmt bench`: the speed of the code `nmt train` and `nmt translate` run, on the preset
//! `bench-rnnsearch` (`ModelConfig::preset`) — the model of the PyTorch reference
//! (`bench/pytorch/`): its weights and batch load into an ordinary [`crate::model::Seq2Seq`]
//! ([`reference`]), and the harness ([`run`]) times that model's loss, backward pass and
//! optimiser step, and the host search, exactly as training and translation call them.
mod cuda_graph;
pub mod reference;
pub mod run;
mod timing;
