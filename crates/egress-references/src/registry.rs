//! Every protocol this crate serves, registered once: each protocol's
//! folder defines its [`Registration`] (`pypi::REGISTRATION`...), and
//! [`PROTOCOLS`] in `lib.rs` lists them. The built-in run, the standalone
//! canary and the conformance kit all read that one list.

use crate::builtin::{BuiltinError, Pair};
use crate::control::ServeOptions;
use crate::kit::KitFile;
use crate::standalone::Running;
use egress_suite::Report;
use std::path::Path;

/// One protocol's part in this crate.
pub struct Registration {
    pub protocol: egress_suite::Protocol,
    /// The protocol's name in titles and the built-in run's rows: `PyPI`,
    /// `npm`.
    pub title: &'static str,
    /// Runs the built-in pair, (A) and (B), side by side.
    pub run: fn() -> Result<(Report, Report), BuiltinError>,
    /// Starts the standalone canary (`canary --protocol`).
    pub serve: fn(&ServeOptions) -> std::io::Result<Box<dyn Running>>,
    /// The conformance kit's files, a tripwire aimed at the given canary.
    pub kit: fn(&str) -> Vec<KitFile>,
    /// How a lab adds the kit written to a directory to its snapshot: the
    /// `snapshot build` flags, for `kit`'s last line.
    pub kit_use: fn(&Path) -> String,
    /// Whether the kit's tripwire calls `kit --canary` (a protocol whose
    /// client runs no code of an artifact has none aimed anywhere).
    pub tripwire: bool,
}

/// The registration of `protocol` (every protocol of the suite has one: a
/// test checks it).
pub fn of(protocol: egress_suite::Protocol) -> Option<&'static Registration> {
    crate::PROTOCOLS.iter().find(|r| r.protocol == protocol)
}

/// Runs every protocol's pair, all at once; the pairs come back in the
/// order given (`egress_references::PROTOCOLS`: every protocol).
pub fn run_all(protocols: &[Registration]) -> Result<Vec<Pair>, BuiltinError> {
    let Some((first, rest)) = protocols.split_first() else {
        return Ok(Vec::new());
    };
    let others: Vec<_> = rest
        .iter()
        .map(|p| (p.title, std::thread::spawn(p.run)))
        .collect();
    let (a, b) = (first.run)()?;
    let mut pairs = vec![Pair {
        title: first.title,
        a,
        b,
    }];
    for (title, handle) in others {
        let (a, b) = handle.join().map_err(|_| BuiltinError::Panicked {
            what: format!("the {title} runs"),
        })??;
        pairs.push(Pair { title, a, b });
    }
    Ok(pairs)
}

/// Starts the standalone canary of `protocol` with `options`.
pub fn serve(
    protocol: egress_suite::Protocol,
    options: &ServeOptions,
) -> std::io::Result<Box<dyn Running>> {
    let r = of(protocol)
        .ok_or_else(|| std::io::Error::other(format!("no canary is registered for {protocol}")))?;
    (r.serve)(options)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_protocol_of_the_suite_is_registered_once() {
        for p in egress_suite::Protocol::ALL {
            let n = crate::PROTOCOLS.iter().filter(|r| r.protocol == *p).count();
            assert_eq!(n, 1, "{p}");
        }
        assert_eq!(crate::PROTOCOLS.len(), egress_suite::Protocol::ALL.len());
    }
}
