//! The PyTorch reference's weights and batch (`bench/pytorch/gen_data.py`: `init.bin`,
//! `batch.bin`) as a [`Seq2Seq`] of the preset `bench-rnnsearch` and a training [`Batch`].
//!
//! `init.bin` is f32 little-endian in [`PARAMS`] order, matrices `[in, out]` row-major (our
//! layout too); the reference's names map onto the model's parameters below, its GRU matrices
//! `W_hh = [U_r | U_z | U_n]` split into `u_rz` and `u`. `batch.bin` is i32 source ids then
//! target ids. The reference's `<s>` is id 1 (ours is 2): its decoder inputs are used as they
//! are, so the first loss equals the reference's `loss0`.
use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use nmt_data::Batch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::model::params::Params;
use crate::model::Seq2Seq;

/// Batch shape of the reference: sentences, source and target length.
pub const BATCH: usize = 32;
pub const SRC_LEN: usize = 30;
pub const TGT_LEN: usize = 30;
/// The reference's `<s>` id.
pub const REF_BOS: u32 = 1;
const V: usize = 8000;
const E: usize = 256;
const H: usize = 256;
const A: usize = 256;

/// The reference's parameter names and shapes, in the order of `init.bin`.
pub const PARAMS: [(&str, &[usize]); 25] = [
    ("src_emb", &[V, E]),
    ("enc_f_wih", &[E, 3 * H]),
    ("enc_f_whh", &[H, 3 * H]),
    ("enc_f_bih", &[3 * H]),
    ("enc_f_bhh", &[3 * H]),
    ("enc_b_wih", &[E, 3 * H]),
    ("enc_b_whh", &[H, 3 * H]),
    ("enc_b_bih", &[3 * H]),
    ("enc_b_bhh", &[3 * H]),
    ("init_w", &[H, H]),
    ("init_b", &[H]),
    ("att_u", &[2 * H, A]),
    ("att_w", &[H, A]),
    ("att_b", &[A]),
    ("att_v", &[A, 1]),
    ("tgt_emb", &[V, E]),
    ("dec_wie", &[E, 3 * H]),
    ("dec_wic", &[2 * H, 3 * H]),
    ("dec_whh", &[H, 3 * H]),
    ("dec_bih", &[3 * H]),
    ("dec_bhh", &[3 * H]),
    ("out_w", &[H + E + 2 * H, 2 * H]),
    ("out_b", &[2 * H]),
    ("proj_w", &[H, V]),
    ("proj_b", &[V]),
];

/// Where each reference tensor goes: a model parameter, or the rows (`out_w`: `[s; E y; c]`)
/// or columns (`W_hh`: `[U_rz | U_n]`) it is split into.
enum Target {
    Whole(&'static str),
    Rows(&'static [(&'static str, usize)]),
    Cols(&'static [(&'static str, usize)]),
}

fn target(name: &str) -> Result<Target> {
    use Target::*;
    Ok(match name {
        "src_emb" => Whole("src_emb"),
        "enc_f_wih" => Whole("encoder.fwd.w"),
        "enc_f_whh" => Cols(&[("encoder.fwd.u_rz", 2 * H), ("encoder.fwd.u", H)]),
        "enc_f_bih" => Whole("encoder.fwd.b"),
        "enc_f_bhh" => Whole("encoder.fwd.b_h"),
        "enc_b_wih" => Whole("encoder.bwd.w"),
        "enc_b_whh" => Cols(&[("encoder.bwd.u_rz", 2 * H), ("encoder.bwd.u", H)]),
        "enc_b_bih" => Whole("encoder.bwd.b"),
        "enc_b_bhh" => Whole("encoder.bwd.b_h"),
        "init_w" => Whole("decoder.w_s"),
        "init_b" => Whole("decoder.b_s"),
        "att_u" => Whole("decoder.attention.u_a"),
        "att_w" => Whole("decoder.attention.w_a"),
        "att_b" => Whole("decoder.attention.b_a"),
        "att_v" => Whole("decoder.attention.v_a"),
        "tgt_emb" => Whole("tgt_emb"),
        "dec_wie" => Whole("decoder.gru.w"),
        "dec_wic" => Whole("decoder.c"),
        "dec_whh" => Cols(&[("decoder.gru.u_rz", 2 * H), ("decoder.gru.u", H)]),
        "dec_bih" => Whole("decoder.gru.b"),
        "dec_bhh" => Whole("decoder.gru.b_h"),
        "out_w" => Rows(&[("output.o_h", H), ("output.o_y", E), ("output.o_c", 2 * H)]),
        "out_b" => Whole("output.b"),
        "proj_w" => Whole("output.g"),
        "proj_b" => Whole("output.b_g"),
        other => return Err(Error::Config(format!("bench: unknown reference parameter {other}"))),
    })
}

/// The preset's configuration.
pub fn config() -> Result<ModelConfig> {
    ModelConfig::preset("bench-rnnsearch")
}

/// The model with the reference's weights (`dir/init.bin`), or freshly initialised (seeded)
/// when `dir` is `None`.
pub fn model(dir: Option<&Path>, device: &Device) -> Result<Seq2Seq> {
    let cfg = config()?;
    let Some(dir) = dir else { return Seq2Seq::fresh(&cfg, 1234, DType::F32, device) };
    let path = dir.join("init.bin");
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let total: usize = PARAMS.iter().map(|(_, s)| s.iter().product::<usize>()).sum();
    if bytes.len() != 4 * total {
        return Err(Error::Input(format!(
            "{}: {} bytes, expected {} ({total} f32 parameters): regenerate it with gen_data.py",
            path.display(),
            bytes.len(),
            4 * total
        )));
    }
    let flat: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Seq2Seq::build(&cfg, Params::from_tensors(tensors(&flat, device)?, DType::F32, device))
}

/// The reference's flat parameters as the model's named tensors.
pub fn tensors(flat: &[f32], device: &Device) -> Result<BTreeMap<String, Tensor>> {
    let mut out = BTreeMap::new();
    let mut off = 0;
    for (name, shape) in PARAMS {
        let n: usize = shape.iter().product();
        let t = Tensor::from_slice(&flat[off..off + n], shape, device)?;
        off += n;
        match target(name)? {
            Target::Whole(to) => {
                // `att_v (A, 1)` is the model's `v_a (A, 1)` too; biases and matrices as they are.
                out.insert(to.to_string(), t);
            }
            Target::Rows(parts) | Target::Cols(parts) => {
                let dim = usize::from(matches!(target(name)?, Target::Cols(_)));
                let mut start = 0;
                for (to, len) in parts {
                    out.insert(to.to_string(), t.narrow(dim, start, *len)?.contiguous()?);
                    start += len;
                }
            }
        }
    }
    Ok(out)
}

/// The reference batch repeated `copies` times (`nmt bench --batch 128` is 4 copies of the
/// 32 sentences: the same loss, four times the work).
pub fn tiled(batch: &Batch, copies: usize) -> Batch {
    let copies = copies.max(1);
    let rep = |v: &[u32]| v.repeat(copies);
    Batch {
        size: batch.size * copies,
        src: rep(&batch.src),
        src_lengths: batch.src_lengths.repeat(copies),
        tgt_in: rep(&batch.tgt_in),
        tgt_out: rep(&batch.tgt_out),
        tgt_lengths: batch.tgt_lengths.repeat(copies),
        indices: (0..batch.size * copies).collect(),
        src_ext: rep(&batch.src_ext),
        ..batch.clone()
    }
}

/// The reference's batch (`dir/batch.bin`, or seeded ids in `[4, 8000)`) as a training batch
/// whose decoder inputs start with the reference's `<s>`.
pub fn batch(dir: Option<&Path>) -> Result<Batch> {
    let n = BATCH * (SRC_LEN + TGT_LEN);
    let ids: Vec<u32> = match dir {
        Some(dir) => {
            let path = dir.join("batch.bin");
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            let ids: Vec<i32> = bytes.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            if bytes.len() != 4 * n || ids.iter().any(|&i| i <= 0 || i as usize >= V) {
                return Err(Error::Input(format!("{}: expected {n} i32 ids in [1, {V})", path.display())));
            }
            ids.into_iter().map(|i| i as u32).collect()
        }
        None => {
            let mut rng = ChaCha8Rng::seed_from_u64(4321);
            (0..n).map(|_| rng.gen_range(4..V as u32)).collect()
        }
    };
    let (src, tgt) = ids.split_at(BATCH * SRC_LEN);
    let tgt_in: Vec<u32> = tgt.chunks(TGT_LEN).flat_map(|row| std::iter::once(REF_BOS).chain(row[..TGT_LEN - 1].iter().copied())).collect();
    Ok(Batch {
        size: BATCH,
        src_len: SRC_LEN,
        src: src.to_vec(),
        src_lengths: vec![SRC_LEN; BATCH],
        tgt_len: TGT_LEN,
        tgt_in,
        tgt_out: tgt.to_vec(),
        tgt_lengths: vec![TGT_LEN; BATCH],
        indices: (0..BATCH).collect(),
        src_ext: Vec::new(),
    })
}
