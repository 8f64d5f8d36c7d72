//! The project's digest types: SHA-256 ([`Sha256Digest`]) and a git
//! blob id ([`GitBlobId`]), which the Hugging Face Hub names files by.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;

/// A SHA-256 digest. Displays and serializes as 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Digest of a byte slice.
    pub fn of(data: &[u8]) -> Self {
        Self(Sha256::digest(data).into())
    }

    /// Parses exactly 64 hex characters (either case).
    pub fn from_hex(text: &str) -> Result<Self, DigestParseError> {
        let mut out = [0u8; 32];
        parse_hex(text, &mut out)?;
        Ok(Self(out))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Fills `out` from exactly `2 * out.len()` hex characters (either case).
fn parse_hex(text: &str, out: &mut [u8]) -> Result<(), DigestParseError> {
    let raw = text.as_bytes();
    if raw.len() != out.len() * 2 {
        return Err(DigestParseError::Length(raw.len()));
    }
    for (byte, pair) in out.iter_mut().zip(raw.chunks_exact(2)) {
        let &[hi, lo] = pair else {
            return Err(DigestParseError::NotHex);
        };
        let hi = hex_val(hi).ok_or(DigestParseError::NotHex)?;
        let lo = hex_val(lo).ok_or(DigestParseError::NotHex)?;
        *byte = (hi << 4) | lo;
    }
    Ok(())
}

/// `bytes` as lowercase hex.
// A nibble (0..16) always indexes the 16-entry table.
#[allow(clippy::indexing_slicing)]
fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestParseError {
    Length(usize),
    NotHex,
}

impl fmt::Display for DigestParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length(n) => write!(f, "a sha256 digest is 64 hex characters, got {n}"),
            Self::NotHex => write!(f, "a sha256 digest may contain only hex characters"),
        }
    }
}

impl std::error::Error for DigestParseError {}

impl FromStr for Sha256Digest {
    type Err = DigestParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_hex(s)
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.to_hex())
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Sha256Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::from_hex(&s).map_err(serde::de::Error::custom)
    }
}

/// Incremental hasher producing a [`Sha256Digest`].
#[derive(Default, Clone)]
pub struct Sha256Hasher(Sha256);

impl Sha256Hasher {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }
    pub fn finish(self) -> Sha256Digest {
        Sha256Digest(self.0.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            Sha256Digest::of(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn parse_round_trip_and_errors() {
        let d = Sha256Digest::of(b"x");
        assert_eq!(Sha256Digest::from_hex(&d.to_hex().to_uppercase()), Ok(d));
        assert_eq!(
            Sha256Digest::from_hex("abc"),
            Err(DigestParseError::Length(3))
        );
        let bad = "g".repeat(64);
        assert_eq!(Sha256Digest::from_hex(&bad), Err(DigestParseError::NotHex));
    }

    #[test]
    fn hasher_matches_one_shot() {
        let mut h = Sha256Hasher::new();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.finish(), Sha256Digest::of(b"abc"));
    }
}

/// A git blob id: the SHA-1 of `blob {len}\0` and the bytes, as git and
/// the Hugging Face Hub name a (non-LFS) file. Displays as 40 lowercase
/// hex characters. SHA-1 here only names what git names; what binds bytes
/// to a signed snapshot is its SHA-256.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GitBlobId([u8; 20]);

impl GitBlobId {
    /// The id git gives a blob of `data`.
    pub fn of_blob(data: &[u8]) -> Self {
        use sha1::Digest as _;
        let mut h = sha1::Sha1::new();
        h.update(format!("blob {}\0", data.len()).as_bytes());
        h.update(data);
        Self(h.finalize().into())
    }

    /// Parses exactly 40 hex characters (either case).
    pub fn from_hex(text: &str) -> Result<Self, DigestParseError> {
        let mut out = [0u8; 20];
        parse_hex(text, &mut out)?;
        Ok(Self(out))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

impl fmt::Display for GitBlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for GitBlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GitBlobId({})", self.to_hex())
    }
}

#[cfg(test)]
mod git_tests {
    use super::*;

    #[test]
    fn blob_ids_as_git_computes_them() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            GitBlobId::of_blob(b"hello\n").to_hex(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        // The empty blob.
        assert_eq!(
            GitBlobId::of_blob(b"").to_hex(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        let id = GitBlobId::of_blob(b"x");
        assert_eq!(GitBlobId::from_hex(&id.to_hex()).unwrap(), id);
        assert!(GitBlobId::from_hex("zz").is_err());
    }
}
