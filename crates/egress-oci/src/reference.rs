//! A reference as docker and skopeo name it: `HOST[:PORT]/REPO:TAG` or
//! `HOST[:PORT]/REPO@sha256:HEX` (a tag before the digest is allowed and
//! ignored, as docker does). The host is required: nothing defaults to a
//! public registry.

use egress_model::Sha256Digest;
use std::fmt;

/// What a reference points at in its repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Tag(String),
    Digest(Sha256Digest),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tag(t) => f.write_str(t),
            Self::Digest(d) => write!(f, "sha256:{}", d.to_hex()),
        }
    }
}

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `host` or `host:port`, as written.
    pub host: String,
    /// The repository name, e.g. `lab/snapshots`.
    pub repo: String,
    pub target: Target,
}

/// Why a reference does not parse; the message says what the form is.
#[derive(Debug, thiserror::Error)]
#[error("reference {text:?}: {why} (give HOST[:PORT]/REPO:TAG or HOST[:PORT]/REPO@sha256:HEX)")]
pub struct ReferenceError {
    text: String,
    why: &'static str,
}

/// One path component of a repository name: lowercase alphanumerics
/// separated by `.`, `_`, `__` or runs of `-` (the distribution spec's
/// grammar).
fn component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: &u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if !b.first().is_some_and(alnum) || !b.last().is_some_and(alnum) {
        return false;
    }
    let mut run = String::new();
    for &x in b {
        if alnum(&x) {
            if !(run.is_empty()
                || run == "."
                || run == "_"
                || run == "__"
                || run.bytes().all(|r| r == b'-'))
            {
                return false;
            }
            run.clear();
        } else if matches!(x, b'.' | b'_' | b'-') {
            run.push(x as char);
        } else {
            return false;
        }
    }
    true
}

fn tag_ok(t: &str) -> bool {
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    t.len() <= 128
        && t.bytes().next().is_some_and(word)
        && t.bytes().all(|x| word(x) || x == b'.' || x == b'-')
}

fn host_ok(h: &str) -> bool {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, _)) if !n.ends_with(']') && n.contains(':') => (h, None),
        Some((n, p)) => (n, Some(p)),
        None => (h, None),
    };
    let name_ok = if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !name.is_empty()
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes().all(|x| x.is_ascii_alphanumeric() || x == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    };
    name_ok && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0))
}

impl Reference {
    pub fn parse(text: &str) -> Result<Self, ReferenceError> {
        let err = |why| ReferenceError {
            text: text.to_string(),
            why,
        };
        let (host, rest) = text
            .split_once('/')
            .ok_or_else(|| err("no registry host"))?;
        // docker's rule: the first component is a host when it has a dot or
        // a port, or is localhost.
        if !(host.contains('.') || host.contains(':') || host == "localhost") {
            return Err(err("the first component must be the registry host (with a dot or a port, or localhost)"));
        }
        if !host_ok(host) {
            return Err(err("the registry host or port is invalid"));
        }
        let (name_tag, digest) = match rest.split_once('@') {
            Some((n, d)) => {
                let hex = d
                    .strip_prefix("sha256:")
                    .ok_or_else(|| err("only sha256 digests are supported"))?;
                if hex.len() != 64 || hex.bytes().any(|b| b.is_ascii_uppercase()) {
                    return Err(err("the digest is not 64 lowercase hex digits"));
                }
                let d = Sha256Digest::from_hex(hex)
                    .map_err(|_| err("the digest is not 64 lowercase hex digits"))?;
                (n, Some(d))
            }
            None => (rest, None),
        };
        // A tag follows the last ':' after the last '/'.
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (repo, tag) = match name_tag.rfind(':') {
            Some(i) if i >= last_slash => {
                (name_tag.get(..i).unwrap_or_default(), name_tag.get(i + 1..))
            }
            _ => (name_tag, None),
        };
        if repo.is_empty() || repo.len() > 255 || !repo.split('/').all(component_ok) {
            return Err(err("the repository name must be lowercase components (a-z, 0-9, separated by . _ __ or -) joined by /"));
        }
        if let Some(t) = tag {
            if !tag_ok(t) {
                return Err(err(
                    "the tag must be 1 to 128 of A-Z a-z 0-9 _ . - and not start with . or -",
                ));
            }
        }
        let target = match (digest, tag) {
            (Some(d), _) => Target::Digest(d),
            (None, Some(t)) => Target::Tag(t.to_string()),
            (None, None) => Target::Tag("latest".to_string()),
        };
        Ok(Self {
            host: host.to_string(),
            repo: repo.to_string(),
            target,
        })
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::Tag(t) => write!(f, "{}/{}:{t}", self.host, self.repo),
            Target::Digest(d) => write!(f, "{}/{}@sha256:{}", self.host, self.repo, d.to_hex()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_forms_parse() {
        let r = Reference::parse("127.0.0.1:5000/lab/snaps:v1").unwrap();
        assert_eq!(
            (r.host.as_str(), r.repo.as_str()),
            ("127.0.0.1:5000", "lab/snaps")
        );
        assert_eq!(r.target, Target::Tag("v1".into()));
        let hex = "a".repeat(64);
        let r = Reference::parse(&format!("reg.example/a/b:t@sha256:{hex}")).unwrap();
        assert_eq!(
            r.target,
            Target::Digest(Sha256Digest::from_hex(&hex).unwrap())
        );
        assert_eq!(r.to_string(), format!("reg.example/a/b@sha256:{hex}"));
        let r = Reference::parse("localhost/x").unwrap();
        assert_eq!(r.target, Target::Tag("latest".into()));
        assert_eq!(
            Reference::parse("[::1]:5000/x_y.z__w--v:T_1.0-rc")
                .unwrap()
                .repo,
            "x_y.z__w--v"
        );
    }

    #[test]
    fn bad_forms_are_refused_with_the_form() {
        for bad in [
            "snaps:v1",
            "library/snaps:v1",
            "reg.example",
            "reg.example/Upper:v1",
            "reg.example/a//b:v1",
            "reg.example/a-:v1",
            "reg.example/a:.bad",
            "reg.example/a@sha256:abc",
            "reg.example/a@md5:abc",
            "reg.example:0/a",
            "reg.example:99999/a",
            "-reg.example/a",
            "reg.example/a:b/c",
        ] {
            let e = Reference::parse(bad).unwrap_err().to_string();
            assert!(e.contains("HOST[:PORT]/REPO:TAG"), "{bad}: {e}");
        }
    }
}
