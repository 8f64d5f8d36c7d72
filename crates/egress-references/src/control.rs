//! The standalone canary's control API: the request log and the mutations
//! of a canary, over HTTP, behind a secret the operator holds.
//!
//! Every route is under [`CONTROL_PREFIX`] and needs exactly one
//! `Authorization: Bearer <secret>` header, the secret being 64 lowercase
//! hex digits (32 random bytes). It is compared in constant time (both
//! sides are hashed first, so neither its length nor its first wrong byte
//! shows in the time taken). A request without it, with a wrong one, with
//! two, or with the secret in another case or encoding is not a control
//! request at all: the canary answers it exactly as it answers any route it
//! does not serve, and logs it as it logs any request (it is contact with
//! the upstream, never a tripwire hit). An authorised control request is
//! not logged: it is the suite talking to its own upstream.
//!
//! A header rather than a secret in the path: paths are written to the
//! access logs of every proxy and mirror on the way, and to the canary's
//! own log, which the suite reports; an `Authorization` header is not.
//!
//! | method | route | answer |
//! |---|---|---|
//! | GET | `plan` | the canary's [`UpstreamPlan`] |
//! | GET | `mark` | `{"mark": N}` |
//! | GET | `requests?since=N` | `{"requests": [UpstreamRequest...]}` |
//! | POST | `publish` `{"project"}` | an [`Observation`], or `422 {"error": UpstreamError}` |
//! | POST | `replace` `{"filename"}` | the same |
//! | POST | `move-tag` `{"project", "tag", "version"}` | the same |
//! | POST | `yank` `{"project", "version"}` | the same |

use egress_http::{Method, Reply, Request, Response};
use egress_model::{Observation, ProjectName, Sha256Digest, Upstream, UpstreamError};
use serde_json::json;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};

/// What a standalone canary says when asked to change a package it does not
/// serve: how to make the snapshot hold packages it serves.
pub fn not_served_advice(origin: &str) -> String {
    format!(
        "put the conformance kit in the snapshot, built with `egress-conformance kit --canary {origin}`: this canary serves its packages too"
    )
}

/// Where the control routes live on a standalone canary. Neither protocol
/// serves anything there (no PyPI route and no npm name starts with `_`).
pub const CONTROL_PREFIX: &str = "/_egress-canary/";

/// Bytes of randomness in a secret.
pub const SECRET_BYTES: usize = 32;

/// A control secret: 64 lowercase hex digits.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// A secret file that does not hold one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a canary secret is 64 lowercase hex digits (32 bytes) on one line")]
pub struct InvalidSecret;

impl Secret {
    /// A fresh secret from the system's random source.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut b = [0u8; SECRET_BYTES];
        getrandom::getrandom(&mut b)?;
        Ok(Self(b.iter().map(|x| format!("{x:02x}")).collect()))
    }

    /// Parses a secret file's text: the secret, optionally followed by one
    /// newline.
    pub fn parse(text: &str) -> Result<Self, InvalidSecret> {
        let s = text
            .strip_suffix('\n')
            .map(|s| s.strip_suffix('\r').unwrap_or(s))
            .unwrap_or(text);
        let ok = s.len() == SECRET_BYTES * 2
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(s.to_string())).ok_or(InvalidSecret)
    }

    /// The text to write to a secret file.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `Authorization` header value that carries it.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether `req` carries exactly one `Authorization` header and it is
    /// this secret's, compared in constant time.
    fn authorises(&self, req: &Request) -> bool {
        let mut values = req.headers_named("authorization");
        let (Some(value), None) = (values.next(), values.next()) else {
            return false;
        };
        let want = Sha256Digest::of(self.header_value().as_bytes());
        let got = Sha256Digest::of(value.as_bytes());
        let diff = want
            .as_bytes()
            .iter()
            .zip(got.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// Why a secret file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Invalid(#[from] InvalidSecret),
    /// Group or others may read it.
    #[error("others may read it (mode {0:o}); chmod 600 it")]
    Readable(u32),
    #[error("cannot make a secret: {0}")]
    Random(getrandom::Error),
}

impl Secret {
    /// Reads the secret at `path`, which only its owner may read; or, when
    /// there is no file, makes one and writes it there with mode 0600.
    pub fn load_or_create(path: &std::path::Path) -> Result<Self, SecretFileError> {
        use std::io::Write;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(SecretFileError::Readable(mode));
                }
                Ok(Self::parse(&text)?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret = Self::generate().map_err(SecretFileError::Random)?;
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)?;
                f.write_all(format!("{}\n", secret.as_str()).as_bytes())?;
                f.sync_all()?;
                Ok(secret)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl fmt::Debug for Secret {
    /// Never prints the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Where and how a canary serves: the in-process canaries take the
/// default (127.0.0.1 on a free port, no control API); the standalone one
/// binds where it is told and answers its control API.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// The origin the canary names in its pages and the tripwire calls
    /// (`http://host:port`, no path); by default `http://` and the bound
    /// address (a loopback address when bound to an unspecified one).
    pub public_origin: Option<String>,
    /// The control API's secret; without one there is no control API.
    pub secret: Option<Secret>,
    /// Whether the canary also serves the conformance kit's packages
    /// (`crate::kit`), built with the tripwire aimed at its origin: the
    /// bytes `egress-conformance kit --canary ORIGIN` writes, so that a
    /// snapshot holding the kit and the canary hold the same packages and
    /// the mutations act on them. The standalone canary serves them; the
    /// in-process canaries do not.
    pub kit: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            public_origin: None,
            secret: None,
            kit: false,
        }
    }
}

impl ServeOptions {
    /// The origin to name, given the bound server.
    pub(crate) fn origin(&self, server: &egress_http::ServerHandle) -> String {
        self.public_origin
            .clone()
            .map(|o| o.trim_end_matches('/').to_string())
            .unwrap_or_else(|| server.base_url())
    }
}

/// The origin of a canary's second listener (a CDN, a download origin):
/// `origin`'s scheme and host with `other`'s port, so that a public origin
/// names both listeners on the same host.
pub(crate) fn sibling_origin(origin: &str, other: &egress_http::ServerHandle) -> String {
    egress_model::Url::parse(origin).map_or_else(
        |_| other.base_url(),
        |u| {
            format!(
                "{}://{}:{}",
                u.scheme().as_str(),
                u.host(),
                other.addr().port()
            )
        },
    )
}

fn json_reply(status: u16, doc: &serde_json::Value) -> Reply {
    Response::new(status)
        .with_header("Content-Type", "application/json")
        .with_header("Cache-Control", "no-store")
        .with_body(doc.to_string())
        .into()
}

fn mutation(result: Result<Observation, UpstreamError>) -> Reply {
    match result {
        Ok(obs) => json_reply(200, &json!(obs)),
        Err(e) => json_reply(422, &json!({ "error": e })),
    }
}

fn bad_request(what: &str) -> Reply {
    json_reply(
        400,
        &json!({ "error": UpstreamError::Failed { message: what.to_string() } }),
    )
}

/// The string field `name` of a JSON object body.
fn field(body: &serde_json::Value, name: &str) -> Option<String> {
    body.get(name)?.as_str().map(str::to_string)
}

/// The answer to `req` if it is an authorised control request, `None`
/// otherwise: then the canary handles (and logs) it as any other request.
pub(crate) fn intercept(
    secret: Option<&Secret>,
    req: &Request,
    up: &dyn Upstream,
) -> Option<Reply> {
    let secret = secret?;
    let route = req.path().strip_prefix(CONTROL_PREFIX)?;
    if !secret.authorises(req) {
        return None;
    }
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    Some(match (&req.method, route) {
        (Method::Get, "plan") => json_reply(200, &json!(up.plan())),
        (Method::Get, "mark") => json_reply(200, &json!({ "mark": up.mark() })),
        (Method::Get, "requests") => {
            let since = req
                .query()
                .and_then(|q| q.strip_prefix("since="))
                .and_then(|n| n.parse::<u64>().ok());
            match since {
                Some(n) => json_reply(200, &json!({ "requests": up.requests_since(n) })),
                None => bad_request("requests needs ?since=N"),
            }
        }
        (Method::Post, "publish") => {
            match field(&body, "project").and_then(|p| ProjectName::new(&p).ok()) {
                Some(p) => mutation(up.publish_new_version(&p)),
                None => bad_request("publish needs {\"project\": NAME}"),
            }
        }
        (Method::Post, "replace") => match field(&body, "filename") {
            Some(f) => mutation(up.replace_file_bytes(&f)),
            None => bad_request("replace needs {\"filename\": NAME}"),
        },
        (Method::Post, "move-tag") => {
            match (
                field(&body, "project"),
                field(&body, "tag"),
                field(&body, "version"),
            ) {
                (Some(p), Some(t), Some(v)) => mutation(up.move_tag(&p, &t, &v)),
                _ => bad_request("move-tag needs {\"project\", \"tag\", \"version\"}"),
            }
        }
        (Method::Post, "yank") => match (field(&body, "project"), field(&body, "version")) {
            (Some(p), Some(v)) => mutation(up.yank(&p, &v)),
            _ => bad_request("yank needs {\"project\", \"version\"}"),
        },
        _ => json_reply(
            404,
            &json!({ "error": UpstreamError::Unsupported { message: format!("no control route {} {route}", req.method) } }),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_parse_strictly() {
        let s = Secret::generate().unwrap();
        assert_eq!(s.as_str().len(), 64);
        assert_eq!(Secret::parse(s.as_str()).unwrap(), s);
        assert_eq!(Secret::parse(&format!("{}\n", s.as_str())).unwrap(), s);
        for bad in [
            String::new(),
            s.as_str().to_ascii_uppercase(),
            s.as_str()[..63].to_string(),
            format!("{}0", s.as_str()),
            format!(" {}", s.as_str()),
            format!("{}\n\n", s.as_str()),
        ] {
            if bad != s.as_str() {
                assert!(Secret::parse(&bad).is_err(), "{bad:?}");
            }
        }
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }
}
