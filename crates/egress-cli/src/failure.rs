//! A command's failure: the exit code it ends with, its one-line message
//! and the error that caused it, which [`crate::say_error`] prints as a
//! chain. Every command of `egress-conformance` returns one, wherever its
//! code lives, so that each exit code means one thing (the README lists
//! them).

use crate::chain;

pub mod exit {
    /// Every predicate passes; `report verify`: every verdict re-derives.
    pub const PASS: u8 = 0;
    /// At least one predicate fails; `report verify`: a verdict differs.
    pub const FAIL: u8 = 1;
    /// Bad command line.
    pub const USAGE: u8 = 2;
    /// Inconclusive: target unreachable or a positive control failed.
    pub const INCONCLUSIVE: u8 = 3;
    /// An input file is unreadable or malformed (manifest, signers, CA, report).
    pub const INPUT: u8 = 4;
    /// The run itself could not be carried out (cannot write output, cannot
    /// start the built-in references, an index unreachable after retries).
    pub const INTERNAL: u8 = 5;
    /// `snapshot build` refused: the index does not serve what the locks pin
    /// (a pinned sha256 no page lists, or bytes that do not hash to it).
    /// Nothing was written.
    pub const REFUSED: u8 = 6;
    /// `check --canary`: the canary's control API did not answer, refused
    /// the secret, or answered with something else than its documents;
    /// no verdict is given.
    pub const CANARY: u8 = 7;
    /// `snapshot build --apt-uris`: an upstream's `InRelease` (or `Release`
    /// and `Release.gpg`) does not verify against `--apt-keyring`; nothing
    /// is written.
    pub const UNVERIFIED: u8 = 8;
    /// `snapshot build --exclude-newer`: an upstream lists no upload time
    /// for a file it would select, so the cutoff cannot be kept; nothing
    /// is written.
    pub const NO_UPLOAD_TIMES: u8 = 9;
    /// `snapshot build --base`, `verify`, `flatten`: a snapshot (the base,
    /// or a layer below) does not verify against the trusted signers, or
    /// its bytes do not match; nothing is written.
    pub const BASE_UNVERIFIED: u8 = 10;
    /// A layer's chain has a gap: a parent's evidence is missing, or is not
    /// the one the layer signed (a forked chain).
    pub const CHAIN_BROKEN: u8 = 11;
    /// `snapshot build --base`: the build would serve other bytes under a
    /// name the base holds; nothing is written.
    pub const LAYER_CHANGES_BYTES: u8 = 12;
    /// `snapshot build --remove`: the base does not serve what it names.
    pub const TOMBSTONE_ABSENT: u8 = 13;
    /// `snapshot misses`: a log holds a line that is not one of
    /// egress-mirror's misses log; nothing is written.
    pub const NOT_A_MISSES_LOG: u8 = 14;
    /// `snapshot push`, `snapshot pull`: the registry could not be used
    /// (unreachable, an error status, a refused credential).
    pub const REGISTRY: u8 = 15;
    /// `snapshot pull`: what the registry served does not verify (a blob
    /// or manifest whose digest differs, not a snapshot artifact, a
    /// signature or file that does not verify); nothing is written at DIR.
    pub const PULL_UNVERIFIED: u8 = 16;
}

/// A one-line error with the exit code it maps to, and optionally the error
/// that caused it: the binary prints `message` on one line, then one
/// `caused by:` line per cause that `message` does not already say.
/// Why a command stopped: see the module docs.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Failure {
    pub fn new(code: u8, m: impl Into<String>) -> Self {
        Self {
            code,
            message: m.into(),
            source: None,
        }
    }
    pub fn usage(m: impl Into<String>) -> Self {
        Self::new(exit::USAGE, m)
    }
    pub fn input(m: impl Into<String>) -> Self {
        Self::new(exit::INPUT, m)
    }
    pub fn internal(m: impl Into<String>) -> Self {
        Self::new(exit::INTERNAL, m)
    }
    /// The same failure, caused by `source`.
    pub fn because(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
    /// The lines the binary prints: the message, then each cause (and its
    /// causes) that the line before does not already end with.
    pub fn chain(&self) -> Vec<String> {
        chain(self)
    }
}

/// A file a command could not write: an internal failure.
impl From<crate::store::WriteError> for Failure {
    fn from(e: crate::store::WriteError) -> Self {
        Failure::internal(e.to_string()).because(e)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_failure_shows_its_chain_of_causes() {
        let io = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let f = Failure::internal("cannot write x").because(Outer(io()));
        assert_eq!(f.to_string(), "cannot write x");
        assert_eq!(
            f.chain(),
            ["cannot write x", "caused by: outer", "caused by: denied"]
        );
        // A cause the message already ends with is not said twice.
        let f = Failure::internal(format!("cannot write x: {}", io())).because(io());
        assert_eq!(f.chain(), ["cannot write x: denied"]);
        assert_eq!(Failure::usage("u").chain(), ["u"]);
        assert!(format!("{f:?}").contains("cannot write x"));
    }
}
