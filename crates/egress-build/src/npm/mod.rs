//! The npm part of a build: every tarball a `package-lock.json` pins,
//! fetched from its `resolved` URL and verified against the lock's sha512
//! `integrity` before it may enter the snapshot, and served with
//! pre-rendered packuments. A mismatch refuses the whole snapshot. Local
//! tarballs (`--npm-dist`, in `dist.rs`) are added as they are.
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

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::progress::Progress;
use egress_lock::{NpmLock, NpmPin};
use egress_model::Url;
use egress_snapshot::npm::{is_keys_document, is_signatures_shape};
use egress_snapshot::{pool, SnapshotBuilder, NPM_KEYS_PATH};
use egress_transcript::{Client, Limits};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The npm inputs of a build.
#[derive(Default)]
pub struct Inputs {
    /// A package-lock.json (lockfile version 2 or 3).
    pub npm_lock: Option<PathBuf>,
    /// Directories of npm tarballs to add as they are (`--npm-dist`), each
    /// named by its own `package.json`: the conformance kit, `npm pack` output.
    pub npm_dist: Vec<PathBuf>,
    /// The mirror's absolute base URL as npm clients will reach it; needed
    /// with a lock, because npm needs absolute tarball URLs in packuments.
    pub npm_registry_url: Option<String>,
    /// `--npm-universe`: package names with optional semver ranges.
    pub universe: Option<PathBuf>,
    /// `--os`, `--cpu`, `--libc`: the platform optional packages are kept for.
    pub platform: PlatformArgs,
}

/// The npm target: optional packages whose `os`, `cpu` or `libc` exclude
/// it are left out (each empty list: any).
#[derive(Default, Clone, Debug)]
pub struct PlatformArgs {
    pub os: Vec<String>,
    pub cpu: Vec<String>,
    pub libc: Vec<String>,
}

pub(crate) struct Npm {
    inputs: Inputs,
    lock: Option<NpmLock>,
    tarballs: Vec<NpmStaged>,
    local: Vec<dist::LocalTarball>,
    evidence: NpmRegistryEvidence,
}

impl Npm {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            lock: None,
            tarballs: Vec::new(),
            local: Vec::new(),
            evidence: NpmRegistryEvidence::default(),
        }
    }
}

impl Part for Npm {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--npm-lock", "--npm-dist"]
    }

    fn has_inputs(&self) -> bool {
        self.inputs.npm_lock.is_some() || !self.inputs.npm_dist.is_empty()
    }

    fn check(&mut self, builder: &mut SnapshotBuilder) -> Result<(), BuildError> {
        let flag = if self.inputs.npm_lock.is_some() {
            "--npm-lock"
        } else {
            "--npm-dist"
        };
        match (self.has_inputs(), &self.inputs.npm_registry_url) {
            (true, None) => Err(BuildError::Usage(format!(
                "{flag} needs --npm-registry-url URL, the mirror's base URL as npm will reach it (npm requires absolute tarball URLs in packuments)"
            ))),
            (false, Some(_)) => Err(BuildError::Usage(
                "--npm-registry-url is only used with --npm-lock or --npm-dist".into(),
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
            self.lock = Some(egress_lock::parse_package_lock(
                &path.display().to_string(),
                &text,
            )?);
            add_source(sources, "package-lock.json", path, digest);
        }
        for dir in &self.inputs.npm_dist {
            for t in dist::local_tarballs(dir)? {
                let digest = egress_model::Sha256Digest::of(&t.bytes);
                add_source(sources, "npm-dist", &t.path, digest);
                self.local.push(t);
            }
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let Some(lock) = &self.lock else {
            return Ok(());
        };
        self.tarballs = fetch_npm(lock, net.jobs, net.cacert, net.work)?;
        // Only once every tarball matched its lock.
        self.evidence = fetch_npm_signatures(lock, net.jobs, net.cacert)?;
        for line in &self.evidence.lines {
            eprintln!("{line}");
        }
        Ok(())
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        _: &Path,
    ) -> Result<Staged, BuildError> {
        let mut done = Staged {
            files: self.lock.as_ref().map_or(0, |l| l.pins.len()) + self.local.len(),
            downloaded: self.tarballs.len(),
            ..Staged::default()
        };
        for t in self.tarballs {
            done.bytes += t.bytes.len() as u64;
            let meta = egress_snapshot::NpmVersionMeta {
                dependencies: t.pin.dependencies.clone(),
                optional_dependencies: t.pin.optional_dependencies.clone(),
                peer_dependencies: t.pin.peer_dependencies.clone(),
                has_install_script: t.pin.has_install_script,
            };
            builder
                .add_npm_tarball_with(
                    &t.pin.name,
                    &t.pin.version,
                    &t.filename,
                    t.bytes,
                    &t.pin.sri(),
                    meta,
                )
                .map_err(BuildError::Rejected)?;
        }
        for t in self.local {
            done.bytes += t.bytes.len() as u64;
            let sri = egress_model::Integrity::of(&t.bytes).to_string();
            builder
                .add_npm_tarball_with(&t.name, &t.version, &t.filename, t.bytes, &sri, t.meta)
                .map_err(BuildError::Rejected)?;
        }
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
        let url = Url::parse(&pin.resolved).map_err(|e| {
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
    // One client per origin: a lock may name more than one registry.
    let mut clients: HashMap<String, Client> = HashMap::new();
    for (_, job) in &planned {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(job.url.origin()) {
            let c = Client::new(job.url.clone(), Limits::download(), cacert)?;
            slot.insert(c);
        }
    }
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
        let base = pin.resolved.strip_suffix(&format!("/{name}/-/{file}"))?;
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
                pin.name, pin.version, pin.resolved
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
            resolved: resolved.into(),
            integrity: String::new(),
            sha512: [0; 64],
            key: format!("node_modules/{name}"),
            dependencies: BTreeMap::new(),
            optional_dependencies: BTreeMap::new(),
            peer_dependencies: BTreeMap::new(),
            has_install_script: false,
        }
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
