//! `bench-rnnsearch`: the fixed model every speed comparison uses (issue 4), its reference
//! weights and batch, composed-op and fused training losses, search, and the timing harness.
pub mod model;
pub mod params;
pub mod run;
pub mod search;
