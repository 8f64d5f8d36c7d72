//! The apt canary upstream: a small signed Debian repository the suite
//! controls, the apt counterpart of the PyPI and npm canaries.
//!
//! **Test fixture.** In-process it binds to 127.0.0.1 only; the standalone
//! canary binds where it is told (`ServeOptions`). It never connects
//! anywhere.
//!
//! Everything it serves is built by the project's own code: the `.deb`s by
//! `egress_artifacts::deb::build_deb` (`ar`, control and data tarballs),
//! `Packages` and `Release` by `egress-apt`, and the signatures by
//! `egress_signing::openpgp::OpenPgpKey`, an ed25519 key made at start from
//! a random seed. [`AptCanary::keyring`] is its binary keyring, what a
//! source's `signed-by` names:
//!
//! ```text
//! deb [signed-by=KEYRING] http://127.0.0.1:PORT/debian canary main
//! ```
//!
//! Layout, under the one archive root [`ARCHIVE`] (`/debian/`):
//! - `dists/canary/InRelease` (cleartext-signed; [`AptCanary::serve_inrelease`]
//!   can take it away, so that apt falls back to the next two), `Release`
//!   and `Release.gpg` (detached), announcing `Acquire-By-Hash: yes`;
//! - `dists/canary/main/binary-amd64/Packages` and `Packages.gz`, both listed
//!   in the `Release` with their SHA256 and size, served by path and at
//!   `main/binary-amd64/by-hash/SHA256/<hex>` (every index ever published
//!   stays there, as on Debian's mirrors, so that a client holding an older
//!   `InRelease` still finds what it lists);
//! - `dists/canary-unsigned/`: the same shape with no `InRelease` and no
//!   `Release.gpg` (an unsigned index), holding [`UNSIGNED`] alone;
//! - `dists/canary-security/` ([`SECURITY_DIST`]): `canary`'s packages,
//!   signed, in the shape of Debian's security archive: its `Release` lists
//!   `Components: updates/main` while its indexes are
//!   `main/binary-amd64/...`, as `bookworm-security`'s do (read off a real
//!   `InRelease`); apt accepts the stock `canary-security main` for it;
//! - `pool/main/<letter>/<name>/<name>_<version>_amd64.deb`.
//!
//! Every `Packages` stanza lists `Filename`, `Size`, `MD5sum` and `SHA256`,
//! as Debian's do, except where the table says otherwise.
//!
//! | package | version | role |
//! |---|---|---|
//! | `ec-present` | 1.0, `Depends: ec-dep` | in the snapshot |
//! | `ec-dep` | 1.0 | in the snapshot (apt resolves the dependency offline) |
//! | `ec-upstream-only` | 1.0 | upstream only |
//! | `ec-tripwire` | 1.0, whose `postinst` calls the tripwire | in the snapshot |
//! | `ec-template-text` | 1.0, every [`TEMPLATE_MARKERS`](egress_model::TEMPLATE_MARKERS) raw text in its `Description` | in the snapshot |
//! | `ec-no-digest` | 1.0, its stanza has `MD5sum` and no `SHA256` | upstream only |
//! | `ec-bad-digest` | 1.0, its stanza's `SHA256` and `Size` are of other bytes | upstream only |
//! | `ec-unsigned` | 1.0, in the `canary-unsigned` dist only | upstream only |
//!
//! The public keyring is also served at [`KEYRING_PATH`] (binary) and
//! [`KEYRING_ARMORED_PATH`] (armored).
//!
//! Served with [`ServeOptions`] holding a secret (the standalone canary,
//! `egress-conformance canary --protocol apt`): the control API of
//! [`crate::control`], a key derived from the secret (the same on every
//! start), and with [`ServeOptions::kit`] the conformance kit's packages
//! (`egress-kit-*`, `Architecture: all`, see [`super::kit`]) in the signed
//! dist too, the same bytes as `kit --protocol apt --canary ORIGIN`; the
//! plan's present package is then the kit's, so the mutations act on it.
//!
//! Every request, whatever its answer, goes into the request log all the
//! canaries keep, read through [`Upstream`]; requests below
//! [`TRIPWIRE_PATH`] are answered `200 tripped` and flagged. Only GET and
//! HEAD are served: every other method is logged and answered `405`.
//! Paths are matched raw, never decoded; anything not listed above is
//! `404`. No `Last-Modified` or `ETag` is sent and `If-Modified-Since` is
//! ignored: every hit is a full `200`, so a client always sees the current
//! content.
//!
//! Mutations (each re-renders the indexes and re-signs the `Release`, with a
//! later `Date`): [`Upstream::publish_new_version`] (a new `.deb` of a
//! package, `1.1` then `1.2`...), [`Upstream::replace_file_bytes`] (a `.deb`
//! rebuilt with one more file: same pool path, new bytes and digest) and
//! [`AptCanary::resign_release`] (nothing but a new `Date` and signature).

/// The `postinst` of [`TRIPWIRE`] (and of the kit's tripwire).
pub use super::kit::tripwire_postinst;
use super::kit::{self, template_description, MAINTAINER};
use crate::control::{self, Secret, ServeOptions};
use crate::request_log::{lock, RequestLog};
use egress_apt::{
    by_hash_path, IndexEntry, IndexPath, PackageEntry, Paragraph, PoolPath, ReleaseFields,
};
use egress_artifacts::DebSpec;
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_model::upstream::TRIPWIRE_PATH;
use egress_model::{
    Observation, ProjectName, Sha256Digest, Upstream, UpstreamError, UpstreamPlan, UpstreamRequest,
};
use egress_signing::openpgp::OpenPgpKey;
use egress_signing::SigningKey;
use md5::{Digest, Md5};
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The archive root, the path part of a source's URL.
pub const ARCHIVE: &str = "/debian";
/// The signed dist.
pub const DIST: &str = "canary";
/// The dist with neither `InRelease` nor `Release.gpg`.
pub const UNSIGNED_DIST: &str = "canary-unsigned";
/// The signed dist shaped as Debian's security archive: `Components:
/// updates/main`, the indexes under `main/`.
pub const SECURITY_DIST: &str = "canary-security";
/// The one component.
pub const COMPONENT: &str = "main";
/// The one architecture.
pub const ARCH: &str = "amd64";

/// In the snapshot; depends on [`DEP`].
pub const PRESENT: &str = "ec-present";
/// In the snapshot, only as [`PRESENT`]'s dependency.
pub const DEP: &str = "ec-dep";
/// Served by the canary; a snapshot must not hold it.
pub const UPSTREAM_ONLY: &str = "ec-upstream-only";
/// Its `postinst` calls the canary's tripwire.
pub const TRIPWIRE: &str = "ec-tripwire";
/// Its `Description` carries every raw [`TEMPLATE_MARKERS`] expression.
pub const TEMPLATE: &str = "ec-template-text";
/// Upstream only; its stanza has `MD5sum` but no `SHA256`.
pub const NO_DIGEST: &str = "ec-no-digest";
/// Upstream only; its stanza's `SHA256` and `Size` are of other bytes.
pub const BAD_DIGEST: &str = "ec-bad-digest";
/// Upstream only, in [`UNSIGNED_DIST`].
pub const UNSIGNED: &str = "ec-unsigned";

/// The package [`AptCanary::add_arch`] adds for `arch`: `ec-only-<arch>`.
pub fn arch_only(arch: &str) -> String {
    format!("ec-only-{arch}")
}

/// The version every package starts at.
pub const FIRST_VERSION: &str = "1.0";

/// The user ID on the canary's key.
pub const KEY_USER_ID: &str = "egress-conformance apt canary <canary@egress.invalid>";

/// Whether a snapshot built from the canary holds the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Snapshot,
    UpstreamOnly,
    /// The conformance kit's (standalone canary only): a lab's snapshot
    /// holds it when the lab added the kit; never in `snapshot_packages`.
    Kit,
}

/// What a stanza lists as the digest of its `.deb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    /// `Size`, `MD5sum` and `SHA256` of the served bytes.
    Served,
    /// `Size` and `MD5sum` only.
    Md5Only,
    /// `Size`, `MD5sum` and `SHA256` of other bytes.
    Other,
}

/// One `.deb` the canary serves.
struct Deb {
    name: String,
    version: String,
    /// The dist whose `Packages` lists it.
    dist: &'static str,
    /// Its architecture: [`ARCH`], or `all` for the conformance kit's.
    arch: String,
    role: Role,
    listed: Listed,
    /// The synopsis and the extended lines.
    description: String,
    depends: Option<String>,
    postinst: Option<String>,
    /// Files the data tarball holds.
    files: Vec<(String, Vec<u8>)>,
    bytes: Arc<[u8]>,
}

impl Deb {
    fn pool_path(&self) -> PoolPath {
        pool_path_of(&self.name, &self.version, &self.arch)
    }

    fn sha256(&self) -> Sha256Digest {
        Sha256Digest::of(&self.bytes)
    }

    fn spec(&self) -> DebSpec {
        DebSpec {
            package: self.name.clone(),
            version: self.version.clone(),
            architecture: self.arch.clone(),
            maintainer: MAINTAINER.to_string(),
            description: self.description.clone(),
            depends: self.depends.clone(),
            scripts: self
                .postinst
                .iter()
                .map(|script| ("postinst".to_string(), script.clone()))
                .collect(),
            files: self.files.clone(),
        }
    }

    /// (Re)builds the bytes from the fields.
    fn build(mut self) -> Self {
        self.bytes = egress_artifacts::build_deb(&self.spec()).into();
        self
    }

    /// Its `Packages` stanza.
    fn stanza(&self) -> PackageEntry {
        let other = format!("not the .deb of {} {}\n", self.name, self.version).into_bytes();
        let (size, md5, sha256) = match self.listed {
            Listed::Served | Listed::Md5Only => (
                self.bytes.len(),
                md5_hex(&self.bytes),
                Sha256Digest::of(&self.bytes),
            ),
            Listed::Other => (other.len(), md5_hex(&other), Sha256Digest::of(&other)),
        };
        // The control file's fields, as dpkg-scanpackages copies them,
        // with where and what the file is before the Description.
        let control = egress_artifacts::deb_control_paragraph(&self.bytes)
            .expect("the canary reads back the .deb it built");
        let mut fields: Vec<(String, String)> = control
            .fields()
            .filter(|(name, _)| *name != "Description")
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let mut push = |name: &str, value: String| fields.push((name.to_string(), value));
        push("Priority", "optional".to_string());
        push("Section", "misc".to_string());
        push("Filename", self.pool_path().as_str().to_string());
        push("Size", size.to_string());
        push("MD5sum", md5.clone());
        let sha256 = (self.listed != Listed::Md5Only).then_some(sha256);
        if let Some(sha256) = &sha256 {
            push("SHA256", sha256.to_hex());
        }
        push("Description", self.description.clone());
        let mut p = Paragraph::new();
        for (name, value) in fields {
            p.push(&name, &value)
                .unwrap_or_else(|e| panic!("the canary's own stanza field {name}: {e}"));
        }
        PackageEntry {
            package: self.name.clone(),
            version: self.version.clone(),
            architecture: self.arch.clone(),
            filename: self.pool_path(),
            size: size as u64,
            sha256,
            md5: Some(md5),
            paragraph: p,
        }
    }
}

/// `pool/main/<first letter>/<name>/<name>_<version>_amd64.deb` (every
/// canary name starts with `e`, so the `lib*` rule never applies).
pub fn pool_path(name: &str, version: &str) -> PoolPath {
    pool_path_of(name, version, ARCH)
}

/// The same for any architecture (the kit's packages are `all`).
fn pool_path_of(name: &str, version: &str, arch: &str) -> PoolPath {
    let letter = name.get(..1).unwrap_or("_");
    let text = format!("pool/{COMPONENT}/{letter}/{name}/{name}_{version}_{arch}.deb");
    PoolPath::new(&text).expect("the canary's names and versions make valid pool paths")
}

fn md5_hex(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A file the canary serves, below [`ARCHIVE`].
#[derive(Clone)]
struct Served {
    bytes: Arc<[u8]>,
    content_type: &'static str,
}

struct Content {
    debs: Vec<Deb>,
    /// Every file by its path below the archive root (no leading `/`):
    /// the current dists and the pool.
    files: BTreeMap<String, Served>,
    /// Every index ever published, by its by-hash path; never shrinks.
    by_hash: BTreeMap<String, Served>,
    /// The `Date` of the last `Release`, in Unix seconds.
    date: u64,
    /// `.deb`s rebuilt during the run.
    replaced: u32,
    /// Whether `InRelease` is served (see [`AptCanary::serve_inrelease`]).
    inrelease: bool,
    /// The `Valid-Until` of every `Release` (see [`AptCanary::set_valid_until`]).
    valid_until: Option<u64>,
    /// Architectures served besides [`ARCH`] (see [`AptCanary::add_arch`]).
    archs: Vec<String>,
}

struct State {
    key: OpenPgpKey,
    /// `http://127.0.0.1:PORT`.
    origin: String,
    content: Mutex<Content>,
    log: RequestLog,
    /// The control API's secret, when the canary runs standalone.
    secret: Option<Secret>,
    /// Whether it serves the conformance kit's packages (see
    /// [`ServeOptions::kit`]).
    kit: bool,
}

/// The apt canary upstream; see the module docs. Stops on
/// [`AptCanary::stop`] or drop.
pub struct AptCanary {
    server: ServerHandle,
    state: Arc<State>,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn unix_u32(secs: u64) -> u32 {
    u32::try_from(secs).unwrap_or(u32::MAX)
}

impl AptCanary {
    /// Binds 127.0.0.1 on a free port, makes its key, then builds and
    /// signs the repository (the tripwire's `postinst` needs the port).
    pub fn start() -> io::Result<AptCanary> {
        Self::serve(&ServeOptions::default())
    }

    /// Binds where `options` say, with a control API when they give a
    /// secret (the standalone canary, `canary --protocol apt`).
    ///
    /// Without a secret the key is made from a random seed, created two
    /// hours before the first `Release`. With one, the key is derived from
    /// the secret (see [`standalone_seed`]) and created at
    /// [`STANDALONE_KEY_CREATED`]: the same secret file gives the same key
    /// on every start, so a keyring a lab gave its mirror once stays good.
    pub fn serve(options: &ServeOptions) -> io::Result<AptCanary> {
        let now = unix_now();
        let (seed, created) = match &options.secret {
            Some(secret) => (standalone_seed(secret), STANDALONE_KEY_CREATED),
            None => {
                let mut seed = [0u8; 32];
                getrandom::getrandom(&mut seed)
                    .map_err(|e| io::Error::other(format!("apt canary key: {e}")))?;
                // The key predates every signature: gpgv refuses a
                // signature made before its key, and the first Release is
                // dated an hour back.
                (seed, unix_u32(now.saturating_sub(7_200)))
            }
        };
        let signing = SigningKey::from_seed(seed, "apt canary");
        let key = OpenPgpKey::from_signing_key(&signing, KEY_USER_ID, created);
        // The content names the origin, known only once bound: bind first,
        // answering 503 until the state is in the cell.
        let cell: Arc<OnceLock<Arc<State>>> = Arc::default();
        let handler_cell = Arc::clone(&cell);
        let server = Server::bind(
            options.listen,
            move |req: Request| match handler_cell.get() {
                Some(state) => state.handle(&req),
                None => Response::text(503, "starting\n").into(),
            },
            Limits::default(),
        )?;
        let origin = options.origin(&server);
        let mut debs = initial_debs(&origin);
        if options.kit {
            debs.extend(kit_debs(&origin));
        }
        let state = Arc::new(State {
            key,
            origin: origin.clone(),
            content: Mutex::new(Content {
                debs,
                files: BTreeMap::new(),
                by_hash: BTreeMap::new(),
                // Behind the clock: a Release dated in the future is refused.
                date: now.saturating_sub(3_600),
                replaced: 0,
                inrelease: true,
                valid_until: None,
                archs: Vec::new(),
            }),
            log: RequestLog::default(),
            secret: options.secret.clone(),
            kit: options.kit,
        });
        state.republish(false);
        let _ = cell.set(Arc::clone(&state));
        Ok(AptCanary { server, state })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.state.origin.clone()
    }

    /// `http://127.0.0.1:PORT/debian`, the URL a source names.
    pub fn archive_url(&self) -> String {
        format!("{}{ARCHIVE}", self.state.origin)
    }

    /// The signed dist, [`DIST`].
    pub fn dist(&self) -> &'static str {
        DIST
    }

    /// The unsigned dist, [`UNSIGNED_DIST`].
    pub fn unsigned_dist(&self) -> &'static str {
        UNSIGNED_DIST
    }

    /// The one component, [`COMPONENT`].
    pub fn component(&self) -> &'static str {
        COMPONENT
    }

    /// The binary OpenPGP keyring of the canary's key, for `signed-by`.
    pub fn keyring(&self) -> Vec<u8> {
        self.state.key.public_keyring()
    }

    /// The same keyring, ASCII-armored.
    pub fn keyring_armored(&self) -> String {
        self.state.key.public_keyring_armored()
    }

    /// The key's fingerprint.
    pub fn fingerprint(&self) -> String {
        self.state.key.fingerprint().to_string()
    }

    /// A `sources.list` line for `dist`, its signatures checked against the
    /// keyring file at `keyring`.
    pub fn source_line(&self, keyring: &std::path::Path, dist: &str) -> String {
        format!(
            "deb [signed-by={}] {} {dist} {COMPONENT}",
            keyring.display(),
            self.archive_url()
        )
    }

    /// The pool path, bytes and SHA256 of `name` `version`, if served.
    pub fn deb(&self, name: &str, version: &str) -> Option<(PoolPath, Vec<u8>, Sha256Digest)> {
        let content = lock(&self.state.content);
        let d = content
            .debs
            .iter()
            .find(|d| d.name == name && d.version == version)?;
        Some((d.pool_path(), d.bytes.to_vec(), d.sha256()))
    }

    /// `(name, version)` of every `.deb` a snapshot built from the canary
    /// holds (and, if asked, of the upstream-only ones too), in order.
    pub fn snapshot_packages(&self, include_upstream_only: bool) -> Vec<(String, String)> {
        lock(&self.state.content)
            .debs
            .iter()
            .filter(|d| d.role == Role::Snapshot || (include_upstream_only && d.role != Role::Kit))
            .map(|d| (d.name.clone(), d.version.clone()))
            .collect()
    }

    /// The names a snapshot holds: what `apt-get install` is given.
    pub fn snapshot_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (name, _) in self.snapshot_packages(false) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The bytes served at `path` below the archive root (e.g.
    /// `dists/canary/InRelease`), if any.
    pub fn file(&self, path: &str) -> Option<Vec<u8>> {
        let content = lock(&self.state.content);
        content
            .files
            .get(path)
            .or_else(|| content.by_hash.get(path))
            .map(|s| s.bytes.to_vec())
    }

    /// The whole request log.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.state.log.since(0)
    }

    /// Whether the signed dist's `InRelease` is served (it is from the
    /// start). Without it, apt falls back to `Release` and `Release.gpg`,
    /// which are always served; nothing else changes.
    pub fn serve_inrelease(&self, served: bool) {
        lock(&self.state.content).inrelease = served;
    }

    /// Gives every `Release` a `Valid-Until` (Unix seconds; `None`, the
    /// default, for none) and signs them again with a later `Date`: in the
    /// past, it makes an expired `Release` that apt and `snapshot build`
    /// refuse.
    pub fn set_valid_until(&self, until: Option<u64>) {
        lock(&self.state.content).valid_until = until;
        self.state.republish(true);
    }

    /// Serves a second architecture beside [`ARCH`]: its
    /// `main/binary-<arch>/Packages` (and `.gz`), listed in every
    /// `Release`'s `Architectures` and `SHA256`, holds one package of its
    /// own, [`arch_only`]`(arch)` 1.0 (in the snapshot), and the packages
    /// built for `all`; the [`ARCH`] index does not list it. Signs again
    /// with a later `Date`. Returns the new package's name. Nothing changes
    /// until this is called.
    pub fn add_arch(&self, arch: &str) -> String {
        let name = arch_only(arch);
        {
            let mut content = lock(&self.state.content);
            if !content.archs.iter().any(|a| a == arch) && arch != ARCH {
                content.archs.push(arch.to_string());
                let mut deb = new_deb(
                    &name,
                    FIRST_VERSION,
                    Role::Snapshot,
                    "A package built for one other architecture",
                    DIST,
                    Listed::Served,
                );
                deb.arch = arch.to_string();
                content.debs.push(deb.build());
            }
        }
        self.state.republish(true);
        name
    }

    /// Re-signs the signed dist's `Release` with a later `Date`: nothing
    /// else changes. Returns the change of `InRelease`.
    pub fn resign_release(&self) -> Observation {
        self.state.resign_release()
    }

    pub fn stop(self) {
        self.server.stop();
    }
}

impl Upstream for AptCanary {
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

/// What the control API drives (see [`crate::control`]).
impl Upstream for State {
    fn plan(&self) -> UpstreamPlan {
        State::plan(self)
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
}

/// The creation time of the standalone canary's key (2020-01-01T00:00:00Z):
/// fixed, so that one secret always gives one key and fingerprint.
pub const STANDALONE_KEY_CREATED: u32 = 1_577_836_800;

/// The seed of the standalone canary's key: the SHA-256 of a fixed label
/// and the control secret. The secret never leaves the canary's host, so
/// neither does the key; the same secret file gives the same key.
pub fn standalone_seed(secret: &Secret) -> [u8; 32] {
    let mut input = b"egress-conformance apt canary key\n".to_vec();
    input.extend_from_slice(secret.as_str().as_bytes());
    *Sha256Digest::of(&input).as_bytes()
}

/// Where the canary serves its public keyring, binary and armored (outside
/// the archive root, so that no source line reaches it by accident).
pub const KEYRING_PATH: &str = "/keyring.gpg";
pub const KEYRING_ARMORED_PATH: &str = "/keyring.asc";

// ------------------------------------------------------------------ content

fn text_file(path: &str, text: &str) -> (String, Vec<u8>) {
    (path.to_string(), text.as_bytes().to_vec())
}

/// The tripwire URL [`TRIPWIRE`]'s `postinst` calls, on `origin`.
pub fn tripwire_url(origin: &str) -> String {
    format!("{origin}{TRIPWIRE_PATH}{TRIPWIRE}-{FIRST_VERSION}")
}

fn description(synopsis: &str) -> String {
    format!("{synopsis}\n A package served by the egress-conformance apt canary.")
}

fn readme(name: &str, version: &str) -> (String, Vec<u8>) {
    text_file(
        &format!("usr/share/doc/{name}/README"),
        &format!("{name} {version}, served by the egress-conformance apt canary\n"),
    )
}

fn new_deb(
    name: &str,
    version: &str,
    role: Role,
    synopsis: &str,
    dist: &'static str,
    listed: Listed,
) -> Deb {
    Deb {
        name: name.to_string(),
        version: version.to_string(),
        dist,
        arch: ARCH.to_string(),
        role,
        listed,
        description: description(synopsis),
        depends: None,
        postinst: None,
        files: vec![readme(name, version)],
        bytes: Arc::from(Vec::new()),
    }
}

/// The conformance kit's packages, built from the kit's own specs with the
/// tripwire aimed at `origin`: the same bytes as `kit --protocol apt
/// --canary ORIGIN`.
fn kit_debs(origin: &str) -> Vec<Deb> {
    kit::specs(origin)
        .into_iter()
        .map(|spec| {
            let postinst = spec
                .scripts
                .iter()
                .find(|(name, _)| name == "postinst")
                .map(|(_, text)| text.clone());
            Deb {
                name: spec.package,
                version: spec.version,
                dist: DIST,
                arch: spec.architecture,
                role: Role::Kit,
                listed: Listed::Served,
                description: spec.description,
                depends: spec.depends,
                postinst,
                files: spec.files,
                bytes: Arc::from(Vec::new()),
            }
            .build()
        })
        .collect()
}

fn initial_debs(origin: &str) -> Vec<Deb> {
    let v = FIRST_VERSION;
    let mut present = new_deb(
        PRESENT,
        v,
        Role::Snapshot,
        "Present in the snapshot",
        DIST,
        Listed::Served,
    );
    present.depends = Some(DEP.to_string());
    let dep = new_deb(
        DEP,
        v,
        Role::Snapshot,
        "The dependency of ec-present",
        DIST,
        Listed::Served,
    );
    let upstream_only = new_deb(
        UPSTREAM_ONLY,
        v,
        Role::UpstreamOnly,
        "Only upstream, never in a snapshot",
        DIST,
        Listed::Served,
    );
    let mut tripwire = new_deb(
        TRIPWIRE,
        v,
        Role::Snapshot,
        "Its postinst calls the canary tripwire",
        DIST,
        Listed::Served,
    );
    tripwire.postinst = Some(tripwire_postinst(&tripwire_url(origin)));
    let mut template = new_deb(TEMPLATE, v, Role::Snapshot, "", DIST, Listed::Served);
    template.description = template_description();
    let no_digest = new_deb(
        NO_DIGEST,
        v,
        Role::UpstreamOnly,
        "Listed with MD5sum and no SHA256",
        DIST,
        Listed::Md5Only,
    );
    let bad_digest = new_deb(
        BAD_DIGEST,
        v,
        Role::UpstreamOnly,
        "Listed with the SHA256 and size of other bytes",
        DIST,
        Listed::Other,
    );
    let unsigned = new_deb(
        UNSIGNED,
        v,
        Role::UpstreamOnly,
        "Listed only in a dist whose Release is not signed",
        UNSIGNED_DIST,
        Listed::Served,
    );
    [
        present,
        dep,
        upstream_only,
        tripwire,
        template,
        no_digest,
        bad_digest,
        unsigned,
    ]
    .into_iter()
    .map(Deb::build)
    .collect()
}

/// A dist's `Packages` for `arch`: the stanzas of its packages built for
/// `arch` or `all`, in the canary's order.
fn packages_text(debs: &[Deb], dist: &str, arch: &str) -> String {
    let stanzas: Vec<PackageEntry> = debs
        .iter()
        .filter(|d| d.dist == dist && (d.arch == arch || d.arch == "all"))
        .map(Deb::stanza)
        .collect();
    egress_apt::render_packages(&stanzas.iter().collect::<Vec<_>>())
}

impl State {
    /// Re-renders every index and `Release` and re-signs; a later `Date`
    /// when `later`.
    fn republish(&self, later: bool) {
        let mut content = lock(&self.content);
        if later {
            // Later than the last one and, while possible, not ahead of the
            // clock (a Release from the future is refused).
            content.date = (content.date + 1).max(unix_now().saturating_sub(60));
        }
        let date = content.date;
        let mut files = BTreeMap::new();
        for d in &content.debs {
            files.insert(
                d.pool_path().as_str().to_string(),
                Served {
                    bytes: Arc::clone(&d.bytes),
                    content_type: "application/vnd.debian.binary-package",
                },
            );
        }
        let mut by_hash = Vec::new();
        let mut archs = vec![ARCH.to_string()];
        archs.extend(content.archs.iter().cloned());
        for (dist, signed) in [(DIST, true), (UNSIGNED_DIST, false), (SECURITY_DIST, true)] {
            let mut entries = Vec::new();
            let holds = if dist == SECURITY_DIST { DIST } else { dist };
            for arch in &archs {
                let packages = packages_text(&content.debs, holds, arch).into_bytes();
                let packages_gz = egress_artifacts::gzip(&packages);
                let dir = format!("{COMPONENT}/binary-{arch}");
                for (path, bytes, content_type) in [
                    (
                        format!("{dir}/Packages"),
                        packages,
                        "text/plain; charset=utf-8",
                    ),
                    (
                        format!("{dir}/Packages.gz"),
                        packages_gz,
                        "application/gzip",
                    ),
                ] {
                    let index = IndexPath::new(&path).expect("a valid index path");
                    let digest = Sha256Digest::of(&bytes);
                    let served = Served {
                        bytes: bytes.clone().into(),
                        content_type,
                    };
                    by_hash.push((
                        format!("dists/{dist}/{}", by_hash_path(&index, &digest)),
                        served.clone(),
                    ));
                    files.insert(format!("dists/{dist}/{path}"), served);
                    entries.push(IndexEntry {
                        path: index,
                        size: bytes.len() as u64,
                        digest,
                    });
                }
            }
            let mut fields = release_fields(dist, date);
            fields.valid_until = content.valid_until;
            fields.architectures = archs.clone();
            let release = egress_apt::render_release(&fields, &entries);
            if signed {
                let created = unix_u32(date);
                let inrelease = self.key.sign_cleartext(&release, created);
                let gpg = self.key.sign_detached(release.as_bytes(), created);
                files.insert(format!("dists/{dist}/InRelease"), text(inrelease));
                files.insert(format!("dists/{dist}/Release.gpg"), text(gpg));
            }
            files.insert(format!("dists/{dist}/Release"), text(release));
        }
        content.files = files;
        content.by_hash.extend(by_hash);
    }

    fn inrelease_digest(&self) -> Option<Sha256Digest> {
        lock(&self.content)
            .files
            .get(&format!("dists/{DIST}/InRelease"))
            .map(|s| Sha256Digest::of(&s.bytes))
    }

    fn resign_release(&self) -> Observation {
        let before = self.inrelease_digest();
        self.republish(true);
        let after = self
            .inrelease_digest()
            .unwrap_or_else(|| Sha256Digest::of(b""));
        Observation::UpstreamMutation {
            description: format!(
                "re-signed the Release of {DIST} at the apt canary (a new Date and signature, the same indexes)"
            ),
            filename: "InRelease".to_string(),
            before,
            after,
        }
    }

    /// A mutation of something the canary does not serve; a standalone
    /// canary says how to make the snapshot hold what it serves.
    fn not_served(&self, message: String) -> UpstreamError {
        let message = if self.secret.is_some() {
            format!("{message}; {}", control::not_served_advice(&self.origin))
        } else {
            message
        };
        UpstreamError::NotServed { message }
    }

    /// Publishes `<name>` `1.<n>` (the next minor version it has not got):
    /// a new `.deb` with the same fields, listed beside the old ones.
    fn publish(&self, name: &str) -> Result<Observation, UpstreamError> {
        let observation = {
            let mut content = lock(&self.content);
            let versions: Vec<&Deb> = content.debs.iter().filter(|d| d.name == name).collect();
            let Some(last) = versions.last() else {
                return Err(self.not_served(format!("the apt canary serves no package {name}")));
            };
            let version = format!("1.{}", versions.len());
            let mut new = new_deb(
                name,
                &version,
                last.role,
                "Published at the canary during the run",
                last.dist,
                last.listed,
            );
            new.depends = last.depends.clone();
            new.postinst = last.postinst.clone();
            new.arch = last.arch.clone();
            let new = new.build();
            let observation = Observation::UpstreamMutation {
                description: format!(
                    "published {name} {version} at the apt canary ({} re-signed)",
                    new.dist
                ),
                filename: new.pool_path().file_name().to_string(),
                before: None,
                after: new.sha256(),
            };
            content.debs.push(new);
            observation
        };
        self.republish(true);
        Ok(observation)
    }

    /// Rebuilds the `.deb` whose pool file name is `filename` with one more
    /// file: the same pool path, new bytes, the `Packages` digest updated.
    fn replace(&self, filename: &str) -> Result<Observation, UpstreamError> {
        let observation = {
            let mut content = lock(&self.content);
            let n = content.replaced;
            let Some(deb) = content
                .debs
                .iter_mut()
                .find(|d| d.pool_path().file_name() == filename)
            else {
                return Err(
                    self.not_served(format!("the apt canary serves no .deb named {filename}"))
                );
            };
            let before = deb.sha256();
            deb.files.push(text_file(
                &format!("usr/share/doc/{}/replaced-{n}", deb.name),
                &format!("replaced at the canary during the run ({n})\n"),
            ));
            deb.bytes = egress_artifacts::build_deb(&deb.spec()).into();
            let after = deb.sha256();
            let dist = deb.dist;
            content.replaced += 1;
            Observation::UpstreamMutation {
                description: format!(
                    "replaced the bytes of {filename} at the apt canary (same pool path, new SHA256 in Packages, {dist} re-signed)"
                ),
                filename: filename.to_string(),
                before: Some(before),
                after,
            }
        };
        self.republish(true);
        Ok(observation)
    }

    fn plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let upstream_only_paths = lock(&self.content)
            .debs
            .iter()
            .filter(|d| d.name == UPSTREAM_ONLY)
            .map(|d| format!("{ARCHIVE}/{}", d.pool_path()))
            .collect();
        UpstreamPlan {
            origin: self.origin.clone(),
            index_url: format!("{}{ARCHIVE}/", self.origin),
            // The package a lab's snapshot holds: the kit's when served.
            present: name(if self.kit { kit::PRESENT } else { PRESENT }),
            upstream_only: name(UPSTREAM_ONLY),
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

    fn handle(&self, req: &Request) -> Reply {
        if let Some(reply) = control::intercept(self.secret.as_ref(), req, self) {
            return reply;
        }
        if self.log.record(req) {
            return Response::text(200, "tripped\n").into();
        }
        if !req.method.is_read() {
            return Response::new(405)
                .with_header("Allow", "GET, HEAD")
                .with_header("Content-Type", "text/plain; charset=utf-8")
                .with_body("the canary upstream accepts no writes\n")
                .into();
        }
        let keyring = match req.path() {
            KEYRING_PATH => Some(self.key.public_keyring()),
            KEYRING_ARMORED_PATH => Some(self.key.public_keyring_armored().into_bytes()),
            _ => None,
        };
        if let Some(bytes) = keyring {
            return Response::new(200)
                .with_header("Content-Type", "application/pgp-keys")
                .with_body(bytes)
                .into();
        }
        let found = req
            .path()
            .strip_prefix(ARCHIVE)
            .and_then(|p| p.strip_prefix('/'))
            .and_then(|p| {
                let content = lock(&self.content);
                if !content.inrelease && p.ends_with("/InRelease") {
                    return None;
                }
                content
                    .files
                    .get(p)
                    .or_else(|| content.by_hash.get(p))
                    .cloned()
            });
        match found {
            Some(s) => Response::new(200)
                .with_header("Content-Type", s.content_type)
                .with_body(s.bytes)
                .into(),
            None => Response::text(404, "not found\n").into(),
        }
    }
}

fn text(s: String) -> Served {
    Served {
        bytes: s.into_bytes().into(),
        content_type: "text/plain; charset=utf-8",
    }
}

fn release_fields(dist: &str, date: u64) -> ReleaseFields {
    ReleaseFields {
        origin: "egress-conformance".to_string(),
        label: "egress-conformance canary".to_string(),
        suite: dist.to_string(),
        codename: dist.to_string(),
        date,
        valid_until: None,
        architectures: vec![ARCH.to_string()],
        components: vec![if dist == SECURITY_DIST {
            format!("updates/{COMPONENT}")
        } else {
            COMPONENT.to_string()
        }],
        description: Some("The egress-conformance apt canary upstream".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::TEMPLATE_MARKERS;

    #[test]
    fn pool_paths() {
        assert_eq!(
            pool_path(PRESENT, "1.0").as_str(),
            "pool/main/e/ec-present/ec-present_1.0_amd64.deb"
        );
    }

    #[test]
    fn template_text_carries_every_marker() {
        let d = template_description();
        for (raw, _) in TEMPLATE_MARKERS {
            assert!(d.contains(raw), "{raw}");
        }
    }
}
