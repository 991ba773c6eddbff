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
//!   recurrent matrix `U` (`kernels/cpu/rnn_cell.rs`).
//! - Label smoothing ε (Szegedy et al. 2016): see `Regularizer::label_smoothing`.
//!
//! Each mask is drawn at a [`Site`] (the source embeddings, layer `k`'s input or its states in
//! direction `d`, …), from that site's own ChaCha stream of the update's key
//! (`ChaCha8Rng::set_stream`). A mask is therefore a function of the run's seed, the update,
//! the site and its element count, and of nothing drawn before it: every form of a layer
//! (composed, fused) draws the same mask without agreeing with the others on an order.
use candle_core::Tensor;
use nmt_data::batch::RowShare;
use rand::{RngCore, SeedableRng};

use super::candidates::Candidates;
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

/// Which half of the network a stack's layer is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Encoder,
    Decoder,
}

/// Where a mask is drawn; each site has its own random stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Word and unit dropout on the source embeddings.
    SourceEmbeddings,
    /// Word and unit dropout on the target embeddings.
    TargetEmbeddings,
    /// Unit dropout on the input of layer `layer` (counted from 0, the first; only layers above
    /// the first have one).
    Input { side: Side, layer: usize },
    /// Recurrent dropout on layer `layer`'s states in direction `dir` (0 forward, 1 backward).
    State { side: Side, layer: usize, dir: usize },
    /// Unit dropout on the deep output's maxout units.
    Maxout,
}

impl Site {
    /// The site's stream number: a kind tag, the side, the layer and the direction in separate
    /// bit fields, so two sites never share a stream.
    fn stream(self) -> u64 {
        let side = |s: Side| match s {
            Side::Encoder => 0u64,
            Side::Decoder => 1,
        };
        match self {
            Site::SourceEmbeddings => 1 << 48,
            Site::TargetEmbeddings => 2 << 48,
            Site::Maxout => 3 << 48,
            Site::Input { side: s, layer } => (4 << 48) | (side(s) << 40) | ((layer as u64) << 8),
            Site::State { side: s, layer, dir } => (5 << 48) | (side(s) << 40) | ((layer as u64) << 8) | dir as u64,
        }
    }
}

/// Draws the masks of one update.
pub struct Dropout {
    rates: DropoutRates,
    /// The update's key: the run's seed mixed with the update number.
    key: u64,
    /// A data-parallel rank's rows of the batch (`train::collective`): every mask is drawn for
    /// the whole batch and cut to these rows, so the masks are the same functions of seed and
    /// update whatever the number of ranks. Every mask is batch-major (the batch dimension
    /// leads: `(B, …)`), so the rows are one contiguous slice of it.
    share: Option<RowShare>,
}

impl Dropout {
    /// The streams are keyed by the run's seed and the update number: no state to save.
    pub fn new(rates: DropoutRates, seed: u64, step: u64) -> Self {
        let key = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ step.wrapping_add(0xD1B5_4A32_D192_ED03);
        Dropout { rates, key, share: None }
    }

    /// `site`'s random stream for this update, from its start.
    fn rng(&self, site: Site) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.key);
        rng.set_stream(site.stream());
        rng
    }

    /// Draws for the whole batch and keeps `share`'s rows (see the `share` field).
    pub fn with_share(mut self, share: RowShare) -> Self {
        self.share = Some(share);
        self
    }

    /// The unit-dropout mask at `site` (an upper layer's input, the maxout units) for `count`
    /// elements, or `None` when off.
    pub fn units_mask(&mut self, site: Site, count: usize) -> Option<Vec<f32>> {
        self.draw(&mut self.rng(site), self.rates.units, count)
    }

    /// A recurrent-dropout mask `(rows, hidden)` of `0` or `1/(1−p)` at `site` (a
    /// [`Site::State`]), or `None` when off.
    pub fn recurrent(&mut self, site: Site, rows: usize, hidden: usize) -> Option<Vec<f32>> {
        self.draw(&mut self.rng(site), self.rates.recurrent, rows * hidden)
    }

    /// The source embeddings' mask for `rows` embeddings of `dim` units: word dropout and unit
    /// dropout combined, or `None` when both rates are 0 (`embedding::lookup` applies it).
    pub fn source_mask(&mut self, rows: usize, dim: usize) -> Option<Vec<f32>> {
        self.embedding_mask(Site::SourceEmbeddings, rows, dim, self.rates.src_words)
    }

    /// The target embeddings' mask, as [`Dropout::source_mask`].
    pub fn target_mask(&mut self, rows: usize, dim: usize) -> Option<Vec<f32>> {
        self.embedding_mask(Site::TargetEmbeddings, rows, dim, self.rates.tgt_words)
    }

    /// Word dropout with probability `words` (one draw per row, drawn first from the site's
    /// stream) and unit dropout (one draw per element, after them), as one `(rows, dim)` mask:
    /// one multiplication instead of two.
    fn embedding_mask(&mut self, site: Site, rows: usize, dim: usize, words: f64) -> Option<Vec<f32>> {
        let mut rng = self.rng(site);
        let word_mask = self.draw(&mut rng, words, rows);
        let unit_mask = self.draw(&mut rng, self.rates.units, rows * dim);
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
    fn draw(&self, rng: &mut ChaCha8Rng, p: f64, count: usize) -> Option<Vec<f32>> {
        if p <= 0.0 {
            return None;
        }
        match self.share {
            Some(s) if s.len > 0 && s.len != s.total => {
                let inner = count / s.len;
                let mut all = draw_all(rng, p, inner * s.total);
                all.truncate((s.start + s.len) * inner);
                all.drain(..s.start * inner);
                Some(all)
            }
            _ => Some(draw_all(rng, p, count)),
        }
    }
}

/// `count` inverted-dropout factors from `rng`.
fn draw_all(rng: &mut ChaCha8Rng, p: f64, count: usize) -> Vec<f32> {
    let keep = 1.0 - p;
    let scale = (1.0 / keep) as f32;
    // One 32-bit draw per unit against a threshold: half the RNG work of a uniform f64,
    // and keep-probabilities are exact to 2⁻³².
    let threshold = (keep * 4_294_967_296.0).min(u32::MAX as f64) as u32;
    (0..count).map(|_| if rng.next_u32() < threshold { scale } else { 0.0 }).collect()
}

/// `x ⊙ mask`, the mask (one factor per element of `x`) made a tensor of `x`'s shape and dtype.
pub fn times_mask(x: &Tensor, mask: Vec<f32>) -> Result<Tensor> {
    let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
    Ok((x * mask)?)
}

/// A drawn `(rows, n)` recurrent mask as a tensor of `x`'s dtype and device (the composed
/// forms read their masks so).
pub fn state_tensor(mask: Option<&[f32]>, rows: usize, n: usize, x: &Tensor) -> Result<Option<Tensor>> {
    match mask {
        None => Ok(None),
        Some(m) => Ok(Some(Tensor::from_vec(m.to_vec(), (rows, n), x.device())?.to_dtype(x.dtype())?)),
    }
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

/// The shape of a stack whose masks [`stack_masks`] draws: `layers` layers of `side`, the
/// lowest being layer `first` of it (the decoder's upper layers start at 1), of `dirs`
/// directions over `rows` sentences of `hidden` units, each layer's input `input_len`
/// elements; the network's first layer reads the embeddings, whose masks are drawn apart.
#[derive(Clone, Copy, Debug)]
pub struct StackShape {
    pub side: Side,
    pub first: usize,
    pub layers: usize,
    pub input_len: usize,
    pub rows: usize,
    pub hidden: usize,
    pub dirs: usize,
}

/// The masks of a stack's layers, each drawn at its own sites: its input's unit mask
/// ([`Site::Input`], layers above the network's first) and the recurrent mask of each direction
/// ([`Site::State`]), side by side.
pub fn stack_masks(mut dropout: Option<&mut Dropout>, shape: StackShape) -> Vec<LayerMasks> {
    let side = shape.side;
    (shape.first..shape.first + shape.layers)
        .map(|layer| match dropout.as_deref_mut() {
            None => LayerMasks::default(),
            Some(d) => {
                let input = if layer > 0 { d.units_mask(Site::Input { side, layer }, shape.input_len) } else { None };
                let state = (0..shape.dirs)
                    .map(|dir| d.recurrent(Site::State { side, layer, dir }, shape.rows, shape.hidden))
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.concat());
                LayerMasks { input, state }
            }
        })
        .collect()
}

/// Dropout, label smoothing and the candidate softmax: everything the training loss does that
/// evaluation does not.
pub struct Regularizer {
    pub(crate) dropout: Dropout,
    /// ε of label smoothing: the loss per token is `(1−ε)·(−log p_y) + ε·mean_k(−log p_k)`,
    /// i.e. cross-entropy against `(1−ε)·onehot + ε/K_y`, minus a constant.
    pub(crate) label_smoothing: f64,
    /// The batch's candidate list `V′` (`train.candidates`, `candidates.rs`): the softmax is
    /// normalised over it. Only here, so no evaluation path can see it.
    pub(crate) candidates: Option<Candidates>,
}

impl Regularizer {
    pub fn new(rates: DropoutRates, label_smoothing: f64, seed: u64, step: u64) -> Self {
        Regularizer { dropout: Dropout::new(rates, seed, step), label_smoothing, candidates: None }
    }

    /// The training softmax over `candidates` instead of the whole vocabulary.
    pub fn with_candidates(mut self, candidates: Option<Candidates>) -> Self {
        self.candidates = candidates;
        self
    }

    /// The masks of a data-parallel rank's rows ([`Dropout::with_share`]).
    pub fn with_share(mut self, share: RowShare) -> Self {
        self.dropout = self.dropout.with_share(share);
        self
    }
}
