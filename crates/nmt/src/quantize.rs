//! int8 weights for the search (`SearchConfig::int8`): every weight matrix quantised to 7 bits
//! with `f32` scales (`kernels::cpu::engine::int8::quantize_row`), once, along the axis its products use:
//! - a matrix `W (in, out)` that multiplies `x W` gets a scale per **output column** (per output
//!   row of `Wᵀ`, the weight rows of `kernels::cpu::engine::int8`); so does the output projection `G (l, V)`,
//!   a scale per vocabulary word;
//! - an embedding table `(V, m)` ([`crate::model::SRC_EMB`], [`crate::model::TGT_EMB`]), read by
//!   rows and, tied, scoring the vocabulary by rows, gets a scale per **row**.
//!
//! Then the int8 host snapshot (`HostModel::new` with `int8`, `model/snapshot.rs`)
//! quantising these values again along the same axes gets the same integers back (the scales'
//! low mantissa bits are cleared for that): the weights are rounded once, not twice.
//!
//! - `--int8` at load: the model's matrices are replaced by their quantised values
//!   ([`quantized_model`]), from which the host snapshot multiplies in int8.
//! - `nmt quantize` writes those integers into a model file ([`quantize_tensors`]): a matrix
//!   `name` becomes `name` as `u8` (`q + 128`: candle has no `i8`) and its scales, `f32`,
//!   `name.q8colscale` `(out)` or `name.q8scale` `(rows)`, about a quarter of the `f32` file.
//!   The file's search defaults say `int8 = true`, and loading it ([`dequantize_tensors`])
//!   gives back exactly the quantised values: the file translates exactly as the `f32` model
//!   with `--int8`. Files of earlier builds, row scales only, still load.
use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor};

use crate::error::Result;
use crate::kernels::cpu::engine::int8::quantize_row;
use crate::kernels::gemm::transpose;
use crate::model::params::Params;
use crate::model::{Seq2Seq, SRC_EMB, TGT_EMB};

/// The suffix of a matrix's row scales (an embedding table's; every matrix's in earlier files).
pub const SCALE_SUFFIX: &str = ".q8scale";
/// The suffix of a matrix's column scales.
pub const COLUMN_SCALE_SUFFIX: &str = ".q8colscale";

/// Whether a tensor is quantised: floating matrices (biases and vectors stay `f32`).
fn is_matrix(t: &Tensor) -> bool {
    t.rank() >= 2 && t.dtype().is_float()
}

/// Which slices of a matrix share a scale (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Axis {
    Rows,
    Columns,
}

impl Axis {
    fn of(name: &str) -> Axis {
        if name == SRC_EMB || name == TGT_EMB {
            Axis::Rows
        } else {
            Axis::Columns
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Axis::Rows => SCALE_SUFFIX,
            Axis::Columns => COLUMN_SCALE_SUFFIX,
        }
    }
}

/// A matrix `(rows, cols)` (leading dimensions folded into rows) quantised along `axis`: the
/// integers in the matrix's own layout and one scale per row or per column.
fn quantize(t: &Tensor, axis: Axis) -> Result<(Vec<i8>, Vec<f32>)> {
    let cols = *t.dims().last().unwrap_or(&1);
    let rows = t.elem_count() / cols.max(1);
    let w = t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let by_rows = |w: &[f32], len: usize| {
        let mut q = vec![0i8; w.len()];
        let scales: Vec<f32> = w.chunks(len.max(1)).zip(q.chunks_mut(len.max(1))).map(|(r, o)| quantize_row(r, o)).collect();
        (q, scales)
    };
    Ok(match axis {
        Axis::Rows => by_rows(&w, cols),
        Axis::Columns => {
            let (qt, scales) = by_rows(&transpose(&w, rows, cols), rows);
            ((0..rows * cols).map(|i| qt[(i % cols) * rows + i / cols]).collect(), scales)
        }
    })
}

/// The values `q · s` of a matrix of `cols` columns quantised along `axis`.
fn dequantized(q: impl Iterator<Item = i8>, scales: &[f32], cols: usize, axis: Axis) -> Vec<f32> {
    let cols = cols.max(1);
    q.enumerate()
        .map(|(i, v)| {
            v as f32
                * match axis {
                    Axis::Rows => scales[i / cols],
                    Axis::Columns => scales[i % cols],
                }
        })
        .collect()
}

/// `named` with every matrix stored in int8 (`u8` plus scales), for `nmt quantize`.
pub fn quantize_tensors(named: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>> {
    let mut out = Vec::with_capacity(named.len());
    for (name, t) in named {
        if !is_matrix(t) {
            out.push((name.clone(), t.clone()));
            continue;
        }
        let axis = Axis::of(name);
        let (q, scales) = quantize(t, axis)?;
        let bytes: Vec<u8> = q.iter().map(|&v| (v as i16 + 128) as u8).collect();
        let n = scales.len();
        out.push((name.clone(), Tensor::from_vec(bytes, t.dims(), &Device::Cpu)?));
        out.push((format!("{name}{}", axis.suffix()), Tensor::from_vec(scales, n, &Device::Cpu)?));
    }
    Ok(out)
}

/// Turns a loaded file's int8 matrices back into `f32` (`q · s`), in place.
pub fn dequantize_tensors(tensors: &mut BTreeMap<String, Tensor>) -> Result<()> {
    let scaled: Vec<(String, Axis)> = tensors
        .keys()
        .filter_map(|k| [Axis::Rows, Axis::Columns].into_iter().find_map(|a| k.strip_suffix(a.suffix()).map(|n| (n.to_string(), a))))
        .collect();
    for (name, axis) in scaled {
        let key = format!("{name}{}", axis.suffix());
        let scales = tensors.remove(&key).map(|s| s.to_dtype(DType::F32)?.to_vec1::<f32>()).transpose()?;
        let (Some(scales), Some(q)) = (scales, tensors.get(&name)) else { continue };
        let cols = *q.dims().last().unwrap_or(&1);
        let slices = match axis {
            Axis::Rows => q.elem_count() / cols.max(1),
            Axis::Columns => cols,
        };
        if q.dtype() != DType::U8 || scales.len() != slices {
            let (n, dt) = (q.elem_count(), q.dtype());
            return Err(crate::error::Error::Input(format!(
                "{name}: {n} {dt:?} values of {cols} columns for {} int8 scales",
                scales.len()
            )));
        }
        let bytes = q.flatten_all()?.to_vec1::<u8>()?;
        let w = dequantized(bytes.iter().map(|&b| (b as i16 - 128) as i8), &scales, cols, axis);
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
            let axis = Axis::of(&name);
            let (q, scales) = quantize(&t, axis)?;
            let cols = *t.dims().last().unwrap_or(&1);
            Tensor::from_vec(dequantized(q.into_iter(), &scales, cols, axis), t.dims(), t.device())?.to_dtype(t.dtype())?
        } else {
            t
        };
        tensors.insert(name, t);
    }
    let mut m = Seq2Seq::build(&model.cfg, Params::from_tensors(tensors, model.dtype(), model.device()))?;
    m.set_impl(model.backend().imp());
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantising_quantised_values_along_the_same_axis_is_the_identity() {
        let (rows, cols) = (37, 21);
        let w: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 % 997) as f32 / 498.5 - 1.0) * (1.0 + (i % cols) as f32)).collect();
        let t = Tensor::from_vec(w.clone(), (rows, cols), &Device::Cpu).unwrap();
        for axis in [Axis::Rows, Axis::Columns] {
            let (q, s) = quantize(&t, axis).unwrap();
            assert_eq!(s.len(), if axis == Axis::Rows { rows } else { cols });
            let v = dequantized(q.iter().copied(), &s, cols, axis);
            // Within half a step of the weights, each along its axis.
            for (i, (&a, &b)) in w.iter().zip(&v).enumerate() {
                let step = if axis == Axis::Rows { s[i / cols] } else { s[i % cols] };
                assert!((a - b).abs() <= step / 2.0 + 1e-6, "{axis:?} {i}: {a} vs {b}");
            }
            let again = quantize(&Tensor::from_vec(v, (rows, cols), &Device::Cpu).unwrap(), axis).unwrap();
            assert_eq!((q, s), again, "{axis:?}");
        }
    }
}
