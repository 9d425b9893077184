//! What the binary prints. `println!` panics when its write fails, so a reader that went
//! away (`| head`) or a full device (`> /dev/full`) ended a command with a Rust panic and
//! status 101. Every line the binary prints goes through [`outln!`] (standard output) or
//! [`errln!`] (standard error) instead. By the time a command prints, what it computed is
//! already in its files.
//!
//! Names in what is printed come from user files, and a terminal acts on the control
//! characters in them (an escape sequence sets the window's title): both macros escape
//! every control character but the line breaks the binary writes itself
//! ([`accel_sim::terminal_text`]), and a name put in a table or a one-line message goes
//! through [`shown`] first, so that not even a line break of its own gets through.

use std::borrow::Cow;
use std::io::{self, Write};

/// `println!` through [`write_line`].
macro_rules! outln {
    () => {
        $crate::output::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}

/// `eprintln!` through [`write_err_line`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err_line(format_args!($($arg)*))
    };
}

/// A name (or any text from a file) as one line of a terminal: every control character,
/// line breaks included, escaped.
pub fn shown(text: &str) -> Cow<'_, str> {
    accel_sim::terminal_text(text)
}

/// `text` with every control character but `\n` escaped.
fn safe_lines(text: &str) -> String {
    let lines: Vec<Cow<str>> = text.split('\n').map(shown).collect();
    lines.join("\n")
}

/// Writes one line to standard output. A reader that went away ends the command quietly
/// with status 0, as a closed pipe ends `cat`; any other failure (a full device, a closed
/// descriptor) prints one error line and exits with status 2.
pub fn write_line(args: std::fmt::Arguments) {
    let line = safe_lines(&args.to_string());
    let mut out = io::stdout().lock();
    let written = out
        .write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        fail(&e);
    }
}

/// Writes one line to standard error; a failure to (no one to tell) is ignored rather
/// than a panic.
pub fn write_err_line(args: std::fmt::Arguments) {
    let line = safe_lines(&args.to_string());
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(line.as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

fn fail(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    errln!("error: cannot write to standard output: {e}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_binarys_own_line_breaks_get_through() {
        assert_eq!(safe_lines("a\nb\u{1b}]0;t\u{7}"), "a\nb\\u{1b}]0;t\\u{7}");
        assert_eq!(shown("a\nb"), "a\\nb");
    }
}
