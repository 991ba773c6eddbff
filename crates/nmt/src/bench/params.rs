//! bench-rnnsearch's parameters and batch, in the layout of the PyTorch reference
//! (`../shared/bench/gen_data.py`): f32 little-endian in [`PARAMS`] order, matrices `[in, out]`
//! row-major, so `x W` is a plain matmul; the batch is i32 source ids then target ids.
use std::path::Path;

use candle_core::{DType, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};

/// Vocabulary sizes, embedding, hidden (per direction) and attention sizes, batch shape.
pub const VOCAB: usize = 8000;
pub const EMB: usize = 256;
pub const HIDDEN: usize = 256;
pub const ATT: usize = 256;
pub const BATCH: usize = 32;
pub const SRC_LEN: usize = 30;
pub const TGT_LEN: usize = 30;
/// The reference's begin-of-sentence id (the target input is `[BOS, y_1 … y_{T-1}]`).
pub const BOS: u32 = 1;

/// Parameter names and shapes, in the order of `init.bin`.
pub const PARAMS: [(&str, &[usize]); 25] = [
    ("src_emb", &[VOCAB, EMB]),
    ("enc_f_wih", &[EMB, 3 * HIDDEN]),
    ("enc_f_whh", &[HIDDEN, 3 * HIDDEN]),
    ("enc_f_bih", &[3 * HIDDEN]),
    ("enc_f_bhh", &[3 * HIDDEN]),
    ("enc_b_wih", &[EMB, 3 * HIDDEN]),
    ("enc_b_whh", &[HIDDEN, 3 * HIDDEN]),
    ("enc_b_bih", &[3 * HIDDEN]),
    ("enc_b_bhh", &[3 * HIDDEN]),
    ("init_w", &[HIDDEN, HIDDEN]),
    ("init_b", &[HIDDEN]),
    ("att_u", &[2 * HIDDEN, ATT]),
    ("att_w", &[HIDDEN, ATT]),
    ("att_b", &[ATT]),
    ("att_v", &[ATT, 1]),
    ("tgt_emb", &[VOCAB, EMB]),
    ("dec_wie", &[EMB, 3 * HIDDEN]),
    ("dec_wic", &[2 * HIDDEN, 3 * HIDDEN]),
    ("dec_whh", &[HIDDEN, 3 * HIDDEN]),
    ("dec_bih", &[3 * HIDDEN]),
    ("dec_bhh", &[3 * HIDDEN]),
    ("out_w", &[HIDDEN + EMB + 2 * HIDDEN, 2 * HIDDEN]),
    ("out_b", &[2 * HIDDEN]),
    ("proj_w", &[HIDDEN, VOCAB]),
    ("proj_b", &[VOCAB]),
];

/// The parameters as trainable variables, in [`PARAMS`] order.
pub struct BenchParams {
    pub vars: Vec<Var>,
}

impl BenchParams {
    /// Reads `init.bin`, or draws the reference's distribution (biases 0, weights U(-0.1, 0.1))
    /// from a seeded generator when `data` is `None`.
    pub fn load(data: Option<&Path>, dtype: DType, device: &Device) -> Result<Self> {
        let total: usize = PARAMS.iter().map(|(_, s)| s.iter().product::<usize>()).sum();
        let flat: Vec<f32> = match data {
            Some(dir) => {
                let path = dir.join("init.bin");
                let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                if bytes.len() != 4 * total {
                    return Err(Error::Input(format!(
                        "{}: {} bytes, expected {} ({} f32 parameters): regenerate it with gen_data.py",
                        path.display(),
                        bytes.len(),
                        4 * total,
                        total
                    )));
                }
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            None => {
                let mut rng = ChaCha8Rng::seed_from_u64(1234);
                let mut v = Vec::with_capacity(total);
                for (_, shape) in PARAMS {
                    let n: usize = shape.iter().product();
                    if shape.len() == 1 {
                        v.extend(std::iter::repeat_n(0.0, n));
                    } else {
                        v.extend((0..n).map(|_| rng.gen_range(-0.1f32..0.1)));
                    }
                }
                v
            }
        };
        let mut off = 0;
        let mut vars = Vec::with_capacity(PARAMS.len());
        for (_, shape) in PARAMS {
            let n: usize = shape.iter().product();
            let t = Tensor::from_slice(&flat[off..off + n], shape, device)?.to_dtype(dtype)?;
            vars.push(Var::from_tensor(&t)?);
            off += n;
        }
        Ok(BenchParams { vars })
    }

    /// The variable called `name` (one of [`PARAMS`]).
    pub fn get(&self, name: &str) -> Result<&Tensor> {
        match PARAMS.iter().position(|(n, _)| *n == name) {
            Some(i) => Ok(self.vars[i].as_tensor()),
            None => Err(Error::Config(format!("no bench parameter {name}"))),
        }
    }

    /// Total number of scalar parameters.
    pub fn count(&self) -> usize {
        self.vars.iter().map(|v| v.elem_count()).sum()
    }
}

/// Source and target ids `(B, S)`, `(B, T)`.
pub struct BenchBatch {
    pub src: Vec<u32>,
    pub tgt: Vec<u32>,
}

impl BenchBatch {
    /// Reads `batch.bin`, or draws ids in `[3, VOCAB)` from a seeded generator.
    pub fn load(data: Option<&Path>) -> Result<Self> {
        let n = BATCH * SRC_LEN + BATCH * TGT_LEN;
        let ids: Vec<u32> = match data {
            Some(dir) => {
                let path = dir.join("batch.bin");
                let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                let ids: Vec<i32> = bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                if bytes.len() != 4 * n || ids.iter().any(|&i| i < 0 || i as usize >= VOCAB) {
                    return Err(Error::Input(format!("{}: expected {n} i32 ids below {VOCAB}", path.display())));
                }
                ids.into_iter().map(|i| i as u32).collect()
            }
            None => {
                let mut rng = ChaCha8Rng::seed_from_u64(4321);
                (0..n).map(|_| rng.gen_range(3..VOCAB as u32)).collect()
            }
        };
        let (src, tgt) = ids.split_at(BATCH * SRC_LEN);
        Ok(BenchBatch { src: src.to_vec(), tgt: tgt.to_vec() })
    }

    /// The decoder's input: `BOS` then the target shifted right, `(B, T)`.
    pub fn tgt_in(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.tgt.len());
        for row in self.tgt.chunks(TGT_LEN) {
            v.push(BOS);
            v.extend_from_slice(&row[..TGT_LEN - 1]);
        }
        v
    }
}
