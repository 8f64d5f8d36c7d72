//! PEP 503 normalized project names.

use std::fmt;

/// A project name, validated against the PEP 508 name grammar and stored in
/// its PEP 503 normalized form (lowercase, runs of `-`, `_`, `.` folded to `-`).
///
/// Invariant: the stored string matches `[a-z0-9]([a-z0-9-]*[a-z0-9])?` and has no
/// `--`, so it is safe to place in a URL path segment or a file name as is.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProjectName(String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName(pub String);

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a valid project name (letters, digits, '-', '_', '.', starting and ending with a letter or digit)",
            self.0
        )
    }
}

impl std::error::Error for InvalidName {}

impl ProjectName {
    pub fn new(raw: &str) -> Result<Self, InvalidName> {
        let bytes = raw.as_bytes();
        let valid = bytes.len() <= 200
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            return Err(InvalidName(raw.to_string()));
        }
        let mut out = String::with_capacity(raw.len());
        let mut in_sep = false;
        for c in raw.chars() {
            if matches!(c, '-' | '_' | '.') {
                if !in_sep {
                    out.push('-');
                }
                in_sep = true;
            } else {
                out.push(c.to_ascii_lowercase());
                in_sep = false;
            }
        }
        Ok(Self(out))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as it appears in wheel filenames (PEP 427: `-` becomes `_`).
    pub fn wheel_component(&self) -> String {
        self.0.replace('-', "_")
    }
}

crate::newtype::string_newtype!(ProjectName, InvalidName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_per_pep503() {
        for raw in [
            "Friendly-Bard",
            "FRIENDLY-BARD",
            "friendly.bard",
            "friendly_bard",
            "friendly--bard",
            "FrIeNdLy-._.-bArD",
        ] {
            assert_eq!(
                ProjectName::new(raw).unwrap().as_str(),
                "friendly-bard",
                "{raw}"
            );
        }
    }

    #[test]
    fn rejects_unsafe_names() {
        for raw in [
            "", "-a", "a-", "../etc", "a/b", "a b", "a%2e", ".", "a\\b", "é",
        ] {
            assert!(ProjectName::new(raw).is_err(), "{raw}");
        }
    }
}
