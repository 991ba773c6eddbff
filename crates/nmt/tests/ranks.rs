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

/// `train.lr_cooldown = 1` (linear to zero) with 2 ranks: every rank applies rank 0's fraction of the
/// budget (`Control::progress`, summed with the gradients; the others send 0), so they end
/// with the weights of 1 rank as under the constant rate. And the trainer does apply it: one
/// rank's 20 updates with the cooldown end elsewhere than without.
#[test]
fn two_ranks_follow_rank_0s_cooldown() {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let diff = common::ranks::two_ranks_against_one(|| Device::Cpu, &["train.lr_cooldown=1.0"]);
    assert!(diff <= 1e-6, "2 ranks differ from 1 by {diff} under the cooldown");
    let d = tempfile::tempdir().unwrap();
    let (cool, plain) = (d.path().join("cool"), d.path().join("plain"));
    common::ranks::train_ranks(&common::ranks::config(20, &["train.lr_cooldown=1.0"]), &cool, 1, || Device::Cpu);
    common::ranks::train_ranks(&common::ranks::config(20, &[]), &plain, 1, || Device::Cpu);
    let ckpt = |p: &std::path::Path| p.join("checkpoint.safetensors");
    let apart = common::weights::max_weight_diff(&ckpt(&cool), &ckpt(&plain));
    assert!(apart > 1e-3, "the cooldown moved the weights by {apart} only");
}
