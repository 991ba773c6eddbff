//! One optimiser update's rule, shared by the CPU's fused update (`kernels/cpu/optim_step.rs`) and
//! its GPU twin (`kernels/gpu/optim_step.rs`): Adam (Kingma and Ba 2015, algorithm 1, with its
//! bias corrections at `step`) or Adadelta (Zeiler 2012, algorithm 1, scaled by `lr`), as the
//! optimiser (`train/optim.rs`) chooses each update.

/// One update's rule and hyper-parameters.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// `step` is 1 for the first update.
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        step: u64,
    },
    Adadelta {
        lr: f64,
        rho: f64,
        eps: f64,
    },
}

/// Factors on one parameter's squared gradient in its moments, one per target word
/// (`train.candidates.scale_moments`, `train/moment_scale.rs`): element `i` takes
/// `factors[(i / inner) % factors.len()]`, so `inner = l` reads `E (K_y, l)` by rows and
/// `inner = 1` reads `G (l, K_y)` by columns and `b_G (K_y)` by entries.
#[derive(Clone, Copy, Debug)]
pub struct MomentFactors<'a> {
    pub factors: &'a [f32],
    pub inner: usize,
}

impl MomentFactors<'_> {
    /// The factor of element `i`.
    #[inline]
    pub fn at(&self, i: usize) -> f32 {
        self.factors[(i / self.inner) % self.factors.len()]
    }

    /// The factors of elements `start, start + 1, …, start + out.len() − 1` written into `out`,
    /// a run of one factor (or, with `inner = 1`, a slice of them) at a time, so that the
    /// update's loop over them vectorises.
    pub fn fill(&self, start: usize, out: &mut [f32]) {
        let n = self.factors.len();
        let (mut k, mut r, mut i) = ((start / self.inner) % n, start % self.inner, 0);
        while i < out.len() {
            if self.inner == 1 {
                let run = (n - k).min(out.len() - i);
                out[i..i + run].copy_from_slice(&self.factors[k..k + run]);
                i += run;
                k = 0;
            } else {
                let run = (self.inner - r).min(out.len() - i);
                out[i..i + run].fill(self.factors[k]);
                i += run;
                r = 0;
                k = if k + 1 == n { 0 } else { k + 1 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MomentFactors;

    #[test]
    fn the_factors_run_by_rows_and_by_columns() {
        let factors = [1.0, 2.0, 3.0];
        for inner in [1, 2, 5] {
            let f = MomentFactors { factors: &factors, inner };
            for start in [0, 1, 4, 7, 29] {
                let want: Vec<f32> = (start..start + 20).map(|i| f.at(i)).collect();
                let mut got = vec![0f32; 20];
                f.fill(start, &mut got);
                assert_eq!(got, want, "inner {inner} start {start}");
            }
        }
        assert_eq!(MomentFactors { factors: &factors, inner: 2 }.at(5), 3.0);
    }
}
