//! Real, installable Python distributions, npm tarballs and Debian packages
//! built by our own code, and metadata extraction from ones that a mirror
//! served.
//!
//! The builders exist so that the suite's fixtures are ordinary wheels and
//! sdists that pip accepts, byte-for-byte reproducible so that their digests
//! can be written down once. The readers run on bytes from the mirror under
//! test, which may be hostile: they never execute anything, never trust a size
//! they have not bounded, and answer every malformed input with an error.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod cargo;
pub mod deb;
pub mod npm;
mod sdist;
mod wheel;

use egress_model::{ProjectName, Sha256Digest, Version};
use std::fmt;

pub use cargo::{build_crate, CrateSpec};
pub use deb::{
    build_deb, deb_control_paragraph, read_deb_control, DebError, DebSpec, MAINTAINER_SCRIPTS,
};
pub use npm::{
    build_npm_tarball, is_valid_npm_name, npm_tarball_filename, sri_sha512, NpmPackageSpec,
    NpmTarball,
};
pub use sdist::{
    build_sdist, gunzip, gzip, read_npm_package, read_sdist_pkg_info, read_top_level_file,
    NpmPackageContents, TopLevelFile, MAX_LISTED_MEMBERS, MAX_SDIST_UNPACKED,
};
pub use wheel::{build_wheel, build_wheel_with, read_wheel_members, read_wheel_metadata};

/// Largest METADATA or PKG-INFO the readers will return. Real ones are a few
/// KiB; the cap stops a hostile archive from making us hold gigabytes.
pub const MAX_METADATA: u64 = 4 * 1024 * 1024;

/// What goes into a `py3-none-any` wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelSpec {
    pub name: ProjectName,
    pub version: Version,
    pub summary: String,
    pub description: String,
    pub requires_python: Option<String>,
    /// Paths inside the wheel, e.g. `ec_present/__init__.py`, and contents.
    pub files: Vec<(String, Vec<u8>)>,
}

/// What a wheel says beyond its [`WheelSpec`]: a compatibility tag other
/// than `py3-none-any`, and dependencies. [`build_wheel_with`] builds it;
/// the default is what [`build_wheel`] builds, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WheelExtras {
    /// The filename's tag `{python}-{abi}-{platform}`, each part possibly a
    /// compressed tag set (`cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64`);
    /// `None` is `py3-none-any`. The WHEEL file lists every tag of the set,
    /// and `Root-Is-Purelib` is `false` unless the platform is `any`.
    pub tag: Option<String>,
    /// `Requires-Dist` values (PEP 508, markers included), in order.
    pub requires_dist: Vec<String>,
    /// `Provides-Extra` values, in order.
    pub provides_extra: Vec<String>,
}

/// What goes into a setuptools sdist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdistSpec {
    pub name: ProjectName,
    pub version: Version,
    pub summary: String,
    /// The full text of `setup.py`.
    pub setup_py: String,
    /// Paths below the top directory, and contents.
    pub files: Vec<(String, Vec<u8>)>,
}

/// A built distribution: its canonical filename, bytes and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltDist {
    pub filename: String,
    pub bytes: Vec<u8>,
    pub sha256: Sha256Digest,
}

impl BuiltDist {
    fn new(filename: String, bytes: Vec<u8>) -> Self {
        let sha256 = Sha256Digest::of(&bytes);
        Self {
            filename,
            bytes,
            sha256,
        }
    }
}

/// Why a served distribution could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactError {
    /// The bytes are not the container format they claim to be.
    NotAnArchive(&'static str),
    /// The input ended before the named structure did.
    Truncated(&'static str),
    /// A structure is internally inconsistent.
    Malformed(&'static str),
    /// A valid feature this reader deliberately does not implement.
    Unsupported(&'static str),
    /// An entry path is absolute or climbs out with `..` (lossy, shortened).
    UnsafePath(String),
    TooLarge {
        what: &'static str,
        limit: u64,
    },
    ChecksumMismatch(&'static str),
    Missing(&'static str),
    Ambiguous(&'static str),
}

impl fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnArchive(what) => write!(f, "not a {what}"),
            Self::Truncated(what) => write!(f, "input truncated inside the {what}"),
            Self::Malformed(what) => write!(f, "malformed archive: {what}"),
            Self::Unsupported(what) => write!(f, "unsupported archive feature: {what}"),
            Self::UnsafePath(path) => write!(f, "archive entry has an unsafe path: {path:?}"),
            Self::TooLarge { what, limit } => {
                write!(f, "{what} is larger than the {limit}-byte limit")
            }
            Self::ChecksumMismatch(what) => write!(f, "{what} checksum does not match"),
            Self::Missing(what) => write!(f, "archive has no {what}"),
            Self::Ambiguous(what) => write!(f, "archive has more than one {what}"),
        }
    }
}

impl std::error::Error for ArtifactError {}

/// The exact METADATA bytes that [`build_wheel`] puts in the wheel.
pub fn core_metadata(spec: &WheelSpec) -> Vec<u8> {
    core_metadata_with(spec, &WheelExtras::default())
}

/// The exact METADATA bytes that [`build_wheel_with`] puts in the wheel
/// (what an index serves as its PEP 658 metadata).
pub fn core_metadata_with(spec: &WheelSpec, extras: &WheelExtras) -> Vec<u8> {
    metadata_text(
        &spec.name,
        &spec.version,
        &spec.summary,
        spec.requires_python.as_deref(),
        (&extras.requires_dist, &extras.provides_extra),
        &spec.description,
    )
}

/// Core metadata 2.1 in its email-header form, with `(Requires-Dist,
/// Provides-Extra)` values after `Requires-Python`. Header values are forced
/// onto one line: a newline in a summary would otherwise inject extra fields.
fn metadata_text(
    name: &ProjectName,
    version: &Version,
    summary: &str,
    requires_python: Option<&str>,
    (requires_dist, provides_extra): (&[String], &[String]),
    description: &str,
) -> Vec<u8> {
    let one_line = |s: &str| s.replace(['\r', '\n'], " ");
    let mut out = String::new();
    out.push_str("Metadata-Version: 2.1\n");
    out.push_str(&format!("Name: {name}\n"));
    out.push_str(&format!("Version: {version}\n"));
    out.push_str(&format!("Summary: {}\n", one_line(summary)));
    if let Some(rp) = requires_python {
        out.push_str(&format!("Requires-Python: {}\n", one_line(rp)));
    }
    for requirement in requires_dist {
        out.push_str(&format!("Requires-Dist: {}\n", one_line(requirement)));
    }
    for extra in provides_extra {
        out.push_str(&format!("Provides-Extra: {}\n", one_line(extra)));
    }
    out.push_str("Description-Content-Type: text/plain\n\n");
    out.push_str(description);
    out.into_bytes()
}

/// `{name}-{version}` with PEP 427 escaping, shared by wheel filenames,
/// `.dist-info` directories and sdist top directories. A `-` left in the
/// version would make the filename ambiguous to split.
fn dist_stem(name: &ProjectName, version: &Version) -> String {
    format!(
        "{}-{}",
        name.wheel_component(),
        version.as_str().replace('-', "_")
    )
}

/// Refuses builder input that no archive of ours should contain. A panic here
/// is a bug in the calling fixture code, never a reaction to served bytes.
fn assert_member_path(path: &str) {
    let ok = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(['\\', '\0'])
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    assert!(ok, "invalid path for an archive member: {path:?}");
}

/// Whether a served entry path could land outside the extraction directory.
/// Backslashes count as separators because Windows extractors treat them so.
fn is_unsafe_path(path: &[u8]) -> bool {
    let drive = matches!(path, [letter, b':', ..] if letter.is_ascii_alphabetic());
    path.is_empty()
        || path.starts_with(b"/")
        || path.starts_with(b"\\")
        || drive
        || path.contains(&0)
        || path.split(|&b| b == b'/' || b == b'\\').any(|c| c == b"..")
}

fn unsafe_path_error(path: &[u8]) -> ArtifactError {
    let text: String = String::from_utf8_lossy(path).chars().take(200).collect();
    ArtifactError::UnsafePath(text)
}

/// RECORD's hash encoding: urlsafe base64 without padding.
fn urlsafe_b64_nopad(data: &[u8]) -> String {
    egress_model::base64::encode(data)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_paths() {
        for p in [
            &b"/etc/passwd"[..],
            b"../x",
            b"a/../../x",
            b"a\\..\\x",
            b"C:x",
            b"\\x",
            b"",
            b"a\0b",
        ] {
            assert!(is_unsafe_path(p), "{p:?}");
        }
        for p in [&b"a/b"[..], b"a..b/c", b"./a", b"a/.../b"] {
            assert!(!is_unsafe_path(p), "{p:?}");
        }
    }

    #[test]
    fn metadata_fields_stay_on_one_line() {
        let text = metadata_text(
            &ProjectName::new("x").unwrap(),
            &Version::new("1").unwrap(),
            "a\nRequires-Dist: evil",
            None,
            (&[], &["x\nName: evil".to_string()]),
            "body\n",
        );
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("Summary: a Requires-Dist: evil\n"));
        assert!(!text.contains("\nRequires-Dist"));
        assert!(text.contains("Provides-Extra: x Name: evil\n"));
    }

    #[test]
    fn b64_matches_python() {
        // base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).rstrip(b"=")
        assert_eq!(
            urlsafe_b64_nopad(Sha256Digest::of(b"").as_bytes()),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }
}
