//! Bytes as they went over the wire, and how listening to a connection
//! ended: the primitives every evidence record ([`crate::evidence`]) and
//! every HTTP/2 record ([`crate::h2`]) is made of.

use crate::base64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Bytes exactly as sent or received. Serialized as a JSON string when they are
/// valid UTF-8 and as `{"base64": "..."}` otherwise, so nothing is lost.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct WireBytes(pub Vec<u8>);

impl WireBytes {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl fmt::Debug for WireBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.lossy())
    }
}

impl From<Vec<u8>> for WireBytes {
    fn from(v: Vec<u8>) -> Self {
        Self(v)
    }
}

impl From<&[u8]> for WireBytes {
    fn from(v: &[u8]) -> Self {
        Self(v.to_vec())
    }
}

impl Serialize for WireBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("base64", &base64::encode(&self.0))?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for WireBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Binary { base64: String },
        }
        match Repr::deserialize(d)? {
            Repr::Text(t) => Ok(Self(t.into_bytes())),
            Repr::Binary { base64: b } => base64::decode(&b)
                .map(Self)
                .ok_or_else(|| serde::de::Error::custom("invalid base64 in wire bytes")),
        }
    }
}

/// How listening after the first response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListenEnd {
    /// The server closed the connection (end of stream).
    Closed,
    /// The connection was reset or aborted: closed too, abruptly.
    Reset,
    /// Nothing arrived for the quiet period: the connection stayed open.
    Quiet,
    /// The time bound passed first: the connection stayed open.
    Deadline,
    /// The byte cap was reached; listening stopped there.
    CapReached,
    /// Any other failure of the connection (a TLS error, say).
    Broken,
}

impl ListenEnd {
    /// Whether the server ended the connection (closed, reset or broke it).
    pub fn closed(self) -> bool {
        matches!(self, Self::Closed | Self::Reset | Self::Broken)
    }
}

/// `s` cut to `max` characters, with `…` when it was longer.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_round_trip_text_and_binary() {
        for bytes in [
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            vec![0xff, 0x00, 0xc0, 0xae],
        ] {
            let w = WireBytes(bytes.clone());
            let json = serde_json::to_string(&w).unwrap();
            let back: WireBytes = serde_json::from_str(&json).unwrap();
            assert_eq!(back.0, bytes);
        }
        let json = serde_json::to_string(&WireBytes(vec![0xff])).unwrap();
        assert_eq!(json, r#"{"base64":"/w=="}"#);
    }
}
