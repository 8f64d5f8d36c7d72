//! Colour in terminal output: only where a person reads it. `--color
//! auto` (the default) colours standard output when it is a terminal and
//! neither `NO_COLOR` (set and not empty, as no-color.org says) nor
//! `TERM=dumb` asks otherwise; `always` and `never` override both, as a
//! flag given on the command line should.

use std::io::IsTerminal;

/// The `--color` flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set or TERM is dumb.
    #[default]
    Auto,
    /// Colour, even into a file or a pipe.
    Always,
    /// No colour.
    Never,
}

impl ColorChoice {
    /// Whether standard output gets colour (`egress_model::report_text::Paint`'s `on`).
    pub fn on(self) -> bool {
        match self {
            Self::Always => true,
            Self::Never => false,
            Self::Auto => auto(
                std::io::stdout().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
                std::env::var_os("TERM").as_deref(),
            ),
        }
    }
}

fn auto(tty: bool, no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    tty && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn auto_colours_a_terminal_only_without_no_color_or_a_dumb_term() {
        assert!(auto(true, None, Some(OsStr::new("xterm"))));
        assert!(!auto(false, None, None));
        assert!(!auto(true, Some(OsStr::new("1")), None));
        assert!(
            auto(true, Some(OsStr::new("")), None),
            "an empty NO_COLOR is unset"
        );
        assert!(!auto(true, None, Some(OsStr::new("dumb"))));
    }

    #[test]
    fn always_and_never_override_the_environment() {
        assert!(ColorChoice::Always.on());
        assert!(!ColorChoice::Never.on());
    }
}
