//! The cargo canary upstream: a sparse registry the tests control.
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! Its content is real data nobody wrote for the tests: the crates of a
//! `Cargo.lock` (this repository's own) as cargo keeps them on this
//! machine, the `.crate` files under `$CARGO_HOME/registry/cache/
//! index.crates.io-*/` and the index lines crates.io served, from cargo's
//! sparse-index cache under `$CARGO_HOME/registry/index/
//! index.crates.io-*/.cache/` ([`read_index_cache`]). `cargo fetch
//! --locked` fills both.
//!
//! Routes:
//! - `/index/config.json`: `{"dl": ..., "api": ...}`, both on the canary's
//!   second origin ([`CargoCanary::dl_origin`]), as crates.io names
//!   `static.crates.io`;
//! - `/index/<index path>`: every cached line of the crate, byte for byte;
//! - on the second origin, `/crates/{crate}/{crate}-{version}.crate`: the
//!   cached `.crate`.
//!
//! Every request on either origin goes into one log, with whether it
//! carried an `Authorization` header. Every method but GET and HEAD is
//! answered 405, except crates.io's write routes on the second origin
//! (`PUT /api/v1/crates/new`, `DELETE .../{v}/yank`, `PUT .../{v}/unyank`,
//! `PUT|DELETE .../owners`, `GET /api/v1/me`), answered 403 as crates.io
//! refuses a token it does not know. `GET /api/v1/crates/{c}/{v}/download`
//! redirects to the `.crate` as crates.io does (the route panamax and
//! crates-io-proxy fetch from). `GET /api/v1/crates/{c}/{v}/readme`
//! serves the crate's README as HTML, as crates.io serves rendered READMEs:
//! a route a mirror must not have.
//!
//! For the suite, [`fixtures`] gives crates of its own, built by our code
//! ([`egress_artifacts::build_crate`]), in the roles the other canaries
//! have ([`PRESENT`], [`UPSTREAM_ONLY`], [`TEMPLATE`], [`NO_CKSUM`],
//! [`YANKED`]), and the canary changes them mid-run through
//! [`egress_model::Upstream`]: publish a version, republish one with other
//! bytes, yank one.

use crate::control::{Secret, ServeOptions};
use crate::request_log::{lock, RequestLog};
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_lock::CargoLock;
use egress_model::{
    CrateName, Observation, ProjectName, Sha256Digest, Upstream, UpstreamError, UpstreamPlan,
    UpstreamRequest, TEMPLATE_MARKERS,
};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One crate as the canary serves it.
#[derive(Debug, Clone, Default)]
pub struct CanaryCrate {
    /// Index lines, in the order crates.io gave them.
    pub lines: Vec<Vec<u8>>,
    /// `.crate` bytes by version.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// What the canary serves, by lowercased crate name.
pub type CanaryContent = BTreeMap<String, CanaryCrate>;

/// The directories cargo keeps crates.io's data in: `$CARGO_HOME` (else
/// `~/.cargo`), `registry/cache/index.crates.io-*` and
/// `registry/index/index.crates.io-*`.
pub fn cargo_home_registry() -> io::Result<(PathBuf, PathBuf)> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or_else(|| io::Error::other("neither CARGO_HOME nor HOME is set"))?;
    let find = |dir: &str| -> io::Result<PathBuf> {
        let base = home.join("registry").join(dir);
        std::fs::read_dir(&base)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("index.crates.io-"))
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no index.crates.io-* under {}: run `cargo fetch --locked`",
                        base.display()
                    ),
                )
            })
    };
    Ok((find("cache")?, find("index")?))
}

/// Reads one file of cargo's index cache: a version byte, the index
/// format as a little-endian u32, the index's own version string, then
/// pairs of a semver version and a JSON line, each ending in a NUL.
pub fn read_index_cache(bytes: &[u8]) -> io::Result<Vec<(String, Vec<u8>)>> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
    let rest = bytes
        .get(5..)
        .ok_or_else(|| bad("shorter than its header"))?;
    let mut parts = rest.split(|&b| b == 0);
    parts.next().ok_or_else(|| bad("no index version"))?;
    let mut out = Vec::new();
    while let Some(version) = parts.next() {
        if version.is_empty() {
            break;
        }
        let line = parts
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad("a version without its line"))?;
        let version = String::from_utf8(version.to_vec()).map_err(|_| bad("version not UTF-8"))?;
        out.push((version, line.to_vec()));
    }
    Ok(out)
}

/// The content for every crates.io package of `lock`, read from cargo's
/// caches: all the index lines cached for each, and the `.crate` of each
/// locked version. A locked crate missing from the caches is an error
/// naming it.
pub fn content_from_cargo_home(lock: &CargoLock) -> io::Result<CanaryContent> {
    let (cache, index) = cargo_home_registry()?;
    let mut content = CanaryContent::new();
    for pin in &lock.pins {
        let key = pin.name.as_str().to_ascii_lowercase();
        let entry = match content.entry(key) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => {
                let path = index.join(".cache").join(pin.name.index_path());
                let bytes = std::fs::read(&path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("{}: {e}; run `cargo fetch --locked`", path.display()),
                    )
                })?;
                let lines = read_index_cache(&bytes)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                slot.insert(CanaryCrate {
                    lines: lines.into_iter().map(|(_, l)| l).collect(),
                    files: BTreeMap::new(),
                })
            }
        };
        let file = cache.join(format!("{}-{}.crate", pin.name, pin.version));
        let bytes = std::fs::read(&file).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {e}; run `cargo fetch --locked`", file.display()),
            )
        })?;
        entry.files.insert(pin.version.clone(), bytes);
    }
    Ok(content)
}

/// A crate the snapshot holds; its first version is the controls'.
pub const PRESENT: &str = "ec-present";
/// A crate only the canary serves: never in a snapshot.
pub const UPSTREAM_ONLY: &str = "ec-upstream-only";
/// A crate whose description and README carry template expressions.
pub const TEMPLATE: &str = "ec-template";
/// A crate the canary lists without a `cksum`: no snapshot can hold it.
pub const NO_CKSUM: &str = "ec-no-cksum";
/// A crate held at a version the index marks yanked.
pub const YANKED: &str = "ec-yanked";
/// Every fixture crate's first version.
pub const FIRST_VERSION: &str = "1.0.0";
/// The crates a snapshot of the fixtures holds, at [`FIRST_VERSION`].
pub const SNAPSHOT: [&str; 3] = [PRESENT, TEMPLATE, YANKED];

fn fixture_spec(name: &str, version: &str, extra: &str) -> egress_artifacts::CrateSpec {
    let markers: Vec<&str> = TEMPLATE_MARKERS.iter().map(|(m, _)| *m).collect();
    let text = if name == TEMPLATE {
        format!("egress-conformance probe crate {}", markers.join(" "))
    } else {
        format!("egress-conformance probe crate {name}")
    };
    egress_artifacts::CrateSpec {
        name: name.to_string(),
        version: version.to_string(),
        description: text.clone(),
        readme: Some(format!("# {name}\n\n{text}\n")),
        lib_rs: format!("//! {name} {version}\npub const VERSION: &str = \"{version}\";\n{extra}"),
    }
}

/// An index line as crates.io writes one (no `cksum` for [`NO_CKSUM`]).
fn index_line(name: &str, version: &str, bytes: &[u8], yanked: bool) -> Vec<u8> {
    let mut line = serde_json::Map::new();
    line.insert("name".into(), name.into());
    line.insert("vers".into(), version.into());
    line.insert("deps".into(), serde_json::json!([]));
    if name != NO_CKSUM {
        line.insert("cksum".into(), Sha256Digest::of(bytes).to_hex().into());
    }
    line.insert("features".into(), serde_json::json!({}));
    line.insert("yanked".into(), yanked.into());
    line.insert("v".into(), 2.into());
    serde_json::Value::Object(line).to_string().into_bytes()
}

/// The suite's fixture crates, each at [`FIRST_VERSION`] ([`YANKED`]'s
/// line yanked).
pub fn fixtures() -> CanaryContent {
    let mut content = CanaryContent::new();
    for name in [PRESENT, UPSTREAM_ONLY, TEMPLATE, NO_CKSUM, YANKED] {
        let bytes = egress_artifacts::build_crate(&fixture_spec(name, FIRST_VERSION, ""));
        let mut c = CanaryCrate::default();
        c.lines
            .push(index_line(name, FIRST_VERSION, &bytes, name == YANKED));
        c.files.insert(FIRST_VERSION.to_string(), bytes);
        content.insert(name.to_string(), c);
    }
    content
}

/// A `Cargo.lock` (version 4) pinning `names` at [`FIRST_VERSION`] with the
/// checksums of `content`, as `snapshot build --cargo-lock` reads one.
pub fn fixture_lock(content: &CanaryContent, names: &[&str]) -> String {
    let mut out = String::from("# This file is automatically @generated by Cargo.\nversion = 4\n");
    for name in names {
        if let Some(bytes) = content.get(*name).and_then(|c| c.files.get(FIRST_VERSION)) {
            out.push_str(&format!(
                "\n[[package]]\nname = \"{name}\"\nversion = \"{FIRST_VERSION}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"\n",
                Sha256Digest::of(bytes).to_hex()
            ));
        }
    }
    out
}

struct State {
    content: Mutex<CanaryContent>,
    log: RequestLog,
    dl_origin: String,
    origin: Mutex<String>,
    /// The standalone canary's control API secret ([`crate::control`]).
    secret: Option<Secret>,
}

/// The cargo canary upstream; see the module docs. Stops on drop.
pub struct CargoCanary {
    _server: ServerHandle,
    _dl: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl CargoCanary {
    /// Binds two free loopback ports (the index and its download origin).
    pub fn start(content: CanaryContent) -> io::Result<CargoCanary> {
        Self::serve_content(&ServeOptions::default(), content)
    }

    /// The standalone canary (`egress-conformance canary --protocol
    /// cargo`): the suite's [`fixtures`] (the crates the conformance kit's
    /// `Cargo.lock` pins), the index on `options.listen`, the download
    /// origin on another port of the same address, the control API on the
    /// index origin.
    pub fn serve(options: &ServeOptions) -> io::Result<CargoCanary> {
        Self::serve_content(options, fixtures())
    }

    fn serve_content(options: &ServeOptions, content: CanaryContent) -> io::Result<CargoCanary> {
        let dl_holder: Arc<Mutex<Option<Arc<State>>>> = Arc::new(Mutex::new(None));
        let for_dl = Arc::clone(&dl_holder);
        let dl = Server::bind(
            std::net::SocketAddr::from((options.listen.ip(), 0)),
            move |req: Request| match lock(&for_dl).as_ref() {
                Some(state) => state.handle_dl(&req),
                None => Response::new(503).into(),
            },
            Limits::default(),
        )?;
        let index_holder: Arc<Mutex<Option<Arc<State>>>> = Arc::new(Mutex::new(None));
        let for_index = Arc::clone(&index_holder);
        let server = Server::bind(
            options.listen,
            move |req: Request| match lock(&for_index).as_ref() {
                Some(state) => state.handle(&req),
                None => Response::new(503).into(),
            },
            Limits::default(),
        )?;
        let origin = options.origin(&server);
        let state = Arc::new(State {
            content: Mutex::new(content),
            log: RequestLog::default(),
            dl_origin: crate::control::sibling_origin(&origin, &dl),
            origin: Mutex::new(origin.clone()),
            secret: options.secret.clone(),
        });
        *lock(&dl_holder) = Some(Arc::clone(&state));
        *lock(&index_holder) = Some(Arc::clone(&state));
        Ok(CargoCanary {
            _server: server,
            _dl: dl,
            state,
            origin,
        })
    }

    /// A canary of the suite's [`fixtures`].
    pub fn start_fixtures() -> io::Result<CargoCanary> {
        CargoCanary::start(fixtures())
    }

    /// The index origin, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.origin
    }

    /// The `.crate` `name` `version` as the canary serves it now.
    pub fn file(&self, name: &str, version: &str) -> Option<Vec<u8>> {
        lock(&self.state.content)
            .get(name)
            .and_then(|c| c.files.get(version).cloned())
    }

    /// The sparse index URL, `http://127.0.0.1:PORT/index/`, as
    /// `--cargo-index-url` and `sparse+` take it.
    pub fn index_url(&self) -> String {
        format!("{}/index/", self.origin)
    }

    /// The download origin `config.json` names.
    pub fn dl_origin(&self) -> &str {
        &self.state.dl_origin
    }

    /// The index as files, `(path, bytes)`: `config.json` and each crate's
    /// index file at its index path, as a crates.io-index checkout holds
    /// them (what a peer that syncs a git index is seeded with).
    pub fn index_files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = vec![("config.json".to_string(), self.state.config())];
        for (name, c) in lock(&self.state.content).iter() {
            if let (Ok(n), false) = (CrateName::new(name), c.lines.is_empty()) {
                out.push((n.index_path(), index_body(c)));
            }
        }
        out
    }

    /// Every request so far, on either origin.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.state.log.since(0)
    }

    /// Drops a crate's version from what the canary serves (its line and
    /// its file), as if it had never been published.
    pub fn forget(&self, name: &CrateName, version: &str) {
        let mut content = lock(&self.state.content);
        if let Some(c) = content.get_mut(&name.as_str().to_ascii_lowercase()) {
            c.files.remove(version);
            let needle = format!("\"vers\":\"{version}\"");
            let spaced = format!("\"vers\": \"{version}\"");
            c.lines.retain(|l| {
                let s = String::from_utf8_lossy(l);
                !s.contains(&needle) && !s.contains(&spaced)
            });
        }
    }
}

fn not_found() -> Reply {
    Response::new(404)
        .with_header("Content-Type", "application/json")
        .with_body("{\"errors\":[{\"detail\":\"Not Found\"}]}")
        .into()
}

fn no_writes() -> Reply {
    Response::new(405)
        .with_header("Allow", "GET, HEAD")
        .with_header("Content-Type", "application/json")
        .with_body("{\"errors\":[{\"detail\":\"the canary upstream accepts no writes\"}]}")
        .into()
}

impl State {
    /// `config.json`: `dl` and `api` on the second origin.
    fn config(&self) -> Vec<u8> {
        serde_json::json!({
            "dl": format!("{}/crates/{{crate}}/{{crate}}-{{version}}.crate", self.dl_origin),
            "api": self.dl_origin,
        })
        .to_string()
        .into_bytes()
    }

    fn handle(&self, req: &Request) -> Reply {
        if let Some(reply) = crate::control::intercept(self.secret.as_ref(), req, self) {
            return reply;
        }
        self.log.record(req);
        if !req.method.is_read() {
            return no_writes();
        }
        let path = req.path();
        if path == "/index/config.json" {
            return Response::new(200)
                .with_header("Content-Type", "application/json")
                .with_body(self.config())
                .into();
        }
        let Some(rest) = path.strip_prefix("/index/") else {
            return not_found();
        };
        let Some(name) = rest.rsplit('/').next().and_then(|n| CrateName::new(n).ok()) else {
            return not_found();
        };
        if name.index_path() != rest {
            return not_found();
        }
        let content = lock(&self.content);
        match content.get(rest.rsplit('/').next().unwrap_or_default()) {
            Some(c) if !c.lines.is_empty() => Response::new(200)
                .with_header("Content-Type", "text/plain")
                .with_body(index_body(c))
                .into(),
            _ => not_found(),
        }
    }

    fn handle_dl(&self, req: &Request) -> Reply {
        self.log.record(req);
        if let Some(reply) = self.api(req) {
            return reply;
        }
        if !req.method.is_read() {
            return no_writes();
        }
        let found = req
            .path()
            .strip_prefix("/crates/")
            .and_then(|r| r.split_once('/'))
            .and_then(|(name, file)| {
                let version = file
                    .strip_prefix(&format!("{name}-"))?
                    .strip_suffix(".crate")?;
                let content = lock(&self.content);
                content
                    .get(&name.to_ascii_lowercase())?
                    .files
                    .get(version)
                    .cloned()
            });
        match found {
            Some(bytes) => Response::new(200)
                .with_header("Content-Type", "application/gzip")
                .with_body(bytes)
                .into(),
            None => not_found(),
        }
    }
}

/// crates.io's answer to a write route with a token it does not know.
fn forbidden() -> Reply {
    Response::new(403)
        .with_header("Content-Type", "application/json")
        .with_body(
            "{\"errors\":[{\"detail\":\"authentication failed: the canary upstream accepts no token\"}]}",
        )
        .into()
}

/// Whether `method` `path` is one of crates.io's write (or account) routes.
pub fn is_write_route(method: &str, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    matches!(
        (method, parts.as_slice()),
        ("PUT", ["crates", "new"])
            | ("DELETE", ["crates", _, _, "yank"])
            | ("PUT", ["crates", _, _, "unyank"])
            | ("PUT" | "DELETE", ["crates", _, "owners"])
            | ("GET", ["me"])
    )
}

impl State {
    /// The API routes of the second origin, or `None` for a download.
    fn api(&self, req: &Request) -> Option<Reply> {
        let path = req.path();
        if !path.starts_with("/api/") {
            return None;
        }
        if is_write_route(req.method.as_str(), path) {
            return Some(forbidden());
        }
        let parts: Vec<&str> = path.trim_start_matches("/api/v1/").split('/').collect();
        if let (true, ["crates", name, version, "download"]) =
            (req.method.is_read(), parts.as_slice())
        {
            // crates.io's download route redirects to its static origin.
            let content = lock(&self.content);
            let held = content
                .get(&name.to_ascii_lowercase())
                .is_some_and(|c| c.files.contains_key(*version));
            return Some(if held {
                Response::new(302)
                    .with_header(
                        "Location",
                        format!("{}/crates/{name}/{name}-{version}.crate", self.dl_origin),
                    )
                    .into()
            } else {
                not_found()
            });
        }
        if let (true, ["crates", name, version, "readme"]) =
            (req.method.is_read(), parts.as_slice())
        {
            // crates.io serves each README rendered to HTML.
            let content = lock(&self.content);
            if content
                .get(*name)
                .is_some_and(|c| c.files.contains_key(*version))
            {
                let spec = fixture_spec(name, version, "");
                let html = format!(
                    "<h1>{name}</h1>\n<p>{}</p>\n",
                    spec.readme.unwrap_or_default()
                );
                return Some(
                    Response::new(200)
                        .with_header("Content-Type", "text/html; charset=utf-8")
                        .with_body(html)
                        .into(),
                );
            }
        }
        Some(if req.method.is_read() {
            not_found()
        } else {
            no_writes()
        })
    }

    fn not_served(message: String) -> UpstreamError {
        UpstreamError::NotServed { message }
    }

    fn publish(&self, name: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let Some(c) = content.get_mut(name) else {
            return Err(Self::not_served(format!(
                "the cargo canary serves no crate {name}"
            )));
        };
        let version = format!("1.{}.0", c.lines.len());
        let bytes = egress_artifacts::build_crate(&fixture_spec(name, &version, ""));
        let after = Sha256Digest::of(&bytes);
        c.lines.push(index_line(name, &version, &bytes, false));
        c.files.insert(version.clone(), bytes);
        Ok(Observation::UpstreamMutation {
            description: format!("published {name} {version} at the cargo canary"),
            filename: format!("{name}-{version}.crate"),
            before: None,
            after,
        })
    }

    /// Republishes the `.crate` named `filename` (`NAME-VERSION.crate`) with
    /// other bytes, its index line's `cksum` updated.
    fn replace(&self, filename: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let found = content.iter_mut().find_map(|(name, c)| {
            let version = filename
                .strip_prefix(&format!("{name}-"))?
                .strip_suffix(".crate")?
                .to_string();
            c.files
                .contains_key(&version)
                .then_some((name.clone(), version, c))
        });
        let Some((name, version, c)) = found else {
            return Err(Self::not_served(format!(
                "the cargo canary serves no {filename}"
            )));
        };
        let before = c.files.get(&version).map(|b| Sha256Digest::of(b));
        let bytes = egress_artifacts::build_crate(&fixture_spec(
            &name,
            &version,
            "pub const REPUBLISHED: bool = true;\n",
        ));
        let after = Sha256Digest::of(&bytes);
        let yanked = line_of(c, &version).is_some_and(|v| v["yanked"] == true);
        let new_line = index_line(&name, &version, &bytes, yanked);
        set_line(c, &version, new_line);
        c.files.insert(version.clone(), bytes);
        Ok(Observation::UpstreamMutation {
            description: format!(
                "republished {name} {version} with other bytes at the cargo canary"
            ),
            filename: filename.to_string(),
            before,
            after,
        })
    }

    fn yank_line(&self, name: &str, version: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let Some(c) = content.get_mut(name) else {
            return Err(Self::not_served(format!(
                "the cargo canary serves no crate {name}"
            )));
        };
        let Some(mut line) = line_of(c, version) else {
            return Err(Self::not_served(format!(
                "the cargo canary lists no {name} {version}"
            )));
        };
        line["yanked"] = true.into();
        let before = index_body(c);
        set_line(c, version, line.to_string().into_bytes());
        Ok(Observation::UpstreamMutation {
            description: format!("yanked {name} {version} at the cargo canary"),
            filename: format!("{name}-{version}.crate"),
            before: Some(Sha256Digest::of(&before)),
            after: Sha256Digest::of(&index_body(c)),
        })
    }

    fn upstream_plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let origin = lock(&self.origin).clone();
        let index = CrateName::new(UPSTREAM_ONLY)
            .map(|n| n.index_path())
            .unwrap_or_default();
        UpstreamPlan {
            index_url: format!("{origin}/index/"),
            origin,
            present: name(PRESENT),
            upstream_only: name(UPSTREAM_ONLY),
            upstream_only_paths: vec![
                format!("/index/{index}"),
                format!("/crates/{UPSTREAM_ONLY}/{UPSTREAM_ONLY}-{FIRST_VERSION}.crate"),
            ],
            // cargo runs no code of a crate it fetches: no tripwire crate.
            tripwire: name(TEMPLATE),
            template: name(TEMPLATE),
            no_digest: Some(name(NO_CKSUM)),
            bad_digest: None,
            offsite: None,
            yanked: Some(name(YANKED)),
            hf: None,
        }
    }
}

fn line_of(c: &CanaryCrate, version: &str) -> Option<serde_json::Value> {
    c.lines.iter().find_map(|l| {
        let v: serde_json::Value = serde_json::from_slice(l).ok()?;
        (v["vers"] == version).then_some(v)
    })
}

fn set_line(c: &mut CanaryCrate, version: &str, new: Vec<u8>) {
    for l in &mut c.lines {
        let is = serde_json::from_slice::<serde_json::Value>(l).is_ok_and(|v| v["vers"] == version);
        if is {
            *l = new;
            return;
        }
    }
}

fn index_body(c: &CanaryCrate) -> Vec<u8> {
    let mut body = Vec::new();
    for l in &c.lines {
        body.extend_from_slice(l);
        body.push(b'\n');
    }
    body
}

impl Upstream for State {
    fn plan(&self) -> UpstreamPlan {
        self.upstream_plan()
    }

    fn mark(&self) -> u64 {
        self.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.log.since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.publish(project.as_str())
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        self.replace(filename)
    }

    fn yank(&self, project: &str, version: &str) -> Result<Observation, UpstreamError> {
        self.yank_line(project, version)
    }
}

impl Upstream for CargoCanary {
    fn plan(&self) -> UpstreamPlan {
        Upstream::plan(&*self.state)
    }

    fn mark(&self) -> u64 {
        self.state.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.state.requests_since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.state.publish_new_version(project)
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        self.state.replace_file_bytes(filename)
    }

    fn yank(&self, project: &str, version: &str) -> Result<Observation, UpstreamError> {
        Upstream::yank(&*self.state, project, version)
    }
}

/// Reads `path` as a `Cargo.lock`, for the canary's content.
pub fn read_lock(path: &Path) -> io::Result<CargoLock> {
    let text = std::fs::read_to_string(path)?;
    egress_lock::parse_cargo_lock(&text, &path.display().to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargos_index_cache() {
        let mut bytes = vec![3, 2, 0, 0, 0];
        bytes.extend_from_slice(b"etag: \"x\"\0");
        bytes.extend_from_slice(b"1.0.0\0{\"vers\":\"1.0.0\"}\0");
        bytes.extend_from_slice(b"1.0.1\0{\"vers\":\"1.0.1\"}\0");
        let lines = read_index_cache(&bytes).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].0, "1.0.1");
        assert_eq!(lines[1].1, b"{\"vers\":\"1.0.1\"}");
        assert!(read_index_cache(&[3, 2]).is_err());
        assert!(read_index_cache(b"\x03\x02\0\0\0v\x001.0.0\0").is_err());
    }
}
