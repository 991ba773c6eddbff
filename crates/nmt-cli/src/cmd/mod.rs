//! One module per subcommand; each parses its flags and calls the library.
pub mod average;
pub mod bench;
pub mod common;
pub mod convert;
pub mod demo;
pub mod embed;
pub mod eval;
pub mod io;
pub mod plot;
pub mod prepare;
pub mod quantize;
pub mod rescore;
pub mod score;
pub mod serve;
pub mod shortlist;
pub mod train;
pub mod translate;
