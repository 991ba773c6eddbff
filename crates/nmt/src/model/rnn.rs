//! A recurrent layer of either cell (`model.cell`): the GRU of `gru.rs` or the LSTM of
//! `lstm.rs`, behind one interface, so that encoders and decoders are written once.
//!
//! A layer's *state* is what a step carries: `h (batch, n)` for the GRU, `[h; c] (batch, 2n)`
//! for the LSTM. Padding carries the whole state and search reorders it as one row; the
//! layers above read [`Rnn::output`], the `h` part. Gate width `G`: `3n` or `4n`.
use candle_core::{Tensor, D};

use super::gru::{Gru, GruNorm};
use super::lstm::{lstm_step, Lstm};
use super::params::ParamBuilder;
use crate::config::{CellKind, Precision};
use crate::error::Result;
use crate::kernels::cpu::birnn;
use crate::kernels::cpu::norm_rows::ln_rows;
use crate::kernels::cpu::rnn_sequence;
use crate::kernels::gemm::fill_rows;
use crate::kernels::shapes::rnn_dims::RnnDims;
use crate::model::dense::{hcat, host, Dense};

/// The state a layer of cell `kind` starts from, given its `h_0 (batch, n)`: `h_0`, or the
/// LSTM's `[h_0; 0]`.
pub fn start_state(kind: CellKind, h0: &Tensor) -> Result<Tensor> {
    match kind {
        CellKind::Gru(_) => Ok(h0.clone()),
        CellKind::Lstm => Ok(Tensor::cat(&[h0, &h0.zeros_like()?], D::Minus1)?),
    }
}

/// The output `h (batch, n)` of a state of either cell, contiguous.
pub fn state_output(state: &Tensor, hidden: usize) -> Result<Tensor> {
    Ok(state.narrow(D::Minus1, 0, hidden)?.contiguous()?)
}

/// One recurrent layer.
#[derive(Clone, Debug)]
pub enum Rnn {
    Gru(Gru),
    Lstm(Lstm),
}

impl Rnn {
    /// `norm`: with layer normalisation (`layer_norm.rs`; the reset-after GRU only).
    pub fn new(input: usize, hidden: usize, kind: CellKind, norm: bool, pb: &ParamBuilder) -> Result<Self> {
        Ok(match kind {
            CellKind::Gru(form) => Rnn::Gru(Gru::new(input, hidden, form, norm, pb)?),
            CellKind::Lstm if norm => {
                return Err(crate::error::Error::Config("layer normalisation is defined for the GRU, not the LSTM".into()))
            }
            CellKind::Lstm => Rnn::Lstm(Lstm::new(input, hidden, pb)?),
        })
    }

    /// The layer-normalisation gains, when the layer has them.
    pub fn norm(&self) -> Option<&GruNorm> {
        match self {
            Rnn::Gru(g) => g.norm.as_ref(),
            Rnn::Lstm(_) => None,
        }
    }

    pub fn kind(&self) -> CellKind {
        match self {
            Rnn::Gru(g) => CellKind::Gru(g.form),
            Rnn::Lstm(_) => CellKind::Lstm,
        }
    }

    pub fn hidden(&self) -> usize {
        match self {
            Rnn::Gru(g) => g.hidden,
            Rnn::Lstm(l) => l.hidden,
        }
    }

    /// The input projection's weights `W (in, G)` and bias `b (G)`.
    pub fn input_weights(&self) -> (&Tensor, &Tensor) {
        match self {
            Rnn::Gru(g) => (&g.w, &g.b),
            Rnn::Lstm(l) => (&l.w, &l.b),
        }
    }

    /// `U (n, G)` in the fused kernels' layout.
    pub fn u_cat(&self) -> Result<Tensor> {
        match self {
            Rnn::Gru(g) => g.u_cat(),
            Rnn::Lstm(l) => Ok(l.u.clone()),
        }
    }

    /// The recurrent bias `(G)`: the reset-after GRU's `b_h`, else zeros.
    pub fn bias_h(&self) -> Result<Tensor> {
        match self {
            Rnn::Gru(g) => g.bias_h(),
            Rnn::Lstm(l) => Ok(Tensor::zeros(4 * l.hidden, l.w.dtype(), l.w.device())?),
        }
    }

    /// Input projections of a whole batch of sequences: `(batch, len, in)` → `(batch, len, G)`.
    pub fn project(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Rnn::Gru(g) => g.project(x),
            Rnn::Lstm(l) => super::gru::project_sequence(x, &l.w, &l.b, None),
        }
    }

    /// The state a layer starts from, given its `h_0 (batch, n)` ([`start_state`]).
    pub fn start(&self, h0: &Tensor) -> Result<Tensor> {
        start_state(self.kind(), h0)
    }

    /// The output `h (batch, n)` of a state, contiguous (the LSTM's is a column block, which
    /// `index_select` and CUDA's matmul refuse as a view).
    pub fn output(&self, state: &Tensor) -> Result<Tensor> {
        state_output(state, self.hidden())
    }

    /// One step: `gi (batch, G)` (the input projection plus any extra input term), `state` →
    /// the new state; `state_mask (batch, n)` is recurrent dropout's mask (training only).
    pub fn step(&self, gi: &Tensor, state: &Tensor, state_mask: Option<&Tensor>) -> Result<Tensor> {
        match self {
            Rnn::Gru(g) => g.step(gi, state, state_mask),
            Rnn::Lstm(l) => lstm_step(gi, state, &l.u, None, state_mask),
        }
    }

    /// Runs over a padded batch: `gi (batch, len, G)`, `mask (batch, len)` with 1 at real
    /// tokens; at padding the state is carried unchanged, so the state after the loop is each
    /// sentence's last real state, and a reversed pass starts cleanly at each sentence's own
    /// end. Starts from `h0 (batch, n)` ([`Rnn::start`]) or zero. Returns the outputs `h`
    /// `(batch, len, n)` and the final state.
    pub fn run(
        &self,
        gi: &Tensor,
        mask: &Tensor,
        reverse: bool,
        state_mask: Option<&Tensor>,
        h0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let (b, t, _) = gi.dims3()?;
        let mut st = match h0 {
            Some(h) => self.start(h)?,
            None => self.start(&Tensor::zeros((b, self.hidden()), gi.dtype(), gi.device())?)?,
        };
        let mut outs = vec![None; t];
        let order: Vec<usize> = if reverse { (0..t).rev().collect() } else { (0..t).collect() };
        for i in order {
            let m = mask.narrow(1, i, 1)?;
            let new = self.step(&gi.narrow(1, i, 1)?.squeeze(1)?, &st, state_mask)?;
            st = (&st + m.broadcast_mul(&(new - &st)?)?)?;
            outs[i] = Some(self.output(&st)?);
        }
        let outs: Vec<Tensor> = outs.into_iter().flatten().collect();
        Ok((Tensor::stack(&outs, 1)?, st))
    }
}

/// The host form of one layer (or two directions' layers side by side), in the training
/// kernels' layout (`kernels::cpu::rnn_sequence`, `kernels::cpu::birnn`),
/// so the search runs the very code that trains: `k` directions (2 for RNNsearch's
/// bidirectional encoder, 1 for RNNenc's encoder and the decoder's upper layers), `W (m, k·G)` and `b (k·G)` side by side,
/// `U (k, n, G)` packed `[U_r | U_z | U_n]` (LSTM: `[U_i | U_f | U_g | U_o]`), recurrent biases
/// `b_h (k, G)` (zero for the paper's GRU and the LSTM); with layer normalisation each
/// direction's `(γ_x (G), γ_h (G))`.
pub struct HostRnn {
    pub(crate) w: Dense,
    pub(crate) b: Vec<f32>,
    pub(crate) u: Vec<f32>,
    pub(crate) bh: Vec<f32>,
    pub(crate) norm: Vec<(Vec<f32>, Vec<f32>)>,
}

impl HostRnn {
    pub fn new(grus: &[&Rnn], emb: usize) -> Result<Self> {
        let n3 = grus.first().map_or(0, |g| g.kind().gates() * g.hidden());
        let ws: Vec<Vec<f32>> = grus.iter().map(|g| host(g.input_weights().0)).collect::<Result<_>>()?;
        let blocks: Vec<(&[f32], usize)> = ws.iter().map(|w| (&w[..], n3)).collect();
        let mut b = Vec::new();
        let (mut u, mut bh, mut norm) = (Vec::new(), Vec::new(), Vec::new());
        for g in grus {
            b.extend(host(g.input_weights().1)?);
            u.extend(host(&g.u_cat()?)?);
            bh.extend(host(&g.bias_h()?)?);
            if let Some(n) = g.norm() {
                norm.push((host(&n.x)?, host(&n.h)?));
            }
        }
        Ok(HostRnn { w: Dense::new(hcat(&blocks, emb), emb), b, u, bh, norm })
    }

    /// The input terms `(rows, k·G)` of `x (rows, in)`: `x W + b`, or each direction's
    /// `LN(x W)·γ_x + b`.
    fn input_terms(&self, x: &[f32], rows: usize, threads: usize) -> Vec<f32> {
        if self.norm.is_empty() {
            return self.w.affine(x, rows, &self.b, threads);
        }
        let width = self.b.len();
        let mut gi = self.w.affine(x, rows, &vec![0.0; width], threads);
        for (k, ((gx, _), b)) in self.norm.iter().zip(self.b.chunks(width / self.norm.len())).enumerate() {
            ln_rows(&mut gi, rows, (width, k * gx.len()), gx, Some(b));
        }
        gi
    }
}

/// A padded batch as the host encoder reads it: `batch` sentences of `len` positions with
/// true lengths `lens` (each at least 1), layers of cell `kind` with `hidden` units.
pub struct HostBatch<'a> {
    pub(crate) batch: usize,
    pub(crate) len: usize,
    pub(crate) lens: &'a [usize],
    pub(crate) kind: CellKind,
    pub(crate) hidden: usize,
}

impl HostBatch<'_> {
    /// The training kernels' sizes for layers of `dirs` directions (2: both at once).
    pub fn dims(&self, dirs: usize) -> RnnDims {
        let gi_stride = self.kind.gates() * self.hidden * dirs;
        let (batch, len, hidden, kind, lens) = (self.batch, self.len, self.hidden, self.kind, self.lens.to_vec());
        RnnDims { batch, len, hidden, reverse: false, kind, lens, mask: None, gi_stride, gi_off: 0, products: Precision::F32 }
    }
}

/// A stack of host layers over `x (B, S, in)`, bottom up, by the training kernels' own forward
/// pass (`kernels::cpu::birnn` for `dirs = 2`, both directions at once, one per thread;
/// `kernels::cpu::rnn_sequence` for 1): each sentence's state carried through its padding. Upper layers read
/// the one below and, with `residual`, add it (`encoder.rs`). Outputs `(B, S, dirs·n)`.
pub fn host_stack(layers: &[HostRnn], x: &[f32], at: &HostBatch<'_>, dirs: usize, residual: bool, threads: usize) -> Vec<f32> {
    let (b, s, n) = (at.batch, at.len, at.hidden);
    let g = at.kind.gates() * n;
    let mut out = x.to_vec();
    for (k, layer) in layers.iter().enumerate() {
        let dims = at.dims(dirs);
        let gi = layer.input_terms(&out, b * s, threads);
        let h = if dirs == 2 {
            // Each direction's `[b_h | γ_h]` with layer normalisation (`kernels::cpu::birnn`).
            let bh: Vec<f32> = match layer.norm.is_empty() {
                true => layer.bh.clone(),
                false => layer.bh.chunks(g).zip(&layer.norm).flat_map(|(b, (_, gh))| b.iter().chain(gh).copied()).collect(),
            };
            birnn::annotations(&dims, &gi, &layer.u, &bh)
        } else {
            let mut row = layer.bh.clone();
            row.resize(g + n, 0.0); // [b_h; h_0 = 0]
            rnn_sequence::forward(&dims, &gi, &layer.u, &fill_rows(&row, b), layer.norm.first().map(|(_, gh)| &gh[..])).0
        };
        out = if k > 0 && residual { h.iter().zip(&out).map(|(a, b)| a + b).collect() } else { h };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GruForm;
    use crate::model::twin_support::{assert_close, randn, random_layer, values};
    use candle_core::Device;

    /// The host form of a layer (one direction, over a padded batch) gives the composed
    /// layer's outputs at every real position, for both GRU forms and the LSTM.
    #[test]
    fn host_layer_runs_as_the_composed_layer() {
        let (m, n, b, s) = (5, 4, 3, 6);
        let lens = [6usize, 4, 1];
        let mask: Vec<f32> = lens.iter().flat_map(|&l| (0..s).map(move |t| if t < l { 1.0 } else { 0.0 })).collect();
        let mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap();
        let ra = CellKind::Gru(GruForm::ResetAfter);
        for (kind, norm) in [(CellKind::Gru(GruForm::Paper), false), (ra, false), (CellKind::Lstm, false), (ra, true)] {
            let rnn = random_layer(1, |pb| Rnn::new(m, n, kind, norm, pb));
            let (x, xv) = randn(2, &[b, s, m]);
            let (h, _) = rnn.run(&rnn.project(&x).unwrap(), &mask, false, None, None).unwrap();
            let host = HostRnn::new(&[&rnn], m).unwrap();
            let at = HostBatch { batch: b, len: s, lens: &lens, kind, hidden: n };
            let out = host_stack(&[host], &xv, &at, 1, false, 1);
            let h = values(&h);
            for (r, &l) in lens.iter().enumerate() {
                let real = r * s * n..(r * s + l) * n;
                assert_close(&format!("{kind:?} (norm {norm}) sentence {r}"), &out[real.clone()], &h[real], 1e-5);
            }
        }
    }

    /// Both directions of a layer-normalised bidirectional layer on the host (the
    /// bidirectional kernel's forward pass, each direction with its own gains) give the
    /// composed layers' annotations.
    #[test]
    fn host_normed_bidirectional_layer_runs_as_the_composed_layers() {
        let (m, n, b, s) = (5, 4, 2, 5);
        let lens = [5usize, 3];
        let mask: Vec<f32> = lens.iter().flat_map(|&l| (0..s).map(move |t| if t < l { 1.0 } else { 0.0 })).collect();
        let mask = Tensor::from_vec(mask, (b, s), &Device::Cpu).unwrap();
        let kind = CellKind::Gru(GruForm::ResetAfter);
        let (fwd, bwd) = (random_layer(3, |pb| Rnn::new(m, n, kind, true, pb)), random_layer(4, |pb| Rnn::new(m, n, kind, true, pb)));
        let (x, xv) = randn(5, &[b, s, m]);
        let (hf, _) = fwd.run(&fwd.project(&x).unwrap(), &mask, false, None, None).unwrap();
        let (hb, _) = bwd.run(&bwd.project(&x).unwrap(), &mask, true, None, None).unwrap();
        let want = values(&Tensor::cat(&[hf, hb], 2).unwrap());
        let at = HostBatch { batch: b, len: s, lens: &lens, kind, hidden: n };
        let out = host_stack(&[HostRnn::new(&[&fwd, &bwd], m).unwrap()], &xv, &at, 2, false, 1);
        for (r, &l) in lens.iter().enumerate() {
            let real = r * s * 2 * n..(r * s + l) * 2 * n;
            assert_close(&format!("sentence {r}"), &out[real.clone()], &want[real], 1e-5);
        }
    }
}
