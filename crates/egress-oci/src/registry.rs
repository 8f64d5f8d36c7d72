//! One repository of one registry, spoken to over the OCI distribution
//! API with the suite's HTTP client ([`egress_transcript::Client`], as
//! `snapshot build` fetches): every request carries the current
//! authorization, and a `401` with a challenge is answered once (Basic from
//! the Docker config, or a bearer token from the challenge's realm) before
//! the request is sent again.

use crate::auth::{self, Challenge, Credential};
use crate::reference::Reference;
use crate::OciError;
use egress_model::{ResponseRecord, Sha256Digest, Url};
use egress_transcript::{BodySink, Client, Limits, Method, Request};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest manifest or token answer read.
pub const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

/// A registry's repository and how to reach it.
pub struct Registry {
    base: Url,
    repo: String,
    api: Client,
    blobs: Client,
    cacert: Option<PathBuf>,
    plain_http: bool,
    credential: Option<Credential>,
    /// The `Authorization` value sent with every request, once known.
    authorization: Option<String>,
}

/// How to reach a registry.
pub struct Connect<'a> {
    /// Speak http, not https.
    pub plain_http: bool,
    /// PEM certificates to trust for https (else the compiled-in roots).
    pub cacert: Option<&'a Path>,
    /// The Docker config to read the host's credential from.
    pub docker_config: Option<&'a Path>,
}

fn api_limits() -> Limits {
    Limits {
        deadline: Duration::from_secs(300),
        idle_timeout: Duration::from_secs(60),
        max_body_bytes: MAX_DOCUMENT as u64,
        record_bytes: MAX_DOCUMENT,
        ..Limits::default()
    }
}

/// `"{what}: HTTP {status} ({registry's error code})"`, or why there was no
/// answer.
fn describe(what: &str, resp: Option<&ResponseRecord>, error: Option<&str>) -> String {
    match resp.and_then(|r| r.status.map(|s| (r, s))) {
        Some((r, s)) => {
            let code = r
                .full_body()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
                .and_then(|v| {
                    let e = v.get("errors")?.get(0)?;
                    Some(format!(
                        " {}: {}",
                        e.get("code")?.as_str()?,
                        e.get("message").and_then(|m| m.as_str()).unwrap_or("")
                    ))
                })
                .unwrap_or_default();
            format!("{what}: HTTP {s}{code}")
        }
        None => format!("{what}: no answer ({})", error.unwrap_or("no response")),
    }
}

impl Registry {
    pub fn new(reference: &Reference, how: &Connect<'_>) -> Result<Self, OciError> {
        let scheme = if how.plain_http { "http" } else { "https" };
        let base = Url::parse(&format!("{scheme}://{}/", reference.host))
            .map_err(|e| OciError::Usage(format!("registry host {}: {e}", reference.host)))?;
        let client = |limits| {
            Client::new(base.clone(), limits, how.cacert)
                .map_err(|e| OciError::Input(e.to_string()))
        };
        let credential = match how.docker_config {
            Some(p) => auth::credential_for(p, &reference.host)
                .map_err(|e| OciError::Input(e.to_string()))?,
            None => None,
        };
        Ok(Self {
            api: client(api_limits())?,
            blobs: client(Limits::download())?,
            base,
            repo: reference.repo.clone(),
            cacert: how.cacert.map(Path::to_path_buf),
            plain_http: how.plain_http,
            credential,
            authorization: None,
        })
    }

    /// `scheme://host:port`.
    pub fn origin(&self) -> String {
        self.base.origin()
    }

    /// `/v2/<repo>/<rest>`.
    pub fn path(&self, rest: &str) -> String {
        format!("/v2/{}/{rest}", self.repo)
    }

    /// Sends `req` (with the current authorization), answering one
    /// challenge. `sink` receives the body of a download.
    fn exchange(
        &mut self,
        what: &str,
        req: &Request,
        mut sink: Option<&mut dyn BodySink>,
    ) -> Result<(ResponseRecord, Option<String>), OciError> {
        let mut answered = false;
        loop {
            let mut r = req.clone();
            if let Some(a) = &self.authorization {
                r = r.header("Authorization", a);
            }
            let ex = match sink.as_deref_mut() {
                Some(s) => self.blobs.download(what, &r, s),
                None => self.api.send(what, &r),
            };
            let Some(resp) = ex.response else {
                return Err(OciError::Registry(describe(
                    what,
                    None,
                    ex.error.as_deref(),
                )));
            };
            if resp.status == Some(401) && !answered {
                answered = true;
                let challenge = resp
                    .header("www-authenticate")
                    .and_then(auth::parse_challenge);
                self.authorization = Some(self.answer(what, challenge)?);
                continue;
            }
            return Ok((resp, ex.error));
        }
    }

    /// The `Authorization` value that answers `challenge`.
    fn answer(&self, what: &str, challenge: Option<Challenge>) -> Result<String, OciError> {
        match challenge {
            None => Err(OciError::Registry(format!(
                "{what}: HTTP 401 without a Basic or Bearer challenge"
            ))),
            Some(Challenge::Basic) => self
                .credential
                .as_ref()
                .map(Credential::basic_header)
                .ok_or_else(|| OciError::Registry(format!(
                    "{what}: HTTP 401: the registry asks for a login and the Docker config has none for {}",
                    self.base.host_header()
                ))),
            Some(Challenge::Bearer {
                realm,
                service,
                scope,
            }) => self.token(&realm, service.as_deref(), scope.as_deref()),
        }
    }

    /// A bearer token from the realm, asked with the Docker config's
    /// credential when there is one (anonymously otherwise).
    fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: Option<&str>,
    ) -> Result<String, OciError> {
        let url = auth::token_url(realm, service, scope).ok_or_else(|| {
            OciError::Registry(format!("the token realm {realm:?} is not an http(s) URL"))
        })?;
        if url.scheme() == egress_model::url::Scheme::Http && !self.plain_http {
            return Err(OciError::Registry(format!(
                "the token realm {} is http: credentials go over https only (or give --plain-http)",
                url.origin()
            )));
        }
        let client = Client::new(url.clone(), api_limits(), self.cacert.as_deref())
            .map_err(|e| OciError::Input(e.to_string()))?;
        let mut req = Request::get(url.path_and_query());
        if let Some(c) = &self.credential {
            req = req.header("Authorization", &c.basic_header());
        }
        let what = format!("token from {}{}", url.origin(), url.path());
        let ex = client.send(&what, &req);
        let resp = ex.response.as_ref();
        match resp.and_then(|r| r.status) {
            Some(200) => resp
                .and_then(ResponseRecord::full_body)
                .and_then(auth::token_from)
                .map(|t| format!("Bearer {t}"))
                .ok_or_else(|| OciError::Registry(format!("{what}: the answer holds no token"))),
            Some(401 | 403) => Err(OciError::Registry(format!(
                "{}{}",
                describe(&what, resp, None),
                if self.credential.is_some() {
                    ": the Docker config's credential was refused"
                } else {
                    ": no credential for this registry in the Docker config (docker login)"
                }
            ))),
            _ => Err(OciError::Registry(describe(
                &what,
                resp,
                ex.error.as_deref(),
            ))),
        }
    }

    /// Sends `req` and requires one of `ok`; the record otherwise names the
    /// registry's error.
    pub fn expect(
        &mut self,
        what: &str,
        req: &Request,
        ok: &[u16],
    ) -> Result<ResponseRecord, OciError> {
        let (resp, err) = self.exchange(what, req, None)?;
        if resp.status.is_some_and(|s| ok.contains(&s)) {
            Ok(resp)
        } else {
            Err(OciError::Registry(describe(
                what,
                Some(&resp),
                err.as_deref(),
            )))
        }
    }

    /// Whether the repository holds the blob (`HEAD`).
    pub fn has_blob(&mut self, digest: &Sha256Digest) -> Result<bool, OciError> {
        let what = format!("HEAD blob sha256:{}", digest.to_hex());
        let req = Request::new(
            Method::Head,
            &self.path(&format!("blobs/sha256:{}", digest.to_hex())),
        );
        let resp = self.expect(&what, &req, &[200, 404])?;
        Ok(resp.status == Some(200))
    }

    /// A `Location` the registry answered, resolved against the registry and
    /// required to stay on its origin (the upload carries its
    /// authorization).
    pub fn location(&self, what: &str, resp: &ResponseRecord) -> Result<String, OciError> {
        resp.header("location")
            .and_then(|l| self.base.join(l).ok())
            .filter(|u| u.same_origin(&self.base))
            .map(|u| u.path_and_query().to_string())
            .ok_or_else(|| {
                OciError::Registry(format!(
                    "{what}: no Location on the registry's origin in the answer"
                ))
            })
    }

    /// `GET` of a blob into `sink`, from `from` bytes on when that is not 0;
    /// a redirect (to a storage service) is followed, at most three times,
    /// without the registry's authorization.
    pub fn get_blob(
        &mut self,
        digest: &Sha256Digest,
        from: u64,
        sink: &mut dyn BodySink,
    ) -> Result<(ResponseRecord, Option<String>), OciError> {
        let what = format!("GET blob sha256:{}", digest.to_hex());
        let mut req = Request::get(&self.path(&format!("blobs/sha256:{}", digest.to_hex())));
        if from > 0 {
            req = req.header("Range", &format!("bytes={from}-"));
        }
        let (mut resp, mut err) = self.exchange(&what, &req, Some(sink))?;
        let mut at = self.base.clone();
        for _ in 0..3 {
            if !matches!(resp.status, Some(301 | 302 | 303 | 307 | 308)) {
                break;
            }
            let next = resp
                .header("location")
                .and_then(|l| at.join(l).ok())
                .ok_or_else(|| {
                    OciError::Registry(format!("{what}: a redirect without a Location"))
                })?;
            if next.scheme() == egress_model::url::Scheme::Http && !self.plain_http {
                return Err(OciError::Registry(format!(
                    "{what}: redirected to http ({}), refused without --plain-http",
                    next.origin()
                )));
            }
            let client = Client::new(next.clone(), Limits::download(), self.cacert.as_deref())
                .map_err(|e| OciError::Input(e.to_string()))?;
            let mut r = Request::get(next.path_and_query());
            if from > 0 {
                r = r.header("Range", &format!("bytes={from}-"));
            }
            let ex = client.download(&what, &r, sink);
            resp = ex
                .response
                .ok_or_else(|| OciError::Registry(describe(&what, None, ex.error.as_deref())))?;
            err = ex.error;
            at = next;
        }
        Ok((resp, err))
    }
}
