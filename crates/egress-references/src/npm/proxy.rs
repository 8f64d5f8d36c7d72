//! Fixture (B) for npm: a conventional pull-through caching npm registry,
//! modelled on what labs deploy as the sandbox's npm egress (Verdaccio,
//! Nexus or Artifactory in front of registry.npmjs.org).
//!
//! **Test fixture, and the non-conformant reference.** Its violations are
//! the point: the suite must show that it tells this proxy apart from a
//! compliant mirror. It binds to 127.0.0.1 only, and every connection it makes
//! is checked first to go to a loopback address; anything else gets `502`.
//!
//! What it does, and which predicate each behaviour violates:
//! - packuments (`GET /<name>`, scoped names as `/@scope%2fname` or
//!   `/@scope/name`, and `/<name>/<version-or-tag>`) are fetched from
//!   upstream on every request, `Accept` and query passed through, so a
//!   package that is in no snapshot is served (P2) and upstream changes
//!   show through at once (P5);
//! - in them `dist.tarball` is rewritten onto the proxy's own origin, built
//!   from the request's `X-Forwarded-Proto` / `X-Forwarded-Host` or `Host`
//!   header (P3: the client chooses where it is sent next); everything else
//!   is passed on as upstream gave it, versions with no `dist.integrity` or
//!   with one the bytes do not have included (P1);
//! - tarballs (`/<name>/-/<file>`) come from its cache or upstream, cached by
//!   name and version: once cached they stay, whatever upstream or the
//!   packument says later (P1), but a miss goes upstream (P2); an upstream
//!   fetch slower than [`SLOW_FETCH`] is answered with a `302` to the
//!   upstream tarball URL (P2, P3);
//! - on a tarball's first fetch the package is "scanned" the way
//!   install-testing proxies do: `package.json` is read from the tarball and
//!   the effect of its `preinstall`, `install` and `postinstall` scripts is
//!   run on the proxy, modelled as the HTTP GET of every `http://` URL they
//!   contain, to loopback only (P4);
//! - Verdaccio's web UI routes `/-/verdaccio/data/package/readme/<name>`
//!   and `/-/verdaccio/data/sidebar/<name>` render the upstream README and
//!   description through [`render_template`] (P4, the B3 class);
//! - absolute-form targets and `CONNECT` are relayed (P3); every other
//!   `/-/` route (`/-/all`, `/-/v1/search`, `/-/whoami`, the audit
//!   endpoints, `/-/npm/v1/keys`...), every other method and every path it
//!   does not know is forwarded upstream verbatim, `Authorization` included
//!   (P3);
//! - writes are honoured with any `Authorization` or none (P6):
//!   `PUT /<name>` publishes (the versions and base64 `_attachments` of
//!   npm's publish document; served from then on, merged into the upstream
//!   packument, over an upstream or earlier version of the same number if
//!   there is one, integrity as the publisher wrote it);
//!   `PUT /<name>/-rev/<rev>` (npm's "change the document", used by
//!   `npm unpublish <name>@<version>`) hides every version the new document
//!   leaves out; `DELETE /<name>/-rev/<rev>` unpublishes the package, local
//!   versions and upstream ones; `DELETE /<name>/-/<file>/-rev/<rev>` one
//!   version; `PUT` and `DELETE /-/package/<name>/dist-tags/<tag>` move tags;
//!   `PUT /-/user/org.couchdb.user:<name>` creates a user (`201` with a
//!   token); `POST /-/v1/login` starts a web login whose `doneUrl` hands out
//!   a token at once, without anyone logging in; `GET` and `POST
//!   /-/npm/v1/tokens` list and create tokens.

mod scan;

mod write;

use crate::loopback::is_loopback_url;
use crate::relay::{absolute, connect, json, limits, outbound, relay, text, timed_out, SLOW_FETCH};
use crate::request_log::lock;
use crate::template::render_template;
use egress_artifacts::{is_valid_npm_name, npm_tarball_filename};
use egress_http::{Limits, Method, Reply, Request, Response, Server, ServerHandle};
use egress_model::{Exchange, Url};
use egress_transcript::Client;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The media type of abbreviated packuments.
const ABBREVIATED: &str = "application/vnd.npm.install-v1+json";

/// The caching npm proxy; see the module docs. Stops on
/// [`NpmCachingProxy::stop`] or drop.
pub struct NpmCachingProxy {
    server: ServerHandle,
    state: Arc<State>,
}

impl NpmCachingProxy {
    /// Starts a proxy in front of `upstream_registry` (e.g. the npm canary's
    /// registry URL), which must be on a loopback address.
    pub fn start(upstream_registry: Url) -> io::Result<Self> {
        if !is_loopback_url(&upstream_registry) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the npm proxy fixture only fronts a loopback upstream",
            ));
        }
        let client = Client::new(
            upstream_registry.clone(),
            limits(Duration::from_secs(15)),
            None,
        )
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let mut prefix = upstream_registry.path().to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        let state = Arc::new(State {
            upstream: upstream_registry,
            prefix,
            client,
            origin: OnceLock::new(),
            cache: Mutex::new(HashMap::new()),
            sources: Mutex::new(HashMap::new()),
            local: Mutex::new(BTreeMap::new()),
            tokens: Mutex::new(Vec::new()),
            scanned: Mutex::new(Vec::new()),
        });
        let handler = Arc::clone(&state);
        let server = Server::bind(
            (Ipv4Addr::LOCALHOST, 0),
            move |req: Request| handler.handle(req),
            Limits {
                max_body_bytes: 64 * 1024 * 1024,
                ..Limits::default()
            },
        )?;
        let _ = state.origin.set(server.base_url());
        Ok(NpmCachingProxy { server, state })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// `http://127.0.0.1:PORT/`, what npm takes as `--registry`.
    pub fn registry_url(&self) -> String {
        format!("{}/", self.server.base_url())
    }

    /// The URLs the package scan has requested so far, in order.
    pub fn scanned_urls(&self) -> Vec<String> {
        lock(&self.state.scanned).clone()
    }

    pub fn stop(self) {
        self.server.stop();
    }
}

/// What has been written to the proxy for one package name.
#[derive(Default)]
struct Local {
    /// Published manifests, in publish order.
    versions: Vec<(String, Value)>,
    /// Published tarballs by file name (`<bare name>-<version>.tgz`).
    tarballs: HashMap<String, Arc<[u8]>>,
    /// Tags set (`Some`) or removed (`None`) here.
    tags: BTreeMap<String, Option<String>>,
    /// Upstream versions unpublished here.
    hidden: BTreeSet<String>,
    /// The whole package was unpublished: no upstream version shows.
    hide_all: bool,
    description: Option<String>,
    readme: Option<String>,
    /// Counts writes, for `_rev`.
    rev: u64,
}

impl Local {
    fn version(&self, version: &str) -> Option<&Value> {
        self.versions
            .iter()
            .find(|(v, _)| v == version)
            .map(|(_, m)| m)
    }

    fn hides(&self, version: &str) -> bool {
        self.version(version).is_none() && (self.hide_all || self.hidden.contains(version))
    }
}

struct Token {
    token: String,
    key: String,
    readonly: bool,
}

struct State {
    upstream: Url,
    /// The upstream registry's path, ending in `/`.
    prefix: String,
    client: Client,
    /// `http://127.0.0.1:PORT`, set right after binding.
    origin: OnceLock<String>,
    /// Tarball bytes by `<name>@<version>` (or `<name>/-/<file>` when the
    /// file name does not give the version).
    cache: Mutex<HashMap<String, Arc<[u8]>>>,
    /// Upstream URL of each `(name, file)` the proxy has listed.
    sources: Mutex<HashMap<(String, String), Url>>,
    local: Mutex<BTreeMap<String, Local>>,
    tokens: Mutex<Vec<Token>>,
    scanned: Mutex<Vec<String>>,
}

/// A package path: the name, as spelt in the request, and what follows.
#[derive(Debug, PartialEq, Eq)]
struct PackagePath<'a> {
    name: String,
    raw: &'a str,
    route: Route<'a>,
}

#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// `/<name>` (or `/<name>/`).
    Packument,
    /// `/<name>/<version-or-tag>`.
    Version(&'a str),
    /// `/<name>/-/<file>`.
    Tarball(&'a str),
    /// `/<name>/-rev/<rev>`.
    DocRev,
    /// `/<name>/-/<file>/-rev/<rev>`.
    TarballRev(&'a str),
}

/// Splits `name[/rest]` (no leading `/`) where the name is `name`,
/// `@scope%2fname` (either case) or `@scope/name`: the decoded name, its raw
/// spelling and the rest (empty or starting with `/`).
fn split_name(p: &str) -> Option<(String, &str, &str)> {
    let (name, raw_len) = match p.strip_prefix('@') {
        Some(scoped) => {
            let sep = scoped.find(['/', '%'])?;
            let after = &scoped[sep..];
            let skip = if after.starts_with('/') {
                1
            } else if after
                .get(..3)
                .is_some_and(|s| s.eq_ignore_ascii_case("%2f"))
            {
                3
            } else {
                return None;
            };
            let bare = &after[skip..];
            let end = bare.find('/').unwrap_or(bare.len());
            (
                format!("@{}/{}", &scoped[..sep], &bare[..end]),
                1 + sep + skip + end,
            )
        }
        None => {
            let end = p.find('/').unwrap_or(p.len());
            (p[..end].to_string(), end)
        }
    };
    is_valid_npm_name(&name).then(|| (name, &p[..raw_len], &p[raw_len..]))
}

/// Parses a raw request path into a package route; `None` for anything the
/// proxy does not interpret (it then goes upstream verbatim).
fn package_path(path: &str) -> Option<PackagePath<'_>> {
    let (name, raw, rest) = split_name(path.strip_prefix('/')?)?;
    let segments: Vec<&str> = match rest {
        "" | "/" => Vec::new(),
        _ => rest.strip_prefix('/')?.split('/').collect(),
    };
    let plain = |s: &&str| !s.is_empty() && *s != "." && *s != ".." && !s.contains(['%', '\\']);
    if !segments.iter().all(plain) {
        return None;
    }
    let route = match segments.as_slice() {
        [] => Route::Packument,
        ["-rev", _] => Route::DocRev,
        ["-", file] => Route::Tarball(file),
        ["-", file, "-rev", _] => Route::TarballRev(file),
        [spec] if !spec.starts_with('-') => Route::Version(spec),
        _ => return None,
    };
    Some(PackagePath { name, raw, route })
}

/// The version a tarball file name gives: `<bare name>-<version>.tgz`.
fn file_version<'a>(name: &str, file: &'a str) -> Option<&'a str> {
    let bare = name.rsplit_once('/').map_or(name, |(_, n)| n);
    file.strip_prefix(bare)?
        .strip_prefix('-')?
        .strip_suffix(".tgz")
        .filter(|v| !v.is_empty())
}

fn not_found() -> Reply {
    json(404, &serde_json::json!({"error": "Not found"}))
}

/// The first of a comma-separated list of header values, trimmed.
fn first_value(v: &str) -> &str {
    v.split(',').next().unwrap_or_default().trim()
}

/// The versions of a packument's `versions` object.
fn version_keys(doc: &Value) -> Vec<String> {
    doc["versions"]
        .as_object()
        .map(|v| v.keys().cloned().collect())
        .unwrap_or_default()
}

/// What the abbreviated packument keeps of a version's manifest.
fn abbreviate(manifest: &Value) -> Value {
    const KEEP: [&str; 12] = [
        "name",
        "version",
        "dependencies",
        "optionalDependencies",
        "peerDependencies",
        "peerDependenciesMeta",
        "bundleDependencies",
        "bin",
        "directories",
        "engines",
        "dist",
        "deprecated",
    ];
    let mut out = serde_json::Map::new();
    for key in KEEP {
        if let Some(v) = manifest.get(key) {
            out.insert(key.to_string(), v.clone());
        }
    }
    let scripted = ["preinstall", "install", "postinstall"]
        .iter()
        .any(|s| manifest["scripts"].get(s).is_some());
    if scripted || manifest.get("hasInstallScript") == Some(&Value::Bool(true)) {
        out.insert("hasInstallScript".into(), true.into());
    }
    Value::Object(out)
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
        let path = req.path();
        if let Some(rest) = path.strip_prefix("/-/") {
            return self.dash(&req, rest);
        }
        let Some(p) = package_path(path) else {
            return self.forward(&req);
        };
        let read = req.method.is_read();
        match (p.route, &req.method) {
            (Route::Packument, _) if read => self.packument(&req, &p.name, p.raw),
            (Route::Version(spec), _) if read => self.version(&req, &p.name, p.raw, spec),
            (Route::Tarball(file), _) if read => self.tarball(&p.name, file),
            (Route::Packument, Method::Put) => self.publish(&p.name, &req.body),
            (Route::DocRev, Method::Put) => self.change_document(&p.name, p.raw, &req.body),
            (Route::DocRev, Method::Delete) => self.unpublish(&p.name),
            (Route::TarballRev(file), Method::Delete) => self.unpublish_file(&p.name, file),
            _ => self.forward(&req),
        }
    }

    /// Routes below `/-/`: the proxy's own, or upstream verbatim.
    fn dash(&self, req: &Request, rest: &str) -> Reply {
        let method = &req.method;
        if let Some(tail) = rest.strip_prefix("package/") {
            if let Some((name, _, after)) = split_name(tail) {
                if let Some(tag) = after.strip_prefix("/dist-tags/") {
                    let tag_ok = !tag.is_empty() && !tag.contains(['/', '%']);
                    match method {
                        Method::Put if tag_ok => return self.set_tag(&name, tag, &req.body),
                        Method::Delete if tag_ok => return self.remove_tag(&name, tag),
                        _ => {}
                    }
                }
            }
        }
        if let Some(user) = rest.strip_prefix("user/org.couchdb.user:") {
            if *method == Method::Put && !user.is_empty() {
                return self.add_user(user);
            }
        }
        match (method, rest) {
            (Method::Post, "v1/login") => return self.web_login(req),
            (Method::Get, done) if done.starts_with("v1/done/") => return self.login_done(),
            (Method::Get, cli) if cli.starts_with("v1/login/cli/") => {
                return text(200, "You are logged in.\n")
            }
            (Method::Get, "npm/v1/tokens") => return self.list_tokens(),
            (Method::Post, "npm/v1/tokens") => return self.create_token(&req.body),
            _ => {}
        }
        if method.is_read() {
            if let Some(name) = rest.strip_prefix("verdaccio/data/package/readme/") {
                return self.web_readme(req, name);
            }
            if let Some(name) = rest.strip_prefix("verdaccio/data/sidebar/") {
                return self.web_sidebar(req, name);
            }
        }
        self.forward(req)
    }

    /// The origin the client says it reached: `X-Forwarded-Proto` and
    /// `X-Forwarded-Host`, else `Host`, reflected as given.
    fn client_origin(&self, req: &Request) -> String {
        let proto = req
            .header("x-forwarded-proto")
            .map(first_value)
            .filter(|p| !p.is_empty())
            .unwrap_or("http");
        let host = req
            .header("x-forwarded-host")
            .map(first_value)
            .filter(|h| !h.is_empty())
            .or_else(|| req.header("host").filter(|h| !h.is_empty()));
        match host {
            Some(host) => format!("{proto}://{host}"),
            None => self.origin.get().cloned().unwrap_or_default(),
        }
    }

    fn has_local_versions(&self, name: &str) -> bool {
        lock(&self.local)
            .get(name)
            .is_some_and(|l| !l.versions.is_empty())
    }

    // ------------------------------------------------------------- packuments

    /// Points `manifest.dist.tarball` at the proxy, recording where upstream
    /// keeps the file.
    fn rewrite_dist(&self, name: &str, doc_url: &Url, manifest: &mut Value, origin: &str) {
        let Some(tarball) = manifest["dist"]["tarball"].as_str() else {
            return;
        };
        let Ok(source) = doc_url.join(tarball) else {
            return;
        };
        let file = source.path().rsplit('/').next().unwrap_or_default();
        let file = if file.is_empty() {
            let version = manifest["version"].as_str().unwrap_or_default();
            npm_tarball_filename(name, version)
        } else {
            file.to_string()
        };
        manifest["dist"]["tarball"] = format!("{origin}/{name}/-/{file}").into();
        lock(&self.sources).insert((name.to_string(), file), source);
    }

    /// A published manifest as served: tarball on the proxy, abbreviated if asked.
    fn local_manifest(name: &str, manifest: &Value, abbreviated: bool, origin: &str) -> Value {
        let mut m = manifest.clone();
        let version = m["version"].as_str().unwrap_or_default().to_string();
        if !m["dist"].is_object() {
            m["dist"] = serde_json::json!({});
        }
        m["dist"]["tarball"] =
            format!("{origin}/{name}/-/{}", npm_tarball_filename(name, &version)).into();
        if abbreviated {
            abbreviate(&m)
        } else {
            m
        }
    }

    /// Merges what was written here into a packument; `false` if nothing of
    /// the package is left to show.
    fn merge_local(&self, name: &str, doc: &mut Value, abbreviated: bool, origin: &str) -> bool {
        let locals = lock(&self.local);
        if !abbreviated && doc.get("_rev").is_none() {
            // npm's unpublish and dist-tag commands write back to this revision.
            let rev = locals.get(name).map_or(0, |l| l.rev);
            doc["_rev"] = format!("{}-{:032x}", rev + 1, rev + 1).into();
        }
        let Some(local) = locals.get(name) else {
            return true;
        };
        if !doc["versions"].is_object() {
            doc["versions"] = serde_json::json!({});
        }
        if let Some(versions) = doc["versions"].as_object_mut() {
            versions.retain(|v, _| !local.hides(v));
            for (v, m) in &local.versions {
                versions.insert(
                    v.clone(),
                    Self::local_manifest(name, m, abbreviated, origin),
                );
            }
        }
        let versions = version_keys(doc);
        if !doc["dist-tags"].is_object() {
            doc["dist-tags"] = serde_json::json!({});
        }
        if let Some(tags) = doc["dist-tags"].as_object_mut() {
            for (tag, target) in &local.tags {
                match target {
                    Some(v) => tags.insert(tag.clone(), v.clone().into()),
                    None => tags.remove(tag),
                };
            }
            tags.retain(|_, v| v.as_str().is_some_and(|v| versions.iter().any(|k| k == v)));
            if !tags.contains_key("latest") {
                if let Some((v, _)) = local.versions.last() {
                    tags.insert("latest".into(), v.clone().into());
                }
            }
        }
        if !abbreviated {
            if let Some(d) = &local.description {
                doc["description"] = d.clone().into();
            }
            if let Some(r) = &local.readme {
                doc["readme"] = r.clone().into();
            }
        }
        !(local.hide_all && local.versions.is_empty())
    }

    /// The upstream packument with tarballs on the proxy and local writes
    /// merged in, and its content type.
    fn merged_packument(
        &self,
        req: &Request,
        name: &str,
        raw: &str,
        accept: Option<&str>,
    ) -> Result<(Value, String), Reply> {
        let mut target = format!("{}{raw}", self.prefix);
        if let Some(q) = req.query() {
            target.push('?');
            target.push_str(q);
        }
        let origin = self.client_origin(req);
        let ex = self.client.get("npm proxy: packument", &target, accept);
        let (mut doc, content_type) = match ex.status() {
            Some(200) => {
                let resp = ex.response.as_ref();
                let content_type = resp
                    .and_then(|r| r.header("content-type"))
                    .unwrap_or("application/json")
                    .to_string();
                match resp
                    .and_then(|r| r.full_body())
                    .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                {
                    Some(doc) if doc.is_object() => (doc, content_type),
                    // Not a packument: passed on as it came.
                    _ => return Err(relay(ex)),
                }
            }
            Some(404) if self.has_local_versions(name) => {
                let abbreviated = accept.is_some_and(|a| a.contains(ABBREVIATED));
                let doc = if abbreviated {
                    serde_json::json!({"name": name, "dist-tags": {}, "versions": {}})
                } else {
                    serde_json::json!({"_id": name, "name": name, "dist-tags": {}, "versions": {}})
                };
                let content_type = if abbreviated {
                    ABBREVIATED
                } else {
                    "application/json"
                };
                (doc, content_type.to_string())
            }
            Some(_) => return Err(relay(ex)),
            None => return Err(upstream_failed(&ex)),
        };
        let abbreviated = content_type.contains(ABBREVIATED);
        let doc_url = self.upstream.with_path(&target);
        if let Some(versions) = doc["versions"].as_object_mut() {
            for manifest in versions.values_mut() {
                self.rewrite_dist(name, &doc_url, manifest, &origin);
            }
        }
        if !self.merge_local(name, &mut doc, abbreviated, &origin) {
            return Err(not_found());
        }
        Ok((doc, content_type))
    }

    fn packument(&self, req: &Request, name: &str, raw: &str) -> Reply {
        match self.merged_packument(req, name, raw, req.header("accept")) {
            Ok((doc, content_type)) => Response::new(200)
                .with_header("Content-Type", content_type)
                .with_header("Vary", "Accept")
                .with_body(doc.to_string())
                .into(),
            Err(reply) => reply,
        }
    }

    /// `/<name>/<version-or-tag>`: a local version, else upstream's.
    fn version(&self, req: &Request, name: &str, raw: &str, spec: &str) -> Reply {
        let origin = self.client_origin(req);
        {
            let locals = lock(&self.local);
            if let Some(local) = locals.get(name) {
                let version = match local.tags.get(spec) {
                    Some(Some(v)) => v.as_str(),
                    _ => spec,
                };
                if let Some(m) = local.version(version) {
                    let doc = Self::local_manifest(name, m, false, &origin);
                    return json(200, &doc);
                }
                if local.hides(version) {
                    return not_found();
                }
            }
        }
        let mut target = format!("{}{raw}/{spec}", self.prefix);
        if let Some(q) = req.query() {
            target.push('?');
            target.push_str(q);
        }
        let ex = self
            .client
            .get("npm proxy: version", &target, req.header("accept"));
        if ex.status() != Some(200) {
            return match ex.status() {
                Some(_) => relay(ex),
                None => upstream_failed(&ex),
            };
        }
        let parsed = ex
            .response
            .as_ref()
            .and_then(|r| r.full_body())
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(Value::is_object);
        let Some(mut doc) = parsed else {
            return relay(ex);
        };
        let version = doc["version"].as_str().unwrap_or_default().to_string();
        if lock(&self.local)
            .get(name)
            .is_some_and(|l| l.hides(&version))
        {
            return not_found();
        }
        self.rewrite_dist(name, &self.upstream.with_path(&target), &mut doc, &origin);
        json(200, &doc)
    }

    // ------------------------------------------------------------- tarballs

    fn tarball(&self, name: &str, file: &str) -> Reply {
        let version = file_version(name, file);
        {
            let locals = lock(&self.local);
            if let Some(local) = locals.get(name) {
                if let Some(bytes) = local.tarballs.get(file) {
                    return tarball_reply(Arc::clone(bytes));
                }
                if version.is_some_and(|v| local.hides(v)) {
                    return not_found();
                }
            }
        }
        let key = match version {
            Some(v) => format!("{name}@{v}"),
            None => format!("{name}/-/{file}"),
        };
        if let Some(bytes) = lock(&self.cache).get(&key) {
            return tarball_reply(Arc::clone(bytes));
        }
        let source = lock(&self.sources)
            .get(&(name.to_string(), file.to_string()))
            .cloned()
            .unwrap_or_else(|| {
                self.upstream
                    .with_path(&format!("{}{name}/-/{file}", self.prefix))
            });
        if !is_loopback_url(&source) {
            return text(502, "refusing to fetch from a non-loopback host\n");
        }
        let client = match Client::new(source.clone(), limits(SLOW_FETCH), None) {
            Ok(client) => client,
            Err(e) => return text(502, &format!("{e}\n")),
        };
        let ex = client.get("npm proxy: tarball", source.path_and_query(), None);
        if timed_out(&ex) {
            // "Redirects to upstream on a slow fetch."
            return Response::new(302)
                .with_header("Location", source.to_string())
                .into();
        }
        let body = ex.response.as_ref().and_then(|r| r.full_body());
        match (ex.status(), body) {
            (Some(200), Some(body)) => {
                let bytes: Arc<[u8]> = body.into();
                let first = {
                    let mut cache = lock(&self.cache);
                    let first = !cache.contains_key(&key);
                    cache.entry(key).or_insert_with(|| Arc::clone(&bytes));
                    first
                };
                if first {
                    let called = scan::run_install_scripts(&bytes);
                    lock(&self.scanned).extend(called);
                }
                tarball_reply(bytes)
            }
            (Some(404), _) => not_found(),
            (Some(_), _) => relay(ex),
            (None, _) => upstream_failed(&ex),
        }
    }

    // ------------------------------------------------------------- web UI

    /// `/-/verdaccio/data/package/readme/<name>`: the README, rendered.
    fn web_readme(&self, req: &Request, rest: &str) -> Reply {
        let doc = match self.web_packument(req, rest) {
            Ok(doc) => doc,
            Err(reply) => return reply,
        };
        let latest = doc["dist-tags"]["latest"].as_str().unwrap_or_default();
        let readme = doc["readme"]
            .as_str()
            .filter(|r| !r.is_empty())
            .or_else(|| doc["versions"][latest]["readme"].as_str())
            .unwrap_or_default();
        Response::new(200)
            .with_header("Content-Type", "text/plain; charset=utf-8")
            .with_body(render_template(readme))
            .into()
    }

    /// `/-/verdaccio/data/sidebar/<name>`: the latest version, its
    /// description rendered.
    fn web_sidebar(&self, req: &Request, rest: &str) -> Reply {
        let doc = match self.web_packument(req, rest) {
            Ok(doc) => doc,
            Err(reply) => return reply,
        };
        let latest_version = doc["dist-tags"]["latest"].as_str().unwrap_or_default();
        let mut latest = doc["versions"][latest_version].clone();
        let description = latest["description"]
            .as_str()
            .or_else(|| doc["description"].as_str())
            .map(render_template)
            .unwrap_or_default();
        if latest.is_object() {
            latest["description"] = description.clone().into();
            if let Some(obj) = latest.as_object_mut() {
                obj.remove("readme");
            }
        }
        let body = serde_json::json!({
            "name": doc["name"],
            "description": description,
            "latest": latest,
            "dist-tags": doc["dist-tags"],
            "time": doc["time"],
            "versions": version_keys(&doc),
        });
        json(200, &body)
    }

    /// The full merged packument of the name that `rest` spells.
    fn web_packument(&self, req: &Request, rest: &str) -> Result<Value, Reply> {
        let Some((name, raw, "" | "/")) = split_name(rest) else {
            return Err(not_found());
        };
        // The upstream is asked with the scope separator encoded, as npm does.
        let raw = raw.replacen('/', "%2f", 1);
        self.merged_packument(req, &name, &raw, Some("application/json"))
            .map(|(doc, _)| doc)
    }

    // ------------------------------------------------------------- passthrough

    /// Method, raw target, headers and body, sent upstream as they came.
    fn forward(&self, req: &Request) -> Reply {
        relay(
            self.client
                .send("npm proxy: passthrough", &outbound(req, &req.target)),
        )
    }
}

fn tarball_reply(bytes: Arc<[u8]>) -> Reply {
    Response::new(200)
        .with_header("Content-Type", "application/octet-stream")
        .with_body(bytes)
        .into()
}

fn upstream_failed(ex: &Exchange) -> Reply {
    text(
        502,
        &format!(
            "upstream did not answer: {}\n",
            ex.error.as_deref().unwrap_or_default()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(path: &str) -> Option<(String, String, Route<'_>)> {
        package_path(path).map(|p| (p.name, p.raw.to_string(), p.route))
    }

    #[test]
    fn package_paths() {
        let p = |n: &str, raw: &str, r| Some((n.to_string(), raw.to_string(), r));
        assert_eq!(
            route("/ec-present"),
            p("ec-present", "ec-present", Route::Packument)
        );
        assert_eq!(
            route("/ec-present/"),
            p("ec-present", "ec-present", Route::Packument)
        );
        assert_eq!(
            route("/@ec%2fscoped"),
            p("@ec/scoped", "@ec%2fscoped", Route::Packument)
        );
        assert_eq!(
            route("/@ec%2Fscoped/1.0.0"),
            p("@ec/scoped", "@ec%2Fscoped", Route::Version("1.0.0"))
        );
        assert_eq!(
            route("/@ec/scoped/-/scoped-1.0.0.tgz"),
            p(
                "@ec/scoped",
                "@ec/scoped",
                Route::Tarball("scoped-1.0.0.tgz")
            )
        );
        assert_eq!(
            route("/ec-present/-rev/3-abc"),
            p("ec-present", "ec-present", Route::DocRev)
        );
        assert_eq!(
            route("/ec-present/-/ec-present-1.0.0.tgz/-rev/3-abc"),
            p(
                "ec-present",
                "ec-present",
                Route::TarballRev("ec-present-1.0.0.tgz")
            )
        );
        for other in [
            "/",
            "/EC",
            "/..",
            "/a/../b",
            "/a//b",
            "/a/%2e%2e",
            "/@ec%252fscoped",
            "/a/-",
            "/a/-/",
            "/a/b/c",
            "//host/x",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
        assert_eq!(
            file_version("@ec/scoped", "scoped-1.0.0.tgz"),
            Some("1.0.0")
        );
        assert_eq!(file_version("ec-present", "other-1.0.0.tgz"), None);
    }

    #[test]
    fn abbreviation_keeps_install_fields() {
        let m = serde_json::json!({
            "name": "a", "version": "1.0.0", "readme": "r", "description": "d",
            "scripts": {"postinstall": "x"}, "dist": {"tarball": "t"},
        });
        assert_eq!(
            abbreviate(&m),
            serde_json::json!({"name": "a", "version": "1.0.0", "dist": {"tarball": "t"}, "hasInstallScript": true})
        );
    }
}
