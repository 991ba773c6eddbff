//! The native part of the `nmt` Python package (`python/nmt/__init__.py` re-exports it): thin
//! wrappers over the `nmt` library that the CLI runs, so Python translates, scores, trains and
//! evaluates with the very same code.
//!
//! Every computation runs with the GIL released (`Python::allow_threads`), so two Python
//! threads translating at once run in parallel. Errors become Python exceptions (`errors.rs`).
use pyo3::prelude::*;

mod errors;
mod metrics;
mod model;
mod threads;
mod train;
mod translator;

#[pymodule]
fn _nmt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<translator::Translator>()?;
    m.add_class::<translator::TranslationResult>()?;
    m.add_class::<model::Model>()?;
    m.add_class::<metrics::Score>()?;
    m.add_function(wrap_pyfunction!(train::train, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::bleu, m)?)?;
    m.add_function(wrap_pyfunction!(metrics::chrf, m)?)?;
    Ok(())
}
