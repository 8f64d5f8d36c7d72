//! `Cargo.lock`, versions 2 to 4: the `[[package]]` tables cargo writes.
//!
//! ```toml
//! version = 4
//!
//! [[package]]
//! name = "itoa"
//! version = "1.0.15"
//! source = "registry+https://github.com/rust-lang/crates.io-index"
//! checksum = "4a5f13b858c8d314ee3e8f639011f7ccefe71f97f96e50151fb991f267928e2c"
//! ```
//!
//! A registry package with its `checksum` (the sha256 of the `.crate`)
//! becomes a pin. A package with no `source` is the workspace's own or a
//! path dependency: it is built from the sandbox's files, never fetched,
//! and is listed as local. A git source has no checksum to bind: it is
//! listed as skipped (an error under `--strict`, which the builder
//! decides). Version 1 (checksums in `[metadata]`) and unknown versions
//! are refused.

use crate::LockError;
use egress_model::{CrateName, Sha256Digest};
use serde::Deserialize;
use toml::Spanned;

/// The crates.io index as cargo spells it in `source`, both ways.
pub const CRATES_IO_GIT: &str = "registry+https://github.com/rust-lang/crates.io-index";
pub const CRATES_IO_SPARSE: &str = "sparse+https://index.crates.io/";

#[derive(Deserialize)]
struct Doc {
    version: Option<Spanned<i64>>,
    #[serde(default)]
    package: Vec<Spanned<Package>>,
    metadata: Option<toml::Value>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
}

/// Where a locked package comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrateSource {
    /// crates.io, through its git or its sparse index.
    CratesIo,
    /// Another registry: the `source` as written (`registry+URL` or
    /// `sparse+URL`).
    Registry(String),
    /// `git+URL#commit`.
    Git(String),
    /// No source: a workspace member or a path dependency.
    Local,
    /// A `source` kind cargo may add later.
    Unknown(String),
}

/// One registry package bound to the sha256 of its `.crate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CratePin {
    pub name: CrateName,
    pub version: String,
    pub source: CrateSource,
    pub checksum: Sha256Digest,
    /// 1-based line of its `[[package]]`.
    pub line: usize,
}

/// A package with nothing to fetch, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateSkipped {
    pub name: String,
    pub version: String,
    pub source: CrateSource,
    pub line: usize,
}

/// A `Cargo.lock` read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoLock {
    pub file: String,
    /// 2 when the file names none (cargo 1.41 to 1.52 wrote none).
    pub version: i64,
    pub pins: Vec<CratePin>,
    /// Git sources and registry packages without a checksum.
    pub skipped: Vec<CrateSkipped>,
    /// Workspace members and path dependencies.
    pub local: Vec<CrateSkipped>,
}

fn line_at(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// A version as it may appear in a URL path and a file name: semver's
/// characters only (`[0-9A-Za-z.+-]`), starting with a digit, at most 64
/// bytes.
pub fn is_crate_version(v: &str) -> bool {
    v.len() <= 64
        && v.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+-".contains(&b))
}

impl CrateSource {
    fn parse(source: Option<&str>) -> Self {
        match source {
            None => Self::Local,
            Some(s) if s == CRATES_IO_GIT || s == CRATES_IO_SPARSE => Self::CratesIo,
            Some(s) if s.starts_with("registry+") || s.starts_with("sparse+") => {
                Self::Registry(s.to_string())
            }
            Some(s) if s.starts_with("git+") => Self::Git(s.to_string()),
            Some(s) => Self::Unknown(s.to_string()),
        }
    }
}

/// Reads a `Cargo.lock`. `file` names it in errors.
pub fn parse_cargo_lock(text: &str, file: &str) -> Result<CargoLock, LockError> {
    let doc: Doc = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_at(text, s.start));
        LockError::new(file, line, format!("not a Cargo.lock: {}", e.message()))
    })?;
    if doc.metadata.is_some() && doc.version.is_none() {
        return Err(LockError::new(
            file,
            0,
            "Cargo.lock version 1 (checksums under [metadata]) is not read: rewrite it with a current cargo (`cargo generate-lockfile` or any `cargo update`)",
        ));
    }
    let version = match &doc.version {
        None => 2,
        Some(v) if matches!(v.get_ref(), 3 | 4) => *v.get_ref(),
        Some(v) => {
            return Err(LockError::new(
                file,
                line_at(text, v.span().start),
                format!(
                    "Cargo.lock version {} is not one this build reads (2, 3 and 4 are); rewrite it with a cargo that writes those",
                    v.get_ref()
                ),
            ))
        }
    };
    let mut lock = CargoLock {
        file: file.to_string(),
        version,
        pins: Vec::new(),
        skipped: Vec::new(),
        local: Vec::new(),
    };
    for spanned in doc.package {
        let line = line_at(text, spanned.span().start);
        let p = spanned.into_inner();
        let name =
            CrateName::new(&p.name).map_err(|e| LockError::new(file, line, e.to_string()))?;
        if !is_crate_version(&p.version) {
            return Err(LockError::new(
                file,
                line,
                format!("{name}: version {:?} is not a semver version", p.version),
            ));
        }
        let source = CrateSource::parse(p.source.as_deref());
        let entry = |source| CrateSkipped {
            name: name.to_string(),
            version: p.version.clone(),
            source,
            line,
        };
        match (source, &p.checksum) {
            (CrateSource::Local, _) => lock.local.push(entry(CrateSource::Local)),
            (s @ (CrateSource::CratesIo | CrateSource::Registry(_)), Some(sum)) => {
                let checksum = Sha256Digest::from_hex(sum).map_err(|_| {
                    LockError::new(
                        file,
                        line,
                        format!(
                            "{name} {}: checksum {sum:?} is not 64 hexadecimal digits",
                            p.version
                        ),
                    )
                })?;
                lock.pins.push(CratePin {
                    name,
                    version: p.version,
                    source: s,
                    checksum,
                    line,
                });
            }
            (s, _) => lock.skipped.push(entry(s)),
        }
    }
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = [
 "itoa",
]

[[package]]
name = "itoa"
version = "1.0.15"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "4a5f13b858c8d314ee3e8f639011f7ccefe71f97f96e50151fb991f267928e2c"

[[package]]
name = "libgit2-sys"
version = "0.14.2+1.5.1"
source = "sparse+https://index.crates.io/"
checksum = "7f3d95f6b51075fe9810a7ae22c7095f12b98005ab364d8544797a825ce946a4"

[[package]]
name = "patched"
version = "0.3.0"
source = "git+https://example.invalid/patched.git#0123456789abcdef0123456789abcdef01234567"
"#;

    #[test]
    fn reads_what_cargo_writes() {
        let lock = parse_cargo_lock(LOCK, "Cargo.lock").unwrap();
        assert_eq!(lock.version, 4);
        let pins: Vec<_> = lock
            .pins
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str(), p.line))
            .collect();
        assert_eq!(
            pins,
            [("itoa", "1.0.15", 12), ("libgit2-sys", "0.14.2+1.5.1", 18)]
        );
        assert!(lock.pins.iter().all(|p| p.source == CrateSource::CratesIo));
        assert_eq!(lock.local.len(), 1);
        assert_eq!(lock.skipped.len(), 1);
        assert!(matches!(lock.skipped[0].source, CrateSource::Git(_)));
    }

    #[test]
    fn this_repositorys_own_lock() {
        let text = include_str!("../../../Cargo.lock");
        let lock = parse_cargo_lock(text, "Cargo.lock").unwrap();
        assert!(lock.pins.len() > 100, "{}", lock.pins.len());
        assert!(lock.local.iter().any(|p| p.name == "egress-lock"));
        assert!(lock.skipped.is_empty());
    }

    #[test]
    fn versions_and_bad_entries() {
        let v1 = "[[package]]\nname = \"a\"\nversion = \"1.0.0\"\n[metadata]\n\"checksum a 1.0.0 (registry+x)\" = \"00\"\n";
        assert!(parse_cargo_lock(v1, "L")
            .unwrap_err()
            .message
            .contains("version 1"));
        let v9 = "version = 9\n";
        let e = parse_cargo_lock(v9, "L").unwrap_err();
        assert_eq!((e.line, e.message.contains("version 9")), (1, true));
        let v2 = LOCK.replace("version = 4\n", "");
        assert_eq!(parse_cargo_lock(&v2, "L").unwrap().version, 2);
        for (bad, why) in [
            (LOCK.replace("4a5f13b8", "zz5f13b8"), "checksum"),
            (
                LOCK.replace("\"itoa\"\nversion", "\"../x\"\nversion"),
                "crate name",
            ),
            (LOCK.replace("1.0.15", "1.0.15/../x"), "semver"),
            ("[[package]]\nname = 3\n".to_string(), "not a Cargo.lock"),
        ] {
            let e = parse_cargo_lock(&bad, "L").unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
    }
}
