//! Rust errors as Python exceptions, the message the whole error chain:
//! - a missing file (model, config, corpus): `FileNotFoundError`; other I/O: `OSError`;
//! - a corrupt or incompatible model file, a bad config key or value, bad input (mismatched
//!   counts, an unknown tokenizer): `ValueError`;
//! - an interrupted run: `KeyboardInterrupt`; anything else (tensor errors): `RuntimeError`.
use std::error::Error as StdError;

use nmt::Error;
use pyo3::exceptions::{PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

/// `e` and its sources, joined by `": "` (a source already in the message is not repeated).
fn chain(e: &dyn StdError) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let part = s.to_string();
        if !msg.contains(&part) {
            msg = format!("{msg}: {part}");
        }
        cur = s.source();
    }
    msg
}

/// The kind of the I/O error behind `e`, if it is one.
fn io_kind(e: &Error) -> Option<std::io::ErrorKind> {
    match e {
        Error::Io { source, .. } | Error::Data(nmt::data::Error::Io { source, .. }) => Some(source.kind()),
        Error::Eval(nmt::eval::Error::Io { error, .. }) => Some(error.kind()),
        _ => None,
    }
}

/// The Python exception for a library error.
pub fn to_py(e: Error) -> PyErr {
    let msg = chain(&e);
    match &e {
        Error::Interrupted => PyKeyboardInterrupt::new_err(msg),
        Error::Tensor(_) | Error::Collective(_) => PyRuntimeError::new_err(msg),
        _ => match io_kind(&e) {
            Some(std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(msg),
            Some(_) => PyOSError::new_err(msg),
            None => PyValueError::new_err(msg),
        },
    }
}

/// [`to_py`] for results.
pub trait PyResultExt<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T, E: Into<Error>> PyResultExt<T> for Result<T, E> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(|e| to_py(e.into()))
    }
}
