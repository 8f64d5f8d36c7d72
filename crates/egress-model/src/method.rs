//! HTTP request methods (RFC 9110 §9), as the suite sends them and as a
//! server receives them.

use std::fmt;
use std::str::FromStr;

/// A request method. The methods the suite and the references know are
/// variants; any other valid method token is [`Method::Other`], so that a
/// request from an unknown client still round-trips byte for byte. Methods
/// are case-sensitive (RFC 9110 §9.1): `get` is not `GET`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Patch,
    Options,
    Trace,
    Connect,
    /// WebDAV (RFC 4918).
    Propfind,
    Proppatch,
    Mkcol,
    Copy,
    Move,
    Lock,
    Unlock,
    /// Any other method token.
    Other(ExtensionMethod),
}

/// A method token that is none of [`Method`]'s named variants. Made only by
/// parsing, so it is always a valid RFC 9110 token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtensionMethod(String);

impl ExtensionMethod {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a string is not a method.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an HTTP method (a token: letters, digits and !#$%&'*+-.^_`|~)")]
pub struct InvalidMethod(pub String);

/// `tchar` of RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `token = 1*tchar` (RFC 9110 §5.6.2): methods and header field names.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

const NAMED: [Method; 16] = [
    Method::Get,
    Method::Head,
    Method::Post,
    Method::Put,
    Method::Delete,
    Method::Patch,
    Method::Options,
    Method::Trace,
    Method::Connect,
    Method::Propfind,
    Method::Proppatch,
    Method::Mkcol,
    Method::Copy,
    Method::Move,
    Method::Lock,
    Method::Unlock,
];

impl Method {
    /// Parses a method token (RFC 9110 §9.1: `method = token`).
    pub fn new(raw: &str) -> Result<Self, InvalidMethod> {
        if !is_token(raw.as_bytes()) {
            return Err(InvalidMethod(raw.to_string()));
        }
        Ok(NAMED
            .into_iter()
            .find(|m| m.as_str() == raw)
            .unwrap_or_else(|| Self::Other(ExtensionMethod(raw.to_string()))))
    }

    /// The method as written on the request line.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Patch => "PATCH",
            Self::Options => "OPTIONS",
            Self::Trace => "TRACE",
            Self::Connect => "CONNECT",
            Self::Propfind => "PROPFIND",
            Self::Proppatch => "PROPPATCH",
            Self::Mkcol => "MKCOL",
            Self::Copy => "COPY",
            Self::Move => "MOVE",
            Self::Lock => "LOCK",
            Self::Unlock => "UNLOCK",
            Self::Other(m) => m.as_str(),
        }
    }

    /// `GET` or `HEAD`: the methods a read-only mirror answers.
    pub fn is_read(&self) -> bool {
        matches!(self, Self::Get | Self::Head)
    }

    /// A method that asks the server to change state: `POST`, `PUT`,
    /// `DELETE`, `PATCH` and the WebDAV writes (`PROPPATCH`, `MKCOL`,
    /// `COPY`, `MOVE`, `LOCK`, `UNLOCK`). Reads, `OPTIONS`, `TRACE`,
    /// `CONNECT`, `PROPFIND` and extension methods are not.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Self::Post
                | Self::Put
                | Self::Delete
                | Self::Patch
                | Self::Proppatch
                | Self::Mkcol
                | Self::Copy
                | Self::Move
                | Self::Lock
                | Self::Unlock
        )
    }
}

impl FromStr for Method {
    type Err = InvalidMethod;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Method {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Method {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        Self::new(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_methods_round_trip() {
        for m in NAMED {
            assert_eq!(Method::new(m.as_str()).unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), m);
        }
    }

    #[test]
    fn other_tokens_round_trip_and_case_matters() {
        for raw in ["get", "BREW", "X-CUSTOM.1", "M-SEARCH"] {
            let m = Method::new(raw).unwrap();
            assert!(matches!(m, Method::Other(_)), "{raw}");
            assert_eq!(m.to_string(), raw);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), m);
        }
    }

    #[test]
    fn non_tokens_are_refused() {
        for raw in ["", "GE T", "GET\r", "GÉT", "(GET)", "GET/1", "\0"] {
            assert_eq!(Method::new(raw), Err(InvalidMethod(raw.to_string())));
        }
        assert!(serde_json::from_str::<Method>("\"G T\"").is_err());
    }
}
