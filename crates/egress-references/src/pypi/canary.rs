//! The canary upstream: a small PyPI-protocol server the suite controls.
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! It serves PEP 503 HTML and PEP 691 JSON simple pages (negotiated; `406`
//! when nothing offered is acceptable), `#sha256=` hashes, PEP 658 core
//! metadata for wheels (at the file URL + `.metadata`) and files under
//! `/packages/<2 hex>/<2 hex>/<60 hex>/<filename>`, as PyPI lays them out
//! (the path digest is not the file's sha256, as on PyPI). Every request, whatever its answer, goes into a log the suite
//! reads through [`Upstream`]. Requests below [`TRIPWIRE_PATH`] are answered
//! `200 tripped` and flagged: only code from an artifact calls them.
//!
//! It also speaks as much of PyPI's mirroring API as bandersnatch uses:
//! - XML-RPC (`POST /pypi`, also `/RPC2`): `list_packages_with_serial`,
//!   `list_packages`, `changelog_last_serial`, `changelog_since_serial`
//!   (see `xmlrpc` for what is parsed and how);
//! - the JSON API, `/pypi/<name>/json` and `/pypi/<name>/<version>/json`
//!   (`info`, `last_serial`, `releases`, `urls` with `digests`, `size`,
//!   `upload_time_iso_8601`, `packagetype`, `yanked`...);
//! - serials: every upload, new release and removal is a changelog entry with
//!   the next serial; a project's last serial is that of its latest entry, the
//!   canary's that of the latest entry overall. `X-PyPI-Last-Serial` carries
//!   the canary's serial on `/simple/` and XML-RPC answers, the project's on
//!   its simple page and JSON API. Mutations add entries.
//!
//! Upload times are fixed (a base time plus the serial), so the content is
//! the same on every run.
//!
//! Content, all real distributions built by `egress-artifacts` and
//! reproducible except for the port baked into the tripwire's `setup.py`:
//!
//! | project | files | role |
//! |---|---|---|
//! | `ec-present` | 1.0.0 wheel + sdist, 1.1.0 wheel | in the snapshot |
//! | `ec-upstream-only` | 1.0.0 wheel | upstream only |
//! | `ec-tripwire` | 0.1.0 sdist, whose `setup.py` calls the tripwire | in the snapshot |
//! | `ec-template-text` | 1.0.0 wheel, every [`TEMPLATE_MARKERS`](egress_model::TEMPLATE_MARKERS) raw text in Summary and Description | in the snapshot |
//! | `ec-no-digest` | 1.0.0 wheel listed without any hash | upstream only |
//! | `ec-bad-digest` | 1.0.0 wheel listed with a sha256 that is not its own | upstream only |
//!
//! Started with a [`Universe`] ([`Canary::start_with`], [`Canary::serve_with`]):
//! the universe's projects too (`eu-*`, see [`super::universe`]), each file
//! with the upload time its table gives, listed on the JSON simple pages
//! (PEP 700 `upload-time`) with `requires-python` and `yanked`. Without one
//! (the default) nothing of it is served and nothing else changes.
//!
//! Served with [`ServeOptions::kit`] (the standalone canary): the conformance
//! kit's projects too (`egress-kit-*`, see [`super::kit`]), built by the
//! kit's code with the tripwire aimed at the canary's origin, so the same
//! bytes as `egress-conformance kit --canary ORIGIN`; the plan's present
//! project is then the kit's, and the mutations act on it as on any other.

use super::kit::{
    self, sdist_spec, template_text, tripwire_preamble, wheel_spec, DistSpec as Spec,
};
use super::universe;
use crate::control::{self, Secret, ServeOptions};
use crate::request_log::{lock, RequestLog};
use crate::universe::Universe;
use egress_artifacts::{core_metadata_with, BuiltDist};
use egress_http::{Limits, Method, Reply, Request, Response, Server, ServerHandle};
use egress_model::upstream::TRIPWIRE_PATH;
use egress_model::{
    Observation, ProjectName, Sha256Digest, Upstream, UpstreamError, UpstreamPlan, UpstreamRequest,
    Version,
};
use egress_simple::{FileEntry, Format, IndexPage, ProjectPage};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

mod xmlrpc;

/// In the snapshot; the canary serves it too.
pub const PRESENT: &str = "ec-present";
/// Served by the canary; a snapshot must not hold it.
pub const UPSTREAM_ONLY: &str = "ec-upstream-only";
/// Sdist only; its `setup.py` calls the canary's tripwire.
pub const TRIPWIRE: &str = "ec-tripwire";
/// Its metadata carries every raw [`TEMPLATE_MARKERS`](egress_model::TEMPLATE_MARKERS) expression.
pub const TEMPLATE: &str = "ec-template-text";
/// Upstream only; listed without any hash.
pub const NO_DIGEST: &str = "ec-no-digest";
/// Upstream only; listed with a sha256 that does not match its bytes.
pub const BAD_DIGEST: &str = "ec-bad-digest";

/// Whether a snapshot built from the canary holds the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Snapshot,
    UpstreamOnly,
    /// Upstream only, and never part of [`Canary::dists`] either way.
    Broken,
    /// The conformance kit's (standalone canary only): a lab's snapshot
    /// holds it when the lab added the kit; never part of [`Canary::dists`].
    Kit,
    /// The universe's (only when started with one); never part of
    /// [`Canary::dists`].
    Universe,
}

/// Where a project's upload times are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Times {
    /// In the JSON API only: the canary's own projects, as they always were.
    JsonApiOnly,
    /// On the JSON simple pages (PEP 700 `upload-time`) and in the JSON API:
    /// the universe's.
    Everywhere,
    /// Nowhere: the universe's `eu-no-time`.
    Nowhere,
}

/// How a project's files are listed on its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Digest,
    NoDigest,
    WrongDigest,
}

struct File {
    spec: Spec,
    dist: BuiltDist,
    /// PEP 658 metadata; wheels only.
    metadata: Option<Vec<u8>>,
    /// Unix time of the changelog entry that added these bytes.
    uploaded: u64,
    /// PEP 592: yanked, with this reason (the universe's only).
    yanked: Option<String>,
}

impl File {
    fn build(spec: Spec) -> Self {
        let dist = spec.build();
        let metadata = spec
            .wheel()
            .zip(spec.wheel_extras())
            .map(|(w, extras)| core_metadata_with(w, extras));
        File {
            spec,
            dist,
            metadata,
            uploaded: 0,
            yanked: None,
        }
    }

    fn path(&self) -> String {
        file_path(&self.dist)
    }

    fn version(&self) -> &Version {
        match &self.spec {
            Spec::Wheel(w) | Spec::WheelWith(w, _) => &w.version,
            Spec::Sdist(s) => &s.version,
        }
    }

    /// PyPI's `python_version` for the file: the wheel's python tag or
    /// `source`.
    fn python_version(&self) -> &str {
        match &self.spec {
            Spec::Wheel(_) => "py3",
            Spec::WheelWith(_, extras) => extras
                .tag
                .as_deref()
                .and_then(|t| t.split('-').next())
                .unwrap_or("py3"),
            Spec::Sdist(_) => "source",
        }
    }
}

/// PyPI's layout: `/packages/<2>/<2>/<60>/<filename>` where the 64 hex digits
/// are a digest of the bytes that is not the sha256 clients verify (PyPI uses
/// blake2b-256; a domain-separated sha256 stands in for it here). So, as on
/// PyPI, a file's URL changes with its bytes but does not carry its sha256.
fn file_path(dist: &BuiltDist) -> String {
    let mut salted = b"egress-canary-path:".to_vec();
    salted.extend_from_slice(&dist.bytes);
    let hex = egress_model::Sha256Digest::of(&salted).to_hex();
    format!(
        "/packages/{}/{}/{}/{}",
        &hex[..2],
        &hex[2..4],
        &hex[4..],
        dist.filename
    )
}

struct Project {
    name: ProjectName,
    role: Role,
    listing: Listing,
    times: Times,
    files: Vec<File>,
    /// Serial of this project's latest changelog entry.
    last_serial: u64,
}

/// One changelog entry, as `changelog_since_serial` returns it.
struct Change {
    name: ProjectName,
    version: Version,
    timestamp: u64,
    action: String,
    serial: u64,
}

/// Changelog timestamps: this (2025-01-01T00:00:00Z) plus the serial.
const BASE_TIME: u64 = 1_735_689_600;

struct Content {
    projects: Vec<Project>,
    /// The canary's last serial: that of the latest changelog entry.
    serial: u64,
    changelog: Vec<Change>,
    published: u32,
    replaced: u32,
    slow: HashMap<String, Duration>,
}

impl Content {
    fn project(&self, name: &ProjectName) -> Option<&Project> {
        self.projects.iter().find(|p| &p.name == name)
    }

    /// Indices of the project and file that serve `filename`.
    fn find_file(&self, filename: &str) -> Option<(usize, usize)> {
        self.projects.iter().enumerate().find_map(|(p, project)| {
            project
                .files
                .iter()
                .position(|f| f.dist.filename == filename)
                .map(|f| (p, f))
        })
    }

    /// Appends a changelog entry for project `p` with the next serial and
    /// returns its timestamp.
    fn record(&mut self, p: usize, version: &Version, action: String) -> u64 {
        self.record_at(p, version, action, None)
    }

    /// [`Self::record`], at time `at` (Unix seconds) when given, else at
    /// [`BASE_TIME`] plus the serial.
    fn record_at(&mut self, p: usize, version: &Version, action: String, at: Option<u64>) -> u64 {
        self.serial += 1;
        let serial = self.serial;
        let timestamp = at.unwrap_or(BASE_TIME + serial);
        let project = &mut self.projects[p];
        project.last_serial = serial;
        self.changelog.push(Change {
            name: project.name.clone(),
            version: version.clone(),
            timestamp,
            action,
            serial,
        });
        timestamp
    }

    /// Records the upload of file `f` of project `p` and stamps its upload
    /// time. Unless `replacing`, a "new release" entry comes first when no
    /// other file of that version is there yet.
    fn record_upload(&mut self, p: usize, f: usize, replacing: bool) {
        self.record_upload_at(p, f, replacing, None);
    }

    /// [`Self::record_upload`], at time `at` (Unix seconds) when given.
    fn record_upload_at(&mut self, p: usize, f: usize, replacing: bool, at: Option<u64>) {
        let file = &self.projects[p].files[f];
        let version = file.version().clone();
        let add = format!("add {} file {}", file.python_version(), file.dist.filename);
        let new_release = !replacing
            && !self.projects[p]
                .files
                .iter()
                .enumerate()
                .any(|(i, other)| i != f && other.uploaded != 0 && other.version() == &version);
        if new_release {
            self.record_at(p, &version, "new release".into(), at);
        }
        let timestamp = self.record_at(p, &version, add, at);
        self.projects[p].files[f].uploaded = timestamp;
    }
}

struct State {
    /// `http://127.0.0.1:PORT`, set right after binding.
    origin: OnceLock<String>,
    content: Mutex<Content>,
    log: RequestLog,
    /// The control API's secret, when the canary runs standalone.
    secret: Option<Secret>,
    /// Whether it serves the conformance kit (see [`ServeOptions::kit`]).
    kit: bool,
}

/// The canary upstream; see the module docs. Stops on [`Canary::stop`] or drop.
pub struct Canary {
    server: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl Canary {
    /// Binds 127.0.0.1 on a free port, then builds the content (the tripwire's
    /// `setup.py` needs the port).
    pub fn start() -> io::Result<Canary> {
        Self::serve(&ServeOptions::default())
    }

    /// [`Canary::start`], serving `universe` too (see [`super::universe`]).
    pub fn start_with(universe: Universe) -> io::Result<Canary> {
        Self::serve_with(&ServeOptions::default(), Some(universe))
    }

    /// Binds where `options` say, with a control API when they give a
    /// secret (the standalone canary).
    pub fn serve(options: &ServeOptions) -> io::Result<Canary> {
        Self::serve_with(options, None)
    }

    /// [`Canary::serve`], serving `universe` too when given.
    pub fn serve_with(options: &ServeOptions, universe: Option<Universe>) -> io::Result<Canary> {
        let state = Arc::new(State {
            origin: OnceLock::new(),
            content: Mutex::new(Content {
                projects: Vec::new(),
                serial: 0,
                changelog: Vec::new(),
                published: 0,
                replaced: 0,
                slow: HashMap::new(),
            }),
            log: RequestLog::default(),
            secret: options.secret.clone(),
            kit: options.kit,
        });
        let handler_state = Arc::clone(&state);
        let server = Server::bind(
            options.listen,
            move |req: Request| handler_state.handle(req),
            Limits::default(),
        )?;
        let origin = options.origin(&server);
        let _ = state.origin.set(origin.clone());
        {
            let mut content = lock(&state.content);
            content.projects = initial_projects(&origin);
            if options.kit {
                content.projects.extend(kit_projects(&origin));
            }
            for p in 0..content.projects.len() {
                for f in 0..content.projects[p].files.len() {
                    content.record_upload(p, f, false);
                }
            }
            if let Some(universe) = universe {
                add_universe(&mut content, universe);
            }
        }
        Ok(Canary {
            server,
            state,
            origin,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.origin.clone()
    }

    /// `http://127.0.0.1:PORT/simple/`.
    pub fn index_url(&self) -> String {
        format!("{}/simple/", self.origin)
    }

    pub fn stop(self) {
        self.server.stop();
    }

    /// The files currently served for the projects a snapshot should hold
    /// (and, if asked, the upstream-only project), so that a snapshot can be
    /// built from the very bytes the canary serves. `ec-no-digest` and
    /// `ec-bad-digest` are never included.
    pub fn dists(&self, include_upstream_only: bool) -> Vec<(ProjectName, BuiltDist)> {
        let content = lock(&self.state.content);
        content
            .projects
            .iter()
            .filter(|p| {
                p.role == Role::Snapshot || (include_upstream_only && p.role == Role::UpstreamOnly)
            })
            .flat_map(|p| p.files.iter().map(|f| (p.name.clone(), f.dist.clone())))
            .collect()
    }

    /// The path on the canary of the file named `filename`, if it serves one.
    pub fn file_path(&self, filename: &str) -> Option<String> {
        let content = lock(&self.state.content);
        content
            .projects
            .iter()
            .flat_map(|p| &p.files)
            .find(|f| f.dist.filename == filename)
            .map(File::path)
    }

    /// The absolute URL of the file named `filename`, if the canary serves one.
    pub fn file_url(&self, filename: &str) -> Option<String> {
        self.file_path(filename)
            .map(|p| format!("{}{p}", self.origin))
    }

    /// From now on, the file named `filename` is sent only after `delay`.
    pub fn set_slow(&self, filename: &str, delay: Duration) {
        lock(&self.state.content)
            .slow
            .insert(filename.to_string(), delay);
    }

    /// The whole request log.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.requests_since(0)
    }
}

impl Upstream for Canary {
    fn plan(&self) -> UpstreamPlan {
        self.state.plan()
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
}

impl Upstream for State {
    fn plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let upstream_only = name(UPSTREAM_ONLY);
        let upstream_only_paths = lock(&self.content)
            .project(&upstream_only)
            .map(|p| p.files.iter().map(File::path).collect())
            .unwrap_or_default();
        UpstreamPlan {
            origin: self.origin().to_string(),
            index_url: format!("{}/simple/", self.origin()),
            // The project a lab's snapshot holds: the kit's when served.
            present: name(if self.kit { kit::PRESENT } else { PRESENT }),
            upstream_only,
            upstream_only_paths,
            tripwire: name(TRIPWIRE),
            template: name(TEMPLATE),
            no_digest: Some(name(NO_DIGEST)),
            bad_digest: Some(name(BAD_DIGEST)),
            offsite: None,
            yanked: None,
            hf: None,
        }
    }

    fn mark(&self) -> u64 {
        self.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.log.since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let n = content.published;
        let version =
            Version::new(&format!("9.9.{}", 9 + n)).map_err(|e| UpstreamError::Failed {
                message: e.to_string(),
            })?;
        let Some(p) = content.projects.iter().position(|p| &p.name == project) else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the canary serves no project {project}")),
            });
        };
        let file = File::build(Spec::Wheel(wheel_spec(
            project,
            version.as_str(),
            "Published at the canary during the run",
            "This version did not exist when the snapshot was taken.\n",
        )));
        let observation = Observation::UpstreamMutation {
            description: format!("published {project} {version} at the canary"),
            filename: file.dist.filename.clone(),
            before: None,
            after: file.dist.sha256,
        };
        content.projects[p].files.push(file);
        let f = content.projects[p].files.len() - 1;
        content.record_upload(p, f, false);
        content.published += 1;
        Ok(observation)
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let n = content.replaced;
        let Some((p, f)) = content.find_file(filename) else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the canary serves no file {filename}")),
            });
        };
        let version = content.projects[p].files[f].version().clone();
        content.record(p, &version, format!("remove file {filename}"));
        let file = &mut content.projects[p].files[f];
        let before = file.dist.sha256;
        let mut spec = file.spec.clone();
        let extra_path =
            |name: &ProjectName| format!("{}/_replaced_{n}.txt", name.wheel_component());
        let extra = format!("replaced at the canary during the run ({n})\n").into_bytes();
        match &mut spec {
            Spec::Wheel(w) | Spec::WheelWith(w, _) => w.files.push((extra_path(&w.name), extra)),
            Spec::Sdist(s) => s.files.push((extra_path(&s.name), extra)),
        }
        let yanked = file.yanked.take();
        *file = File {
            yanked,
            ..File::build(spec)
        };
        let after = file.dist.sha256;
        debug_assert_eq!(file.dist.filename, filename);
        content.record_upload(p, f, true);
        content.replaced += 1;
        Ok(Observation::UpstreamMutation {
            description: format!(
                "replaced the bytes of {filename} at the canary (same filename, new digest)"
            ),
            filename: filename.to_string(),
            before: Some(before),
            after,
        })
    }
}

// ------------------------------------------------------------------ content

/// The conformance kit's projects, built by the kit's own code with the
/// tripwire aimed at `origin`: the same bytes as `kit --canary ORIGIN`.
fn kit_projects(origin: &str) -> Vec<Project> {
    kit::projects(origin)
        .into_iter()
        .map(|(name, specs)| Project {
            name,
            role: Role::Kit,
            listing: Listing::Digest,
            times: Times::JsonApiOnly,
            files: specs.into_iter().map(File::build).collect(),
            last_serial: 0,
        })
        .collect()
}

/// Appends the universe's projects and records their uploads, in the order
/// of their upload times, each at its time.
fn add_universe(content: &mut Content, universe: Universe) {
    let first = content.projects.len();
    let mut uploads: Vec<(u64, usize, usize)> = Vec::new();
    for (i, u) in universe::projects(universe).into_iter().enumerate() {
        let files = u
            .files
            .into_iter()
            .enumerate()
            .map(|(f, uf)| {
                uploads.push((uf.uploaded, first + i, f));
                File {
                    yanked: uf.yanked,
                    ..File::build(uf.spec)
                }
            })
            .collect();
        content.projects.push(Project {
            name: u.name,
            role: Role::Universe,
            listing: Listing::Digest,
            times: if u.dated {
                Times::Everywhere
            } else {
                Times::Nowhere
            },
            files,
            last_serial: 0,
        });
    }
    uploads.sort_unstable();
    for (at, p, f) in uploads {
        content.record_upload_at(p, f, false, Some(at));
    }
}

fn initial_projects(origin: &str) -> Vec<Project> {
    let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
    let project = |n: &str, role, listing, specs: Vec<Spec>| Project {
        name: name(n),
        role,
        listing,
        times: Times::JsonApiOnly,
        files: specs.into_iter().map(File::build).collect(),
        last_serial: 0,
    };
    let present = name(PRESENT);
    let tripwire = name(TRIPWIRE);
    let tripwire_call = tripwire_preamble(&format!("{origin}{TRIPWIRE_PATH}{tripwire}-0.1.0"));
    let (template_summary, template_description) = template_text();
    vec![
        project(
            PRESENT,
            Role::Snapshot,
            Listing::Digest,
            vec![
                Spec::Wheel(wheel_spec(
                    &present,
                    "1.0.0",
                    "Present in the snapshot",
                    "Present.\n",
                )),
                Spec::Sdist(sdist_spec(&present, "1.0.0", "Present in the snapshot", "")),
                Spec::Wheel(wheel_spec(
                    &present,
                    "1.1.0",
                    "Present in the snapshot",
                    "Present.\n",
                )),
            ],
        ),
        project(
            UPSTREAM_ONLY,
            Role::UpstreamOnly,
            Listing::Digest,
            vec![Spec::Wheel(wheel_spec(
                &name(UPSTREAM_ONLY),
                "1.0.0",
                "Only upstream, never in a snapshot",
                "Upstream only.\n",
            ))],
        ),
        project(
            TRIPWIRE,
            Role::Snapshot,
            Listing::Digest,
            vec![Spec::Sdist(sdist_spec(
                &tripwire,
                "0.1.0",
                "Its setup.py calls the canary tripwire",
                &tripwire_call,
            ))],
        ),
        project(
            TEMPLATE,
            Role::Snapshot,
            Listing::Digest,
            vec![Spec::Wheel(wheel_spec(
                &name(TEMPLATE),
                "1.0.0",
                &template_summary,
                &template_description,
            ))],
        ),
        project(
            NO_DIGEST,
            Role::Broken,
            Listing::NoDigest,
            vec![Spec::Wheel(wheel_spec(
                &name(NO_DIGEST),
                "1.0.0",
                "Listed without any hash",
                "No digest.\n",
            ))],
        ),
        project(
            BAD_DIGEST,
            Role::Broken,
            Listing::WrongDigest,
            vec![Spec::Wheel(wheel_spec(
                &name(BAD_DIGEST),
                "1.0.0",
                "Listed with a sha256 that is not its own",
                "Bad digest.\n",
            ))],
        ),
    ]
}

/// The digest `ec-bad-digest` lists: deterministic, never the real one.
fn wrong_digest(dist: &BuiltDist) -> Sha256Digest {
    let mut data = dist.bytes.clone();
    data.extend_from_slice(b"\nnot these bytes");
    Sha256Digest::of(&data)
}

fn project_page(origin: &str, p: &Project) -> ProjectPage {
    let files = p
        .files
        .iter()
        .map(|f| {
            let sha = |d: Sha256Digest| BTreeMap::from([("sha256".to_string(), d.to_hex())]);
            let hashes = match p.listing {
                Listing::Digest => sha(f.dist.sha256),
                Listing::NoDigest => BTreeMap::new(),
                Listing::WrongDigest => sha(wrong_digest(&f.dist)),
            };
            let core_metadata = match (&f.metadata, p.listing) {
                (_, Listing::NoDigest) | (None, _) => None,
                (Some(m), _) => Some(sha(Sha256Digest::of(m))),
            };
            FileEntry {
                filename: f.dist.filename.clone(),
                url: format!("{origin}{}", f.path()),
                hashes,
                requires_python: f.spec.wheel().and_then(|w| w.requires_python.clone()),
                yanked: f.yanked.clone(),
                core_metadata,
                size: Some(f.dist.bytes.len() as u64),
                upload_time: (p.times == Times::Everywhere).then(|| upload_times(f.uploaded).1),
                ..FileEntry::default()
            }
        })
        .collect();
    let mut versions: Vec<&Version> = p.files.iter().map(File::version).collect();
    versions.sort();
    versions.dedup();
    ProjectPage {
        name: p.name.to_string(),
        files,
        versions: versions.iter().map(|v| v.to_string()).collect(),
        api_version: None,
    }
}

/// `(upload_time, upload_time_iso_8601)` for a Unix time, as PyPI writes them.
fn upload_times(secs: u64) -> (String, String) {
    // Civil from days (H. Hinnant's algorithm), proleptic Gregorian, UTC.
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let plain = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    );
    let iso = format!("{plain}.000000Z");
    (plain, iso)
}

/// The digests the JSON API gives for `f`, following the project's listing.
fn listed_digests(p: &Project, f: &File) -> serde_json::Value {
    match p.listing {
        Listing::Digest => serde_json::json!({ "sha256": f.dist.sha256.to_hex() }),
        Listing::NoDigest => serde_json::json!({}),
        Listing::WrongDigest => serde_json::json!({ "sha256": wrong_digest(&f.dist).to_hex() }),
    }
}

/// One file as PyPI's JSON API describes it.
fn file_json(origin: &str, p: &Project, f: &File) -> serde_json::Value {
    let (upload_time, upload_time_iso) = match p.times {
        Times::Nowhere => (None, None),
        Times::JsonApiOnly | Times::Everywhere => {
            let (plain, iso) = upload_times(f.uploaded);
            (Some(plain), Some(iso))
        }
    };
    let (packagetype, requires_python) = match f.spec.wheel() {
        Some(w) => ("bdist_wheel", w.requires_python.clone()),
        None => ("sdist", None),
    };
    serde_json::json!({
        "comment_text": "",
        "digests": listed_digests(p, f),
        "downloads": -1,
        "filename": f.dist.filename,
        "has_sig": false,
        "packagetype": packagetype,
        "python_version": f.python_version(),
        "requires_python": requires_python,
        "size": f.dist.bytes.len(),
        "upload_time": upload_time,
        "upload_time_iso_8601": upload_time_iso,
        "url": format!("{origin}{}", f.path()),
        "yanked": f.yanked.is_some(),
        "yanked_reason": f.yanked,
    })
}

/// Whether `v` is a PEP 440 pre- or development release: a letter in it
/// other than those of `post` or a local label. Enough for the canary's
/// own versions (`2.1.0rc1`).
fn is_prerelease(v: &Version) -> bool {
    let public = v.as_str().split('+').next().unwrap_or_default();
    public
        .replace("post", "")
        .bytes()
        .any(|b| b.is_ascii_alphabetic())
}

/// PyPI's JSON API document for project `p`: the project view when
/// `version` is `None` (with `releases`; `info` and `urls` of the latest
/// version), else the view of that version (without `releases`, as PyPI).
fn project_json(origin: &str, p: &Project, version: Option<&Version>) -> String {
    let mut versions: Vec<&Version> = p.files.iter().map(File::version).collect();
    versions.sort();
    versions.dedup();
    // As PyPI: the latest final release, a prerelease only when there is
    // nothing else.
    let latest = versions
        .iter()
        .rev()
        .find(|v| !is_prerelease(v))
        .or(versions.last())
        .copied();
    let shown = version.or(latest);
    let files_of =
        |v: &Version| -> Vec<&File> { p.files.iter().filter(|f| f.version() == v).collect() };
    let shown_files = shown.map(files_of).unwrap_or_default();
    // Text from the version's wheel if it has one (sdists carry no description).
    let described = shown_files
        .iter()
        .find(|f| f.spec.wheel().is_some())
        .or(shown_files.first());
    let (summary, description, requires_python) = match described.map(|f| &f.spec) {
        Some(Spec::Wheel(w) | Spec::WheelWith(w, _)) => (
            w.summary.clone(),
            w.description.clone(),
            w.requires_python.clone(),
        ),
        Some(Spec::Sdist(s)) => (s.summary.clone(), String::new(), None),
        None => (String::new(), String::new(), None),
    };
    // PyPI: `null` when the metadata names no dependency.
    let requires_dist = described
        .and_then(|f| f.spec.wheel_extras())
        .filter(|x| !x.requires_dist.is_empty())
        .map(|x| x.requires_dist.clone());
    // PyPI: a version is yanked when all its files are.
    let yanked_reason = shown_files
        .iter()
        .map(|f| f.yanked.clone())
        .collect::<Option<Vec<String>>>()
        .and_then(|reasons| reasons.into_iter().next());
    let info = serde_json::json!({
        "author": "",
        "author_email": "",
        "classifiers": [],
        "description": description,
        "description_content_type": null,
        "home_page": null,
        "keywords": "",
        "license": "",
        "name": p.name.as_str(),
        "platform": null,
        "project_urls": null,
        "requires_dist": requires_dist,
        "requires_python": requires_python,
        "summary": summary,
        "version": shown.map(Version::to_string),
        "yanked": yanked_reason.is_some(),
        "yanked_reason": yanked_reason,
    });
    let urls: Vec<serde_json::Value> = shown_files
        .iter()
        .map(|f| file_json(origin, p, f))
        .collect();
    let mut doc = serde_json::json!({
        "info": info,
        "last_serial": p.last_serial,
        "urls": urls,
        "vulnerabilities": [],
    });
    if version.is_none() {
        let releases: serde_json::Map<String, serde_json::Value> = versions
            .iter()
            .map(|v| {
                let files = files_of(v)
                    .into_iter()
                    .map(|f| file_json(origin, p, f))
                    .collect();
                (v.to_string(), serde_json::Value::Array(files))
            })
            .collect();
        doc["releases"] = serde_json::Value::Object(releases);
    }
    doc.to_string()
}

/// The answer to an XML-RPC call, or a fault (code, message).
fn rpc_result(content: &Content, call: &xmlrpc::Call) -> Result<xmlrpc::Value, (i64, String)> {
    use xmlrpc::{Param, Value};
    let method = call.method.as_str();
    match (method, call.params.as_slice()) {
        ("list_packages_with_serial", []) => Ok(Value::Struct(
            content
                .projects
                .iter()
                .map(|p| (p.name.to_string(), Value::Int(p.last_serial as i64)))
                .collect(),
        )),
        ("list_packages", []) => Ok(Value::Array(
            content
                .projects
                .iter()
                .map(|p| Value::Str(p.name.to_string()))
                .collect(),
        )),
        ("changelog_last_serial", []) => Ok(Value::Int(content.serial as i64)),
        ("changelog_since_serial", [Param::Int(since)]) => Ok(Value::Array(
            content
                .changelog
                .iter()
                .filter(|c| c.serial as i64 > *since)
                .map(|c| {
                    Value::Array(vec![
                        Value::Str(c.name.to_string()),
                        Value::Str(c.version.to_string()),
                        Value::Int(c.timestamp as i64),
                        Value::Str(c.action.clone()),
                        Value::Int(c.serial as i64),
                    ])
                })
                .collect(),
        )),
        (
            "list_packages_with_serial"
            | "list_packages"
            | "changelog_last_serial"
            | "changelog_since_serial",
            _,
        ) => Err((-32602, format!("invalid parameters for {method}"))),
        _ => Err((-32601, format!("method not found: {method}"))),
    }
}

// ------------------------------------------------------------------ serving

fn not_found() -> Reply {
    Response::text(404, "not found\n").into()
}

fn redirect(location: &str) -> Reply {
    Response::text(301, "moved\n")
        .with_header("Location", location)
        .into()
}

impl State {
    fn origin(&self) -> &str {
        self.origin.get().map_or("", String::as_str)
    }

    /// `message`, with what to do about it when the canary serves the kit.
    fn not_served(&self, message: String) -> String {
        if self.kit {
            format!("{message}; {}", control::not_served_advice(self.origin()))
        } else {
            message
        }
    }

    fn handle(&self, req: Request) -> Reply {
        if let Some(reply) = control::intercept(self.secret.as_ref(), &req, self) {
            return reply;
        }
        let tripwire = self.log.record(&req);
        if tripwire {
            return Response::text(200, "tripped\n").into();
        }
        let path = req.path();
        if req.method == Method::Post && (path == "/pypi" || path == "/RPC2") {
            return self.xmlrpc(&req);
        }
        if !req.method.is_read() {
            return not_found();
        }
        if let Some(rest) = path.strip_prefix("/pypi/") {
            return self.json_api(rest);
        }
        if path == "/simple" {
            return redirect("/simple/");
        }
        if path == "/simple/" {
            return self.index(&req);
        }
        if let Some(rest) = path.strip_prefix("/simple/") {
            let raw = rest.strip_suffix('/').unwrap_or(rest);
            let Ok(name) = ProjectName::new(raw) else {
                return not_found();
            };
            if lock(&self.content).project(&name).is_none() {
                return not_found();
            }
            if rest != format!("{name}/") {
                return redirect(&format!("/simple/{name}/"));
            }
            return self.project(&req, &name);
        }
        if path.starts_with("/packages/") {
            return self.file(path);
        }
        not_found()
    }

    fn negotiated(
        &self,
        req: &Request,
        render: impl FnOnce(Format) -> String,
        serial: u64,
    ) -> Reply {
        let Some((format, content_type)) = egress_simple::negotiate(req.header("accept")) else {
            return Response::text(406, "no acceptable representation\n").into();
        };
        Response::new(200)
            .with_header("Content-Type", content_type)
            .with_header("Vary", "Accept")
            .with_header("X-PyPI-Last-Serial", serial.to_string())
            .with_body(render(format))
            .into()
    }

    fn index(&self, req: &Request) -> Reply {
        let (index, serial) = {
            let content = lock(&self.content);
            let index = IndexPage {
                projects: content
                    .projects
                    .iter()
                    .map(|p| p.name.to_string())
                    .collect(),
                api_version: None,
            };
            (index, content.serial)
        };
        self.negotiated(
            req,
            |format| match format {
                Format::Json => egress_simple::render_index_json(&index),
                Format::Html => egress_simple::render_index_html(&index),
            },
            serial,
        )
    }

    fn project(&self, req: &Request, name: &ProjectName) -> Reply {
        let (page, serial) = {
            let content = lock(&self.content);
            let Some(p) = content.project(name) else {
                return not_found();
            };
            (project_page(self.origin(), p), p.last_serial)
        };
        self.negotiated(
            req,
            |format| match format {
                Format::Json => egress_simple::render_project_json(&page),
                Format::Html => egress_simple::render_project_html(&page),
            },
            serial,
        )
    }

    /// XML-RPC at `/pypi` (and `/RPC2`); faults are `200`, as XML-RPC says.
    fn xmlrpc(&self, req: &Request) -> Reply {
        let ctype = req
            .header("content-type")
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        if !matches!(ctype.as_deref(), Some("text/xml" | "application/xml")) {
            return Response::text(415, "XML-RPC takes text/xml\n").into();
        }
        let (body, serial) = {
            let content = lock(&self.content);
            let body = match xmlrpc::parse_call(&req.body) {
                Err(e) => xmlrpc::render_fault(-32700, &format!("parse error: {e}")),
                Ok(call) => match rpc_result(&content, &call) {
                    Ok(value) => xmlrpc::render_response(&value),
                    Err((code, message)) => xmlrpc::render_fault(code, &message),
                },
            };
            (body, content.serial)
        };
        Response::new(200)
            .with_header("Content-Type", "text/xml; charset=utf-8")
            .with_header("X-PyPI-Last-Serial", serial.to_string())
            .with_body(body)
            .into()
    }

    /// `/pypi/<name>/json` and `/pypi/<name>/<version>/json`; `rest` is the
    /// path after `/pypi/`. Other spellings of a served name or version are
    /// redirected to the canonical one, as on PyPI.
    fn json_api(&self, rest: &str) -> Reply {
        let parts: Vec<&str> = rest.split('/').collect();
        let (raw_name, raw_version) = match parts.as_slice() {
            [name, "json"] => (*name, None),
            [name, version, "json"] => (*name, Some(*version)),
            _ => return not_found(),
        };
        let Ok(name) = ProjectName::new(raw_name) else {
            return not_found();
        };
        let content = lock(&self.content);
        let Some(p) = content.project(&name) else {
            return not_found();
        };
        let version = match raw_version {
            None => None,
            Some(raw) => {
                let Ok(wanted) = Version::new(raw) else {
                    return not_found();
                };
                let Some(v) = p.files.iter().map(File::version).find(|v| **v == wanted) else {
                    return not_found();
                };
                Some(v.clone())
            }
        };
        let canonical = match &version {
            None => format!("{name}/json"),
            Some(v) => format!("{name}/{v}/json"),
        };
        if rest != canonical {
            return redirect(&format!("/pypi/{canonical}"));
        }
        Response::new(200)
            .with_header("Content-Type", "application/json")
            .with_header("X-PyPI-Last-Serial", p.last_serial.to_string())
            .with_body(project_json(self.origin(), p, version.as_ref()))
            .into()
    }

    fn file(&self, path: &str) -> Reply {
        let found = {
            let content = lock(&self.content);
            content
                .projects
                .iter()
                .flat_map(|p| &p.files)
                .find_map(|f| {
                    let own = f.path();
                    if own == path {
                        let delay = content.slow.get(&f.dist.filename).copied();
                        Some((f.dist.bytes.clone(), delay))
                    } else if path.strip_suffix(".metadata") == Some(own.as_str()) {
                        f.metadata.clone().map(|m| (m, None))
                    } else {
                        None
                    }
                })
        };
        let Some((bytes, delay)) = found else {
            return not_found();
        };
        if let Some(delay) = delay {
            thread::sleep(delay);
        }
        Response::new(200)
            .with_header("Content-Type", "application/octet-stream")
            .with_body(bytes)
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prereleases() {
        let v = |s: &str| Version::new(s).unwrap();
        for pre in ["2.1.0rc1", "1.0a1", "1.0.b2", "1.0.dev3", "1.0rc1.post1"] {
            assert!(is_prerelease(&v(pre)), "{pre}");
        }
        for fin in ["1.0", "1.0.post1", "1.0+local.abc", "1!2.0"] {
            assert!(!is_prerelease(&v(fin)), "{fin}");
        }
    }

    #[test]
    fn upload_times_are_utc_civil_times() {
        assert_eq!(
            upload_times(BASE_TIME),
            (
                "2025-01-01T00:00:00".to_string(),
                "2025-01-01T00:00:00.000000Z".to_string()
            )
        );
        assert_eq!(upload_times(0).0, "1970-01-01T00:00:00");
        assert_eq!(upload_times(951_827_696).0, "2000-02-29T12:34:56");
        assert_eq!(upload_times(1_709_251_199).0, "2024-02-29T23:59:59");
    }
}
