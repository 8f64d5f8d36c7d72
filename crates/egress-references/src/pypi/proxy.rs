//! Fixture (B): a conventional pull-through caching proxy, modelled on what
//! labs deploy as the sandbox's package egress.
//!
//! **Test fixture, and the non-conformant reference.** Its violations are
//! the point: the suite must show that it tells this proxy apart from a
//! compliant mirror. It binds to 127.0.0.1 only, and every connection it makes
//! is checked first to go to a loopback address; anything else gets `502`.
//!
//! What it does, and which predicate each behaviour violates:
//! - simple pages are fetched from upstream on every request, query string
//!   passed through, file URLs rewritten to its own `/packages/...` (P2, P5);
//! - files come from its cache or upstream; a slow upstream fetch (over
//!   100 ms) is answered with a `302` to the upstream file URL (P2, P3);
//! - `<file>.metadata` of an sdist is computed by "building" it: the
//!   `urlopen("...")` calls of its `setup.py` are performed (P4);
//! - `/project/<name>/` and `/pypi/<name>/json` render package text through
//!   a template engine that evaluates integer arithmetic (P4, the B3 class);
//! - absolute-form targets and `CONNECT` are relayed (P3);
//! - every other method and path is forwarded upstream verbatim (P3, P6);
//! - legacy uploads are accepted without authentication (P6).

mod build;

use crate::loopback::is_loopback_url;
use crate::relay::{absolute, connect, limits, outbound, relay, text, SLOW_FETCH};
use crate::request_log::lock;
use crate::template::render_template;
use build::build_sdist_metadata;
use egress_artifacts::{read_sdist_pkg_info, read_wheel_metadata};
use egress_http::{Limits, Method, Reply, Request, Response, Server, ServerHandle};
use egress_model::{Exchange, ProjectName, Sha256Digest, Url, Version};
use egress_simple::{FileEntry, Format, ProjectPage};
use egress_transcript::Client;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy asks upstream for: JSON preferred, HTML accepted.
const UPSTREAM_ACCEPT: &str =
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";
/// The caching proxy; see the module docs. Stops on [`CachingProxy::stop`] or drop.
pub struct CachingProxy {
    server: ServerHandle,
}

impl CachingProxy {
    /// Starts a proxy in front of `upstream_index` (e.g. the canary's
    /// `/simple/` URL), which must be on a loopback address.
    pub fn start(upstream_index: Url) -> io::Result<Self> {
        if !is_loopback_url(&upstream_index) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the proxy fixture only fronts a loopback upstream",
            ));
        }
        let client = Client::new(
            upstream_index.clone(),
            limits(Duration::from_secs(15)),
            None,
        )
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let state = Arc::new(State {
            upstream: upstream_index,
            client,
            cache: Mutex::new(HashMap::new()),
            sources: Mutex::new(HashMap::new()),
            uploads: Mutex::new(Vec::new()),
        });
        let server = Server::bind(
            (Ipv4Addr::LOCALHOST, 0),
            move |req: Request| state.handle(req),
            Limits::default(),
        )?;
        Ok(CachingProxy { server })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// `http://127.0.0.1:PORT/simple/`.
    pub fn index_url(&self) -> String {
        format!("{}/simple/", self.server.base_url())
    }

    pub fn stop(self) {
        self.server.stop();
    }
}

struct Upload {
    project: ProjectName,
    version: String,
    filename: String,
    sha256: Sha256Digest,
    path: String,
}

struct State {
    upstream: Url,
    client: Client,
    /// File bytes by the proxy's path.
    cache: Mutex<HashMap<String, Arc<[u8]>>>,
    /// Upstream URL of each file path the proxy has listed.
    sources: Mutex<HashMap<String, Url>>,
    uploads: Mutex<Vec<Upload>>,
}

/// No empty, `.` or `..` segment, no percent-encoding, no backslash: a path
/// the proxy's own routes may interpret. Anything else goes upstream as is.
fn is_plain_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let last = segments.len() - 1;
    !path.contains(['%', '\\'])
        && segments
            .iter()
            .enumerate()
            .all(|(i, s)| *s != "." && *s != ".." && (!s.is_empty() || i == last))
}

impl State {
    fn handle(&self, req: Request) -> Reply {
        if req.method == Method::Connect {
            return connect(&req.target);
        }
        let lower = req.target.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return absolute(&req);
        }
        let path = req.path().to_string();
        let is_form = req
            .header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("multipart/form-data"));
        if req.method == Method::Post && (path == "/" || path == "/legacy/") && is_form {
            return self.upload(&req);
        }
        if req.method.is_read() && is_plain_path(&path) {
            let segments: Vec<&str> = path[1..].split('/').collect();
            match segments.as_slice() {
                ["simple", ""] => return self.index(&req),
                ["simple", name, ""] => return self.project(&req, name),
                ["packages", ..] => {
                    return match path.strip_suffix(".metadata") {
                        Some(file) => self.metadata(file),
                        None => self.file(&path),
                    }
                }
                ["project", name, ""] => return self.describe(name, false),
                ["pypi", name, "json"] => return self.describe(name, true),
                _ => {}
            }
        }
        self.forward(&req)
    }

    // ------------------------------------------------------------- pages

    /// GETs `rest` below the upstream index, query passed through verbatim.
    fn fetch_page(&self, rest: &str, query: Option<&str>) -> Result<(Url, Exchange), Reply> {
        let mut target = format!("{}{rest}", self.upstream.path());
        if let Some(q) = query {
            target.push('?');
            target.push_str(q);
        }
        let ex = self
            .client
            .get("proxy: simple page", &target, Some(UPSTREAM_ACCEPT));
        match ex.status() {
            Some(200) => Ok((self.upstream.with_path(&target), ex)),
            Some(404) => Err(text(404, "not found\n")),
            Some(_) => Err(relay(ex)),
            None => Err(text(502, "upstream did not answer\n")),
        }
    }

    fn index(&self, req: &Request) -> Reply {
        let (_, ex) = match self.fetch_page("", req.query()) {
            Ok(page) => page,
            Err(reply) => return reply,
        };
        let (is_json, body) = page_body(&ex);
        let parsed = if is_json {
            egress_simple::parse_index_json(body)
        } else {
            egress_simple::parse_index_html(body)
        };
        let Ok(mut index) = parsed else {
            return text(502, "upstream index unreadable\n");
        };
        for upload in lock(&self.uploads).iter() {
            let name = upload.project.to_string();
            if !index.projects.contains(&name) {
                index.projects.push(name);
            }
        }
        let serial = ex
            .response
            .as_ref()
            .and_then(|r| r.header("x-pypi-last-serial"));
        render(req, serial, |format| match format {
            Format::Json => egress_simple::render_index_json(&index),
            Format::Html => egress_simple::render_index_html(&index),
        })
    }

    /// The upstream page with file URLs rewritten to the proxy, plus uploads.
    fn project_page(
        &self,
        name: &str,
        query: Option<&str>,
    ) -> Result<(ProjectPage, Option<String>), Reply> {
        let project = ProjectName::new(name).ok();
        let uploads: Vec<FileEntry> = lock(&self.uploads)
            .iter()
            .filter(|u| Some(&u.project) == project.as_ref())
            .map(|u| FileEntry {
                filename: u.filename.clone(),
                url: u.path.clone(),
                hashes: BTreeMap::from([("sha256".to_string(), u.sha256.to_hex())]),
                ..FileEntry::default()
            })
            .collect();
        let (mut page, serial) = match self.fetch_page(&format!("{name}/"), query) {
            Ok((page_url, ex)) => {
                let (is_json, body) = page_body(&ex);
                let parsed = if is_json {
                    egress_simple::parse_project_json(body)
                } else {
                    egress_simple::parse_project_html(body)
                };
                let Ok(mut page) = parsed else {
                    return Err(text(502, "upstream page unreadable\n"));
                };
                let mut sources = lock(&self.sources);
                for file in &mut page.files {
                    let Ok(source) = page_url.join(&file.url) else {
                        continue;
                    };
                    let mut local = source.path_and_query().to_string();
                    if !local.starts_with("/packages/") {
                        local = format!("/packages/upstream{local}");
                    }
                    sources.insert(local.clone(), source);
                    file.url = local;
                }
                let serial = ex
                    .response
                    .as_ref()
                    .and_then(|r| r.header("x-pypi-last-serial"));
                (page, serial.map(str::to_string))
            }
            Err(_) if !uploads.is_empty() => (
                ProjectPage {
                    name: name.to_string(),
                    ..ProjectPage::default()
                },
                None,
            ),
            Err(reply) => return Err(reply),
        };
        for upload in lock(&self.uploads)
            .iter()
            .filter(|u| Some(&u.project) == project.as_ref())
        {
            if !page.versions.is_empty() && !page.versions.contains(&upload.version) {
                page.versions.push(upload.version.clone());
            }
        }
        page.files.extend(uploads);
        Ok((page, serial))
    }

    fn project(&self, req: &Request, name: &str) -> Reply {
        match self.project_page(name, req.query()) {
            Ok((page, serial)) => render(req, serial.as_deref(), |format| match format {
                Format::Json => egress_simple::render_project_json(&page),
                Format::Html => egress_simple::render_project_html(&page),
            }),
            Err(reply) => reply,
        }
    }

    // ------------------------------------------------------------- files

    fn source(&self, path: &str) -> Url {
        lock(&self.sources)
            .get(path)
            .cloned()
            .unwrap_or_else(|| self.upstream.with_path(path))
    }

    /// The file's bytes from the cache, or fetched (and cached) within `deadline`.
    fn file_bytes(&self, path: &str, deadline: Duration) -> Result<Arc<[u8]>, Reply> {
        if let Some(bytes) = lock(&self.cache).get(path) {
            return Ok(Arc::clone(bytes));
        }
        let source = self.source(path);
        if !is_loopback_url(&source) {
            return Err(text(502, "refusing to fetch from a non-loopback host\n"));
        }
        let client = Client::new(source.clone(), limits(deadline), None)
            .map_err(|e| text(502, &format!("{e}\n")))?;
        let ex = client.get("proxy: file", source.path_and_query(), None);
        let timed_out = ex.error.as_deref().is_some_and(|e| e.contains("timed out"))
            || ex
                .response
                .as_ref()
                .is_some_and(|r| r.body_end == egress_model::BodyEnd::Timeout);
        if timed_out {
            // "Redirects to upstream on a slow fetch."
            return Err(Response::new(302)
                .with_header("Location", source.to_string())
                .into());
        }
        match (
            ex.status(),
            ex.response.as_ref().and_then(|r| r.full_body()),
        ) {
            (Some(200), Some(body)) => {
                let bytes: Arc<[u8]> = body.into();
                lock(&self.cache).insert(path.to_string(), Arc::clone(&bytes));
                Ok(bytes)
            }
            (Some(404), _) => Err(text(404, "not found\n")),
            _ => Err(relay(ex)),
        }
    }

    fn file(&self, path: &str) -> Reply {
        match self.file_bytes(path, SLOW_FETCH) {
            Ok(bytes) => Response::new(200)
                .with_header("Content-Type", "application/octet-stream")
                .with_body(bytes)
                .into(),
            Err(reply) => reply,
        }
    }

    /// PEP 658 metadata, computed here: read from a wheel, "built" for an sdist.
    fn metadata(&self, file_path: &str) -> Reply {
        let bytes = match self.file_bytes(file_path, Duration::from_secs(15)) {
            Ok(bytes) => bytes,
            Err(reply) => return reply,
        };
        let metadata = if file_path.ends_with(".whl") {
            read_wheel_metadata(&bytes)
        } else if file_path.ends_with(".tar.gz") {
            build_sdist_metadata(&bytes)
        } else {
            return text(404, "not found\n");
        };
        match metadata {
            Ok(m) => Response::new(200)
                .with_header("Content-Type", "application/octet-stream")
                .with_body(m)
                .into(),
            Err(e) => text(502, &format!("cannot read metadata: {e}\n")),
        }
    }

    // ------------------------------------------------------------- description

    /// The latest version's Summary and Description, rendered through the
    /// template engine (the B3 injection class).
    fn describe(&self, name: &str, json: bool) -> Reply {
        let (page, _) = match self.project_page(name, None) {
            Ok(page) => page,
            Err(reply) => return reply,
        };
        let latest = page
            .files
            .iter()
            .filter_map(|f| {
                let parsed = egress_model::DistFilename::parse(&f.filename).ok()?;
                let is_wheel = parsed.kind == egress_model::DistKind::Wheel;
                Some(((parsed.version, is_wheel), f))
            })
            .max_by(|a, b| a.0.cmp(&b.0));
        let Some(((version, _), file)) = latest else {
            return text(404, "no files\n");
        };
        let bytes = match self.file_bytes(&file.url, Duration::from_secs(15)) {
            Ok(bytes) => bytes,
            Err(reply) => return reply,
        };
        let metadata = if file.filename.ends_with(".whl") {
            read_wheel_metadata(&bytes)
        } else {
            read_sdist_pkg_info(&bytes)
        };
        let Ok(metadata) = metadata else {
            return text(502, "cannot read metadata\n");
        };
        let (summary, description) = summary_and_description(&String::from_utf8_lossy(&metadata));
        let (summary, description) = (render_template(&summary), render_template(&description));
        if json {
            let body = serde_json::json!({
                "info": {
                    "name": page.name,
                    "version": version.to_string(),
                    "summary": summary,
                    "description": description,
                }
            });
            return Response::new(200)
                .with_header("Content-Type", "application/json")
                .with_body(body.to_string())
                .into();
        }
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let html = format!(
            "<!DOCTYPE html>\n<html><head><title>{0}</title></head><body>\n<h1>{0} {1}</h1>\n<p class=\"summary\">{2}</p>\n<pre class=\"description\">{3}</pre>\n</body></html>\n",
            esc(&page.name),
            esc(version.as_str()),
            esc(&summary),
            esc(&description)
        );
        Response::new(200)
            .with_header("Content-Type", "text/html; charset=utf-8")
            .with_body(html)
            .into()
    }

    // ------------------------------------------------------------- upload

    /// Legacy upload API, honoured without authentication.
    fn upload(&self, req: &Request) -> Reply {
        let content_type = req.header("content-type").unwrap_or_default();
        let Some(boundary) = content_type.split(';').find_map(|p| {
            let (k, v) = p.trim().split_once('=')?;
            k.eq_ignore_ascii_case("boundary")
                .then(|| v.trim_matches('"').to_string())
        }) else {
            return text(400, "no multipart boundary\n");
        };
        let parts = multipart(&req.body, &boundary);
        let field = |name: &str| {
            parts
                .iter()
                .find(|p| p.name == name)
                .map(|p| String::from_utf8_lossy(&p.data).trim().to_string())
        };
        if field(":action").as_deref() != Some("file_upload") {
            return text(400, "unsupported :action\n");
        }
        let (Some(project), Some(version), Some(content)) = (
            field("name").and_then(|n| ProjectName::new(&n).ok()),
            field("version").and_then(|v| Version::new(&v).ok()),
            parts.iter().find(|p| p.name == "content"),
        ) else {
            return text(400, "name, version and content are required\n");
        };
        let filename = content
            .filename
            .as_deref()
            .map(|f| f.rsplit(['/', '\\']).next().unwrap_or_default().to_string())
            .filter(|f| {
                !f.is_empty()
                    && !f.starts_with('.')
                    && f.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
            })
            .unwrap_or_else(|| format!("{}-{version}.tar.gz", project.wheel_component()));
        let sha256 = Sha256Digest::of(&content.data);
        let path = format!("/packages/local/{}/{filename}", sha256.to_hex());
        lock(&self.cache).insert(path.clone(), content.data.clone().into());
        lock(&self.uploads).push(Upload {
            project,
            version: version.to_string(),
            filename,
            sha256,
            path,
        });
        text(200, "OK\n")
    }

    // ------------------------------------------------------------- passthrough

    /// Method, raw target, headers and body, sent upstream as they came.
    fn forward(&self, req: &Request) -> Reply {
        relay(
            self.client
                .send("proxy: passthrough", &outbound(req, &req.target)),
        )
    }
}

fn page_body(ex: &Exchange) -> (bool, &[u8]) {
    let resp = ex.response.as_ref();
    let is_json = resp
        .and_then(|r| r.header("content-type"))
        .is_some_and(|c| c.to_ascii_lowercase().contains("json"));
    (
        is_json,
        resp.and_then(|r| r.full_body()).unwrap_or_default(),
    )
}

fn render(req: &Request, serial: Option<&str>, body: impl FnOnce(Format) -> String) -> Reply {
    let Some((format, content_type)) = egress_simple::negotiate(req.header("accept")) else {
        return text(406, "no acceptable representation\n");
    };
    let mut resp = Response::new(200).with_header("Content-Type", content_type);
    if let Some(serial) = serial {
        resp = resp.with_header("X-PyPI-Last-Serial", serial);
    }
    resp.with_body(body(format)).into()
}

// ------------------------------------------------------------------ helpers

struct Part {
    name: String,
    filename: Option<String>,
    data: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// A minimal multipart/form-data reader: enough for twine-style uploads.
fn multipart(body: &[u8], boundary: &str) -> Vec<Part> {
    let delim = format!("--{boundary}").into_bytes();
    let mut marks = Vec::new();
    let mut at = 0;
    while let Some(i) = find(body, &delim, at) {
        marks.push(i);
        at = i + delim.len();
    }
    let mut parts = Vec::new();
    for w in marks.windows(2) {
        let chunk = &body[w[0] + delim.len()..w[1]];
        let chunk = chunk.strip_prefix(b"\r\n").unwrap_or(chunk);
        let chunk = chunk.strip_suffix(b"\r\n").unwrap_or(chunk);
        let Some(split) = find(chunk, b"\r\n\r\n", 0) else {
            continue;
        };
        let head = String::from_utf8_lossy(&chunk[..split]);
        let mut part = Part {
            name: String::new(),
            filename: None,
            data: chunk[split + 4..].to_vec(),
        };
        for line in head.lines() {
            let Some((field, value)) = line.split_once(':') else {
                continue;
            };
            if !field.trim().eq_ignore_ascii_case("content-disposition") {
                continue;
            }
            for param in value.split(';') {
                match param.trim().split_once('=') {
                    Some(("name", v)) => part.name = v.trim_matches('"').to_string(),
                    Some(("filename", v)) => part.filename = Some(v.trim_matches('"').to_string()),
                    _ => {}
                }
            }
        }
        parts.push(part);
    }
    parts
}

/// Summary header and Description (header or body) of core metadata.
fn summary_and_description(metadata: &str) -> (String, String) {
    let (head, body) = metadata.split_once("\n\n").unwrap_or((metadata, ""));
    let field = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let description = if body.is_empty() {
        field("Description").unwrap_or_default()
    } else {
        body.to_string()
    };
    (field("Summary").unwrap_or_default(), description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths() {
        for p in [
            "/simple/",
            "/simple/x/",
            "/packages/a/b/c.whl",
            "/pypi/x/json",
        ] {
            assert!(is_plain_path(p), "{p}");
        }
        for p in [
            "/simple/../../x",
            "//host/x",
            "/simple/%2e%2e/",
            "/a//b",
            "/a/./b",
            "x",
        ] {
            assert!(!is_plain_path(p), "{p}");
        }
    }
}
