//! Version 4 key fingerprints and key IDs.

use std::fmt;

/// A version 4 key fingerprint: SHA-1 over the public key packet.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 20]);

impl Fingerprint {
    /// The 64-bit key ID: the low 8 bytes of the fingerprint.
    pub fn key_id(&self) -> [u8; 8] {
        let [.., a, b, c, d, e, f, g, h] = self.0;
        [a, b, c, d, e, f, g, h]
    }

    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }

    /// Parses 40 hexadecimal digits (either case, spaces allowed), as
    /// `gpg --fingerprint` prints them.
    pub fn from_hex(text: &str) -> Option<Self> {
        let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if digits.len() != 40 {
            return None;
        }
        let mut out = [0u8; 20];
        for (slot, pair) in out.iter_mut().zip(digits.chunks(2)) {
            let s = std::str::from_utf8(pair).ok()?;
            *slot = u8::from_str_radix(s, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}
