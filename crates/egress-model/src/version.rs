//! Package versions.
//!
//! The suite compares versions only for equality and for a stable display
//! order, so this type validates the PEP 440 character set and orders by the
//! numeric release segments, then by the text. It is not a full PEP 440
//! implementation and does not claim to be one.

use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version(String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidVersion(pub String);

impl fmt::Display for InvalidVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a valid version (PEP 440: digits, letters, '.', '!', '+', '-', '_', starting with a digit)",
            self.0
        )
    }
}

impl std::error::Error for InvalidVersion {}

impl Version {
    pub fn new(raw: &str) -> Result<Self, InvalidVersion> {
        let trimmed = raw.strip_prefix(['v', 'V']).unwrap_or(raw);
        let ok = trimmed.len() <= 64
            && trimmed.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && trimmed.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'!' | b'+' | b'-' | b'_')
            });
        if ok {
            Ok(Self(trimmed.to_ascii_lowercase()))
        } else {
            Err(InvalidVersion(raw.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The numeric release segments (`1.10.0rc1` gives `[1, 10, 0]`): each
    /// segment's leading digits, stopping at the first segment without any.
    fn release(&self) -> Vec<u64> {
        let body = self.0.split('!').next_back().unwrap_or(&self.0);
        body.split('.')
            .map_while(|seg| {
                let digits: String = seg.chars().take_while(|c| c.is_ascii_digit()).collect();
                digits.parse().ok()
            })
            .collect()
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.release(), other.release());
        let len = a.len().max(b.len());
        for i in 0..len {
            let (x, y) = (
                a.get(i).copied().unwrap_or(0),
                b.get(i).copied().unwrap_or(0),
            );
            match x.cmp(&y) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

crate::newtype::string_newtype!(Version, InvalidVersion);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_numerically() {
        let mut v: Vec<Version> = ["1.10.0", "1.2.0", "1.2", "0.9", "9.9.9"]
            .iter()
            .map(|s| Version::new(s).unwrap())
            .collect();
        v.sort();
        let s: Vec<&str> = v.iter().map(|v| v.as_str()).collect();
        assert_eq!(s, ["0.9", "1.2", "1.2.0", "1.10.0", "9.9.9"]);
    }

    #[test]
    fn rejects_bad() {
        for raw in ["", "abc", "1.0/../x", "1 0", "1.0%2f"] {
            assert!(Version::new(raw).is_err(), "{raw}");
        }
    }
}
