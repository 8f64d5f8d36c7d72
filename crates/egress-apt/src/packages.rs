//! `Packages` indexes: one deb822 paragraph per package file, read into
//! [`PackageEntry`] values ([`parse_packages`]) and written back verbatim
//! ([`render_packages`]). A `Packages.gz` is inflated first with
//! `egress_artifacts::gunzip` (the project's one gzip reader; this crate
//! stays below egress-artifacts), and written with `egress_artifacts::gzip`.

use crate::deb822::{parse_paragraphs, Paragraph};
use crate::path::PoolPath;
use crate::{parse_size, quote, AptFormatError};
use egress_model::Sha256Digest;

/// One stanza of a `Packages` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageEntry {
    pub package: String,
    pub version: String,
    pub architecture: String,
    /// Relative to the archive root.
    pub filename: PoolPath,
    pub size: u64,
    pub sha256: Option<Sha256Digest>,
    /// 32 lowercase hex digits (`MD5sum`), when given.
    pub md5: Option<String>,
    /// The stanza as written.
    pub paragraph: Paragraph,
}

/// Reads every stanza. Each must have `Package`, `Version`, `Architecture`,
/// `Filename` and `Size`; `SHA256` and `MD5sum` are optional but must be
/// well-formed when present. Names, versions and architectures must use the
/// characters Debian Policy allows them (5.6.1, 5.6.12, 5.6.8); `Filename`
/// must be a [`PoolPath`].
pub fn parse_packages(text: &str) -> Result<Vec<PackageEntry>, AptFormatError> {
    parse_paragraphs(text)?.into_iter().map(entry_of).collect()
}

/// The stanzas as written, separated by empty lines, ending in a newline
/// (empty text for no entries).
pub fn render_packages(entries: &[&PackageEntry]) -> String {
    entries
        .iter()
        .map(|e| e.paragraph.render())
        .collect::<Vec<_>>()
        .join("\n")
}

fn entry_of(paragraph: Paragraph) -> Result<PackageEntry, AptFormatError> {
    let start = paragraph.line();
    let required = |field: &'static str| {
        paragraph
            .get(field)
            .filter(|v| !v.is_empty())
            .ok_or(AptFormatError::MissingField { line: start, field })
    };
    let bad = |field: &str, why: String| AptFormatError::BadValue {
        line: paragraph.field_line(field).unwrap_or(start),
        field: field.to_string(),
        why,
    };
    let package = required("Package")?;
    if !is_package_name(package) {
        return Err(bad(
            "Package",
            format!(
                "{:?} is not a Debian package name (lowercase letters, digits, `+ - .`, at least two, starting alphanumeric)",
                quote(package)
            ),
        ));
    }
    let version = required("Version")?;
    if !is_version(version) {
        return Err(bad(
            "Version",
            format!(
                "{:?} is not a Debian version (letters, digits, `. + ~ - :`, starting with a digit after any epoch)",
                quote(version)
            ),
        ));
    }
    let architecture = required("Architecture")?;
    if !is_architecture(architecture) {
        return Err(bad(
            "Architecture",
            format!(
                "{:?} is not an architecture name (lowercase letters, digits, `-`)",
                quote(architecture)
            ),
        ));
    }
    let filename = required("Filename")?;
    let filename = PoolPath::new(filename)
        .map_err(|e| bad("Filename", format!("{:?}: {e}", quote(filename))))?;
    let size = required("Size")?;
    let size = parse_size(size)
        .ok_or_else(|| bad("Size", format!("{:?} is not a decimal u64", quote(size))))?;
    let sha256 = match paragraph.get("SHA256") {
        None => None,
        Some(hex) => Some(
            Sha256Digest::from_hex(hex)
                .map_err(|_| bad("SHA256", format!("{:?} is not 64 hex digits", quote(hex))))?,
        ),
    };
    let md5 = match paragraph.get("MD5sum") {
        None => None,
        Some(hex) if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(hex.to_ascii_lowercase())
        }
        Some(hex) => {
            return Err(bad(
                "MD5sum",
                format!("{:?} is not 32 hex digits", quote(hex)),
            ))
        }
    };
    Ok(PackageEntry {
        package: package.to_string(),
        version: version.to_string(),
        architecture: architecture.to_string(),
        filename,
        size,
        sha256,
        md5,
        paragraph,
    })
}

/// Debian Policy 5.6.1.
pub fn is_package_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() >= 2
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b))
}

/// Debian Policy 5.6.12: `[epoch:]upstream[-revision]`, the upstream part
/// starting with a digit.
pub fn is_version(version: &str) -> bool {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) => (Some(epoch), rest),
        None => (None, version),
    };
    epoch.is_none_or(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
        && rest.bytes().next().is_some_and(|b| b.is_ascii_digit())
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+~-:".contains(&b))
}

/// Architecture names (`amd64`, `all`, `linux-any`, `arm64ilp32`).
pub fn is_architecture(arch: &str) -> bool {
    !arch.is_empty()
        && arch
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = "Package: hello\nVersion: 2.10-3\nArchitecture: amd64\nFilename: pool/main/h/hello/hello_2.10-3_amd64.deb\nSize: 53080\nMD5sum: D04C2E9639DEE67AA836D8232B1CA658\nSHA256: 0d5f444f594e48c1e16a41d8fc628a09b24c658916a1274025c2330f2a802bed\n";

    #[test]
    fn reads_a_stanza() {
        let e = &parse_packages(HELLO).unwrap()[0];
        assert_eq!(e.package, "hello");
        assert_eq!(e.version, "2.10-3");
        assert_eq!(e.architecture, "amd64");
        assert_eq!(
            e.filename.as_str(),
            "pool/main/h/hello/hello_2.10-3_amd64.deb"
        );
        assert_eq!(e.size, 53080);
        assert_eq!(e.md5.as_deref(), Some("d04c2e9639dee67aa836d8232b1ca658"));
        assert!(e.sha256.is_some());
        assert_eq!(render_packages(&[e]), HELLO);
        assert_eq!(render_packages(&[]), "");
    }

    #[test]
    fn names_and_versions() {
        for ok in ["1.0", "1:2.10-3", "1.6-2.1+deb12u3", "2:9.0~rc1", "0"] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in ["", "a1", ":1", "a:1", "1 2", "1/2", "1_2", "1:"] {
            assert!(!is_version(bad), "{bad}");
        }
        for ok in ["hello", "g++", "libc6", "0ad"] {
            assert!(is_package_name(ok), "{ok}");
        }
        for bad in ["h", "Hello", "-x", "a_b", "a/b", ".x"] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }
}
