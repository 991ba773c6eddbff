//! The floor both devices stand on: the shapes of the ops that have a CPU form (`kernels/cpu/`)
//! and a GPU twin (`kernels/gpu/`). Each file holds what a caller passes to one op, the
//! dimensions of a call checked from it, and the layout of the packed weights both devices read,
//! so that neither device's room imports the other's (docs/ARCHITECTURE.md, "Kernels").
//!
//! Their functions are `#[inline]`: they moved out of the CPU loops' own files, and the release
//! profile builds a crate in 16 codegen units without LTO, so a loop would otherwise call a
//! one-line accessor across units.
pub mod attn_dims;
pub mod feedback_dims;
pub mod proj_weight;
pub mod rnn_dims;
pub mod update_rule;
