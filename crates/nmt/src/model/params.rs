//! Named, trainable parameters with the papers' initialisation.
//!
//! A [`Params`] store owns every [`Var`] by dotted name (`decoder.gru.u_n`), in a `BTreeMap` so
//! the optimiser and the model file see one fixed order. Layers take a [`ParamBuilder`] scoped to
//! their name (`pb.pp("gru")`), as candle's `VarBuilder` does, so checkpoint keys mirror the code.
//! Initialisation is drawn from a seeded ChaCha RNG (not candle's thread RNG), so the same seed
//! gives the same model on every run — needed for exact resume tests.
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use candle_core::{DType, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};

/// How a fresh parameter is filled.
#[derive(Clone, Copy, Debug)]
pub enum Init {
    /// N(0, σ²) with the model's `init_std` (RNNenc/RNNsearch appendix: σ = 0.01).
    Normal,
    /// Zeros (biases).
    Zeros,
    /// Ones (layer normalisation's gains, `layer_norm.rs`).
    Ones,
    /// Each `(n, n)` block of an `(n, k·n)` matrix a random orthogonal matrix (recurrent weights).
    OrthogonalBlocks,
    /// [`Init::OrthogonalBlocks`] scaled to this spectral radius (grConv: 0.4, Properties §3).
    ScaledOrthogonal(f64),
}

/// Every parameter of a model, by name.
pub struct Params {
    vars: Mutex<BTreeMap<String, Var>>,
    rng: Mutex<ChaCha8Rng>,
    /// Loaded tensors waiting to be claimed by a layer (`from_tensors`); `None` = initialise.
    loaded: Option<Mutex<BTreeMap<String, Tensor>>>,
    pub(crate) dtype: DType,
    pub(crate) device: Device,
    init_std: f64,
    orthogonal: bool,
    /// `Init::Normal` draws Glorot's uniform instead (`model.init = "glorot"`).
    glorot: bool,
}

impl Params {
    /// A store that initialises each parameter as it is requested.
    pub fn fresh(seed: u64, init_std: f64, orthogonal: bool, dtype: DType, device: &Device) -> Self {
        Params {
            vars: Mutex::new(BTreeMap::new()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            loaded: None,
            dtype,
            device: device.clone(),
            init_std,
            orthogonal,
            glorot: false,
        }
    }

    /// The same store, its `Init::Normal` weights drawn from Glorot's uniform when `on`.
    pub fn with_glorot(mut self, on: bool) -> Self {
        self.glorot = on;
        self
    }

    /// A store that hands out the given tensors (from a model file); shapes are checked.
    pub fn from_tensors(tensors: BTreeMap<String, Tensor>, dtype: DType, device: &Device) -> Self {
        let mut p = Self::fresh(0, 0.0, false, dtype, device);
        p.loaded = Some(Mutex::new(tensors));
        p
    }

    /// The root builder.
    pub fn builder(&self) -> ParamBuilder<'_> {
        ParamBuilder { store: self, prefix: String::new() }
    }

    /// All parameters in name order.
    pub fn named_vars(&self) -> Vec<(String, Var)> {
        self.vars.lock_safe().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Tensors of a loaded file that no layer asked for: a sign the file is from another model.
    pub fn unclaimed(&self) -> Vec<String> {
        match &self.loaded {
            Some(l) => l.lock_safe().keys().cloned().collect(),
            None => Vec::new(),
        }
    }

    fn create(&self, name: String, shape: &[usize], init: Init) -> Result<Tensor> {
        if let Some(loaded) = &self.loaded {
            let t = loaded
                .lock_safe()
                .remove(&name)
                .ok_or_else(|| Error::Config(format!("parameter {name} is missing from the model file")))?;
            if t.dims() != shape {
                return Err(Error::Config(format!("parameter {name} has shape {:?} in the file, the config needs {shape:?}", t.dims())));
            }
            let var = Var::from_tensor(&t.to_dtype(self.dtype)?.to_device(&self.device)?)?;
            let tensor = var.as_tensor().clone();
            self.vars.lock_safe().insert(name, var);
            return Ok(tensor);
        }
        let n: usize = shape.iter().product();
        let mut rng = self.rng.lock_safe();
        let data: Vec<f64> = match init {
            Init::Zeros => vec![0.0; n],
            Init::Ones => vec![1.0; n],
            Init::Normal if self.glorot => {
                let (fan_in, fan_out) = if shape.len() == 2 { (shape[0], shape[1]) } else { (n, 1) };
                let a = (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
                (0..n).map(|_| rng.gen_range(-a..a)).collect()
            }
            Init::Normal => (0..n).map(|_| sample_normal(&mut *rng) * self.init_std).collect(),
            Init::OrthogonalBlocks if self.orthogonal && shape.len() == 2 => orthogonal_blocks(shape[0], shape[1], &mut rng)?,
            Init::OrthogonalBlocks => (0..n).map(|_| sample_normal(&mut *rng) * self.init_std).collect(),
            Init::ScaledOrthogonal(r) if self.orthogonal && shape.len() == 2 => {
                orthogonal_blocks(shape[0], shape[1], &mut rng)?.into_iter().map(|x| x * r).collect()
            }
            Init::ScaledOrthogonal(_) => (0..n).map(|_| sample_normal(&mut *rng) * self.init_std).collect(),
        };
        let t = Tensor::from_vec(data, shape, &self.device)?.to_dtype(self.dtype)?;
        let var = Var::from_tensor(&t)?;
        let tensor = var.as_tensor().clone();
        if self.vars.lock_safe().insert(name.clone(), var).is_some() {
            return Err(Error::Config(format!("parameter {name} defined twice")));
        }
        Ok(tensor)
    }
}

/// A view of [`Params`] under a name prefix.
#[derive(Clone)]
pub struct ParamBuilder<'a> {
    store: &'a Params,
    prefix: String,
}

impl<'a> ParamBuilder<'a> {
    /// The builder for a sub-layer: names become `prefix.name.…`.
    pub fn pp(&self, name: &str) -> ParamBuilder<'a> {
        ParamBuilder { store: self.store, prefix: self.full(name) }
    }

    /// Creates (or loads) parameter `name` of `shape`.
    pub fn get(&self, name: &str, shape: &[usize], init: Init) -> Result<Tensor> {
        self.store.create(self.full(name), shape, init)
    }

    pub fn dtype(&self) -> DType {
        self.store.dtype
    }

    pub fn device(&self) -> &Device {
        &self.store.device
    }

    fn full(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }
}

/// `(n, k·n)` with each `n × n` block orthogonal (QR of a Gaussian matrix, Saxe et al. 2014).
fn orthogonal_blocks(n: usize, cols: usize, rng: &mut ChaCha8Rng) -> Result<Vec<f64>> {
    if n == 0 || !cols.is_multiple_of(n) {
        return Err(Error::Config(format!("orthogonal init needs (n, k*n), got ({n}, {cols})")));
    }
    let mut out = vec![0.0; n * cols];
    for block in 0..cols / n {
        let q = random_orthogonal(n, rng);
        for i in 0..n {
            for j in 0..n {
                out[i * cols + block * n + j] = q[i * n + j];
            }
        }
    }
    Ok(out)
}

/// Modified Gram–Schmidt on the columns of a Gaussian matrix: a uniformly random orthogonal
/// matrix (the sign convention of QR with positive diagonal).
fn random_orthogonal(n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let mut cols: Vec<Vec<f64>> = (0..n).map(|_| (0..n).map(|_| sample_normal(rng)).collect()).collect();
    for j in 0..n {
        for k in 0..j {
            let dot: f64 = (0..n).map(|i| cols[j][i] * cols[k][i]).sum();
            let (done, rest) = cols.split_at_mut(j);
            for (x, &y) in rest[0].iter_mut().zip(&done[k]) {
                *x -= dot * y;
            }
        }
        let norm = cols[j].iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
        cols[j].iter_mut().for_each(|x| *x /= norm);
    }
    let mut q = vec![0.0; n * n];
    for (j, col) in cols.iter().enumerate() {
        for (i, v) in col.iter().enumerate() {
            q[i * n + j] = *v;
        }
    }
    q
}

/// Locks without caring about poisoning: a panic elsewhere cannot leave these maps half-written.
trait LockSafe<T> {
    fn lock_safe(&self) -> MutexGuard<'_, T>;
}

impl<T> LockSafe<T> for Mutex<T> {
    fn lock_safe(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A standard normal draw: `rand_distr`'s ziggurat sampler (it replaced a hand-written
/// Box–Muller transform on 2026-11-23, so a seed now draws different initial weights).
fn sample_normal<R: rand::Rng + ?Sized>(rng: &mut R) -> f64 {
    rng.sample(rand_distr::StandardNormal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orthogonal_blocks_are_orthogonal() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 7;
        let m = orthogonal_blocks(n, 2 * n, &mut rng).unwrap();
        for b in 0..2 {
            for i in 0..n {
                for j in 0..n {
                    let dot: f64 = (0..n).map(|k| m[k * 2 * n + b * n + i] * m[k * 2 * n + b * n + j]).sum();
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((dot - want).abs() < 1e-9, "block {b} ({i},{j}) = {dot}");
                }
            }
        }
    }

    /// Glorot's uniform fills `(fan_in, fan_out)` within `±√(6 / (fan_in + fan_out))` with the
    /// variance `a² / 3`; biases stay zero and recurrent blocks orthogonal.
    #[test]
    fn glorot_draws_its_uniform_and_leaves_the_rest() {
        let p = Params::fresh(5, 0.01, true, DType::F64, &Device::Cpu).with_glorot(true);
        let pb = p.builder();
        let (fan_in, fan_out) = (200, 300);
        let w = pb.get("w", &[fan_in, fan_out], Init::Normal).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
        assert!(w.iter().all(|x| x.abs() <= a), "a value outside ±{a}");
        let var = w.iter().map(|x| x * x).sum::<f64>() / w.len() as f64;
        assert!((var / (a * a / 3.0) - 1.0).abs() < 0.02, "variance {var} against {}", a * a / 3.0);
        let b = pb.get("b", &[fan_out], Init::Zeros).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        assert_eq!(b, 0.0);
        let u = pb.get("u", &[7, 14], Init::OrthogonalBlocks).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let col0: f64 = (0..7).map(|k| u[k * 14] * u[k * 14]).sum();
        assert!((col0 - 1.0).abs() < 1e-9, "the recurrent block is not orthogonal: {col0}");
    }
}
