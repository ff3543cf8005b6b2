//! The terminal writers every command uses: `out!`, `outln!`, `err!`, `errln!` and `warn`.
//! Declared first in `commands/mod.rs` (and `mod commands` in `main.rs` with `#[macro_use]`),
//! so the macros are in scope in every command file and in `main.rs` after it.

use runner::error::Error;

/// `print!` to stdout; a write that fails (a full disk, a closed pipe) ends the command with
/// [`Error::Output`] rather than a panic.
macro_rules! out {
    ($($arg:tt)*) => { $crate::commands::output::write_to($crate::commands::output::Stream::Stdout, format_args!($($arg)*))? };
}

/// `println!`, as [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => { out!("{}\n", format_args!($($arg)*)) };
}

/// `eprint!`, as [`out!`] on stderr.
macro_rules! err {
    ($($arg:tt)*) => { $crate::commands::output::write_to($crate::commands::output::Stream::Stderr, format_args!($($arg)*))? };
}

/// `eprintln!`, as [`out!`] on stderr.
macro_rules! errln {
    ($($arg:tt)*) => { err!("{}\n", format_args!($($arg)*)) };
}

/// Where [`out!`] and [`err!`] write.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Writes to stdout or stderr; the error names the stream.
pub(crate) fn write_to(stream: Stream, text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    use std::io::Write;
    match stream {
        Stream::Stdout => std::io::stdout().lock().write_fmt(text).map_err(|source| Error::Output { stream: "stdout", source }),
        Stream::Stderr => std::io::stderr().lock().write_fmt(text).map_err(|source| Error::Output { stream: "stderr", source }),
    }
}

/// A warning on stderr from where an error cannot be returned (a store's callback); a failed
/// write is left to the command's next one to report.
pub(crate) fn warn(message: &str) {
    let _ = write_to(Stream::Stderr, format_args!("warning: {message}\n"));
}
