//! The learning rate of each update: `train.lr`, times the plateau decay's scale
//! (`train.lr_decay`, kept by the trainer), the warm-up's `min(1, k / warmup)` for update `k`
//! (from 1) and the cooldown's `min(1, (1 − f) / lr_cooldown)`, `f` the fraction of the run's
//! budget done before the update (the trainer's `fraction`, rank 0's clock with several ranks).
//!
//! The cooldown takes the rate linearly to zero over the budget's last fraction `lr_cooldown`:
//! 1 is the budget-aware linear schedule of Li, Yumer & Ramanan (2020), a small fraction the
//! cooldown of warmup-stable-decay schedules (Hägele et al. 2024). In the demo's 10 minutes on an
//! AVX2 EPYC (Zen 3, 1 thread, 2026-12-01) the first lost 7.49 test BLEU (one seed) and 0.1
//! gained 1.39 and 3.00 (two seeds; docs/RESULTS.md, "The learning rate in the demo's minutes"):
//! a run far from converged needs its rate until near the end.
use crate::config::TrainConfig;

/// `lr · lr_scale · cooldown(progress)`: the rate before the warm-up's factor.
pub fn rate(t: &TrainConfig, lr_scale: f64, progress: f64) -> f64 {
    let cooldown = match t.lr_cooldown {
        c if c > 0.0 => ((1.0 - progress) / c).clamp(0.0, 1.0),
        _ => 1.0,
    };
    t.lr * lr_scale * cooldown
}

/// `min(1, k / warmup)` for the update `k` being applied (from 1); 1 without a warm-up.
pub fn warmup(t: &TrainConfig, k: u64) -> f64 {
    match t.warmup {
        0 => 1.0,
        w => (k as f64 / w as f64).min(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cooldown's factor over the budget (the whole of it and its last fifth), on top of
    /// the plateau scale; without a cooldown the progress changes nothing; the refusals.
    #[test]
    fn the_cooldown_takes_the_rate_to_zero_at_the_end_of_the_budget() {
        let constant = TrainConfig { lr: 0.1, max_steps: 10, ..TrainConfig::default() };
        let linear = TrainConfig { lr_cooldown: 1.0, ..constant.clone() };
        let last_fifth = TrainConfig { lr_cooldown: 0.2, ..constant.clone() };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(rate(&constant, 1.0, 0.75), 0.1));
        assert!(close(rate(&linear, 1.0, 0.0), 0.1) && close(rate(&linear, 1.0, 0.75), 0.025));
        assert_eq!(rate(&linear, 1.0, 1.0), 0.0);
        assert!(close(rate(&last_fifth, 1.0, 0.75), 0.1) && close(rate(&last_fifth, 0.5, 0.9), 0.025));
        assert!(close(warmup(&TrainConfig { warmup: 4, ..linear.clone() }, 1), 0.25) && warmup(&linear, 1) == 1.0);
        assert!(linear.validate().is_ok());
        assert!(TrainConfig { lr_cooldown: 1.5, ..linear.clone() }.validate().is_err());
        let no_budget = TrainConfig { max_steps: 0, ..linear };
        assert!(no_budget.validate().unwrap_err().to_string().contains("max_minutes"));
        assert!(TrainConfig { max_minutes: 10.0, ..no_budget }.validate().is_ok());
    }
}
