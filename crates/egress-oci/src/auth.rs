//! Credentials and tokens: the standard Docker config's `auths` (base64
//! `user:pass`), a registry's `WWW-Authenticate` challenge, and the bearer
//! token flow (docker's token protocol: `GET realm?service=…&scope=…` with
//! the Basic credential, answered with `{"token": …}`). No secret is ever
//! put in a message: errors name files, hosts, URLs without credentials
//! and statuses only.

use egress_model::Url;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A `user:pass` credential, kept as the value of a Basic header.
#[derive(Clone)]
pub struct Credential(String);

impl Credential {
    /// `Basic <base64 user:pass>`.
    pub fn basic_header(&self) -> String {
        format!("Basic {}", self.0)
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

/// Why the Docker config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the Docker config: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: the Docker config is not JSON with an \"auths\" object: {why}", .path.display())]
    Json { path: PathBuf, why: String },
    #[error("{}: auths.{host}.auth is not base64 of user:password", .path.display())]
    Auth { path: PathBuf, host: String },
}

/// Where docker and skopeo read their config: `$DOCKER_CONFIG/config.json`,
/// else `$HOME/.docker/config.json`.
pub fn docker_config_path() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(d).join("config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/config.json"))
}

/// An `auths` key as docker writes them (`host:port`, `https://host/v1/`):
/// its host and port.
fn auths_host(key: &str) -> &str {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k)
}

/// The credential for `host` (`host` or `host:port`, as in the reference)
/// in the Docker config at `path`; `None` when the file is absent or names
/// no `auth` for that host (credential helpers are not run).
pub fn credential_for(path: &Path, host: &str) -> Result<Option<Credential>, ConfigError> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                cause,
            })
        }
    };
    let json = |why: String| ConfigError::Json {
        path: path.to_path_buf(),
        why,
    };
    let doc: serde_json::Value = serde_json::from_slice(&text).map_err(|e| json(e.to_string()))?;
    let Some(auths) = doc.get("auths") else {
        return Ok(None);
    };
    let auths = auths
        .as_object()
        .ok_or_else(|| json("\"auths\" is not an object".into()))?;
    let Some(entry) = auths
        .iter()
        .find(|(k, _)| auths_host(k).eq_ignore_ascii_case(host))
        .map(|(_, v)| v)
    else {
        return Ok(None);
    };
    let Some(auth) = entry.get("auth").and_then(|a| a.as_str()) else {
        return Ok(None);
    };
    let bad = || ConfigError::Auth {
        path: path.to_path_buf(),
        host: host.to_string(),
    };
    let decoded = egress_model::base64::decode(auth).ok_or_else(bad)?;
    let text = String::from_utf8(decoded).map_err(|_| bad())?;
    if !text.contains(':') {
        return Err(bad());
    }
    Ok(Some(Credential(egress_model::base64::encode(
        text.as_bytes(),
    ))))
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`:
/// comma-separated `key=value` pairs, values quoted strings (which may
/// hold commas, as `pull,push`) or tokens.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let mut params = BTreeMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut val = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => val.extend(chars.next()),
                    '"' => break,
                    c => val.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                val.push(c);
            }
        }
        params.insert(key.trim().to_ascii_lowercase(), val.trim().to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        Some(Challenge::Basic)
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Some(Challenge::Bearer {
            realm: params.remove("realm")?,
            service: params.remove("service"),
            scope: params.remove("scope"),
        })
    } else {
        None
    }
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved).
fn query_value(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The token request's URL: the realm with `service` and `scope` added.
pub fn token_url(realm: &str, service: Option<&str>, scope: Option<&str>) -> Option<Url> {
    let mut text = realm.to_string();
    let mut sep = if realm.contains('?') { '&' } else { '?' };
    for (k, v) in [("service", service), ("scope", scope)] {
        if let Some(v) = v {
            text.push(sep);
            text.push_str(k);
            text.push('=');
            text.push_str(&query_value(v));
            sep = '&';
        }
    }
    Url::parse(&text).ok()
}

/// The token in a token server's answer (`token`, or OAuth's
/// `access_token`).
pub fn token_from(body: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(body).ok()?;
    let t = doc
        .get("token")
        .or_else(|| doc.get("access_token"))?
        .as_str()?;
    // A header value: printable ASCII only.
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic())).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_commas_in_quotes() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:lab/snaps:pull,push""#,
        );
        assert_eq!(
            c,
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:lab/snaps:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="x""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Bearer service=x"), None);
        assert_eq!(parse_challenge("Digest realm=x"), None);
        let url = token_url(
            "https://auth.example/token",
            Some("registry.example"),
            Some("repository:lab/snaps:pull,push"),
        )
        .unwrap();
        assert_eq!(
            url.path_and_query(),
            "/token?service=registry.example&scope=repository%3Alab%2Fsnaps%3Apull%2Cpush"
        );
    }

    #[test]
    fn the_docker_config_gives_the_hosts_credential_and_hides_it() {
        let dir = std::env::temp_dir().join(format!("egress-oci-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        let auth = egress_model::base64::encode(b"lab:s3cret");
        std::fs::write(
            &path,
            format!(
                r#"{{"auths":{{"https://127.0.0.1:5000/v1/":{{"auth":"{auth}"}},"other:1":{{}}}}}}"#
            ),
        )
        .unwrap();
        let c = credential_for(&path, "127.0.0.1:5000").unwrap().unwrap();
        assert_eq!(c.basic_header(), format!("Basic {auth}"));
        assert_eq!(format!("{c:?}"), "Credential(..)");
        assert!(credential_for(&path, "other:1").unwrap().is_none());
        assert!(credential_for(&path, "127.0.0.1:5001").unwrap().is_none());
        assert!(credential_for(&dir.join("absent.json"), "x")
            .unwrap()
            .is_none());
        std::fs::write(&path, r#"{"auths":{"h:1":{"auth":"bm9jb2xvbg=="}}}"#).unwrap();
        let e = credential_for(&path, "h:1").unwrap_err().to_string();
        assert!(e.contains("auths.h:1.auth is not base64"), "{e}");
        assert!(token_from(br#"{"token":"abc.def"}"#).is_some());
        assert!(token_from(br#"{"token":"a b"}"#).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
