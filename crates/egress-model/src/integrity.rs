//! The one sha512 Subresource Integrity type of the project: npm's
//! `dist.integrity` and package-lock.json's `integrity`, `sha512-<base64>`.

use crate::base64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha512};
use std::fmt;
use std::str::FromStr;

/// A sha512 digest as npm names it. Displays and serializes as
/// `sha512-<base64>`, the single integrity a registry serves.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Integrity([u8; 64]);

/// Why a text is not a sha512 integrity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrityError {
    /// The text is blank.
    #[error("the integrity is empty")]
    Empty,
    /// A token is not `algo-value`.
    #[error("{0:?} is not an SRI string")]
    NotSri(String),
    /// The sha512 value is not standard base64.
    #[error("malformed base64")]
    Base64,
    /// The sha512 value decodes to other than 64 bytes.
    #[error("a sha512 has 64 bytes, this one {0}")]
    Length(usize),
    /// Only other algorithms are named (sha1, sha256, ...).
    #[error("no sha512 (only {})", .0.join(", "))]
    NoSha512(Vec<String>),
}

impl Integrity {
    pub const fn from_bytes(bytes: [u8; 64]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 64] {
        &self.0
    }

    /// The integrity of `data`.
    pub fn of(data: &[u8]) -> Self {
        Self(Sha512::digest(data).into())
    }

    /// Whether `data` has this integrity.
    pub fn matches(&self, data: &[u8]) -> bool {
        *self == Self::of(data)
    }

    /// The digest from its base64 text (what follows `sha512-`).
    pub fn from_base64(text: &str) -> Result<Self, IntegrityError> {
        let bytes = base64::decode(text).ok_or(IntegrityError::Base64)?;
        let len = bytes.len();
        bytes
            .try_into()
            .map(Self)
            .map_err(|_| IntegrityError::Length(len))
    }

    /// Reads a whole SRI string as a lockfile holds it: tokens
    /// `algo-base64[?options]` separated by whitespace, every token well
    /// formed, the first sha512 (algorithm name in any case) taken.
    pub fn from_sri(sri: &str) -> Result<Self, IntegrityError> {
        let mut others = Vec::new();
        for (algo, value) in sri_tokens(sri) {
            let Some(value) = value else {
                return Err(IntegrityError::NotSri(sri.to_string()));
            };
            if algo.eq_ignore_ascii_case("sha512") {
                return Self::from_base64(value);
            }
            others.push(algo.to_string());
        }
        Err(if others.is_empty() {
            IntegrityError::Empty
        } else {
            IntegrityError::NoSha512(others)
        })
    }

    /// Every well-formed `sha512-` entry of an SRI string, read leniently as
    /// a judge reads what a target sends: other algorithms and malformed
    /// tokens carry no sha512 and are passed over.
    pub fn entries(sri: &str) -> Vec<Self> {
        sri_tokens(sri)
            .filter(|(algo, _)| *algo == "sha512")
            .filter_map(|(_, value)| Self::from_base64(value?).ok())
            .collect()
    }

    /// Whether `data` matches one sha512 entry of the SRI string `sri`.
    pub fn any_matches(sri: &str, data: &[u8]) -> bool {
        Self::entries(sri).contains(&Self::of(data))
    }
}

/// The tokens of an SRI string as `(algo, value)`, options after `?`
/// dropped; `value` is `None` for a token with no `-`.
fn sri_tokens(sri: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    sri.split_ascii_whitespace().map(|token| {
        let token = token.split('?').next().unwrap_or_default();
        match token.split_once('-') {
            Some((algo, value)) => (algo, Some(value)),
            None => (token, None),
        }
    })
}

impl PartialEq<[u8; 64]> for Integrity {
    fn eq(&self, other: &[u8; 64]) -> bool {
        self.0 == *other
    }
}

/// Exactly one `sha512-<base64>` token, nothing around it.
impl FromStr for Integrity {
    type Err = IntegrityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let value = s
            .strip_prefix("sha512-")
            .ok_or_else(|| IntegrityError::NotSri(s.to_string()))?;
        Self::from_base64(value)
    }
}

impl fmt::Display for Integrity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha512-{}", base64::encode(&self.0))
    }
}

impl fmt::Debug for Integrity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Integrity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Integrity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // printf '' | openssl dgst -sha512 -binary | base64
    const EMPTY: &str = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";

    #[test]
    fn computes_displays_and_parses() {
        let i = Integrity::of(b"");
        assert_eq!(i.to_string(), EMPTY);
        assert_eq!(EMPTY.parse::<Integrity>(), Ok(i));
        assert!(i.matches(b""));
        assert!(!i.matches(b"x"));
        assert_eq!(serde_json::to_value(i).unwrap(), serde_json::json!(EMPTY));
        for bad in [
            "",
            "sha512-",
            "sha512-AAAA",
            "sha1-AAAA",
            "SHA512-x",
            &format!(" {EMPTY}"),
        ] {
            assert!(bad.parse::<Integrity>().is_err(), "{bad}");
        }
    }

    #[test]
    fn lockfile_reading_is_strict() {
        let i = Integrity::of(b"");
        assert_eq!(Integrity::from_sri(&format!("sha1-AAAA {EMPTY}?x")), Ok(i));
        assert_eq!(
            Integrity::from_sri(&EMPTY.replace("sha512", "SHA512")),
            Ok(i)
        );
        assert_eq!(Integrity::from_sri(" "), Err(IntegrityError::Empty));
        assert_eq!(
            Integrity::from_sri("sha1-AAAA sha256-BBBB"),
            Err(IntegrityError::NoSha512(vec![
                "sha1".into(),
                "sha256".into()
            ]))
        );
        assert_eq!(
            Integrity::from_sri("nodash"),
            Err(IntegrityError::NotSri("nodash".into()))
        );
        assert_eq!(
            Integrity::from_sri("sha512-!!"),
            Err(IntegrityError::Base64)
        );
        assert_eq!(
            Integrity::from_sri("sha512-AAAA"),
            Err(IntegrityError::Length(3))
        );
    }

    #[test]
    fn judging_is_lenient() {
        let sri = Integrity::of(b"bytes").to_string();
        assert!(Integrity::any_matches(
            &format!("junk sha1-AAAA {sri}"),
            b"bytes"
        ));
        assert!(!Integrity::any_matches(&sri, b"other"));
        for none in ["", "sha512-", "sha512-AAAA", "sha256-x sha384-y", "sha512"] {
            assert!(Integrity::entries(none).is_empty(), "{none}");
        }
    }
}
