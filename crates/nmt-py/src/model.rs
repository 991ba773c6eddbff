//! `nmt.Model`: what a model file says about itself (configuration, languages, search
//! defaults), without a translator.
use std::path::PathBuf;

use nmt::candle_core::{DType, Device};
use nmt::model_file::ModelMeta;
use pyo3::prelude::*;

use crate::errors::PyResultExt;

/// A model file's metadata.
#[pyclass(module = "nmt._nmt", frozen)]
pub struct Model {
    meta: ModelMeta,
    parameters: usize,
}

/// `value` as a Python object, through JSON (dicts, lists, numbers, strings).
fn to_python<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<PyObject> {
    let text = serde_json::to_string(value).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

#[pymethods]
impl Model {
    /// Reads the model file at `path`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let loaded = py.allow_threads(|| nmt::model_file::load(&path, DType::F32, &Device::Cpu)).py_err()?;
        Ok(Model { parameters: loaded.model.num_parameters(), meta: loaded.meta })
    }

    /// The model's configuration (`[model]` with the preset expanded) as a dict.
    #[getter]
    fn config(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_python(py, &self.meta.config)
    }

    /// The search defaults (`[search]`) as a dict.
    #[getter]
    fn search(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_python(py, &self.meta.search)
    }

    /// `(source, target)` ISO 639-1 codes, or `None` when the file does not know them.
    #[getter]
    fn languages(&self) -> Option<(String, String)> {
        self.meta.languages.as_ref().map(|l| (l.src.clone(), l.tgt.clone()))
    }

    /// Training updates done when the file was written.
    #[getter]
    fn step(&self) -> u64 {
        self.meta.step
    }

    /// The number of parameters.
    #[getter]
    fn parameters(&self) -> usize {
        self.parameters
    }

    fn __repr__(&self) -> String {
        let languages = self.languages().map_or("None".to_string(), |(s, t)| format!("('{s}', '{t}')"));
        // The architecture as the config file spells it (`"rnnsearch"`).
        let arch = self.meta.config.arch.name().name();
        format!("Model(arch='{arch}', parameters={}, languages={languages})", self.parameters)
    }
}
