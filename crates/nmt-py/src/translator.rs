//! `nmt.Translator`, after CTranslate2's: load a model (or an ensemble) once, then translate and
//! score batches of sentences with the library's `Translator` (the search `nmt translate`
//! runs: same segmentation, search, n-best and UNK replacement, so the same text and scores).
use std::path::{Path, PathBuf};

use nmt::candle_core::Device;
use nmt::config::{Impl, SearchRequest};
use nmt::search::SearchOptions;
use nmt::translate::Translation;
use nmt::unk::UnkReplacer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::errors::PyResultExt;
use crate::threads::Threads;

/// One model, or an ensemble (a list of paths: the models' distributions are averaged, as
/// `nmt translate -m A -m B`).
#[pyclass(module = "nmt._nmt", subclass)]
pub struct Translator {
    inner: nmt::translate::Translator,
    threads: Threads,
}

/// One source sentence's result: its n-best list, best first.
#[pyclass(module = "nmt._nmt", frozen)]
pub struct TranslationResult {
    /// The hypotheses' text.
    #[pyo3(get)]
    hypotheses: Vec<String>,
    /// Each hypothesis's ranking score `log p / len^α` (empty when `return_scores=False`).
    #[pyo3(get)]
    scores: Vec<f64>,
    /// Each hypothesis's `log p(y | x)`, `</s>` included (empty when `return_scores=False`).
    #[pyo3(get)]
    log_probs: Vec<f64>,
    /// Each hypothesis's target subword pieces, `</s>` last when it finished.
    #[pyo3(get)]
    tokens: Vec<Vec<String>>,
    /// The source's subword pieces, `</s>` last: the attention's columns.
    #[pyo3(get)]
    source_tokens: Vec<String>,
    /// Per hypothesis, attention weights `(target tokens, source tokens)`.
    attention: Option<Vec<Vec<Vec<f32>>>>,
}

#[pymethods]
impl TranslationResult {
    /// Per hypothesis, a `numpy.ndarray` of attention weights, shape `(len(tokens[i]),
    /// len(source_tokens))`, each row summing to 1; `None` unless `return_attention=True`.
    #[getter]
    fn attention(&self, py: Python<'_>) -> PyResult<Option<Vec<PyObject>>> {
        let Some(att) = &self.attention else { return Ok(None) };
        let np = py.import("numpy")?;
        att.iter().map(|rows| Ok(np.call_method1("asarray", (rows.clone(), "float32"))?.unbind())).collect::<PyResult<_>>().map(Some)
    }

    fn __repr__(&self) -> String {
        format!("TranslationResult(hypotheses={:?}, scores={:?})", self.hypotheses, self.scores)
    }
}

/// The paths of `path`: one path (`str` or `os.PathLike`) or a list of them.
fn paths(path: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = path.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    let v: Vec<PathBuf> = path.extract().map_err(|_| PyValueError::new_err("path must be a path or a list of paths"))?;
    if v.is_empty() {
        return Err(PyValueError::new_err("no model path given"));
    }
    Ok(v)
}

/// `"cpu"`, `"cuda"` or `"cuda:N"`.
fn device(name: &str) -> PyResult<Device> {
    let gpu = match name {
        "cpu" => return Ok(Device::Cpu),
        "cuda" => 0,
        other => other
            .strip_prefix("cuda:")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| PyValueError::new_err(format!("device must be \"cpu\", \"cuda\" or \"cuda:N\", not {other:?}")))?,
    };
    nmt::kernels::gpu::context::open(gpu)
        .map_err(|e| PyValueError::new_err(format!("cannot use {name}: {e} (nmt must be built with the cuda feature)")))
}

/// What [`Translator::translate_batch`] returns for one sentence.
fn result(t: Translation, scores: bool, attention: bool) -> TranslationResult {
    let att = attention.then(|| t.hyps.iter().map(|h| h.hyp.alignment.clone().unwrap_or_default()).collect());
    TranslationResult {
        scores: if scores { t.hyps.iter().map(|h| h.hyp.score).collect() } else { Vec::new() },
        log_probs: if scores { t.hyps.iter().map(|h| h.hyp.log_prob).collect() } else { Vec::new() },
        tokens: t.hyps.iter().map(|h| h.pieces.clone()).collect(),
        hypotheses: t.hyps.into_iter().map(|h| h.text).collect(),
        source_tokens: t.src_pieces,
        attention: att,
    }
}

#[pymethods]
impl Translator {
    /// Loads `path` (a model file, or a list of them for an ensemble) on `device`; `threads`:
    /// the search's threads (default: every core). `compute_type` (CTranslate2's name):
    /// `"int8"` multiplies in int8, `"float32"` in `f32`, `"default"` as the model file says
    /// (int8 files from `nmt quantize` say int8).
    #[new]
    #[pyo3(signature = (path, threads=None, device="cpu", compute_type="default"))]
    fn new(py: Python<'_>, path: &Bound<'_, PyAny>, threads: Option<usize>, device: &str, compute_type: &str) -> PyResult<Self> {
        let paths = paths(path)?;
        let dev = self::device(device)?;
        let threads = Threads::new(threads)?;
        let int8 = match compute_type {
            "default" => None,
            "int8" => Some(true),
            "float32" => Some(false),
            other => {
                return Err(PyValueError::new_err(format!("compute_type must be \"default\", \"int8\" or \"float32\", not {other:?}")))
            }
        };
        let inner = py.allow_threads(|| {
            let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            nmt::translate::Translator::load_ensemble(&refs, &dev)
        });
        let mut inner = inner.py_err()?;
        if let Some(int8) = int8 {
            inner.meta.search.int8 = int8;
        }
        Ok(Translator { inner, threads })
    }

    /// Translates `sources`, returning one `TranslationResult` per sentence, in order.
    /// `None` keeps the model file's `[search]` value; `max_length` crops longer sources (in
    /// subword tokens) as `nmt translate --max-length` does.
    #[pyo3(signature = (sources, beam_size=None, num_hypotheses=1, normalize=None, max_length=None, no_unk=false,
                        return_scores=true, return_attention=false, replace_unk=false, batch_size=None, use_vmap=None))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, CTranslate2's names
    fn translate_batch(
        &self,
        py: Python<'_>,
        sources: Vec<String>,
        beam_size: Option<usize>,
        num_hypotheses: usize,
        normalize: Option<f64>,
        max_length: Option<usize>,
        no_unk: bool,
        return_scores: bool,
        return_attention: bool,
        replace_unk: bool,
        batch_size: Option<usize>,
        use_vmap: Option<bool>,
    ) -> PyResult<Vec<TranslationResult>> {
        let attends = self.inner.models().iter().any(|m| m.has_attention());
        if (return_attention || replace_unk) && !attends {
            return Err(PyValueError::new_err("return_attention and replace_unk need an attention model (RNNsearch)"));
        }
        let req = SearchRequest {
            beam_size,
            n_best: Some(num_hypotheses),
            normalize,
            max_source_len: max_length,
            batch_size,
            no_unk,
            shortlist: use_vmap,
            ..SearchRequest::default()
        };
        let cfg = req.apply(self.inner.default_search()).py_err()?;
        let opts = SearchOptions { cfg, alignments: return_attention || replace_unk, imp: Impl::Fused };
        let out = py.allow_threads(|| {
            self.threads.run(|| {
                let mut out = self.inner.translate(&sources, &opts)?;
                if replace_unk {
                    UnkReplacer::new().apply(&sources, &mut out, &self.inner.meta.src, &self.inner.meta.tgt)?;
                }
                Ok::<_, nmt::Error>(out)
            })
        });
        Ok(out.py_err()?.into_iter().map(|t| result(t, return_scores, return_attention)).collect())
    }

    /// `log p(target | source)` of each pair (`nmt score`), or with `per_token=True` each target
    /// token's log-probability, `</s>` last; `normalize=True` divides by the target's tokens.
    #[pyo3(signature = (sources, targets, per_token=false, normalize=false, batch_size=64))]
    fn score_batch(
        &self,
        py: Python<'_>,
        sources: Vec<String>,
        targets: Vec<String>,
        per_token: bool,
        normalize: bool,
        batch_size: usize,
    ) -> PyResult<PyObject> {
        if sources.len() != targets.len() {
            return Err(PyValueError::new_err(format!("{} sources but {} targets", sources.len(), targets.len())));
        }
        let pairs: Vec<(String, String)> = sources.into_iter().zip(targets).collect();
        let scores = py.allow_threads(|| {
            self.threads.run(|| nmt::score::score_pairs(&self.inner.models(), &self.inner.meta, &pairs, batch_size.max(1)))
        });
        let scores = scores.py_err()?;
        if per_token {
            scores.into_iter().map(|s| s.tokens).collect::<Vec<_>>().into_py_any(py)
        } else {
            scores.iter().map(|s| s.log_prob_normalized(normalize)).collect::<Vec<f64>>().into_py_any(py)
        }
    }

    /// `(source, target)` ISO 639-1 codes, or `None` when the model file does not know them.
    #[getter]
    fn languages(&self) -> Option<(String, String)> {
        self.inner.meta.languages.as_ref().map(|l| (l.src.clone(), l.tgt.clone()))
    }

    /// How many models decode together.
    #[getter]
    fn ensemble_size(&self) -> usize {
        self.inner.models().len()
    }
}
