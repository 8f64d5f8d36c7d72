//! What the testbed does to a peer over HTTP before the suite runs: create
//! devpi's mirror index, and warm a cache with the lab's projects (PyPI),
//! packages (npm) or indexes and `.deb`s (apt).

use egress_model::url::InvalidUrl;
use egress_model::Url;
use egress_transcript::{Client, Method, Request};

/// Why a peer could not be set up or warmed; `answer` is the status line,
/// or why there was none.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("devpi login as root: {answer}")]
    DevpiLogin { answer: String },
    #[error("devpi: creating {user}/{index}: {answer}")]
    DevpiIndex {
        user: String,
        index: String,
        answer: String,
    },
    #[error("warming: {what} answered {answer}")]
    Answered { what: String, answer: String },
    #[error("warming: {what}: {cause}")]
    BadUrl { what: String, cause: InvalidUrl },
    #[error("warming: {what} is served from {origin}")]
    Offsite { what: String, origin: String },
    #[error("warming: {path} lists no versions")]
    NoVersions { path: String },
    #[error("warming: {what} has no dist.tarball and dist.integrity")]
    NoDist { what: String },
    #[error("warming: {path}: {len} bytes that are not the lab's {file}")]
    OtherBytes {
        path: String,
        len: usize,
        file: String,
    },
    #[error("warming: {url}: integrity {actual}, not the {expected} its packument lists")]
    Integrity {
        url: Url,
        actual: String,
        expected: String,
    },
}

fn body_json(ex: &egress_model::Exchange) -> Option<serde_json::Value> {
    let body = ex.response.as_ref()?.full_body()?;
    serde_json::from_slice(body).ok()
}

fn answer(ex: &egress_model::Exchange) -> String {
    match (&ex.response, &ex.error) {
        (Some(r), _) => r.status_line.clone(),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// Logs in as root (whose password `devpi-init` leaves empty) and creates
/// `user/index` as a mirror index whose upstream is the canary, as devpi's
/// docs do with `devpi index -c NAME type=mirror mirror_url=URL`, through
/// the same HTTP API the `devpi` client uses.
pub fn devpi_mirror(
    client: &Client,
    user: &str,
    index: &str,
    canary: &str,
) -> Result<(), SetupError> {
    let login = serde_json::json!({ "user": "root", "password": "" }).to_string();
    let ex = client.send(
        "devpi login",
        &Request::new(Method::Post, "/+login")
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(login.into_bytes()),
    );
    let token = body_json(&ex)
        .filter(|_| ex.status() == Some(200))
        .and_then(|v| v["result"]["password"].as_str().map(str::to_string))
        .ok_or_else(|| SetupError::DevpiLogin {
            answer: answer(&ex),
        })?;
    let auth = egress_model::base64::encode(format!("root:{token}").as_bytes());
    let spec = serde_json::json!({ "type": "mirror", "mirror_url": canary }).to_string();
    let ex = client.send(
        "devpi create mirror index",
        &Request::new(Method::Put, &format!("/{user}/{index}"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .header("X-Devpi-Auth", &auth)
            .body(spec.into_bytes()),
    );
    match ex.status() {
        Some(200 | 201) => Ok(()),
        _ => Err(SetupError::DevpiIndex {
            user: user.to_string(),
            index: index.to_string(),
            answer: answer(&ex),
        }),
    }
}

/// Fetches each project's page and every file it lists through the peer,
/// as a lab warms a cache before cutting it off from its upstream.
pub fn warm(client: &Client, index: &str, projects: &[String]) -> Result<(), SetupError> {
    let base = client.base().clone();
    for project in projects {
        let page_url = base.with_path(&format!("{index}{project}/"));
        let ex = client.get("warm page", page_url.path_and_query(), Some("text/html"));
        let page = ex
            .response
            .as_ref()
            .filter(|r| r.status == Some(200))
            .and_then(|r| r.full_body())
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .ok_or_else(|| SetupError::Answered {
                what: page_url.to_string(),
                answer: answer(&ex),
            })?;
        for f in &page.files {
            let url: Url = page_url.join(&f.url).map_err(|cause| SetupError::BadUrl {
                what: f.filename.clone(),
                cause,
            })?;
            if !url.same_origin(&base) {
                return Err(SetupError::Offsite {
                    what: f.filename.clone(),
                    origin: url.origin(),
                });
            }
            let ex = client.get("warm file", url.path_and_query(), None);
            if ex.status() != Some(200) {
                return Err(SetupError::Answered {
                    what: f.filename.clone(),
                    answer: answer(&ex),
                });
            }
        }
    }
    Ok(())
}

/// A package's path below an npm registry: `/<name>`, a scoped name's `/`
/// written `%2f`, as npm itself asks for it.
pub fn npm_packument_path(registry_path: &str, name: &str) -> String {
    format!("{registry_path}{}", name.replacen('/', "%2f", 1))
}

/// Fetches each package's packument and every version's tarball through
/// an npm peer, as npm does when it installs them; each tarball must come
/// from the peer itself with the bytes its `dist.integrity` names.
pub fn warm_npm(
    client: &Client,
    registry_path: &str,
    packages: &[String],
) -> Result<(), SetupError> {
    let base = client.base().clone();
    for name in packages {
        let path = npm_packument_path(registry_path, name);
        let ex = client.get("warm packument", &path, Some("application/json"));
        let doc = body_json(&ex)
            .filter(|_| ex.status() == Some(200))
            .ok_or_else(|| SetupError::Answered {
                what: path.clone(),
                answer: answer(&ex),
            })?;
        let versions = doc["versions"]
            .as_object()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| SetupError::NoVersions { path: path.clone() })?;
        for (version, meta) in versions {
            let what = format!("{name}@{version}");
            let (Some(tarball), Some(integrity)) = (
                meta["dist"]["tarball"].as_str(),
                meta["dist"]["integrity"].as_str(),
            ) else {
                return Err(SetupError::NoDist { what });
            };
            let url = base.join(tarball).map_err(|cause| SetupError::BadUrl {
                what: format!("{what}: {tarball}"),
                cause,
            })?;
            if !url.same_origin(&base) {
                return Err(SetupError::Offsite {
                    what,
                    origin: url.origin(),
                });
            }
            let ex = client.get("warm tarball", url.path_and_query(), None);
            let bytes = ex
                .response
                .as_ref()
                .filter(|r| r.status == Some(200))
                .and_then(|r| r.full_body())
                .ok_or_else(|| SetupError::Answered {
                    what: url.to_string(),
                    answer: answer(&ex),
                })?;
            let actual = egress_artifacts::sri_sha512(bytes);
            if actual != integrity {
                return Err(SetupError::Integrity {
                    url,
                    actual,
                    expected: integrity.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Fetches every path below the archive root `archive` (the dist's
/// `InRelease`, its indexes, the lab's `.deb`s' pool paths) through an apt
/// peer, as `apt-get update` and `apt-get install --download-only` do when a
/// lab warms its cache; each must answer 200, and a file whose name is one
/// of the lab's `packages` must come with exactly its bytes.
pub fn warm_apt(
    client: &Client,
    archive: &str,
    paths: &[String],
    packages: &[(String, Vec<u8>)],
) -> Result<(), SetupError> {
    for rel in paths {
        let path = format!("{archive}{rel}");
        let ex = client.get("warm", &path, None);
        let body = ex
            .response
            .as_ref()
            .filter(|r| r.status == Some(200))
            .and_then(|r| r.full_body())
            .ok_or_else(|| SetupError::Answered {
                what: path.clone(),
                answer: answer(&ex),
            })?;
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if let Some((file, bytes)) = packages.iter().find(|(f, _)| f == name) {
            if body != bytes.as_slice() {
                return Err(SetupError::OtherBytes {
                    path,
                    len: body.len(),
                    file: file.clone(),
                });
            }
        }
    }
    Ok(())
}
