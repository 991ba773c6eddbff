//! What training adds to the loss: dropout masks from a seeded RNG (so a run and its resume are
//! exact) and label smoothing.
//!
//! - Unit dropout (Srivastava et al. 2014), inverted: units dropped with probability `p`, the
//!   rest scaled by `1/(1−p)`; on the embeddings and the maxout output.
//! - Word dropout (Gal & Ghahramani 2016, as Nematus' `dropout_source`/`dropout_target`): a
//!   whole word's embedding row zeroed with probability `p`, the rest scaled by `1/(1−p)`, so the
//!   model learns not to lean on any single word.
//! - Recurrent dropout (Gal & Ghahramani 2016, Nematus' `dropout_hidden`): one mask per
//!   sentence and GRU layer, the same at every time step, on the state where it enters the
//!   recurrent matrix `U` (`kernels/rnn_cell.rs`).
//! - Label smoothing ε (Szegedy et al. 2016): see [`Regularizer::label_smoothing`].
//!
//! A mask depends only on the tensor's element count and the draw order, so the fused and the
//! composed losses, which draw in the same order, see the same masks. The order: source
//! embeddings, the encoder's recurrent masks (forward, then backward direction), target
//! embeddings, the decoder's recurrent mask, the maxout output.
use candle_core::{Tensor, D};
use nmt_data::batch::RowShare;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::Result;

/// Dropout probabilities (0 = off).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DropoutRates {
    /// Units of the embeddings and of the maxout output (`model.dropout`).
    pub units: f64,
    /// Whole source / target words (`train.src_word_dropout`, `train.tgt_word_dropout`).
    pub src_words: f64,
    pub tgt_words: f64,
    /// The GRU states entering `U`, per sentence and layer (`model.recurrent_dropout`).
    pub recurrent: f64,
}

/// Draws the masks of one update.
pub struct Dropout {
    rates: DropoutRates,
    rng: ChaCha8Rng,
    /// A data-parallel rank's rows of the batch (`train::collective`): every mask is drawn for
    /// the whole batch and cut to these rows, so the masks are the same functions of seed and
    /// update whatever the number of ranks. Every mask is batch-major (the batch dimension
    /// leads: `(B, …)`), so the rows are one contiguous slice of it.
    share: Option<RowShare>,
}

impl Dropout {
    /// The RNG is seeded from the run's seed and the update number: no state to save.
    pub fn new(rates: DropoutRates, seed: u64, step: u64) -> Self {
        let mixed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ step.wrapping_add(0xD1B5_4A32_D192_ED03);
        Dropout { rates, rng: ChaCha8Rng::seed_from_u64(mixed), share: None }
    }

    /// Draws for the whole batch and keeps `share`'s rows (see the `share` field).
    pub fn with_share(mut self, share: RowShare) -> Self {
        self.share = Some(share);
        self
    }

    /// The mask of [`Dropout::apply`] for `count` elements, or `None` when off.
    pub fn units_mask(&mut self, count: usize) -> Option<Vec<f32>> {
        self.draw(self.rates.units, count)
    }

    /// Unit dropout on every element of `x`.
    pub fn apply(&mut self, x: &Tensor) -> Result<Tensor> {
        self.embedding(x, 0.0)
    }

    /// Source embeddings `(…, m)`: word dropout and unit dropout.
    pub fn source(&mut self, x: &Tensor) -> Result<Tensor> {
        self.embedding(x, self.rates.src_words)
    }

    /// Target embeddings `(…, m)`: word dropout and unit dropout.
    pub fn target(&mut self, x: &Tensor) -> Result<Tensor> {
        self.embedding(x, self.rates.tgt_words)
    }

    /// A recurrent-dropout mask `(rows, hidden)` of `0` or `1/(1−p)`, or `None` when off.
    pub fn recurrent(&mut self, rows: usize, hidden: usize) -> Option<Vec<f32>> {
        self.draw(self.rates.recurrent, rows * hidden)
    }

    /// [`Dropout::recurrent`] as a tensor of `like`'s dtype and device (the composed path).
    pub fn recurrent_tensor(&mut self, rows: usize, hidden: usize, like: &Tensor) -> Result<Option<Tensor>> {
        match self.recurrent(rows, hidden) {
            None => Ok(None),
            Some(m) => Ok(Some(Tensor::from_vec(m, (rows, hidden), like.device())?.to_dtype(like.dtype())?)),
        }
    }

    /// The combined mask of [`Dropout::source`] for `rows` embeddings of `dim` units, or
    /// `None` when both rates are 0 (the fused embedding op applies it).
    pub fn source_mask(&mut self, rows: usize, dim: usize) -> Option<Vec<f32>> {
        self.embedding_mask(rows, dim, self.rates.src_words)
    }

    /// The combined mask of [`Dropout::target`].
    pub fn target_mask(&mut self, rows: usize, dim: usize) -> Option<Vec<f32>> {
        self.embedding_mask(rows, dim, self.rates.tgt_words)
    }

    /// Word dropout (one mask per row of the last dimension) and unit dropout on `x`.
    fn embedding(&mut self, x: &Tensor, words: f64) -> Result<Tensor> {
        let dim = x.dim(D::Minus1)?.max(1);
        match self.embedding_mask(x.elem_count() / dim, dim, words) {
            None => Ok(x.clone()),
            Some(mask) => times_mask(x, mask),
        }
    }

    /// Word dropout with probability `words` (one draw per row, drawn first) and unit dropout
    /// (one draw per element), as one `(rows, dim)` mask: one multiplication instead of two.
    fn embedding_mask(&mut self, rows: usize, dim: usize, words: f64) -> Option<Vec<f32>> {
        let word_mask = self.draw(words, rows);
        let unit_mask = self.draw(self.rates.units, rows * dim);
        match (word_mask, unit_mask) {
            (None, None) => None,
            (Some(w), None) => Some(w.iter().flat_map(|&m| std::iter::repeat_n(m, dim)).collect()),
            (None, Some(u)) => Some(u),
            (Some(w), Some(mut u)) => {
                for (row, &m) in u.chunks_exact_mut(dim).zip(&w) {
                    row.iter_mut().for_each(|v| *v *= m);
                }
                Some(u)
            }
        }
    }

    /// `count` inverted-dropout factors (`0` or `1/(1−p)`), or `None` when `p` is 0. With a
    /// share of `len` rows, `count = len·inner`: the whole batch's `total·inner` factors are
    /// drawn (the same stream as one process) and the share's slice kept.
    fn draw(&mut self, p: f64, count: usize) -> Option<Vec<f32>> {
        if p <= 0.0 {
            return None;
        }
        match self.share {
            Some(s) if s.len > 0 && s.len != s.total => {
                let inner = count / s.len;
                let mut all = self.draw_all(p, inner * s.total);
                all.truncate((s.start + s.len) * inner);
                all.drain(..s.start * inner);
                Some(all)
            }
            _ => Some(self.draw_all(p, count)),
        }
    }

    fn draw_all(&mut self, p: f64, count: usize) -> Vec<f32> {
        let keep = 1.0 - p;
        let scale = (1.0 / keep) as f32;
        // One 32-bit draw per unit against a threshold: half the RNG work of a uniform f64,
        // and keep-probabilities are exact to 2⁻³².
        let threshold = (keep * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        (0..count).map(|_| if self.rng.next_u32() < threshold { scale } else { 0.0 }).collect()
    }
}

/// `x ⊙ mask`, the mask (one factor per element of `x`) made a tensor of `x`'s shape and dtype.
pub fn times_mask(x: &Tensor, mask: Vec<f32>) -> Result<Tensor> {
    let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
    Ok((x * mask)?)
}

/// `x ⊙ mask`, or `x`.
pub fn masked(x: &Tensor, mask: &Option<Vec<f32>>) -> Result<Tensor> {
    match mask {
        Some(m) => times_mask(x, m.clone()),
        None => Ok(x.clone()),
    }
}

/// One stacked layer's dropout masks, drawn before it runs: on its input (an upper layer's
/// unit dropout) and on its states entering `U` (one per direction, side by side).
#[derive(Clone, Default)]
pub struct LayerMasks {
    pub input: Option<Vec<f32>>,
    pub state: Option<Vec<f32>>,
}

/// The shape of a stack whose masks [`stack_masks`] draws: `layers` layers of `dirs`
/// directions over `rows` sentences of `hidden` units, each layer's input `input_len`
/// elements; the first layer's input is masked only if `first_input`.
#[derive(Clone, Copy, Debug)]
pub struct StackShape {
    pub layers: usize,
    pub first_input: bool,
    pub input_len: usize,
    pub rows: usize,
    pub hidden: usize,
    pub dirs: usize,
}

/// The masks of a stack in the order every form of it draws them: for each layer bottom up,
/// its input's unit mask, then the recurrent mask of each direction.
pub fn stack_masks(mut dropout: Option<&mut Dropout>, shape: StackShape) -> Vec<LayerMasks> {
    (0..shape.layers)
        .map(|k| match dropout.as_deref_mut() {
            None => LayerMasks::default(),
            Some(d) => {
                let input = if k > 0 || shape.first_input { d.units_mask(shape.input_len) } else { None };
                let state = (0..shape.dirs).map(|_| d.recurrent(shape.rows, shape.hidden)).collect::<Option<Vec<_>>>().map(|v| v.concat());
                LayerMasks { input, state }
            }
        })
        .collect()
}

/// Dropout plus label smoothing: everything the training loss does that evaluation does not.
pub struct Regularizer {
    pub dropout: Dropout,
    /// ε of label smoothing: the loss per token is `(1−ε)·(−log p_y) + ε·mean_k(−log p_k)`,
    /// i.e. cross-entropy against `(1−ε)·onehot + ε/K_y`, minus a constant.
    pub label_smoothing: f64,
}

impl Regularizer {
    pub fn new(rates: DropoutRates, label_smoothing: f64, seed: u64, step: u64) -> Self {
        Regularizer { dropout: Dropout::new(rates, seed, step), label_smoothing }
    }

    /// The masks of a data-parallel rank's rows ([`Dropout::with_share`]).
    pub fn with_share(mut self, share: RowShare) -> Self {
        self.dropout = self.dropout.with_share(share);
        self
    }
}
