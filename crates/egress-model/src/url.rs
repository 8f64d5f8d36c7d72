//! A small absolute-URL type for http and https, with RFC 3986 reference
//! resolution. The suite needs exactly this much: the target's origin, joining
//! the hrefs a page lists, and telling whether a `Location` leaves the origin.

use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Url {
    scheme: Scheme,
    /// Lowercased host; IPv6 literals keep their brackets.
    host: String,
    port: u16,
    /// Path and query exactly as written (never decoded), starting with `/`.
    path_and_query: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidUrl(pub String, pub &'static str);

impl fmt::Display for InvalidUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a usable URL: {}", self.0, self.1)
    }
}

impl std::error::Error for InvalidUrl {}

impl Url {
    pub fn parse(text: &str) -> Result<Self, InvalidUrl> {
        let err = |why| InvalidUrl(text.to_string(), why);
        if text.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(err("it contains spaces or control characters"));
        }
        let (scheme, rest) = match text.split_once("://") {
            Some((s, r)) if s.eq_ignore_ascii_case("http") => (Scheme::Http, r),
            Some((s, r)) if s.eq_ignore_ascii_case("https") => (Scheme::Https, r),
            _ => return Err(err("it must start with http:// or https://")),
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(split);
        if authority.contains('@') {
            return Err(err("credentials in the URL are not supported"));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| err("the host or port is invalid"))?;
        let port = port.unwrap_or(scheme.default_port());
        let tail = tail.split('#').next().unwrap_or_default();
        let path_and_query = if tail.is_empty() {
            "/".to_string()
        } else if tail.starts_with('?') {
            format!("/{tail}")
        } else {
            tail.to_string()
        };
        Ok(Self {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
            path_and_query,
        })
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }
    pub fn host(&self) -> &str {
        &self.host
    }
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn path_and_query(&self) -> &str {
        &self.path_and_query
    }
    pub fn path(&self) -> &str {
        self.path_and_query.split('?').next().unwrap_or("/")
    }

    /// `host:port` for connecting, IPv6 in brackets.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The value for a `Host` header: the port is omitted when it is the default.
    pub fn host_header(&self) -> String {
        if self.port == self.scheme.default_port() {
            self.host.clone()
        } else {
            self.authority()
        }
    }

    /// The host without IPv6 brackets, for name resolution and TLS SNI.
    pub fn host_unbracketed(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    pub fn same_origin(&self, other: &Url) -> bool {
        self.scheme == other.scheme && self.host == other.host && self.port == other.port
    }

    /// `scheme://host:port` with the port always shown.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.authority())
    }

    /// Same origin, other path and query (given raw, must start with `/`).
    pub fn with_path(&self, path_and_query: &str) -> Url {
        Url {
            path_and_query: path_and_query.to_string(),
            ..self.clone()
        }
    }

    /// Resolves a reference (an href or a `Location`) against this URL, per
    /// RFC 3986 section 5.2, dropping any fragment. Percent-encoding is kept as is.
    pub fn join(&self, reference: &str) -> Result<Url, InvalidUrl> {
        let reference = reference.split('#').next().unwrap_or_default();
        if reference.contains("://") && !reference.starts_with('/') && !reference.starts_with('?') {
            return Url::parse(reference);
        }
        if let Some(rest) = reference.strip_prefix("//") {
            return Url::parse(&format!("{}://{rest}", self.scheme.as_str()));
        }
        if reference.is_empty() {
            return Ok(self.clone());
        }
        if reference.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(InvalidUrl(
                reference.to_string(),
                "it contains spaces or control characters",
            ));
        }
        let (ref_path, ref_query) = match reference.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (reference, None),
        };
        let base_path = self.path();
        let merged = if ref_path.is_empty() {
            base_path.to_string()
        } else if ref_path.starts_with('/') {
            ref_path.to_string()
        } else {
            let dir = base_path.rsplit_once('/').map_or("", |(dir, _)| dir);
            let slash = if base_path.contains('/') { "/" } else { "" };
            format!("{dir}{slash}{ref_path}")
        };
        let mut out = remove_dot_segments(&merged);
        match (ref_query, ref_path.is_empty()) {
            (Some(q), _) => {
                out.push('?');
                out.push_str(q);
            }
            (None, true) => {
                if let Some((_, q)) = self.path_and_query.split_once('?') {
                    out.push('?');
                    out.push_str(q);
                }
            }
            (None, false) => {}
        }
        Ok(self.with_path(&out))
    }
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let (inside, rest) = authority.split_once(']')?;
        let host = authority.get(..=inside.len())?;
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p),
            None if rest.is_empty() => None,
            None => return None,
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let valid_host = !host.is_empty()
        && host.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
        });
    if !valid_host {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0)?),
        None => None,
    };
    Some((host, port))
}

/// RFC 3986 section 5.2.4, on the raw (still percent-encoded) path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme.as_str(),
            self.host_header(),
            self.path_and_query
        )
    }
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Url({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let u = Url::parse("HTTP://Mirror.Example:8080/simple/?x=1#frag").unwrap();
        assert_eq!(u.host(), "mirror.example");
        assert_eq!(u.port(), 8080);
        assert_eq!(u.path_and_query(), "/simple/?x=1");
        assert_eq!(u.to_string(), "http://mirror.example:8080/simple/?x=1");
        let v6 = Url::parse("http://[::1]:3141").unwrap();
        assert_eq!(v6.authority(), "[::1]:3141");
        assert_eq!(v6.host_unbracketed(), "::1");
        assert_eq!(v6.path(), "/");
        assert_eq!(Url::parse("https://h").unwrap().port(), 443);
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "ftp://x/",
            "http://",
            "http://h:99999/",
            "http://u:p@h/",
            "http://h h/",
            "mirror:8080",
            "http://h:0/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn joins_per_rfc3986() {
        let base = Url::parse("http://a:1/b/c/d;p?q").unwrap();
        let cases = [
            ("g", "http://a:1/b/c/g"),
            ("./g", "http://a:1/b/c/g"),
            ("g/", "http://a:1/b/c/g/"),
            ("/g", "http://a:1/g"),
            ("?y", "http://a:1/b/c/d;p?y"),
            ("g?y", "http://a:1/b/c/g?y"),
            ("#s", "http://a:1/b/c/d;p?q"),
            ("..", "http://a:1/b/"),
            ("../g", "http://a:1/b/g"),
            ("../../../g", "http://a:1/g"),
            ("//other:2/x", "http://other:2/x"),
            ("https://z/y", "https://z/y"),
            ("../../f.whl#sha256=ab", "http://a:1/f.whl"),
        ];
        for (r, want) in cases {
            assert_eq!(base.join(r).unwrap().to_string(), want, "{r}");
        }
    }

    #[test]
    fn origin_comparison() {
        let a = Url::parse("http://127.0.0.1:80/x").unwrap();
        assert!(a.same_origin(&Url::parse("http://127.0.0.1/y").unwrap()));
        assert!(!a.same_origin(&Url::parse("https://127.0.0.1/y").unwrap()));
        assert!(!a.same_origin(&Url::parse("http://127.0.0.2/y").unwrap()));
    }
}
