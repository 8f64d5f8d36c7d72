//! Lockfiles in, pins out: what a snapshot must hold, as digests.
//!
//! The formats evaluations already have:
//!
//! - pip's hashed requirements, as `pip-compile --generate-hashes` and
//!   `uv pip compile --generate-hashes` write them ([`parse_requirements`]);
//! - `uv.lock`, version 1 ([`parse_uv_lock`]);
//! - cargo's `Cargo.lock`, versions 2 to 4 ([`parse_cargo_lock`]), pinned by
//!   the sha256 `checksum` of each `.crate`;
//! - npm's `package-lock.json`, versions 2 and 3 ([`parse_package_lock`]),
//!   pinned by sha512 integrity;
//! - a Hugging Face lock ([`parse_hf_lock`]): repositories at commits,
//!   with the globs of the files held;
//! - what `apt-get install --print-uris -qq` prints ([`parse_print_uris`]):
//!   package URLs, sizes and apt's one hash, which the SHA256 of a signed
//!   `Packages` index must then bind.
//!
//! Every pin is an exact `name==version` with at least one sha256: a
//! requirement that would let an index choose the bytes (no hash, a range, a
//! URL, an editable checkout) is an error naming `file:line`, because a
//! snapshot built from it would bind names to bytes nobody vouched for (P1).
//! Environment markers are kept but never evaluated: a snapshot holds the
//! files for every platform the lock covers.
//!
//! [`rewrite_uv_lock`] points a `uv.lock` at a mirror, textually, so that
//! `uv sync --frozen` installs from the mirror with the lock's own hashes.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

mod apt_uris;
mod cargolock;
mod hflock;
mod npmlock;
mod requirements;
mod rewrite;
mod urls;
mod uvlock;

use egress_model::{ProjectName, Sha256Digest, Version};
use std::fmt;

pub use apt_uris::{
    parse_print_uris, pool_path_of, split_at_pool, AptHash, AptUri, PRINT_URIS_INPUT,
};
pub use cargolock::{
    is_crate_version, parse_cargo_lock, CargoLock, CratePin, CrateSkipped, CrateSource,
    CRATES_IO_GIT, CRATES_IO_SPARSE,
};
pub use hflock::{glob_matches, parse_hf_lock, HfLock, HfPin};
pub use npmlock::{parse_package_lock, sha512_of_integrity, NpmLock, NpmPin};
pub use requirements::parse_requirements;
pub use rewrite::rewrite_uv_lock;
pub use urls::{lock_urls, LockFormat, LockUrl};
pub use uvlock::{parse_uv_lock, uv_lock_needed};

/// Which format a [`Lock`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    Requirements,
    UvLock,
}

/// One file a pin allows, by digest. Requirements files give only the digest;
/// `uv.lock` also gives where the file was and what it is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedFile {
    pub sha256: Sha256Digest,
    pub url: Option<String>,
    pub filename: Option<String>,
    pub size: Option<u64>,
    /// PEP 700 upload time as the lock records it.
    pub upload_time: Option<String>,
    /// Line of the lock that gives this digest.
    pub line: usize,
}

/// An exact pin: one version of one project and the files allowed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub name: ProjectName,
    pub version: Version,
    /// Never empty.
    pub files: Vec<PinnedFile>,
    /// Extras as written (`name[a,b]`); they select no files of their own.
    pub extras: Vec<String>,
    /// PEP 508 environment marker as written, not evaluated.
    pub marker: Option<String>,
    /// Line where the pin starts.
    pub line: usize,
}

impl Pin {
    pub fn hashes(&self) -> Vec<Sha256Digest> {
        self.files.iter().map(|f| f.sha256).collect()
    }
}

/// A parsed lockfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub kind: LockKind,
    /// The file name used in messages.
    pub file: String,
    pub pins: Vec<Pin>,
    /// Lines that were understood and deliberately ignored (index options,
    /// the project's own editable or virtual package), each `file:line: ...`.
    pub notes: Vec<String>,
}

/// Why a lockfile cannot be used. One line: `file:line: what; what to do`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockError {
    pub file: String,
    /// 1-based; 0 when the problem is the file as a whole.
    pub line: usize,
    pub message: String,
}

impl LockError {
    pub(crate) fn new(file: &str, line: usize, message: impl Into<String>) -> Self {
        // Messages quote lockfile text; keep them on one line whatever it holds.
        let message = message
            .into()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        Self {
            file: file.to_string(),
            line,
            message,
        }
    }
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for LockError {}

/// Why a `sha256:HEX` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HashError {
    #[error("hash {0:?} is not ALGORITHM:HEX; write it as sha256:<64 hex digits>")]
    NotAlgorithmHex(String),
    #[error("hash algorithm {0:?} is not supported: snapshots are addressed by sha256; regenerate the lock with sha256 hashes")]
    Unsupported(String),
    #[error("malformed sha256 {0:?}: expected exactly 64 hexadecimal digits")]
    Malformed(String),
}

/// Parses `sha256:HEX`, the form both formats use.
pub(crate) fn parse_hash(value: &str) -> Result<Sha256Digest, HashError> {
    let Some((algo, hex)) = value.split_once(':') else {
        return Err(HashError::NotAlgorithmHex(value.to_string()));
    };
    if !algo.eq_ignore_ascii_case("sha256") {
        return Err(HashError::Unsupported(algo.to_string()));
    }
    Sha256Digest::from_hex(hex).map_err(|_| HashError::Malformed(hex.to_string()))
}

/// The last path segment of a URL, percent-decoded: the file name PyPI-style
/// indexes serve a file under.
pub fn filename_from_url(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next()?;
    let last = path.rsplit('/').next().filter(|s| !s.is_empty())?;
    percent_decode(last)
}

fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let pair = [bytes.next()?, bytes.next()?];
            let hex = std::str::from_utf8(&pair).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes() {
        let hex = "ab".repeat(32);
        assert!(parse_hash(&format!("sha256:{hex}")).is_ok());
        assert!(parse_hash(&format!("SHA256:{}", hex.to_uppercase())).is_ok());
        assert!(parse_hash(&format!("sha512:{hex}"))
            .unwrap_err()
            .to_string()
            .contains("not supported"));
        assert!(parse_hash("sha256:abc")
            .unwrap_err()
            .to_string()
            .contains("malformed"));
        assert!(parse_hash(&hex)
            .unwrap_err()
            .to_string()
            .contains("ALGORITHM:HEX"));
    }

    #[test]
    fn filenames_from_urls() {
        assert_eq!(
            filename_from_url("https://h/p/ab/cd/x-1.0%2Blocal-py3-none-any.whl#sha256=00")
                .as_deref(),
            Some("x-1.0+local-py3-none-any.whl")
        );
        assert_eq!(filename_from_url("https://h/p/"), None);
        assert_eq!(filename_from_url("https://h/p/x%zz"), None);
    }
}
