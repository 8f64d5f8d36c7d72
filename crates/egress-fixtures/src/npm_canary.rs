//! The npm canary upstream: a small npm-registry-protocol server the suite
//! controls, the npm counterpart of [`crate::canary`].
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! Routes (the request-target is matched raw, never decoded beyond the one
//! scoped-name separator):
//! - packuments at `/<name>` and, for scoped names, `/@scope%2fname` (either
//!   case of `%2f`) and `/@scope/name`: the full document as
//!   `application/json`, or the abbreviated ("corgi") one when `Accept`
//!   names `application/vnd.npm.install-v1+json`, with `Vary: Accept`;
//! - one version's manifest at `/<name>/<version-or-dist-tag>`;
//! - tarballs at `/<name>/-/<name>-<version>.tgz`, and for scoped names
//!   `/@scope/name/-/name-<version>.tgz` (the encoded spelling too).
//!
//! Every version carries `dist.integrity` (sha512 SRI) and an absolute
//! `dist.tarball` URL on the canary's own origin. `dist.shasum` (sha1) is
//! left out: npm checks `integrity` when it is there.
//!
//! Every request, whatever its answer, goes into the same log as the PyPI
//! canary's, read through [`Upstream`]; requests below [`TRIPWIRE_PATH`] are
//! answered `200 tripped` and flagged. The canary is an upstream, never a
//! place to publish: every method but GET and HEAD (publish, unpublish,
//! dist-tag changes, adduser, login...) is logged and answered `405`, and
//! other `/-/` routes `404`.
//!
//! Content, all real tarballs built by `egress-artifacts`, reproducible
//! except for the port baked into the tripwire's `postinstall`:
//!
//! | package | versions | role |
//! |---|---|---|
//! | `ec-present` | 1.0.0, 1.1.0 (`latest`) | in the snapshot |
//! | `@ec/scoped` | 1.0.0 | in the snapshot |
//! | `ec-upstream-only` | 1.0.0 | upstream only |
//! | `ec-tripwire` | 0.1.0, whose `postinstall` calls the tripwire | in the snapshot |
//! | `ec-template-text` | 1.0.0, every [`TEMPLATE_MARKERS`] raw text in description and README | in the snapshot |

use crate::request_log::{lock, RequestLog};
use egress_artifacts::{build_npm_tarball, NpmPackageSpec, NpmTarball};
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_model::upstream::{TEMPLATE_MARKERS, TRIPWIRE_PATH};
use egress_model::{
    Observation, ProjectName, Sha256Digest, Upstream, UpstreamPlan, UpstreamRequest,
};
use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock};

/// In the snapshot; the canary serves it too.
pub const PRESENT: &str = "ec-present";
/// A scoped package in the snapshot.
pub const SCOPED: &str = "@ec/scoped";
/// Served by the canary; a snapshot must not hold it.
pub const UPSTREAM_ONLY: &str = "ec-upstream-only";
/// Its `postinstall` script calls the canary's tripwire.
pub const TRIPWIRE: &str = "ec-tripwire";
/// Its description and README carry every raw [`TEMPLATE_MARKERS`] expression.
pub const TEMPLATE: &str = "ec-template-text";

/// The media type of abbreviated packuments.
pub const ABBREVIATED: &str = "application/vnd.npm.install-v1+json";

/// Whether a snapshot built from the canary holds the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Snapshot,
    UpstreamOnly,
}

struct PackageVersion {
    spec: NpmPackageSpec,
    tarball: NpmTarball,
    /// Event number of the publish (see [`iso_time`]).
    published: u64,
}

impl PackageVersion {
    fn build(spec: NpmPackageSpec, published: u64) -> Self {
        let tarball = build_npm_tarball(&spec);
        Self {
            spec,
            tarball,
            published,
        }
    }
}

struct Package {
    name: String,
    role: Role,
    versions: Vec<PackageVersion>,
    dist_tags: BTreeMap<String, String>,
    /// Event number of the latest change.
    modified: u64,
}

impl Package {
    fn version(&self, version: &str) -> Option<&PackageVersion> {
        self.versions.iter().find(|v| v.spec.version == version)
    }

    fn created(&self) -> u64 {
        self.versions.iter().map(|v| v.published).min().unwrap_or(0)
    }
}

/// The path of a tarball on the canary: `/<name>/-/<bare name>-<version>.tgz`,
/// the scope separator left as a plain `/`, as registry.npmjs.org writes it.
pub fn tarball_path(name: &str, version: &str) -> String {
    format!(
        "/{name}/-/{}",
        egress_artifacts::npm_tarball_filename(name, version)
    )
}

struct Content {
    packages: Vec<Package>,
    /// Counts changes; every publish, replacement or tag move takes the next.
    events: u64,
    published: u32,
    replaced: u32,
}

impl Content {
    fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    fn package_mut(&mut self, name: &str) -> Option<&mut Package> {
        self.packages.iter_mut().find(|p| p.name == name)
    }

    fn next_event(&mut self) -> u64 {
        self.events += 1;
        self.events
    }
}

/// `2025-01-01T00:00:00.000Z` plus `event` seconds (capped below a day), so
/// the content is the same on every run.
fn iso_time(event: u64) -> String {
    let s = event.min(86_399);
    format!(
        "2025-01-01T{:02}:{:02}:{:02}.000Z",
        s / 3_600,
        s / 60 % 60,
        s % 60
    )
}

struct State {
    /// `http://127.0.0.1:PORT`, set right after binding.
    origin: OnceLock<String>,
    content: Mutex<Content>,
    log: RequestLog,
}

/// The npm canary upstream; see the module docs. Stops on
/// [`NpmCanary::stop`] or drop.
pub struct NpmCanary {
    server: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl NpmCanary {
    /// Binds 127.0.0.1 on a free port, then builds the content (the
    /// tripwire's `postinstall` needs the port).
    pub fn start() -> io::Result<NpmCanary> {
        let state = Arc::new(State {
            origin: OnceLock::new(),
            content: Mutex::new(Content {
                packages: Vec::new(),
                events: 0,
                published: 0,
                replaced: 0,
            }),
            log: RequestLog::default(),
        });
        let handler_state = Arc::clone(&state);
        let server = Server::bind(
            (Ipv4Addr::LOCALHOST, 0),
            move |req: Request| handler_state.handle(&req),
            Limits::default(),
        )?;
        let origin = server.base_url();
        let _ = state.origin.set(origin.clone());
        {
            let mut content = lock(&state.content);
            let packages = initial_packages(&origin, &mut content);
            content.packages = packages;
        }
        Ok(NpmCanary {
            server,
            state,
            origin,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.origin.clone()
    }

    /// `http://127.0.0.1:PORT/`, what npm takes as `--registry`.
    pub fn registry_url(&self) -> String {
        format!("{}/", self.origin)
    }

    pub fn stop(self) {
        self.server.stop();
    }

    /// The whole request log.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.requests_since(0)
    }

    /// `(name, version, tarball)` of every version currently served of the
    /// packages a snapshot should hold (and, if asked, of the upstream-only
    /// package), so that a snapshot can be built from the very bytes served.
    pub fn tarballs(&self, include_upstream_only: bool) -> Vec<(String, String, NpmTarball)> {
        let content = lock(&self.state.content);
        content
            .packages
            .iter()
            .filter(|p| p.role == Role::Snapshot || include_upstream_only)
            .flat_map(|p| {
                p.versions
                    .iter()
                    .map(|v| (p.name.clone(), v.spec.version.clone(), v.tarball.clone()))
            })
            .collect()
    }

    /// The absolute URL of a served tarball, if the canary serves that version.
    pub fn tarball_url(&self, name: &str, version: &str) -> Option<String> {
        let content = lock(&self.state.content);
        content
            .package(name)?
            .version(version)
            .map(|_| format!("{}{}", self.origin, tarball_path(name, version)))
    }

    /// The version `tag` of `name` points at now.
    pub fn dist_tag(&self, name: &str, tag: &str) -> Option<String> {
        lock(&self.state.content)
            .package(name)?
            .dist_tags
            .get(tag)
            .cloned()
    }

    /// Publishes a new version (`9.9.9`, then `9.9.10`...) of the package
    /// `name` (scoped names too) and moves `latest` to it.
    pub fn publish(&self, name: &str) -> Result<Observation, String> {
        let mut content = lock(&self.state.content);
        let version = format!("9.9.{}", 9 + content.published);
        let event = content.next_event();
        let Some(package) = content.package_mut(name) else {
            return Err(format!("the npm canary serves no package {name}"));
        };
        let spec = NpmPackageSpec::new(
            name,
            &version,
            "Published at the canary during the run",
            &index_js(&version),
        );
        let new = PackageVersion::build(spec, event);
        let observation = Observation::UpstreamMutation {
            description: format!("published {name} {version} at the npm canary (now latest)"),
            filename: new.tarball.filename.clone(),
            before: None,
            after: Sha256Digest::of(&new.tarball.bytes),
        };
        package.versions.push(new);
        package.dist_tags.insert("latest".into(), version);
        package.modified = event;
        content.published += 1;
        Ok(observation)
    }

    /// Points dist-tag `tag` of `name` at `version`, which must be served;
    /// the observation names that version's tarball, with the digest of the
    /// tarball the tag pointed at before (if any).
    pub fn move_dist_tag(
        &self,
        name: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, String> {
        let mut content = lock(&self.state.content);
        let event = content.next_event();
        let Some(package) = content.package_mut(name) else {
            return Err(format!("the npm canary serves no package {name}"));
        };
        let sha256 =
            |p: &Package, v: &str| p.version(v).map(|v| Sha256Digest::of(&v.tarball.bytes));
        let Some(after) = sha256(package, version) else {
            return Err(format!("the npm canary serves no {name} {version}"));
        };
        let previous = package.dist_tags.get(tag).cloned();
        let before = previous.as_deref().and_then(|v| sha256(package, v));
        let filename = egress_artifacts::npm_tarball_filename(name, version);
        package
            .dist_tags
            .insert(tag.to_string(), version.to_string());
        package.modified = event;
        Ok(Observation::UpstreamMutation {
            description: format!(
                "moved dist-tag {tag} of {name} from {} to {version} at the npm canary",
                previous.as_deref().unwrap_or("nothing")
            ),
            filename,
            before,
            after,
        })
    }
}

impl Upstream for NpmCanary {
    fn plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let upstream_only_paths = lock(&self.state.content)
            .package(UPSTREAM_ONLY)
            .map(|p| {
                p.versions
                    .iter()
                    .map(|v| tarball_path(&p.name, &v.spec.version))
                    .collect()
            })
            .unwrap_or_default();
        UpstreamPlan {
            origin: self.base_url(),
            index_url: self.registry_url(),
            present: name(PRESENT),
            upstream_only: name(UPSTREAM_ONLY),
            upstream_only_paths,
            tripwire: name(TRIPWIRE),
            template: name(TEMPLATE),
            no_digest: None,
            bad_digest: None,
        }
    }

    fn mark(&self) -> u64 {
        self.state.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.state.log.since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, String> {
        self.publish(project.as_str())
    }

    /// Rebuilds the tarball named `filename` (the bare `<name>-<version>.tgz`)
    /// with one more file: same name and URL, new bytes and integrity.
    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, String> {
        let mut content = lock(&self.state.content);
        let n = content.replaced;
        let event = content.next_event();
        let found = content.packages.iter_mut().find_map(|p| {
            let v = p
                .versions
                .iter()
                .position(|v| v.tarball.filename == filename)?;
            Some((p, v))
        });
        let Some((package, v)) = found else {
            return Err(format!("the npm canary serves no tarball {filename}"));
        };
        let old = &package.versions[v];
        let before = Sha256Digest::of(&old.tarball.bytes);
        let mut spec = old.spec.clone();
        spec.files.push((
            format!("replaced-{n}.txt"),
            format!("replaced at the canary during the run ({n})\n").into_bytes(),
        ));
        let published = old.published;
        let new = PackageVersion::build(spec, published);
        let after = Sha256Digest::of(&new.tarball.bytes);
        debug_assert_eq!(new.tarball.filename, filename);
        package.versions[v] = new;
        package.modified = event;
        content.replaced += 1;
        Ok(Observation::UpstreamMutation {
            description: format!(
                "replaced the bytes of {filename} at the npm canary (same name and URL, new integrity)"
            ),
            filename: filename.to_string(),
            before: Some(before),
            after,
        })
    }
}

// ------------------------------------------------------------------ content

fn index_js(version: &str) -> String {
    format!("module.exports = {{ version: \"{version}\" }};\n")
}

fn spec(name: &str, version: &str, description: &str) -> NpmPackageSpec {
    let mut s = NpmPackageSpec::new(name, version, description, &index_js(version));
    s.readme = Some(format!("# {name}\n\n{description}\n"));
    s
}

fn initial_packages(origin: &str, content: &mut Content) -> Vec<Package> {
    let tripwire_url = format!("{origin}{TRIPWIRE_PATH}{TRIPWIRE}-0.1.0");
    let mut tripwire = spec(
        TRIPWIRE,
        "0.1.0",
        "Its postinstall script calls the canary tripwire",
    );
    // egress-conformance canary: if this runs, an install script executed.
    tripwire.scripts.insert(
        "postinstall".into(),
        format!("node -e \"require('http').get('{tripwire_url}').on('error', () => {{}})\""),
    );
    let markers: Vec<&str> = TEMPLATE_MARKERS.iter().map(|(raw, _)| *raw).collect();
    let mut template = spec(
        TEMPLATE,
        "1.0.0",
        &format!("Template probe {}", markers.join(" ")),
    );
    template.readme = Some(format!(
        "# {TEMPLATE}\n\nPackage text that a template engine must never evaluate.\n\n{}\n",
        markers.join("\n")
    ));
    let present = "Present in the snapshot";
    let table: Vec<(&str, Role, Vec<NpmPackageSpec>)> = vec![
        (
            PRESENT,
            Role::Snapshot,
            vec![
                spec(PRESENT, "1.0.0", present),
                spec(PRESENT, "1.1.0", present),
            ],
        ),
        (
            SCOPED,
            Role::Snapshot,
            vec![spec(SCOPED, "1.0.0", "A scoped package in the snapshot")],
        ),
        (
            UPSTREAM_ONLY,
            Role::UpstreamOnly,
            vec![spec(
                UPSTREAM_ONLY,
                "1.0.0",
                "Only upstream, never in a snapshot",
            )],
        ),
        (TRIPWIRE, Role::Snapshot, vec![tripwire]),
        (TEMPLATE, Role::Snapshot, vec![template]),
    ];
    table
        .into_iter()
        .map(|(name, role, specs)| {
            let versions: Vec<PackageVersion> = specs
                .into_iter()
                .map(|s| PackageVersion::build(s, content.next_event()))
                .collect();
            // The last version listed is `latest`, as after publishing in order.
            let latest = versions
                .last()
                .map(|v| v.spec.version.clone())
                .unwrap_or_default();
            let modified = versions.iter().map(|v| v.published).max().unwrap_or(0);
            Package {
                name: name.to_string(),
                role,
                versions,
                dist_tags: BTreeMap::from([("latest".to_string(), latest)]),
                modified,
            }
        })
        .collect()
}

// ------------------------------------------------------------------ documents

fn dist(origin: &str, p: &Package, v: &PackageVersion) -> serde_json::Value {
    serde_json::json!({
        "tarball": format!("{origin}{}", tarball_path(&p.name, &v.spec.version)),
        "integrity": v.tarball.integrity,
    })
}

/// A version as the full packument (and `/<name>/<version>`) gives it: its
/// package.json plus `_id`, `dist` and the readme.
fn full_version(origin: &str, p: &Package, v: &PackageVersion) -> serde_json::Value {
    let mut doc = v.spec.package_json();
    doc["_id"] = format!("{}@{}", p.name, v.spec.version).into();
    doc["dist"] = dist(origin, p, v);
    if let Some(readme) = &v.spec.readme {
        doc["readme"] = readme.clone().into();
        doc["readmeFilename"] = "README.md".into();
    }
    doc
}

fn full_packument(origin: &str, p: &Package) -> serde_json::Value {
    let versions: serde_json::Map<String, serde_json::Value> = p
        .versions
        .iter()
        .map(|v| (v.spec.version.clone(), full_version(origin, p, v)))
        .collect();
    let mut time = serde_json::Map::new();
    time.insert("created".into(), iso_time(p.created()).into());
    time.insert("modified".into(), iso_time(p.modified).into());
    for v in &p.versions {
        time.insert(v.spec.version.clone(), iso_time(v.published).into());
    }
    let latest = p
        .dist_tags
        .get("latest")
        .and_then(|l| p.version(l))
        .or(p.versions.last());
    let (description, readme) = latest
        .map(|v| (v.spec.description.clone(), v.spec.readme.clone()))
        .unwrap_or_default();
    serde_json::json!({
        "_id": p.name,
        "name": p.name,
        "description": description,
        "dist-tags": p.dist_tags,
        "versions": versions,
        "time": time,
        "readme": readme.unwrap_or_default(),
        "readmeFilename": "README.md",
        "license": "Apache-2.0",
    })
}

/// npm's abbreviated metadata: per version only what installing needs.
fn abbreviated_packument(origin: &str, p: &Package) -> serde_json::Value {
    let versions: serde_json::Map<String, serde_json::Value> = p
        .versions
        .iter()
        .map(|v| {
            let mut doc = serde_json::json!({
                "name": p.name,
                "version": v.spec.version,
                "dependencies": v.spec.dependencies,
                "dist": dist(origin, p, v),
            });
            if v.spec.has_install_script() {
                doc["hasInstallScript"] = true.into();
            }
            (v.spec.version.clone(), doc)
        })
        .collect();
    serde_json::json!({
        "name": p.name,
        "modified": iso_time(p.modified),
        "dist-tags": p.dist_tags,
        "versions": versions,
    })
}

// ------------------------------------------------------------------ routing

/// What a GET names.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Packument(String),
    /// One version's manifest, by version or dist-tag.
    Version(String, &'a str),
    Tarball(String, &'a str),
}

/// Parses a raw path: `/<name>`, `/@scope%2fname` or `/@scope/name`,
/// optionally followed by `/<version-or-tag>` or `/-/<file>`. A trailing
/// `/` after the name is allowed. Nothing else is decoded.
fn route(path: &str) -> Option<Route<'_>> {
    let p = path.strip_prefix('/')?;
    let (name, rest) = match p.strip_prefix('@') {
        Some(scoped) => {
            let sep = scoped.find(['/', '%'])?;
            let (scope, after) = scoped.split_at(sep);
            let after = if let Some(a) = after.strip_prefix('/') {
                a
            } else if after
                .get(..3)
                .is_some_and(|s| s.eq_ignore_ascii_case("%2f"))
            {
                after.get(3..)?
            } else {
                return None;
            };
            let end = after.find('/').unwrap_or(after.len());
            let (bare, rest) = after.split_at(end);
            (format!("@{scope}/{bare}"), rest)
        }
        None => {
            let end = p.find('/').unwrap_or(p.len());
            let (bare, rest) = p.split_at(end);
            (bare.to_string(), rest)
        }
    };
    if !egress_artifacts::is_valid_npm_name(&name) {
        return None;
    }
    match rest {
        "" | "/" => Some(Route::Packument(name)),
        _ => {
            let rest = rest.strip_prefix('/')?;
            if let Some(file) = rest.strip_prefix("-/") {
                (!file.is_empty() && !file.contains('/')).then_some(Route::Tarball(name, file))
            } else {
                (!rest.is_empty() && !rest.contains('/') && rest != "-")
                    .then_some(Route::Version(name, rest))
            }
        }
    }
}

fn not_found() -> Reply {
    Response::new(404)
        .with_header("Content-Type", "application/json")
        .with_body("{\"error\":\"Not found\"}")
        .into()
}

fn json(content_type: &str, doc: &serde_json::Value) -> Reply {
    Response::new(200)
        .with_header("Content-Type", content_type)
        .with_header("Vary", "Accept")
        .with_body(doc.to_string())
        .into()
}

/// Whether `Accept` asks for the abbreviated packument (npm sends it with a
/// `q=1.0` ahead of `application/json`). A `q=0` entry does not count.
fn wants_abbreviated(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|param| {
                param
                    .strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case(ABBREVIATED) && !refused
        })
    })
}

impl State {
    fn origin(&self) -> &str {
        self.origin.get().map_or("", String::as_str)
    }

    fn handle(&self, req: &Request) -> Reply {
        let tripwire = self.log.record(req);
        if tripwire {
            return Response::text(200, "tripped\n").into();
        }
        if req.method != "GET" && req.method != "HEAD" {
            // Publish, unpublish, dist-tag changes, adduser, login, audit...
            return Response::new(405)
                .with_header("Allow", "GET, HEAD")
                .with_header("Content-Type", "application/json")
                .with_body("{\"error\":\"the canary upstream accepts no writes\"}")
                .into();
        }
        let path = req.path();
        if path.starts_with("/-/") {
            return not_found();
        }
        let content = lock(&self.content);
        let origin = self.origin();
        match route(path) {
            Some(Route::Packument(name)) => match content.package(&name) {
                Some(p) if wants_abbreviated(req.header("accept")) => {
                    json(ABBREVIATED, &abbreviated_packument(origin, p))
                }
                Some(p) => json("application/json", &full_packument(origin, p)),
                None => not_found(),
            },
            Some(Route::Version(name, wanted)) => {
                let Some(p) = content.package(&name) else {
                    return not_found();
                };
                let version = p.dist_tags.get(wanted).map_or(wanted, String::as_str);
                match p.version(version) {
                    Some(v) => json("application/json", &full_version(origin, p, v)),
                    None => not_found(),
                }
            }
            Some(Route::Tarball(name, file)) => {
                let found = content
                    .package(&name)
                    .and_then(|p| p.versions.iter().find(|v| v.tarball.filename == file));
                match found {
                    Some(v) => Response::new(200)
                        .with_header("Content-Type", "application/octet-stream")
                        .with_body(v.tarball.bytes.clone())
                        .into(),
                    None => not_found(),
                }
            }
            None => not_found(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let pack = |n: &str| Some(Route::Packument(n.to_string()));
        assert_eq!(route("/ec-present"), pack("ec-present"));
        assert_eq!(route("/ec-present/"), pack("ec-present"));
        assert_eq!(route("/@ec%2fscoped"), pack("@ec/scoped"));
        assert_eq!(route("/@ec%2Fscoped"), pack("@ec/scoped"));
        assert_eq!(route("/@ec/scoped"), pack("@ec/scoped"));
        assert_eq!(
            route("/@ec/scoped/-/scoped-1.0.0.tgz"),
            Some(Route::Tarball("@ec/scoped".into(), "scoped-1.0.0.tgz"))
        );
        assert_eq!(
            route("/ec-present/latest"),
            Some(Route::Version("ec-present".into(), "latest"))
        );
        for bad in [
            "",
            "/",
            "ec",
            "/@ec",
            "/@ec%2f",
            "/@ec%2escoped",
            "/EC",
            "/..",
            "/a/b/c",
            "/a/-/",
            "/a/-/x/y",
            "/%2e%2e",
            "/@ec%252fscoped",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
    }

    #[test]
    fn accept() {
        assert!(wants_abbreviated(Some(
            "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
        )));
        assert!(!wants_abbreviated(Some("application/json")));
        assert!(!wants_abbreviated(Some(
            "application/vnd.npm.install-v1+json;q=0, application/json"
        )));
        assert!(!wants_abbreviated(None));
    }

    #[test]
    fn times() {
        assert_eq!(iso_time(0), "2025-01-01T00:00:00.000Z");
        assert_eq!(iso_time(3_661), "2025-01-01T01:01:01.000Z");
    }
}
