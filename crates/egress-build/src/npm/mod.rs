//! The npm part of a build: every tarball a `package-lock.json` pins,
//! fetched from its `resolved` URL (a registry package written without
//! one is resolved against `--npm-upstream` first, `resolve.rs`) and verified against the lock's sha512
//! `integrity` before it may enter the snapshot, and served with
//! pre-rendered packuments. A mismatch refuses the whole snapshot. Local
//! tarballs (`--npm-dist`, in `dist.rs`) are added as they are. A universe
//! (`--npm-universe`, in `universe.rs`) is selected from the upstream
//! registry's packuments and served with their publish times.
//!
//! With `--os`, `--cpu` or `--libc`, a lock's optional entry whose
//! platform fields exclude the target is left out (rule `platform`), as npm
//! leaves it out there; a required one that excludes it refuses the build.
//!
//! Then the upstream registry's signatures ([`fetch_npm_signatures`]): the
//! registry is the `resolved` URL less `/<name>/-/<file>`; its keys
//! document (`/-/npm/v1/keys`) is kept verbatim, and each pinned version's
//! `dist.signatures` from its packument is replayed verbatim, but only when
//! the packument lists exactly the integrity the snapshot serves (what the
//! signatures sign). Nothing is signed or verified here: the client
//! verifies. Without a keys document, no signatures are replayed (npm
//! cannot check a signature whose key the registry does not publish).

mod dist;
mod resolve;
mod universe;

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::progress::Progress;
use crate::select::Dropped;
use egress_lock::{NpmLock, NpmPin};
use egress_model::Url;
use egress_select::npm::Platform;
use egress_snapshot::npm::{is_keys_document, is_signatures_shape};
use egress_snapshot::{pool, NpmVersionMeta, SnapshotBuilder, NPM_KEYS_PATH};
use egress_transcript::{Client, Limits};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use universe::DEFAULT_UPSTREAM;

/// The npm inputs of a build, and their flags.
#[derive(clap::Args, Default, Debug)]
#[group(id = "npm-inputs")]
pub struct Inputs {
    /// An npm package-lock.json (lockfile version 2 or 3): every tarball it
    /// pins is fetched from its `resolved` URL (a package without one, as
    /// npm's omit-lockfile-registry-resolved writes it, from --npm-upstream),
    /// verified against its sha512 integrity, and served with pre-rendered
    /// packuments.
    #[arg(long, value_name = "FILE")]
    pub npm_lock: Option<PathBuf>,
    /// A directory of npm tarballs (.tgz) to add as they are, each named by
    /// its own package.json, e.g. the conformance kit; repeatable; needs
    /// --npm-registry-url.
    #[arg(long, value_name = "DIR")]
    pub npm_dist: Vec<PathBuf>,
    /// The mirror's absolute base URL as npm clients will reach it, e.g.
    /// http://127.0.0.1:8080/; required with --npm-lock and --npm-dist, because npm needs
    /// absolute tarball URLs in packuments.
    #[arg(long, value_name = "URL")]
    pub npm_registry_url: Option<String>,
    /// An npm universe: one package name per line, with an optional semver
    /// range (`react@^18` or `react ^18`); `#` starts a comment.
    #[arg(
        id = "npm_universe",
        long = "npm-universe",
        value_name = "FILE",
        help_heading = "Universe"
    )]
    pub universe: Option<PathBuf>,
    /// The npm registry an --npm-universe is read from, and the
    /// --npm-lock packages that have no `resolved` URL are resolved against
    /// (default https://registry.npmjs.org/); not the mirror's own address
    /// (--npm-registry-url).
    #[arg(
        id = "npm_upstream",
        long = "npm-upstream",
        value_name = "URL",
        help_heading = "Universe"
    )]
    pub registry: Option<String>,
    #[command(flatten)]
    pub platform: PlatformArgs,
}

/// The npm target: optional packages whose `os`, `cpu` or `libc` exclude
/// it are left out (each empty list: any).
#[derive(clap::Args, Default, Clone, Debug)]
#[group(id = "npm-platform")]
pub struct PlatformArgs {
    /// npm: the target's operating system (e.g. linux); optional platform
    /// packages for other systems are left out; repeatable.
    #[arg(long, value_name = "OS", help_heading = "Targets")]
    pub os: Vec<String>,
    /// npm: the target's CPU (e.g. x64, arm64); repeatable.
    #[arg(long, value_name = "CPU", help_heading = "Targets")]
    pub cpu: Vec<String>,
    /// npm: the target's C library (glibc or musl); repeatable.
    #[arg(long, value_name = "LIBC", help_heading = "Targets")]
    pub libc: Vec<String>,
}

pub(crate) struct Npm {
    inputs: Inputs,
    platform: Platform,
    upstream: Option<Url>,
    lock: Option<NpmLock>,
    tarballs: Vec<NpmStaged>,
    local: Vec<dist::LocalTarball>,
    evidence: NpmRegistryEvidence,
    universe: Vec<universe::Line>,
    /// The universe's tarballs, each verified and kept as a partial file.
    chosen: Vec<(universe::Chosen, PathBuf)>,
    dropped: Dropped,
    /// The universe's packages and versions selected.
    counts: (usize, usize),
    /// A dry run's files.
    planned_files: usize,
}

impl Npm {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            platform: Platform::default(),
            upstream: None,
            lock: None,
            tarballs: Vec::new(),
            local: Vec::new(),
            evidence: NpmRegistryEvidence::default(),
            universe: Vec::new(),
            chosen: Vec::new(),
            dropped: Dropped::default(),
            counts: (0, 0),
            planned_files: 0,
        }
    }

    /// The flag named in messages about the npm inputs.
    fn flag(&self) -> &'static str {
        if self.inputs.npm_lock.is_some() {
            "--npm-lock"
        } else if self.inputs.universe.is_some() {
            "--npm-universe"
        } else {
            "--npm-dist"
        }
    }
}

/// `--os`, `--cpu`, `--libc` as a target: each value a plain word (no `!`:
/// a target is what it is), `--libc` one of npm's two.
fn platform(args: &PlatformArgs) -> Result<Platform, BuildError> {
    for (flag, values) in [
        ("--os", &args.os),
        ("--cpu", &args.cpu),
        ("--libc", &args.libc),
    ] {
        for v in values {
            let word = !v.is_empty()
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !word {
                return Err(BuildError::Usage(format!(
                    "{flag} {v:?}: give the target's value as npm names it (e.g. --os linux --cpu x64 --libc glibc)"
                )));
            }
            if flag == "--libc" && v != "glibc" && v != "musl" {
                return Err(BuildError::Usage(format!(
                    "--libc {v:?}: npm knows glibc and musl"
                )));
            }
        }
    }
    Ok(Platform {
        os: args.os.clone(),
        cpu: args.cpu.clone(),
        libc: args.libc.clone(),
    })
}

/// The upstream registry as a directory URL (trailing `/`), no query.
fn upstream_url(raw: &str) -> Result<Url, BuildError> {
    let url = Url::parse(raw).map_err(|e| BuildError::Usage(format!("--npm-upstream: {e}")))?;
    if url.path_and_query().contains('?') {
        return Err(BuildError::Usage(
            "--npm-upstream: must not carry a query string".into(),
        ));
    }
    let path = url.path();
    Ok(if path.ends_with('/') {
        url
    } else {
        url.with_path(&format!("{path}/"))
    })
}

/// Leaves out the lock's optional entries whose platform fields exclude
/// the target (rule `platform`), as npm does there; a required entry that
/// excludes it is an error naming its `packages` key and the target.
fn filter_lock(
    lock: &mut NpmLock,
    platform: &Platform,
    dropped: &mut Dropped,
) -> Result<(), BuildError> {
    if platform.is_any() {
        return Ok(());
    }
    let mut kept = Vec::new();
    for pin in std::mem::take(&mut lock.pins) {
        let Err(field) = platform.accepts(&pin.os, &pin.cpu, &pin.libc) else {
            kept.push(pin);
            continue;
        };
        let listed = match field {
            "os" => &pin.os,
            "cpu" => &pin.cpu,
            _ => &pin.libc,
        };
        if !pin.optional {
            return Err(BuildError::Usage(format!(
                "{}: package {:?} ({}@{}) is required (not optional) and its {field} {listed:?} excludes the target {}; npm would refuse to install it there: build for a platform it supports, or regenerate the lock",
                lock.file,
                pin.key,
                pin.name,
                pin.version,
                platform.describe()
            )));
        }
        dropped.drop(
            "platform",
            &format!(
                "{}@{} ({field} {})",
                pin.name,
                pin.version,
                listed.join(",")
            ),
            None,
        );
    }
    lock.pins = kept;
    Ok(())
}

impl Part for Npm {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--npm-lock", "--npm-dist", "--npm-universe"]
    }

    fn has_inputs(&self) -> bool {
        self.inputs.npm_lock.is_some()
            || !self.inputs.npm_dist.is_empty()
            || self.inputs.universe.is_some()
    }

    fn check(&mut self, builder: &mut SnapshotBuilder) -> Result<(), BuildError> {
        let flag = self.flag();
        let reads_upstream = self.inputs.universe.is_some() || self.inputs.npm_lock.is_some();
        match (&self.inputs.registry, reads_upstream) {
            (Some(_), false) => {
                return Err(BuildError::Usage(
                    "--npm-upstream is only used with --npm-universe or --npm-lock".into(),
                ))
            }
            (Some(raw), true) => self.upstream = Some(upstream_url(raw)?),
            (None, true) => self.upstream = Some(upstream_url(DEFAULT_UPSTREAM)?),
            (None, false) => {}
        }
        self.platform = platform(&self.inputs.platform)?;
        if self.has_inputs() && !self.platform.is_any() {
            let s = builder.selection_mut();
            s.npm_os = self.platform.os.clone();
            s.npm_cpu = self.platform.cpu.clone();
            s.npm_libc = self.platform.libc.clone();
        }
        match (self.has_inputs(), &self.inputs.npm_registry_url) {
            (true, None) => Err(BuildError::Usage(format!(
                "{flag} needs --npm-registry-url URL, the mirror's base URL as npm will reach it (npm requires absolute tarball URLs in packuments)"
            ))),
            (false, Some(_)) => Err(BuildError::Usage(
                "--npm-registry-url is only used with --npm-lock, --npm-dist or --npm-universe".into(),
            )),
            (true, Some(url)) => builder
                .npm_registry_url(url)
                .map_err(|e| BuildError::Usage(format!("--npm-registry-url: {e}"))),
            (false, None) => Ok(()),
        }
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        if let Some(path) = &self.inputs.npm_lock {
            let (text, digest) = read_input("--npm-lock", path)?;
            let mut lock = egress_lock::parse_package_lock(&path.display().to_string(), &text)?;
            filter_lock(&mut lock, &self.platform, &mut self.dropped)?;
            self.lock = Some(lock);
            add_source(sources, "package-lock.json", path, digest);
        }
        for dir in &self.inputs.npm_dist {
            for t in dist::local_tarballs(dir)? {
                let digest = egress_model::Sha256Digest::of(&t.bytes);
                add_source(sources, "npm-dist", &t.path, digest);
                self.local.push(t);
            }
        }
        if let Some(path) = &self.inputs.universe {
            let (text, digest) = read_input("--npm-universe", path)?;
            self.universe = universe::read_lines(path, &text)?;
            add_source(sources, "npm-universe", path, digest);
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        if let Some(lock) = &mut self.lock {
            // A lock gives no publish times, and none is invented.
            if let (Some(cutoff), Some(pin)) = (&net.rules.exclude_newer, lock.pins.first()) {
                return Err(BuildError::NoUploadTimes(format!(
                    "{}: a package-lock.json gives no publish times (e.g. for {}@{}), and --exclude-newer {} is given: the cutoff cannot be shown to hold for it; build the lock without --exclude-newer, or list its packages in an --npm-universe",
                    lock.file, pin.name, pin.version, cutoff.text
                )));
            }
            if net.dry_run {
                self.planned_files += lock.pins.len();
            } else {
                if let Some(upstream) = &self.upstream {
                    resolve::resolve_against(lock, upstream, net.jobs, net.cacert)?;
                }
                self.tarballs = fetch_npm(lock, net.jobs, net.cacert, net.work)?;
                // Only once every tarball matched its lock.
                self.evidence = fetch_npm_signatures(lock, net.jobs, net.cacert)?;
                for line in &self.evidence.lines {
                    eprintln!("{line}");
                }
            }
        }
        if let (false, Some(upstream)) = (self.universe.is_empty(), &self.upstream) {
            let selected = universe::select(net, upstream, &self.universe, &self.platform)?;
            for note in &selected.notes {
                eprintln!("note: {note}");
            }
            self.dropped.merge(selected.dropped);
            self.counts = (selected.projects, selected.versions);
            if net.dry_run {
                self.planned_files += selected.files.len();
            } else {
                self.chosen = universe::download(net, selected.files, &mut self.dropped)?;
            }
        }
        Ok(())
    }

    fn planned(&self) -> Staged {
        let pins = self.lock.as_ref().map_or(&[][..], |l| &l.pins[..]);
        let names: BTreeSet<&str> = pins.iter().map(|p| p.name.as_str()).collect();
        Staged {
            files: self.planned_files + self.local.len(),
            projects: self.counts.0 + names.len(),
            versions: self.counts.1 + pins.len(),
            dropped: self.dropped.clone(),
            ..Staged::default()
        }
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        _: &Path,
    ) -> Result<Staged, BuildError> {
        let mut adding = Adding {
            builder,
            added: BTreeMap::new(),
            done: Staged {
                downloaded: self.tarballs.len() + self.chosen.len(),
                dropped: self.dropped,
                ..Staged::default()
            },
        };
        // The universe first: it carries publish times; a lock or local
        // tarball of the same bytes is the same version.
        for (c, part) in self.chosen {
            let bytes = fs::read(&part).map_err(|cause| BuildError::Io {
                what: "read",
                path: part.clone(),
                cause,
            })?;
            if egress_artifacts::sri_sha512(&bytes) != c.integrity {
                return Err(BuildError::Refused(format!(
                    "{}@{}: changed on disk after it was verified ({}); build again",
                    c.name,
                    c.version,
                    part.display()
                )));
            }
            adding.add(Entry {
                filename: egress_artifacts::npm_tarball_filename(&c.name, &c.version),
                name: c.name,
                version: c.version,
                bytes,
                integrity: c.integrity,
                meta: c.meta,
                from: "--npm-universe".into(),
            })?;
        }
        for t in self.tarballs {
            let meta = NpmVersionMeta {
                dependencies: t.pin.dependencies.clone(),
                optional_dependencies: t.pin.optional_dependencies.clone(),
                peer_dependencies: t.pin.peer_dependencies.clone(),
                has_install_script: t.pin.has_install_script,
                os: t.pin.os.clone(),
                cpu: t.pin.cpu.clone(),
                libc: t.pin.libc.clone(),
                ..NpmVersionMeta::default()
            };
            adding.add(Entry {
                integrity: t.pin.sri(),
                from: format!("package {:?} of --npm-lock", t.pin.key),
                name: t.pin.name,
                version: t.pin.version,
                filename: t.filename,
                bytes: t.bytes,
                meta,
            })?;
        }
        for t in self.local {
            adding.add(Entry {
                integrity: egress_model::Integrity::of(&t.bytes).to_string(),
                from: format!("--npm-dist {}", t.path.display()),
                name: t.name,
                version: t.version,
                filename: t.filename,
                bytes: t.bytes,
                meta: t.meta,
            })?;
        }
        let Adding {
            builder,
            added,
            mut done,
        } = adding;
        let names: BTreeSet<&str> = added.keys().map(|(n, _)| n.as_str()).collect();
        done.projects = names.len();
        done.versions = added.len();
        // Replayed as the upstream registry published them (see the module
        // documentation).
        if let Some(keys) = self.evidence.keys {
            builder
                .npm_registry_keys(keys)
                .map_err(BuildError::Replay)?;
        }
        for s in self.evidence.signed {
            builder
                .add_npm_signatures(&s.name, &s.version, &s.integrity, s.signatures)
                .map_err(BuildError::Replay)?;
        }
        Ok(done)
    }
}

/// One tarball for the builder, and which input gave it.
struct Entry {
    name: String,
    version: String,
    filename: String,
    bytes: Vec<u8>,
    integrity: String,
    meta: NpmVersionMeta,
    /// The input, for messages.
    from: String,
}

/// The builder and what was added to it, by `(name, version)`.
struct Adding<'a> {
    builder: &'a mut SnapshotBuilder,
    added: BTreeMap<(String, String), String>,
    done: Staged,
}

impl Adding<'_> {
    /// Adds `e`, once: the same version from two inputs must be the same
    /// bytes, and is added from the first (the universe, with its time).
    fn add(&mut self, e: Entry) -> Result<(), BuildError> {
        let key = (e.name.clone(), e.version.clone());
        match self.added.get(&key) {
            Some(i) if *i == e.integrity => return Ok(()),
            Some(i) => {
                return Err(BuildError::Conflict(format!(
                    "{}@{} ({}) has integrity {}, but another input gives it {i}; one version cannot be two tarballs: drop one",
                    e.name, e.version, e.from, e.integrity
                )))
            }
            None => {}
        }
        self.done.files += 1;
        self.done.bytes += e.bytes.len() as u64;
        if e.meta.published.is_none() {
            self.done.untimed += 1;
        }
        self.builder
            .add_npm_tarball_with(
                &e.name,
                &e.version,
                &e.filename,
                e.bytes,
                &e.integrity,
                e.meta,
            )
            .map_err(BuildError::Rejected)?;
        self.added.insert(key, e.integrity);
        Ok(())
    }
}

/// A verified tarball, ready for the builder.
pub(crate) struct NpmStaged {
    pub(crate) pin: NpmPin,
    /// `<name without scope>-<version>.tgz`, its name on the mirror.
    pub(crate) filename: String,
    pub(crate) bytes: Vec<u8>,
}

/// Downloads every pin of `lock` (at most `jobs` at once) into `work` and
/// returns them once each matches its integrity.
pub(crate) fn fetch_npm(
    lock: &NpmLock,
    jobs: usize,
    cacert: Option<&Path>,
    work: &Path,
) -> Result<Vec<NpmStaged>, BuildError> {
    let mut planned = Vec::new();
    for pin in &lock.pins {
        let resolved = pin.resolved.as_deref().ok_or_else(|| {
            BuildError::Conflict(format!(
                "{}: package {:?} ({}@{}) has no resolved URL",
                lock.file, pin.key, pin.name, pin.version
            ))
        })?;
        let url = Url::parse(resolved).map_err(|e| {
            BuildError::Conflict(format!(
                "{}: package {:?} ({}@{}): resolved: {e}",
                lock.file, pin.key, pin.name, pin.version
            ))
        })?;
        let job = FileJob {
            filename: format!("{}@{}", pin.name, pin.version),
            url,
            expect: Expect::Sri512(pin.sri()),
            size: None,
        };
        planned.push((pin, job));
    }
    let clients = fetch::clients_by_origin(
        planned.iter().map(|(_, j)| &j.url),
        Limits::download(),
        cacert,
    )?;
    if !planned.is_empty() {
        eprintln!(
            "fetching {} npm tarballs pinned by {}",
            planned.len(),
            lock.file
        );
    }
    let progress = Progress::new(planned.len(), 0);
    let stop = AtomicBool::new(false);
    let results = pool::map(&planned, jobs, |(_, job)| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", job.url))));
        };
        let part = work.join(job.expect.part_name(&job.url));
        let r = fetch::download(client, job, &part, &progress);
        match &r {
            Ok(bytes) => {
                let _ = fs::remove_file(&part);
                progress.done(&job.filename, bytes.len() as u64, "");
            }
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Some(r)
    });
    progress.finish();

    let mut out = Vec::new();
    let mut first_error = None;
    for ((pin, job), r) in planned.into_iter().zip(results) {
        match r {
            Some(Ok(bytes)) => out.push(NpmStaged {
                pin: pin.clone(),
                filename: egress_artifacts::npm_tarball_filename(&pin.name, &pin.version),
                bytes,
            }),
            Some(Err(FetchError::IntegrityMismatch { expected, actual })) => {
                return Err(BuildError::Refused(format!(
                    "{}@{} (package {:?} in {}) from {}: expected integrity {expected}, got {actual}; refusing the whole snapshot",
                    pin.name, pin.version, pin.key, lock.file, job.url
                )));
            }
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

/// npm's own `Accept` for packuments: the abbreviated one, which carries
/// `dist.signatures` too, preferred.
const PACKUMENT_ACCEPT: &str =
    "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

/// The signatures of one pinned version, as the upstream listed them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NpmSigned {
    pub(crate) name: String,
    pub(crate) version: String,
    /// The `dist.integrity` listed beside them: what they sign.
    pub(crate) integrity: String,
    /// `dist.signatures`, verbatim.
    pub(crate) signatures: Value,
}

/// What the upstream registry publishes for verifying the pinned versions.
#[derive(Debug, Default)]
pub(crate) struct NpmRegistryEvidence {
    /// The keys document, verbatim, to be served at `/-/npm/v1/keys`.
    pub(crate) keys: Option<Vec<u8>>,
    pub(crate) signed: Vec<NpmSigned>,
    /// What was replayed or left out, one line each, for stderr.
    pub(crate) lines: Vec<String>,
}

/// The registry a pin was resolved from: its `resolved` URL less
/// `/<name>/-/<file>` (a scoped name with `/` or `%2f`), e.g.
/// `https://registry.npmjs.org`; `None` if it is not shaped so.
pub(crate) fn registry_base(pin: &NpmPin) -> Option<String> {
    let file = egress_artifacts::npm_tarball_filename(&pin.name, &pin.version);
    let spellings = [pin.name.clone(), pin.name.replacen('/', "%2f", 1)];
    spellings.iter().find_map(|name| {
        let base = pin
            .resolved
            .as_deref()?
            .strip_suffix(&format!("/{name}/-/{file}"))?;
        let ok = base.contains("://") && !base.contains(['?', '#']);
        ok.then(|| base.to_string())
    })
}

fn client_for(
    clients: &mut HashMap<String, Client>,
    url: &Url,
    cacert: Option<&Path>,
) -> Result<(), BuildError> {
    if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(url.origin()) {
        let c = Client::new(url.clone(), fetch::page_limits(), cacert)?;
        slot.insert(c);
    }
    Ok(())
}

fn parse_url(text: &str) -> Result<Url, BuildError> {
    Url::parse(text).map_err(|e| BuildError::Conflict(format!("{text}: {e}")))
}

/// Why a pin's packument cannot tell its signatures; the pin is then
/// listed as unsigned with this reason.
#[derive(Debug, thiserror::Error)]
enum NoPackument {
    #[error("{url} is not JSON: {source}")]
    NotJson {
        url: Url,
        #[source]
        source: serde_json::Error,
    },
    /// A 4xx: the registry does not provide it.
    #[error("{url} answered {status}")]
    Answered { url: Url, status: u16 },
}

/// Fetches the keys document of every registry the pins were resolved
/// from, and the packuments of the pinned packages, and keeps what can be
/// replayed (see the module documentation). A 4xx from a registry means it
/// does not provide the document; an unreachable registry or a 5xx after
/// retries fails the build, as a tarball download would.
pub(crate) fn fetch_npm_signatures(
    lock: &NpmLock,
    jobs: usize,
    cacert: Option<&Path>,
) -> Result<NpmRegistryEvidence, BuildError> {
    let mut out = NpmRegistryEvidence::default();
    if lock.pins.is_empty() {
        return Ok(out);
    }
    let quiet = Progress::new(0, 0);
    let mut clients: HashMap<String, Client> = HashMap::new();
    // Pins by registry; those not on a registry path are left unsigned.
    let mut by_base: BTreeMap<String, Vec<&NpmPin>> = BTreeMap::new();
    let mut unsigned: Vec<String> = Vec::new();
    for pin in &lock.pins {
        match registry_base(pin) {
            Some(base) => by_base.entry(base).or_default().push(pin),
            None => unsigned.push(format!(
                "{}@{} (resolved {} is not <registry>/<name>/-/<file>)",
                pin.name,
                pin.version,
                pin.resolved.as_deref().unwrap_or("none")
            )),
        }
    }

    if by_base.is_empty() {
        out.lines.push(format!(
            "note: npm registry signatures: no pinned version was resolved from a registry path ({}); the snapshot serves no {NPM_KEYS_PATH} and replays no dist.signatures",
            unsigned.first().map_or("", String::as_str)
        ));
        return Ok(out);
    }

    // The keys: one document for the snapshot, or none.
    let mut docs: BTreeMap<Vec<u8>, Vec<String>> = BTreeMap::new();
    let mut missing: Vec<String> = Vec::new();
    for base in by_base.keys() {
        let url = parse_url(&format!("{base}{NPM_KEYS_PATH}"))?;
        client_for(&mut clients, &url, cacert)?;
        let Some(client) = clients.get(&url.origin()) else {
            continue;
        };
        let answer = fetch::document(client, &url, "application/json", &quiet)?;
        match answer {
            fetch::Document::Body(bytes) if is_keys_document(&bytes) => {
                docs.entry(bytes).or_default().push(url.to_string());
            }
            fetch::Document::Body(_) => {
                missing.push(format!("{url} is not a {{\"keys\": [...]}} document"))
            }
            fetch::Document::NotProvided(status) => {
                missing.push(format!("{url} answered {status}"))
            }
        }
    }
    let keys = match (docs.len(), missing.is_empty()) {
        (1, true) => docs.into_keys().next(),
        _ => {
            let why = if docs.len() > 1 {
                let urls: Vec<String> = docs.into_values().flatten().collect();
                format!(
                    "the registries publish different keys ({})",
                    urls.join(", ")
                )
            } else {
                missing.join("; ")
            };
            out.lines.push(format!(
                "note: npm registry signatures: {why}; the snapshot serves no {NPM_KEYS_PATH} and replays no dist.signatures"
            ));
            return Ok(out);
        }
    };
    out.keys = keys;

    // The packuments, one per registry and package.
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    for (base, pins) in &by_base {
        for pin in pins {
            wanted.insert((base.clone(), pin.name.clone()));
        }
    }
    let mut jobs_list = Vec::new();
    for (base, name) in &wanted {
        let url = parse_url(&format!("{base}/{}", name.replacen('/', "%2f", 1)))?;
        client_for(&mut clients, &url, cacert)?;
        jobs_list.push((base.clone(), name.clone(), url));
    }
    let results = pool::map(&jobs_list, jobs, |(_, _, url)| {
        let client = clients
            .get(&url.origin())
            .ok_or_else(|| FetchError::Failed(format!("{url}: no client")))?;
        fetch::document(client, url, PACKUMENT_ACCEPT, &quiet)
    });
    let mut packuments: HashMap<(String, String), Result<Value, NoPackument>> = HashMap::new();
    for ((base, name, url), r) in jobs_list.into_iter().zip(results) {
        let doc = match r? {
            fetch::Document::Body(bytes) => serde_json::from_slice::<Value>(&bytes)
                .map_err(|source| NoPackument::NotJson { url, source }),
            fetch::Document::NotProvided(status) => Err(NoPackument::Answered { url, status }),
        };
        packuments.insert((base, name), doc);
    }
    for (base, pins) in &by_base {
        for pin in pins {
            let at = format!("{}@{}", pin.name, pin.version);
            let doc = match packuments.get(&(base.clone(), pin.name.clone())) {
                Some(Ok(doc)) => doc,
                Some(Err(why)) => {
                    unsigned.push(format!("{at} ({why})"));
                    continue;
                }
                None => {
                    unsigned.push(format!("{at} (no packument)"));
                    continue;
                }
            };
            let dist = doc
                .get("versions")
                .and_then(|v| v.get(&pin.version))
                .and_then(|v| v.get("dist"));
            let listed = dist
                .and_then(|d| d.get("integrity"))
                .and_then(|i| i.as_str());
            let listed_signatures = dist.and_then(|d| d.get("signatures"));
            let signatures = listed_signatures.filter(|s| is_signatures_shape(s));
            match (listed, signatures) {
                (_, None) if listed_signatures.is_some() => {
                    unsigned.push(format!("{at} (dist.signatures is not [{{keyid, sig}}, ...])"))
                }
                (_, None) => unsigned.push(format!("{at} (the upstream lists no signatures)")),
                (Some(listed), Some(signatures)) if listed == pin.sri() => {
                    out.signed.push(NpmSigned {
                        name: pin.name.clone(),
                        version: pin.version.clone(),
                        integrity: listed.to_string(),
                        signatures: signatures.clone(),
                    })
                }
                (listed, Some(_)) => unsigned.push(format!(
                    "{at} (the upstream lists integrity {}, the lock {}: its signatures sign other bytes)",
                    listed.unwrap_or("none"),
                    pin.sri()
                )),
            }
        }
    }
    let total = lock.pins.len();
    if unsigned.is_empty() {
        out.lines.push(format!(
            "npm registry signatures: replaying those of all {total} pinned versions, and {NPM_KEYS_PATH}"
        ));
    } else {
        const SHOWN: usize = 5;
        let more = unsigned.len().saturating_sub(SHOWN);
        let mut list = unsigned
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        out.lines.push(format!(
            "note: npm registry signatures: replayed for {} of {total} pinned versions; none for {list}",
            out.signed.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(name: &str, version: &str, resolved: &str) -> NpmPin {
        NpmPin {
            name: name.into(),
            version: version.into(),
            resolved: Some(resolved.into()),
            integrity: String::new(),
            sha512: [0; 64],
            key: format!("node_modules/{name}"),
            dependencies: BTreeMap::new(),
            optional_dependencies: BTreeMap::new(),
            peer_dependencies: BTreeMap::new(),
            has_install_script: false,
            os: Vec::new(),
            cpu: Vec::new(),
            libc: Vec::new(),
            optional: false,
        }
    }

    #[test]
    fn a_lock_keeps_what_npm_installs_on_the_target() {
        let target = platform(&PlatformArgs {
            os: vec!["linux".into()],
            cpu: vec!["x64".into()],
            libc: vec!["glibc".into()],
        })
        .unwrap();
        let native = |name: &str, os: &str, libc: &str, optional: bool| NpmPin {
            os: vec![os.into()],
            cpu: vec!["x64".into()],
            libc: if libc.is_empty() {
                Vec::new()
            } else {
                vec![libc.into()]
            },
            optional,
            ..pin(name, "1.0.0", "https://r/x.tgz")
        };
        let mut lock = NpmLock {
            file: "package-lock.json".into(),
            lockfile_version: 3,
            pins: vec![
                pin("app", "1.0.0", "https://r/app.tgz"),
                native("gnu", "linux", "glibc", true),
                native("musl", "linux", "musl", true),
                native("mac", "darwin", "", true),
            ],
        };
        let mut dropped = Dropped::default();
        filter_lock(&mut lock, &target, &mut dropped).unwrap();
        let kept: Vec<&str> = lock.pins.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(kept, ["app", "gnu"]);
        let t = dropped.get("platform").unwrap();
        assert_eq!(t.files, 2);
        assert_eq!(
            t.examples,
            ["musl@1.0.0 (libc musl)", "mac@1.0.0 (os darwin)"]
        );
        // No target: nothing is left out.
        let mut all = lock.clone();
        all.pins.push(native("mac", "darwin", "", true));
        filter_lock(&mut all, &Platform::default(), &mut Dropped::default()).unwrap();
        assert_eq!(all.pins.len(), 3);
        // A required entry that does not fit: one line, the key and the target.
        lock.pins.push(native("win", "win32", "", false));
        let e = filter_lock(&mut lock, &target, &mut Dropped::default()).unwrap_err();
        assert_eq!(e.kind(), crate::Kind::Usage);
        let e = e.to_string();
        assert!(
            e.starts_with("package-lock.json: package \"node_modules/win\" (win@1.0.0) is required (not optional) and its os [\"win32\"] excludes the target os=linux cpu=x64 libc=glibc"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        for bad in [
            PlatformArgs {
                libc: vec!["uclibc".into()],
                ..PlatformArgs::default()
            },
            PlatformArgs {
                os: vec!["!win32".into()],
                ..PlatformArgs::default()
            },
            PlatformArgs {
                cpu: vec![String::new()],
                ..PlatformArgs::default()
            },
        ] {
            assert_eq!(
                platform(&bad).unwrap_err().kind(),
                crate::Kind::Usage,
                "{bad:?}"
            );
        }
        assert_eq!(
            upstream_url("http://r.example/npm").unwrap().to_string(),
            "http://r.example/npm/"
        );
        assert!(upstream_url("http://r.example/?x").is_err());
    }

    #[test]
    fn registry_of_a_resolved_url() {
        let base = |n: &str, v: &str, r: &str| registry_base(&pin(n, v, r));
        assert_eq!(
            base(
                "left-pad",
                "1.3.0",
                "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"
            )
            .as_deref(),
            Some("https://registry.npmjs.org")
        );
        assert_eq!(
            base(
                "@types/node",
                "20.1.0",
                "https://registry.npmjs.org/@types/node/-/node-20.1.0.tgz"
            )
            .as_deref(),
            Some("https://registry.npmjs.org")
        );
        assert_eq!(
            base(
                "@ec/scoped",
                "1.0.0",
                "http://127.0.0.1:9/npm/@ec%2fscoped/-/scoped-1.0.0.tgz"
            )
            .as_deref(),
            Some("http://127.0.0.1:9/npm")
        );
        for (name, resolved) in [
            ("a", "https://cdn.example/a-1.0.0.tgz"),
            ("a", "https://r.example/b/-/a-1.0.0.tgz"),
            ("a", "https://r.example/a/-/a-1.0.1.tgz"),
            ("a", "https://r.example/a/-/a-1.0.0.tgz?token=x"),
            ("a", "/a/-/a-1.0.0.tgz"),
        ] {
            assert_eq!(base(name, "1.0.0", resolved), None, "{resolved}");
        }
    }
}
