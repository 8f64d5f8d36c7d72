//! What every binary of the project shares, so each says it the same way:
//!
//! - [`parse`]: flags through clap, where `--help` is a normal end and not
//!   an error;
//! - [`usage_line`]: a clap error as the one line a usage error is;
//! - [`chain`] and [`say_error`]: any other error as the chain of its
//!   causes, `NAME: <message>` then one `caused by: ` line per cause the
//!   line before does not already say;
//! - [`print`] (and the [`out!`] and [`outln!`] macros over it): the one
//!   path to standard output. A locked handle, written and flushed, where a
//!   closed pipe (`egress-conformance | head -1`) is a quiet, normal end:
//!   nothing more is written, nothing is said, and the command ends with its
//!   own exit code. Any other write error is kept for [`stdout_error`],
//!   which the binary reports once its command is done.

mod color;
mod failure;
pub mod store;
pub use color::ColorChoice;
pub use failure::{exit, Failure};

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Parses `args` (without the program name) as `name`'s flags. `Ok(None)`
/// means help was asked for: the caller prints it as it likes.
pub fn parse<T: clap::Parser>(
    name: &str,
    args: impl IntoIterator<Item = String>,
) -> Result<Option<T>, clap::Error> {
    let argv = std::iter::once(name.to_string()).chain(args);
    match T::try_parse_from(argv) {
        Ok(flags) => Ok(Some(flags)),
        Err(e) if is_help(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether clap's "error" is in fact help or the version, asked for.
pub fn is_help(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    )
}

/// clap's error as one line, without its `error: ` prefix: its first
/// paragraph joined, so that a list of missing arguments (on lines of their
/// own after the first) is named too; usage and tips come after a blank
/// line and are left to `--help`.
pub fn usage_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let line = message.join(" ");
    match line.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if line.is_empty() => "invalid arguments".to_string(),
        None => line,
    }
}

/// The lines an error is shown as: its message, then `caused by: ` and
/// each cause (and its causes) that the line before does not already end
/// with, so a message that already says its cause is one line.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut lines = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !lines.last().is_some_and(|l| l.ends_with(&text)) {
            lines.push(format!("caused by: {text}"));
        }
        next = cause.source();
    }
    lines
}

/// Writes `e` to standard error as [`chain`] gives it, the first line as
/// `name: <message>`. A closed standard error is not worth a panic.
pub fn say_error(name: &str, e: &(dyn std::error::Error + 'static)) {
    say_lines(name, &chain(e));
}

/// Writes `lines` to standard error, the first as `name: <line>`. A closed
/// standard error is not worth a panic.
pub fn say_lines(name: &str, lines: &[String]) {
    let mut err = io::stderr().lock();
    for (i, line) in lines.iter().enumerate() {
        let _ = if i == 0 {
            writeln!(err, "{name}: {line}")
        } else {
            writeln!(err, "{line}")
        };
    }
}

/// Set once standard output cannot take more: its reader went away, or a
/// write failed.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The write error, other than a closed pipe, that closed standard output.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);

/// Writes `text` to standard output, all of it, then flushes. Never panics:
/// see the crate documentation.
pub fn print(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            if let Ok(mut slot) = STDOUT_ERROR.lock() {
                slot.get_or_insert(e);
            }
        }
    }
}

/// The error that stopped standard output, if it was anything but a closed
/// pipe (a full disk, say); taken, so it is reported once.
pub fn stdout_error() -> Option<io::Error> {
    STDOUT_ERROR.lock().ok()?.take()
}

/// `print!` through [`print`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::print(&::std::format!($($arg)*))
    };
}

/// `println!` through [`print`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::print(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[arg(long)]
        listen: String,
        #[arg(long, value_parser = ["a", "b"])]
        kind: Option<String>,
    }

    fn error(args: &[&str]) -> clap::Error {
        match parse::<Flags>("t", args.iter().map(|s| s.to_string())) {
            Err(e) => e,
            Ok(f) => panic!("parsed {f:?}"),
        }
    }

    #[test]
    fn usage_errors_are_one_line_and_name_what_was_wrong() {
        for (args, says) in [
            (&[][..], "--listen"),
            (&["--listen", "x", "--bogus"][..], "--bogus"),
            (
                &["--listen", "x", "--kind", "c"][..],
                "possible values: a, b",
            ),
        ] {
            let line = usage_line(&error(args));
            assert!(!line.contains('\n'), "{line}");
            assert!(!line.starts_with("error"), "{line}");
            assert!(line.contains(says), "{args:?}: {line}");
        }
    }

    #[test]
    fn flags_parse() {
        let f = parse::<Flags>("t", ["--listen".to_string(), "x".to_string()]);
        assert!(matches!(f, Ok(Some(Flags { listen, .. })) if listen == "x"));
    }

    #[derive(Debug)]
    struct Wrapped(&'static str, Option<io::Error>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_ref().map(|e| e as _)
        }
    }

    #[test]
    fn an_error_is_its_chain_of_causes_each_said_once() {
        let denied = || Some(io::Error::new(io::ErrorKind::PermissionDenied, "denied"));
        assert_eq!(
            chain(&Wrapped("cannot write x", denied())),
            ["cannot write x", "caused by: denied"]
        );
        assert_eq!(
            chain(&Wrapped("cannot write x: denied", denied())),
            ["cannot write x: denied"]
        );
        assert_eq!(chain(&Wrapped("alone", None)), ["alone"]);
    }
}
