//! Data-parallel training without MPI: 2 ranks as threads of this process (`common::ranks`),
//! each with half of every batch, end 20 updates with the weights of 1 rank on the whole
//! batches, to 1e-6 (`docs/DISTRIBUTED.md`: MPI's 2 ranks agree to 7.1e-8), with every
//! regulariser on. `tests/cuda.rs` runs the same on one GPU shared by both ranks.
mod common;

use candle_core::Device;

#[test]
fn two_in_process_ranks_end_with_the_weights_of_one() {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let diff = common::ranks::two_ranks_against_one(|| Device::Cpu, &[]);
    eprintln!("2 in-process ranks against 1, 20 updates on the CPU: max |diff| of the weights {diff:e}");
    assert!(diff <= 1e-6, "2 ranks differ from 1 by {diff}");
}
