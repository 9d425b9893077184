//! Numbers from Python, taken strictly. pyo3's own conversions take a bool as 0 or 1 and
//! name the parameter only in a note that `str(error)` leaves out (an overflow says
//! "int too large to convert" and nothing else), so every integer and float parameter
//! goes through here: an integer takes an `int` or a numpy integer (anything with
//! `__index__`: never a float, which `int()` would truncate, a string or a bool), and a
//! value outside its type names the parameter.

use crate::errors::{bad_arg, IllegalActionError};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;

/// An argument for a message: its type and value (`float 2.9`), an array by its dtype
/// and shape rather than its possibly long repr.
pub fn describe(ob: &Bound<'_, PyAny>) -> String {
    let ty = type_name(ob);
    if let Ok(a) = ob.cast::<PyUntypedArray>() {
        return format!("{ty} of {} with shape {}", a.dtype(), shape_text(a.shape()));
    }
    let mut repr = ob.repr().map(|r| r.to_string()).unwrap_or_default();
    if repr.chars().count() > 60 {
        repr = repr.chars().take(57).collect::<String>() + "...";
    }
    format!("{ty} {repr}")
}

/// A shape as Python writes it: `(2,)`, `(2, 1)`, `()`.
pub fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map_or_else(|_| "object".to_string(), |n| n.to_string())
}

/// A type error naming `name`, `expected` what, and what came instead.
pub fn wrong_type(name: &str, expected: &str, ob: &Bound<'_, PyAny>) -> PyErr {
    // Python's bool and numpy's are both named `bool`: neither is a count or an index,
    // though Python would take True for 1.
    let hint = if type_name(ob) == "bool" {
        " (a bool is not taken for 0 or 1)"
    } else {
        ""
    };
    PyTypeError::new_err(format!(
        "{name}: expected {expected}, got {}{hint}",
        describe(ob)
    ))
}

/// An integer argument, with its text when it is too large for an `i128`.
enum Int {
    Fits(i128),
    Huge { text: String, negative: bool },
}

fn integer(ob: &Bound<'_, PyAny>, name: &str, expected: &str) -> PyResult<Int> {
    let py = ob.py();
    if type_name(ob) == "bool" {
        return Err(wrong_type(name, expected, ob));
    }
    match ob.extract::<i128>() {
        Ok(v) => Ok(Int::Fits(v)),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
            let index = py.import("operator")?.getattr("index")?.call1((ob,))?;
            Ok(Int::Huge {
                text: index.str()?.to_string(),
                negative: index.lt(0)?,
            })
        }
        Err(e) if e.is_instance_of::<PyTypeError>(py) => Err(wrong_type(name, expected, ob)),
        Err(e) => Err(e),
    }
}

/// The unsigned Rust types of the parameters.
pub trait Unsigned: TryFrom<i128> {
    const MAX: u128;
}
impl Unsigned for u64 {
    const MAX: u128 = u64::MAX as u128;
}
impl Unsigned for usize {
    const MAX: u128 = usize::MAX as u128;
}

/// The unsigned integer argument `name`.
pub fn uint<T: Unsigned>(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<T> {
    uint_as(ob, name, "an int")
}

/// [`uint`], saying what `name` takes (`expected`) when it is not an integer.
pub fn uint_as<T: Unsigned>(ob: &Bound<'_, PyAny>, name: &str, expected: &str) -> PyResult<T> {
    let too_large =
        |text: &str| bad_arg(format!("{name}: {text} is too large (at most {})", T::MAX));
    match integer(ob, name, expected)? {
        Int::Fits(v) if v < 0 => Err(bad_arg(format!("{name}: must be >= 0, got {v}"))),
        Int::Fits(v) => T::try_from(v).map_err(|_| too_large(&v.to_string())),
        Int::Huge { text, negative } if negative => {
            Err(bad_arg(format!("{name}: must be >= 0, got {text}")))
        }
        Int::Huge { text, .. } => Err(too_large(&text)),
    }
}

/// The optional unsigned integer argument `name` (`None` stays `None`).
pub fn opt_uint<T: Unsigned>(ob: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<T>> {
    ob.map(|o| uint(o, name)).transpose()
}

/// The float argument `name`: a Python or numpy number (an int too), not a bool or a
/// string.
pub fn number(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    let py = ob.py();
    if type_name(ob) == "bool" {
        return Err(wrong_type(name, "a number", ob));
    }
    ob.extract::<f64>().map_err(|e| {
        if e.is_instance_of::<PyTypeError>(py) {
            wrong_type(name, "a number", ob)
        } else {
            bad_arg(format!("{name}: {}", e.value(py)))
        }
    })
}

/// The bool argument `name`: Python's or numpy's bool, not an int or a string (pyo3's
/// own refusal names the parameter only in a note).
pub fn flag(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    if type_name(ob) != "bool" {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected a bool (True or False), got {}",
            describe(ob)
        )));
    }
    ob.is_truthy()
}

/// An action argument (`name` in type errors) of a game with `count` actions;
/// `which` (`env 3: ` or empty) says which game in a range error.
pub fn action(ob: &Bound<'_, PyAny>, name: &str, count: usize, which: &str) -> PyResult<usize> {
    let text = match integer(ob, name, "an integer action (an int or a numpy integer)")? {
        Int::Fits(v) if (0..count as i128).contains(&v) => return Ok(v as usize),
        Int::Fits(v) => v.to_string(),
        Int::Huge { text, .. } => text,
    };
    Err(out_of_range(which, &text, count))
}

/// An action outside `0..count`; `which` as for [`action`].
pub fn out_of_range(which: &str, action: &str, count: usize) -> PyErr {
    IllegalActionError::new_err(format!(
        "{which}action {action}: out of range: the game has actions 0..{count}"
    ))
}

/// Converters for `#[pyo3(from_py_with = ...)]` on parameters with a default value (which
/// a `&Bound<PyAny>` parameter cannot have), one per parameter so that each names its own.
pub mod named {
    use super::{describe, flag, number, type_name, uint};
    use bench_workloads::suite::SuiteName;
    use pyo3::exceptions::PyTypeError;
    use pyo3::prelude::*;

    pub fn seed(ob: &Bound<'_, PyAny>) -> PyResult<u64> {
        uint(ob, "seed")
    }
    /// Threads for a search or a worker: 1 to 256.
    pub fn threads(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
        let threads = uint(ob, "threads")?;
        if !(1..=256).contains(&threads) {
            return Err(crate::errors::bad_arg(format!(
                "threads: must be in 1..=256, got {threads}"
            )));
        }
        Ok(threads)
    }
    pub fn exact_seconds(ob: &Bound<'_, PyAny>) -> PyResult<f64> {
        number(ob, "exact_seconds")
    }
    pub fn exact_gap(ob: &Bound<'_, PyAny>) -> PyResult<f64> {
        number(ob, "exact_gap")
    }
    /// `suite=True` (the benchmark suite), `False` (none), or a suite's name
    /// (`"standard"`, `"scale"`).
    pub fn suite(ob: &Bound<'_, PyAny>) -> PyResult<Option<SuiteName>> {
        if let Ok(name) = ob.cast::<pyo3::types::PyString>() {
            let name = name.to_string();
            return name
                .parse()
                .map(Some)
                .map_err(|e: String| crate::errors::bad_arg(format!("suite: {e}")));
        }
        if type_name(ob) != "bool" {
            return Err(PyTypeError::new_err(format!(
                "suite: expected a bool (True or False) or a suite's name (\"standard\", \"scale\"), got {}",
                describe(ob)
            )));
        }
        Ok(ob.is_truthy()?.then_some(SuiteName::Standard))
    }
    pub fn interrupted(ob: &Bound<'_, PyAny>) -> PyResult<bool> {
        flag(ob, "interrupted")
    }
}
