//! Inverted dropout with masks from a seeded RNG, so a training run (and its resume) is exact.
use candle_core::Tensor;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Result;

/// Drops units with probability `p` and scales the rest by `1/(1−p)`.
pub struct Dropout {
    p: f64,
    rng: ChaCha8Rng,
}

impl Dropout {
    /// The RNG is seeded from the run's seed and the update number: no state to save.
    pub fn new(p: f64, seed: u64, step: u64) -> Self {
        let mixed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ step.wrapping_add(0xD1B5_4A32_D192_ED03);
        Dropout { p, rng: ChaCha8Rng::seed_from_u64(mixed) }
    }

    pub fn apply(&mut self, x: &Tensor) -> Result<Tensor> {
        if self.p <= 0.0 {
            return Ok(x.clone());
        }
        let keep = 1.0 - self.p;
        let scale = (1.0 / keep) as f32;
        let mask: Vec<f32> = (0..x.elem_count()).map(|_| if self.rng.gen::<f64>() < keep { scale } else { 0.0 }).collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        Ok((x * mask)?)
    }
}
