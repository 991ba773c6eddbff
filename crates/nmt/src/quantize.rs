//! int8 weights for the search (`SearchConfig::int8`): every weight matrix quantised per row to
//! 7 bits with an `f32` scale (`kernels::int8::quantize_row`).
//!
//! - `--int8` at load: the model's matrices are replaced by their quantised values
//!   ([`quantized_model`]); the host snapshot built from it multiplies the output projection in
//!   int8 (`kernels::int8`) and the other products in `f32` on the quantised weights.
//! - `nmt quantize` writes those integers into a model file ([`quantize_tensors`]): a matrix
//!   `name` becomes `name` as `u8` (`q + 128`: candle has no `i8`) and `name.q8scale` `(rows)`
//!   `f32`, about a quarter of the `f32` file. The file's search defaults say `int8 = true`, and
//!   loading it ([`dequantize_tensors`]) gives back exactly the quantised values, which
//!   quantise again to the same integers: the file translates exactly as the `f32` model with
//!   `--int8`.
//!
//! A "row" is a slice along the last dimension: the vocabulary rows of the embeddings (and of
//! the tied output projection), an input unit's weights of the `(in, out)` matrices.
use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor};

use crate::error::Result;
use crate::kernels::int8::quantize_row;
use crate::model::params::Params;
use crate::model::Seq2Seq;

/// The suffix of a quantised matrix's scales.
pub const SCALE_SUFFIX: &str = ".q8scale";

/// Whether a tensor is quantised: floating matrices (biases and vectors stay `f32`).
fn is_matrix(t: &Tensor) -> bool {
    t.rank() >= 2 && t.dtype().is_float()
}

/// A matrix's rows quantised: the integers and the scales.
fn quantize(t: &Tensor) -> Result<(Vec<i8>, Vec<f32>, usize)> {
    let cols = *t.dims().last().unwrap_or(&1);
    let w = t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let mut q = vec![0i8; w.len()];
    let scales = w.chunks(cols.max(1)).zip(q.chunks_mut(cols.max(1))).map(|(r, o)| quantize_row(r, o)).collect();
    Ok((q, scales, cols))
}

/// The values `q · s` of quantised rows of `cols` (`scales[i]` for row `i`).
fn dequantized(q: impl Iterator<Item = i8>, scales: &[f32], cols: usize) -> Vec<f32> {
    q.enumerate().map(|(i, v)| v as f32 * scales[i / cols.max(1)]).collect()
}

/// `named` with every matrix stored in int8 (`u8` plus scales), for `nmt quantize`.
pub fn quantize_tensors(named: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>> {
    let mut out = Vec::with_capacity(named.len());
    for (name, t) in named {
        if !is_matrix(t) {
            out.push((name.clone(), t.clone()));
            continue;
        }
        let (q, scales, _) = quantize(t)?;
        let bytes: Vec<u8> = q.iter().map(|&v| (v as i16 + 128) as u8).collect();
        let rows = scales.len();
        out.push((name.clone(), Tensor::from_vec(bytes, t.dims(), &Device::Cpu)?));
        out.push((format!("{name}{SCALE_SUFFIX}"), Tensor::from_vec(scales, rows, &Device::Cpu)?));
    }
    Ok(out)
}

/// Turns a loaded file's int8 matrices back into `f32` (`q · s`), in place.
pub fn dequantize_tensors(tensors: &mut BTreeMap<String, Tensor>) -> Result<()> {
    let names: Vec<String> = tensors.keys().filter_map(|k| k.strip_suffix(SCALE_SUFFIX)).map(str::to_string).collect();
    for name in names {
        let scales = tensors.remove(&format!("{name}{SCALE_SUFFIX}")).map(|s| s.to_dtype(DType::F32)?.to_vec1::<f32>()).transpose()?;
        let (Some(scales), Some(q)) = (scales, tensors.get(&name)) else { continue };
        let cols = *q.dims().last().unwrap_or(&1);
        let bytes = q.flatten_all()?.to_vec1::<u8>()?;
        if bytes.len() != scales.len() * cols {
            return Err(crate::Error::Input(format!("{name}: {} int8 values for {} scales of {cols}", bytes.len(), scales.len())));
        }
        let w = dequantized(bytes.iter().map(|&b| (b as i16 - 128) as i8), &scales, cols);
        let t = Tensor::from_vec(w, q.dims(), q.device())?;
        tensors.insert(name, t);
    }
    Ok(())
}

/// A copy of `model` with every matrix replaced by its quantised values (the weights an int8
/// search multiplies).
pub fn quantized_model(model: &Seq2Seq) -> Result<Seq2Seq> {
    let mut tensors = BTreeMap::new();
    for (name, var) in model.params.named_vars() {
        let t = var.as_tensor().clone();
        let t = if is_matrix(&t) {
            let (q, scales, cols) = quantize(&t)?;
            Tensor::from_vec(dequantized(q.into_iter(), &scales, cols), t.dims(), t.device())?.to_dtype(t.dtype())?
        } else {
            t
        };
        tensors.insert(name, t);
    }
    let mut m = Seq2Seq::build(&model.cfg, Params::from_tensors(tensors, model.dtype(), model.device()))?;
    m.set_impl(model.backend().imp());
    Ok(m)
}
