//! `nmt.bleu` and `nmt.chrf`: the project's sacreBLEU-identical scores (`nmt-eval`), with the
//! signature.
use nmt::eval::{corpus_chrf, BleuOptions, ChrfOptions, Tokenize};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::PyResultExt;

/// A corpus score: its name (`BLEU`, `chrF2`), value and sacreBLEU signature.
#[pyclass(module = "nmt._nmt", frozen)]
pub struct Score {
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    score: f64,
    #[pyo3(get)]
    signature: String,
    /// sacreBLEU's text line, e.g. `BLEU = 30.12 60.0/35.1/22.0/14.0 (BP = …)`.
    text: String,
}

#[pymethods]
impl Score {
    fn __str__(&self) -> String {
        self.text.clone()
    }

    fn __float__(&self) -> f64 {
        self.score
    }

    fn __repr__(&self) -> String {
        format!("Score(name={:?}, score={}, signature={:?})", self.name, self.score, self.signature)
    }
}

/// Reference streams: a list of strings (one reference per hypothesis) or a list of such
/// lists (sacreBLEU's layout: `references[k][i]` is the k-th reference of sentence `i`).
fn streams(references: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<String>>> {
    if references.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyValueError::new_err("references must be a list of strings or a list of such lists"));
    }
    if let Ok(one) = references.extract::<Vec<String>>() {
        return Ok(vec![one]);
    }
    references.extract().map_err(|_| PyValueError::new_err("references must be a list of strings or a list of such lists"))
}

/// Corpus BLEU as `sacrebleu.corpus_bleu(hypotheses, references)`.
#[pyfunction]
#[pyo3(signature = (hypotheses, references, tokenize="13a", lowercase=false))]
pub fn bleu(py: Python<'_>, hypotheses: Vec<String>, references: &Bound<'_, PyAny>, tokenize: &str, lowercase: bool) -> PyResult<Score> {
    let refs = streams(references)?;
    let tokenize: Tokenize = tokenize.parse().py_err()?;
    let opts = BleuOptions { tokenize, lowercase, ..BleuOptions::default() };
    let s = py.allow_threads(|| nmt::eval::corpus_bleu(&hypotheses, &refs, &opts)).py_err()?;
    Ok(Score { name: "BLEU".into(), score: s.score, signature: s.signature(), text: s.format(2, false) })
}

/// Corpus chrF (β = 2, character 6-grams) as `sacrebleu.corpus_chrf(hypotheses, references)`.
#[pyfunction]
#[pyo3(signature = (hypotheses, references, lowercase=false))]
pub fn chrf(py: Python<'_>, hypotheses: Vec<String>, references: &Bound<'_, PyAny>, lowercase: bool) -> PyResult<Score> {
    let refs = streams(references)?;
    let opts = ChrfOptions { lowercase, ..ChrfOptions::default() };
    let s = py.allow_threads(|| corpus_chrf(&hypotheses, &refs, &opts)).py_err()?;
    Ok(Score { name: s.name(), score: s.score, signature: s.signature(), text: s.format(2, false) })
}
