//! `nmt.train`: the trainer `nmt train` runs (resume included: a model directory with a
//! checkpoint continues), with the GIL released. Each line of `train_log.jsonl` goes to an
//! optional callback as a dict; Ctrl-C (or an exception in the callback) makes the trainer save
//! a checkpoint and stop, and is then raised.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nmt::candle_core::Device;
use nmt::config::Config;
use nmt::train::{train as run_train, Progress, StepInfo, TrainOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::errors::PyResultExt;
use crate::threads::Threads;

/// The trainer's progress, passed on to Python.
struct PyProgress {
    callback: Option<PyObject>,
    print: bool,
    stop: Arc<AtomicBool>,
    /// The first exception the callback raised (or Ctrl-C): training stops, then it is raised.
    error: Option<PyErr>,
}

impl PyProgress {
    fn fail(&mut self, e: PyErr) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl Progress for PyProgress {
    fn on_step(&mut self, i: &StepInfo) {
        if self.print {
            eprintln!("update {} epoch {} loss {:.3} {:.0} tok/s", i.step, i.epoch + 1, i.loss, i.tok_per_s);
        }
        // Ctrl-C reaches Python as a pending signal: check for it at every logged update.
        if let Err(e) = Python::with_gil(|py| py.check_signals()) {
            self.fail(e);
        }
    }

    fn on_log(&mut self, record: &serde_json::Value) {
        let Some(cb) = &self.callback else { return };
        let called = Python::with_gil(|py| -> PyResult<()> {
            let dict = py.import("json")?.call_method1("loads", (record.to_string(),))?;
            cb.call1(py, (dict,))?;
            Ok(())
        });
        if let Err(e) = called {
            self.fail(e);
        }
    }

    fn on_message(&mut self, msg: &str) {
        if self.print {
            eprintln!("{msg}");
        }
    }
}

/// `key=value` overrides (`nmt train --set`) from a dict, values written as TOML.
fn overrides(py: Python<'_>, o: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<String>> {
    let Some(o) = o else { return Ok(Vec::new()) };
    let json = py.import("json")?;
    o.iter()
        .map(|(k, v)| {
            let key: String = k.extract().map_err(|_| PyValueError::new_err("override keys must be strings like \"train.max_updates\""))?;
            let value = if v.is_instance_of::<PyBool>() {
                if v.extract::<bool>()? { "true" } else { "false" }.to_string()
            } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyString>() {
                // JSON's numbers and strings are TOML's.
                json.call_method1("dumps", (v,))?.extract()?
            } else {
                return Err(PyValueError::new_err(format!("override {key}: only bool, int, float and str values are supported")));
            };
            Ok(format!("{key}={value}"))
        })
        .collect()
}

/// Trains (or resumes) the model of `config` (a TOML file) in `model_dir`; returns the final
/// metrics as a dict.
#[pyfunction]
#[pyo3(signature = (config, model_dir, threads=None, overrides=None, progress=true, callback=None, data=None))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
pub fn train(
    py: Python<'_>,
    config: PathBuf,
    model_dir: PathBuf,
    threads: Option<usize>,
    overrides: Option<&Bound<'_, PyDict>>,
    progress: bool,
    callback: Option<PyObject>,
    data: Option<PathBuf>,
) -> PyResult<PyObject> {
    let sets = self::overrides(py, overrides)?;
    let cfg = Config::from_file(&config, &sets).py_err()?;
    let threads = Threads::new(threads)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut ui = PyProgress { callback, print: progress, stop: stop.clone(), error: None };
    // The options are built on the pool's thread: the collective inside them is not `Sync`.
    let summary = py.allow_threads(|| {
        threads.run(|| {
            let mut opts = TrainOptions::new(model_dir, Device::Cpu, stop);
            opts.data = data;
            run_train(&cfg, &opts, &mut ui)
        })
    });
    if let Some(e) = ui.error {
        return Err(e);
    }
    let s = summary.py_err()?;
    let out = PyDict::new(py);
    out.set_item("steps", s.steps)?;
    out.set_item("best_bleu", s.best_bleu)?;
    out.set_item("best_step", s.best_step)?;
    out.set_item("best_model", s.best_model)?;
    out.set_item("checkpoint", s.checkpoint)?;
    out.set_item("reason", format!("{:?}", s.reason))?;
    out.set_item("elapsed_s", s.elapsed_s)?;
    out.set_item("tok_per_s", s.tok_per_s)?;
    Ok(out.into_any().unbind())
}
