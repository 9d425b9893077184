//! Standard output that never panics. `println!` panics when its write fails, so a reader
//! that went away (`| head`) or a full device (`> /dev/full`) ended a command with a Rust
//! panic and status 101. Every line the binary prints goes through [`outln!`] instead.
//! By the time a command prints, what it computed is already in its files.

use std::io::{self, Write};

/// Writes one line to standard output. A reader that went away ends the command quietly
/// with status 0, as a closed pipe ends `cat`; any other failure (a full device, a closed
/// descriptor) prints one error line and exits with status 2.
pub fn write_line(args: std::fmt::Arguments) {
    let mut out = io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        fail(&e);
    }
}

fn fail(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(2);
}

/// `println!` through [`write_line`].
macro_rules! outln {
    () => {
        $crate::output::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::write_line(format_args!($($arg)*))
    };
}
