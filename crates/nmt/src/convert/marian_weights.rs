//! Marian `s2s` weights (`.npz` names, `(in, out)` matrices, `(1, n)` biases) as nmt's
//! parameters (`model_file` names, the same `(in, out)` layout), by the correspondence in
//! `marian_options.rs`:
//!
//! | nmt | Marian |
//! |---|---|
//! | `src_emb (K_x', m)`, `tgt_emb (K_y', m)` | `encoder_Wemb`, `decoder_Wemb`, rows moved to nmt's ids |
//! | `encoder.{fwd,bwd}.w (m, 3n)`, `.b`, `.b_h` | `encoder_bi[_r]_W ‖ _Wx`, `_b ‖ _bx`, zeros |
//! | `encoder.{fwd,bwd}.u_rz (n, 2n)`, `.u (n, n)` | `encoder_bi[_r]_U`, `_Ux` |
//! | `decoder.gru.*` (cell 1) | `decoder_cell1_*`, as the encoder's |
//! | `decoder.gru2.*` (cell 2, Marian's `final` cell) | `decoder_cell2_*`, with `bx` in `b_h`'s candidate block |
//! | `decoder.attention.{w_a, u_a, v_a, b_a}` | `decoder_W_comb_att`, `_Wc_att`, `_U_att`, `_b_att` |
//! | `decoder.{w_s, b_s}` | `decoder_ff_state_{W, b}` |
//! | `output.{o_y, o_h, o_c}`, `output.b` | `decoder_ff_logit_l1_W{0,1,2}`, `_b0 + _b1 + _b2` |
//! | `output.g (l, K_y')` (untied), `output.b_g` | `decoder_ff_logit_l2_Wt (K, l)` (or the older `_W (l, K)`), `_b`, words moved to nmt's ids |
//!
//! With `--layer-normalization`, the gains (`(1, k)` each; Marian's biases are the shifts,
//! as in nmt):
//!
//! | nmt | Marian |
//! |---|---|
//! | `encoder.{fwd,bwd}.{ln_x, ln_h}`, `decoder.{gru,gru2}.{ln_x, ln_h}` | `…_gamma1` (on `xW`), `…_gamma2` (on `sU`) of each cell |
//! | `decoder.attention.{ln_u, ln_w}` | `decoder_att_gamma1` (on the context's product), `_gamma2` (on the state's) |
//! | `decoder.ln_s` | `decoder_ff_state_gamma` |
//! | `output.{ln_y, ln_h, ln_c}` | `decoder_ff_logit_l1_gamma{0,1,2}` |
//!
//! nmt's ids that Marian's vocabulary lacks (PAD; BOS, whose embedding row is zero: Marian
//! starts the decoder from a zero embedding) get zero embedding rows and an output bias of
//! [`ABSENT_LOGIT`], so that they take no probability mass and scores stay Marian's.
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use candle_core::{Device, Tensor};

use super::npz::Array;
use crate::error::{Error, Result};

/// The output bias of the ids Marian's vocabulary does not have: `exp(−10⁴ − max)` is 0 in f32.
pub const ABSENT_LOGIT: f32 = -1.0e4;

/// The arrays of one archive, taken by name; the names taken are kept, so that an array no
/// mapping took (a layer-normalisation gain, a deeper layer) is found.
pub struct Weights {
    arrays: BTreeMap<String, Array>,
    taken: RefCell<BTreeSet<String>>,
}

fn missing(name: &str) -> Error {
    Error::Input(format!("the Marian model has no {name} (is it an s2s model with these options?)"))
}

impl Weights {
    pub fn new(arrays: BTreeMap<String, Array>) -> Self {
        Self { arrays, taken: RefCell::default() }
    }

    /// A matrix `(rows, cols)` by name, its shape checked.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<&Array> {
        let a = self.arrays.get(name).ok_or_else(|| missing(name))?;
        self.taken.borrow_mut().insert(name.to_owned());
        if a.shape != [rows, cols] {
            return Err(Error::Input(format!("Marian's {name} is {:?}, expected [{rows}, {cols}]", a.shape)));
        }
        Ok(a)
    }

    /// Whether the archive has an array of this name.
    fn has(&self, name: &str) -> bool {
        self.arrays.contains_key(name)
    }

    /// A bias `(1, n)` as a vector.
    fn bias(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        Ok(self.matrix(name, 1, n)?.data.clone())
    }

    /// `[A | B]` of two `(rows, ·)` matrices.
    fn side_by_side(&self, a: &str, b: &str, rows: usize, ca: usize, cb: usize) -> Result<Vec<f32>> {
        let (a, b) = (self.matrix(a, rows, ca)?, self.matrix(b, rows, cb)?);
        Ok((0..rows).flat_map(|r| a.data[r * ca..(r + 1) * ca].iter().chain(&b.data[r * cb..(r + 1) * cb]).copied()).collect())
    }

    /// The arrays not taken: a sign of an option the conversion does not know.
    pub fn untaken(&self) -> Vec<String> {
        let taken = self.taken.borrow();
        self.arrays.keys().filter(|k| !taken.contains(*k)).cloned().collect()
    }
}

/// The sizes the conversion needs: embedding `m`, state `n`, nmt's vocabularies, and for each
/// Marian id its nmt id (`nmt_data::ForeignVocab::ours`).
pub struct Shapes<'a> {
    pub emb: usize,
    pub hidden: usize,
    pub src_ours: &'a [u32],
    pub tgt_ours: &'a [u32],
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    pub tied: bool,
    /// Layer normalisation's gains are there.
    pub norm: bool,
}

/// Rows of a `(foreign, cols)` matrix moved to nmt's ids in a `(vocab, cols)` one; the rows no
/// foreign id maps to hold `fill`.
fn move_rows(a: &Array, ours: &[u32], vocab: usize, fill: f32) -> Vec<f32> {
    let cols = a.shape[1];
    let mut out = vec![fill; vocab * cols];
    for (foreign, &id) in ours.iter().enumerate() {
        let id = id as usize;
        out[id * cols..(id + 1) * cols].copy_from_slice(&a.data[foreign * cols..(foreign + 1) * cols]);
    }
    out
}

/// All of nmt's parameters for the Marian weights `w`.
///
/// # Errors
/// [`Error::Input`] naming a missing array or one of another shape than the options imply.
pub fn convert(w: &Weights, s: &Shapes) -> Result<Vec<(String, Tensor)>> {
    let (m, n) = (s.emb, s.hidden);
    let dev = Device::Cpu;
    let mut out: Vec<(String, Tensor)> = Vec::new();
    let mut put = |name: &str, data: Vec<f32>, shape: &[usize]| -> Result<()> {
        out.push((name.to_string(), Tensor::from_vec(data, shape, &dev)?));
        Ok(())
    };
    let src_emb = w.matrix("encoder_Wemb", s.src_ours.len(), m)?;
    put("src_emb", move_rows(src_emb, s.src_ours, s.src_vocab, 0.0), &[s.src_vocab, m])?;
    let tgt_emb = w.matrix("decoder_Wemb", s.tgt_ours.len(), m)?;
    put("tgt_emb", move_rows(tgt_emb, s.tgt_ours, s.tgt_vocab, 0.0), &[s.tgt_vocab, m])?;
    // GRU cells: `final` keeps `bx` inside the reset gate's product (nmt's `b_h`).
    let zeros = |k: usize| vec![0f32; k];
    let mut gru = |ours: &str, theirs: &str, input: usize, last: bool| -> Result<()> {
        let (b, bx) = (w.bias(&format!("{theirs}_b"), 2 * n)?, w.bias(&format!("{theirs}_bx"), n)?);
        put(&format!("{ours}.w"), w.side_by_side(&format!("{theirs}_W"), &format!("{theirs}_Wx"), input, 2 * n, n)?, &[input, 3 * n])?;
        put(&format!("{ours}.u_rz"), w.matrix(&format!("{theirs}_U"), n, 2 * n)?.data.clone(), &[n, 2 * n])?;
        put(&format!("{ours}.u"), w.matrix(&format!("{theirs}_Ux"), n, n)?.data.clone(), &[n, n])?;
        let (b, b_h) = match last {
            false => ([b, bx].concat(), zeros(3 * n)),
            true => ([b, zeros(n)].concat(), [zeros(2 * n), bx].concat()),
        };
        put(&format!("{ours}.b"), b, &[3 * n])?;
        put(&format!("{ours}.b_h"), b_h, &[3 * n])?;
        if s.norm {
            put(&format!("{ours}.ln_x"), w.bias(&format!("{theirs}_gamma1"), 3 * n)?, &[3 * n])?;
            put(&format!("{ours}.ln_h"), w.bias(&format!("{theirs}_gamma2"), 3 * n)?, &[3 * n])?;
        }
        Ok(())
    };
    gru("encoder.fwd", "encoder_bi", m, false)?;
    gru("encoder.bwd", "encoder_bi_r", m, false)?;
    gru("decoder.gru", "decoder_cell1", m, false)?;
    gru("decoder.gru2", "decoder_cell2", 2 * n, true)?;
    let att = 2 * n;
    put("decoder.attention.w_a", w.matrix("decoder_W_comb_att", n, att)?.data.clone(), &[n, att])?;
    put("decoder.attention.u_a", w.matrix("decoder_Wc_att", 2 * n, att)?.data.clone(), &[2 * n, att])?;
    put("decoder.attention.v_a", w.matrix("decoder_U_att", att, 1)?.data.clone(), &[att, 1])?;
    put("decoder.attention.b_a", w.bias("decoder_b_att", att)?, &[att])?;
    put("decoder.w_s", w.matrix("decoder_ff_state_W", 2 * n, n)?.data.clone(), &[2 * n, n])?;
    put("decoder.b_s", w.bias("decoder_ff_state_b", n)?, &[n])?;
    if s.norm {
        put("decoder.attention.ln_u", w.bias("decoder_att_gamma1", att)?, &[att])?;
        put("decoder.attention.ln_w", w.bias("decoder_att_gamma2", att)?, &[att])?;
        put("decoder.ln_s", w.bias("decoder_ff_state_gamma", n)?, &[n])?;
        for (ours, k) in [("output.ln_y", 0), ("output.ln_h", 1), ("output.ln_c", 2)] {
            put(ours, w.bias(&format!("decoder_ff_logit_l1_gamma{k}"), m)?, &[m])?;
        }
    }
    // The output layer's width is dim-emb (`ff_logit_l1`'s `dim`).
    put("output.o_y", w.matrix("decoder_ff_logit_l1_W0", m, m)?.data.clone(), &[m, m])?;
    put("output.o_h", w.matrix("decoder_ff_logit_l1_W1", n, m)?.data.clone(), &[n, m])?;
    put("output.o_c", w.matrix("decoder_ff_logit_l1_W2", 2 * n, m)?.data.clone(), &[2 * n, m])?;
    let biases = ["decoder_ff_logit_l1_b0", "decoder_ff_logit_l1_b1", "decoder_ff_logit_l1_b2"];
    let mut b = zeros(m);
    for name in biases {
        for (acc, x) in b.iter_mut().zip(w.bias(name, m)?) {
            *acc += x;
        }
    }
    put("output.b", b, &[m])?;
    let b_g = w.matrix("decoder_ff_logit_l2_b", 1, s.tgt_ours.len())?;
    let b_g = Array { shape: vec![s.tgt_ours.len(), 1], data: b_g.data.clone() };
    put("output.b_g", move_rows(&b_g, s.tgt_ours, s.tgt_vocab, ABSENT_LOGIT), &[s.tgt_vocab])?;
    if !s.tied {
        // Marian stores the untied output matrix transposed, `_Wt (K, m)` (a row per word);
        // models before that, `_W (m, K)` (`layers/output.cpp`, `isLegacyUntransposedW`).
        let k = s.tgt_ours.len();
        let rows = match w.has("decoder_ff_logit_l2_W") {
            true => {
                let g = w.matrix("decoder_ff_logit_l2_W", m, k)?;
                Array { shape: vec![k, m], data: (0..k).flat_map(|j| (0..m).map(move |i| g.data[i * k + j])).collect() }
            }
            false => w.matrix("decoder_ff_logit_l2_Wt", k, m)?.clone(),
        };
        let moved = Tensor::from_vec(move_rows(&rows, s.tgt_ours, s.tgt_vocab, 0.0), (s.tgt_vocab, m), &dev)?;
        out.push(("output.g".to_string(), moved.t()?.contiguous()?));
    }
    Ok(out)
}
