//! The host form of the decoder's layers above the first (`upper.rs` has the layers, their
//! equations and shapes), for the fused search: each layer steps on host rows with the training
//! kernels' cell (`kernels::cpu::rnn_cell::CellKernel`), or a gated-feedback layer with
//! `feedback::layer_step`. A stacked decoder's state is the layers' states side by side,
//! `(R, L·w)` with `w = n` (GRU) or `2n` (LSTM).

use super::decoder::HostStepIn;
use super::feedback::{self, FeedbackIn, HostCell, HostFeedback};
use super::output::HostOutput;
use super::rnn::HostRnn;
use super::upper::UpperLayers;
use crate::config::{CellKind, OutputState};
use crate::error::Result;
use crate::kernels::cpu::engine::isa::simd_dispatch;
use crate::kernels::cpu::rnn_cell::{CellKernel, Rows, StepIn};
use crate::kernels::gemm::{fill_rows, Mat};

/// The host form of [`UpperLayers`], for the fused search: each layer steps with the training
/// kernels' cell (`rnn_cell::CellKernel`), or a gated-feedback layer with [`feedback::layer_step`].
/// States are host rows `(R, L·w)`, every layer's state side by side (`w = n` or the LSTM's `2n`).
pub struct HostUpper {
    pub(crate) layers: Vec<HostRnn>,
    /// Each layer's gated-feedback weights, or empty.
    pub(crate) feedback: Vec<HostFeedback>,
    pub(crate) residual: bool,
    kind: CellKind,
    hidden: usize,
}

impl HostUpper {
    /// Copies `upper`'s parameters (layers of cell `kind`, `hidden` units) to the host.
    pub fn new(upper: &UpperLayers, kind: CellKind, hidden: usize) -> Result<Self> {
        Ok(HostUpper {
            layers: upper.layers.iter().map(|l| HostRnn::new(&[l], hidden)).collect::<Result<_>>()?,
            feedback: upper.feedback.iter().map(HostFeedback::new).collect::<Result<_>>()?,
            residual: upper.residual,
            kind,
            hidden,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The width `L·w` of a decoder state row: every layer's state side by side.
    pub fn state_width(&self) -> usize {
        self.widths().1
    }

    /// Which state the first layer's step adds to the deep output ([`HostStepIn::out_state`]):
    /// `which` for one layer; none for a stack, whose top adds it ([`HostUpper::above`]).
    /// The candle forms decide the same in `Rnnsearch::forward` and [`UpperLayers::step_above`].
    pub fn first_output(&self, which: OutputState) -> Option<OutputState> {
        self.is_empty().then_some(which)
    }

    /// Start states `(B, L·w)` from each sentence's `h_0 (B, n)`: every layer starts from
    /// `h_0`, the LSTM's with a zero cell after it (the twin of [`UpperLayers::stack_start`]
    /// over the first layer's `init_state`).
    pub fn stack_start(&self, h0: Vec<f32>) -> Vec<f32> {
        let (n, (lw, sw)) = (self.hidden, self.widths());
        if sw == n {
            return h0;
        }
        let layer = |r: &[f32]| r.iter().copied().chain(std::iter::repeat_n(0.0, lw - n)).collect::<Vec<f32>>();
        h0.chunks_exact(n).flat_map(|r| layer(r).repeat(self.layers.len() + 1)).collect()
    }

    /// One layer's state width `w` and the stacked width `L·w`.
    fn widths(&self) -> (usize, usize) {
        let lw = if self.kind == CellKind::Lstm { 2 * self.hidden } else { self.hidden };
        (lw, (self.layers.len() + 1) * lw)
    }

    /// One step: `prev (R, L·w)` the stacked states before the step, `first (R, w)` the first
    /// layer's new states → the new stacked states and the top output `(R, n)`.
    pub fn step(&self, prev: &[f32], first: &[f32], threads: usize) -> (Vec<f32>, Vec<f32>) {
        let n = self.hidden;
        let (lw, sw) = self.widths();
        let g = self.kind.gates() * n;
        let r_n = first.len() / lw;
        let mut full = vec![0f32; r_n * sw];
        for r in 0..r_n {
            full[r * sw..r * sw + lw].copy_from_slice(&first[r * lw..(r + 1) * lw]);
        }
        let mut x: Vec<f32> = first.chunks_exact(lw).flat_map(|row| row[..n].iter().copied()).collect();
        let active = vec![true; r_n];
        // A gated-feedback stack reads every layer's output before the step, `(R, L·n)`.
        let sources: Vec<f32> = match self.feedback.is_empty() {
            true => Vec::new(),
            false => prev.chunks_exact(sw).flat_map(|row| row.chunks_exact(lw).flat_map(|l| l[..n].iter().copied())).collect(),
        };
        for (k, layer) in self.layers.iter().enumerate() {
            let off = (k + 1) * lw;
            let hp: Vec<f32> = prev.chunks_exact(sw).flat_map(|row| row[off..off + n].iter().copied()).collect();
            let cp: Vec<f32> =
                if lw > n { prev.chunks_exact(sw).flat_map(|row| row[off + n..off + lw].iter().copied()).collect() } else { Vec::new() };
            let (mut h, mut q) = (vec![0f32; r_n * n], vec![0f32; r_n * n]);
            if let Some(fb) = self.feedback.get(k) {
                let at = FeedbackIn { hidden: n, x: &x, sources: &sources, hp: &hp, cp: &cp };
                let cell = HostCell { kind: self.kind, w: &layer.w.w, b: &layer.b, u: &layer.u, bh: &layer.bh };
                feedback::layer_step(&cell, fb, &at, &mut h, &mut q, threads);
            } else {
                let gi = layer.w.affine(&x, r_n, &layer.b, threads);
                let mut gh = fill_rows(&layer.bh, r_n);
                let cell = CellKernel { kind: self.kind, hidden: n, u: &layer.u, norm: None };
                let si = StepIn { hp: &hp, cp: &cp, hu: &hp, mask: None, gi: (&gi, Rows { off: 0, stride: g }), active: &active };
                let r1 = Rows { off: 0, stride: n };
                simd_dispatch!(cell.forward(&si, (&mut gh, Rows { off: 0, stride: g }), (&mut q, r1), (&mut h, r1)));
            }
            for r in 0..r_n {
                full[r * sw + off..r * sw + off + n].copy_from_slice(&h[r * n..(r + 1) * n]);
                if lw > n {
                    full[r * sw + off + n..r * sw + off + lw].copy_from_slice(&q[r * n..(r + 1) * n]);
                }
            }
            x = if self.residual { h.iter().zip(&x).map(|(a, b)| a + b).collect() } else { h };
        }
        (full, x)
    }

    /// Above the first layer's host step for the rows of `x`: its new states `first (R, w)`
    /// and the deep output's pre-activation `pre (R, 2l)` (without the state term when
    /// stacked) → the whole new states `(R, L·w)`, `pre` with the top layer's `O_h` term, and
    /// the state the deep output read (`which`), which the copy gate reads: kept for a stack,
    /// and for one layer when `keep_s_out`.
    pub fn above(
        &self,
        x: &HostStepIn<'_>,
        first: Vec<f32>,
        mut pre: Vec<f32>,
        out: &HostOutput,
        which: OutputState,
        keep_s_out: bool,
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (n, l2) = (self.hidden, out.b.len());
        if !self.is_empty() {
            let (full, top) = self.step(x.state, &first, x.threads);
            let s_out = match which {
                OutputState::Previous => self.top_output(x.state),
                OutputState::Current => top,
            };
            out.o_h.mul_add(&mut pre, 0, l2, Mat::new(&s_out, x.sent.len(), n), x.threads);
            return (full, pre, s_out);
        }
        let s_out = match (keep_s_out, which) {
            (false, _) => Vec::new(),
            (true, OutputState::Previous) => x.s_prev.to_vec(),
            (true, OutputState::Current) => first.chunks_exact(self.widths().0).flat_map(|r| r[..n].iter().copied()).collect(),
        };
        (first, pre, s_out)
    }

    /// The top output `(R, n)` of stacked states `(R, L·w)`: the top layer's `h`, or with
    /// residual connections the sum of every layer's.
    pub fn top_output(&self, states: &[f32]) -> Vec<f32> {
        let n = self.hidden;
        let (lw, sw) = self.widths();
        let layers = self.layers.len() + 1;
        states
            .chunks_exact(sw)
            .flat_map(|row| {
                if self.residual {
                    (0..n).map(|j| (0..layers).map(|k| row[k * lw + j]).sum::<f32>()).collect::<Vec<_>>()
                } else {
                    row[(layers - 1) * lw..(layers - 1) * lw + n].to_vec()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{CellKind, GruForm, StackKind};
    use crate::model::encoder::Stack;
    use crate::model::twin_support::check_upper_step;

    /// Plain upper layers, with and without residual connections, every cell.
    #[test]
    fn host_upper_layers_step_as_the_composed_ones() {
        for (i, kind) in [CellKind::Gru(GruForm::Paper), CellKind::Gru(GruForm::ResetAfter), CellKind::Lstm].into_iter().enumerate() {
            for residual in [false, true] {
                check_upper_step(kind, Stack { layers: 3, residual, kind: StackKind::Plain }, 20 + i as u64);
            }
        }
    }
}
