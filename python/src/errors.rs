//! The module's exceptions: `Error` for anything the libraries refuse (bad files, bad
//! fields, impossible configs: the message names the file and field), and
//! `IllegalActionError` (also a `ValueError`) for a move the game does not allow.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    Error,
    PyException,
    "A problem the mallocmuzero libraries refused: a bad file, field or config (the message names it)."
);
create_exception!(
    _native,
    IllegalActionError,
    PyValueError,
    "An action the game does not allow in its current state (see `action_mask()`)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("IllegalActionError", py.get_type::<IllegalActionError>())?;
    Ok(())
}

/// Any library error as `mallocmuzero.Error`, with its whole chain of causes.
pub fn err(e: impl std::error::Error) -> PyErr {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !msg.contains(&more) {
            msg.push_str(": ");
            msg.push_str(&more);
        }
        source = s.source();
    }
    Error::new_err(msg)
}

/// A refused argument, named.
pub fn bad_arg(msg: impl Into<String>) -> PyErr {
    Error::new_err(msg.into())
}
