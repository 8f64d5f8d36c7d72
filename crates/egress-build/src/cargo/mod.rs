//! cargo's share of a build: a `Cargo.lock`'s registry packages, each
//! bound to the `checksum` the lock gives, served as a sparse registry
//! under `/cargo/` (see [`egress_snapshot::cargo`]).
//!
//! For each locked crate the upstream's sparse index file is read (the
//! paths cargo computes), and the line of the locked version is kept, byte
//! for byte, once its `cksum` equals the lock's `checksum`. The `.crate` is
//! fetched through the upstream's `dl` template and counts only once its
//! bytes hash to that checksum. The snapshot's index files hold exactly
//! the locked versions' lines, in the upstream's order, and its
//! `config.json` names the mirror itself.

mod universe;

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch::{self, Document, Expect, FetchError, FileJob};
use crate::progress::Progress;
use crate::select::Dropped;
use egress_lock::{CargoLock, CrateSource};
use egress_model::{CrateName, Sha256Digest, Url};
use egress_snapshot::cargo::{self as served, IndexLine};
use egress_snapshot::{pool, SnapshotBuilder};
use egress_transcript::Client;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

/// crates.io's sparse index.
pub const DEFAULT_INDEX: &str = "https://index.crates.io/";

/// cargo's inputs of `snapshot build`.
#[derive(clap::Args, Default, Debug)]
#[group(id = "cargo-inputs")]
pub struct Inputs {
    /// A Cargo.lock (version 2, 3 or 4): every registry package it pins is
    /// fetched from --cargo-index-url's registry, verified against its
    /// checksum, and served as a sparse registry under /cargo/ (a sandbox
    /// names sparse+<mirror>/cargo/index/).
    #[arg(long, value_name = "FILE")]
    pub cargo_lock: Option<PathBuf>,
    /// A cargo universe: one crate name per line, with an optional
    /// requirement (`serde 1.0` or `tokio@^1.40`); `#` starts a comment.
    /// The --exclude-newer cutoff reads the index's pubtime; --closure
    /// follows normal and build dependencies and the optional ones the
    /// enabled features turn on.
    #[arg(long, value_name = "FILE", help_heading = "Universe")]
    pub cargo_universe: Option<PathBuf>,
    /// The sparse index the locked crates are read from [default:
    /// https://index.crates.io/].
    #[arg(long, value_name = "URL")]
    pub cargo_index_url: Option<String>,
    /// The mirror's absolute base URL as cargo will reach it, e.g.
    /// http://127.0.0.1:8080/: the served config.json's `dl` names it.
    #[arg(long, value_name = "URL")]
    pub cargo_registry_url: Option<String>,
}

pub(crate) struct Cargo {
    inputs: Inputs,
    index: Option<Url>,
    mirror: String,
    lock: Option<CargoLock>,
    universe: Vec<universe::Line>,
    dropped: Dropped,
    /// Each locked crate's kept index lines, in the upstream's order.
    lines: BTreeMap<CrateName, Vec<IndexLine>>,
    crates: Vec<Fetched>,
}

/// A verified `.crate`.
struct Fetched {
    name: CrateName,
    version: String,
    checksum: Sha256Digest,
    bytes: Vec<u8>,
}

impl Cargo {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            index: None,
            mirror: String::new(),
            lock: None,
            universe: Vec::new(),
            dropped: Dropped::default(),
            lines: BTreeMap::new(),
            crates: Vec::new(),
        }
    }
}

/// An absolute http(s) URL as a directory (trailing `/`), no query.
fn dir_url(flag: &str, raw: &str) -> Result<Url, BuildError> {
    let url = Url::parse(raw).map_err(|e| BuildError::Usage(format!("{flag}: {e}")))?;
    if url.path_and_query().contains(['?', '#']) {
        return Err(BuildError::Usage(format!(
            "{flag}: give a URL without a query or fragment"
        )));
    }
    let path = url.path();
    Ok(if path.ends_with('/') {
        url
    } else {
        url.with_path(&format!("{path}/"))
    })
}

impl Part for Cargo {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--cargo-lock", "--cargo-universe"]
    }

    fn has_inputs(&self) -> bool {
        self.inputs.cargo_lock.is_some() || self.inputs.cargo_universe.is_some()
    }

    fn check(&mut self, _builder: &mut SnapshotBuilder) -> Result<(), BuildError> {
        let only = |flag: &str| {
            Err(BuildError::Usage(format!(
                "{flag} is only used with --cargo-lock or --cargo-universe"
            )))
        };
        if !self.has_inputs() {
            return match (
                &self.inputs.cargo_index_url,
                &self.inputs.cargo_registry_url,
            ) {
                (Some(_), _) => only("--cargo-index-url"),
                (_, Some(_)) => only("--cargo-registry-url"),
                _ => Ok(()),
            };
        }
        let index = self
            .inputs
            .cargo_index_url
            .as_deref()
            .unwrap_or(DEFAULT_INDEX);
        self.index = Some(dir_url("--cargo-index-url", index)?);
        let Some(mirror) = &self.inputs.cargo_registry_url else {
            return Err(BuildError::Usage(
                "--cargo-lock and --cargo-universe need --cargo-registry-url URL, the mirror's base URL as cargo will reach it (the served config.json's dl names it)".into(),
            ));
        };
        let mirror = dir_url("--cargo-registry-url", mirror)?;
        self.mirror = mirror.to_string().trim_end_matches('/').to_string();
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        if let Some(path) = &self.inputs.cargo_lock {
            let (text, digest) = read_input("--cargo-lock", path)?;
            let lock = egress_lock::parse_cargo_lock(&text, &path.display().to_string())?;
            add_source(sources, "Cargo.lock", path, digest);
            self.lock = Some(lock);
        }
        if let Some(path) = &self.inputs.cargo_universe {
            let (text, digest) = read_input("--cargo-universe", path)?;
            self.universe = universe::read_lines(path, &text)?;
            add_source(sources, "cargo-universe", path, digest);
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        if let Some(lock) = &self.lock {
            check_lock(lock, net)?;
        }
        let client = Client::new(index.clone(), fetch::page_limits(), net.cacert)?;
        let progress = Progress::new(0, 0);
        let dl = config_dl(&client, index, &progress)?;
        let mut files = IndexFiles {
            client: &client,
            index,
            jobs: net.jobs,
            progress: &progress,
            cache: BTreeMap::new(),
        };
        let mut chosen: Vec<(CrateName, IndexLine)> = Vec::new();
        if let Some(lock) = &self.lock {
            let names: Vec<CrateName> = lock.pins.iter().map(|p| p.name.clone()).collect();
            files.prefetch(&names)?;
            for pin in &lock.pins {
                let all = files.get(&pin.name)?.unwrap_or_default();
                let Some(line) = all.iter().find(|l| l.vers == pin.version) else {
                    return Err(BuildError::Refused(format!(
                        "{}:{}: {} {} is not in the index at {index}: refusing the whole snapshot",
                        lock.file, pin.line, pin.name, pin.version
                    )));
                };
                if line.cksum != pin.checksum {
                    return Err(BuildError::Refused(format!(
                        "{}:{}: {} {}: the index lists cksum {}, the lock pins checksum {}: refusing the whole snapshot",
                        lock.file, pin.line, pin.name, pin.version, line.cksum, pin.checksum
                    )));
                }
                chosen.push((pin.name.clone(), line.clone()));
            }
        }
        if !self.universe.is_empty() {
            chosen.extend(universe::select(
                &self.universe,
                &mut files,
                net.rules,
                &mut self.dropped,
            )?);
        }
        let mut jobs = Vec::new();
        for (name, line) in chosen {
            let kept = self.lines.entry(name.clone()).or_default();
            if kept.iter().any(|l| l.vers == line.vers) {
                continue;
            }
            let url = dl_url(&dl, &name, &line.vers, &line.cksum)?;
            let job = FileJob {
                filename: format!("{name}-{}.crate", line.vers),
                url,
                expect: Expect::Sha256(line.cksum),
                size: None,
            };
            jobs.push((name, line.vers.clone(), line.cksum, job));
            kept.push(line);
        }
        // Kept in the upstream's order.
        for (name, kept) in &mut self.lines {
            if let Ok(Some(all)) = files.get(name) {
                kept.sort_by_key(|l| all.iter().position(|a| a.vers == l.vers));
            }
        }
        if net.dry_run {
            return Ok(());
        }
        self.crates = download(net, &jobs)?;
        Ok(())
    }

    fn planned(&self) -> Staged {
        let versions = self.lines.values().map(Vec::len).sum();
        Staged {
            files: versions,
            projects: self.lines.len(),
            versions,
            dropped: self.dropped.clone(),
            ..Staged::default()
        }
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        _out: &std::path::Path,
    ) -> Result<Staged, BuildError> {
        let mut staged = Staged {
            dropped: self.dropped,
            ..Staged::default()
        };
        if self.index.is_none() {
            return Ok(staged);
        }
        let add = |b: &mut SnapshotBuilder, path: &str, ct: &str, bytes: Vec<u8>| {
            b.add_cargo_file(path, ct, bytes)
                .map_err(BuildError::Rejected)
        };
        add(
            builder,
            served::CONFIG_PATH,
            served::JSON,
            served::render_config(&self.mirror),
        )?;
        for (name, lines) in &self.lines {
            add(
                builder,
                &served::index_file_path(name),
                served::INDEX_TYPE,
                served::render_index_file(lines),
            )?;
            staged.projects += 1;
            staged.versions += lines.len();
        }
        for c in self.crates {
            staged.files += 1;
            staged.downloaded += 1;
            staged.bytes += c.bytes.len() as u64;
            let path = served::crate_path(&c.name, &c.version, &c.checksum);
            add(builder, &path, egress_snapshot::OCTET_STREAM, c.bytes)?;
        }
        Ok(staged)
    }
}

/// What a lock's build refuses before anything is fetched: a cutoff (a
/// lock pins its versions already), a git source under `--strict`, a
/// registry other than crates.io.
fn check_lock(lock: &CargoLock, net: &Net) -> Result<(), BuildError> {
    if let Some(cutoff) = &net.rules.exclude_newer {
        return Err(BuildError::NoUploadTimes(format!(
                "{}: --exclude-newer {} is for universes; a Cargo.lock pins its versions already: build it without --exclude-newer",
                lock.file, cutoff.text
            )));
    }
    if let Some(s) = lock.skipped.first() {
        let why = match &s.source {
            CrateSource::Git(_) => "a git source, whose bytes no checksum binds",
            CrateSource::Registry(_) | CrateSource::CratesIo => {
                "a registry package without a checksum"
            }
            _ => "a source this build cannot fetch",
        };
        let line = format!(
            "{}:{}: {} {} is {why}: not in the snapshot ({} such packages)",
            lock.file,
            s.line,
            s.name,
            s.version,
            lock.skipped.len()
        );
        if net.rules.strict {
            return Err(BuildError::Refused(format!("{line}; --strict refuses it")));
        }
        eprintln!("{line}");
    }
    if let Some(p) = lock.pins.iter().find(|p| p.source != CrateSource::CratesIo) {
        return Err(BuildError::Conflict(format!(
                "{}:{}: {} {} comes from {:?}, not crates.io: only crates.io's packages are fetched (from --cargo-index-url)",
                lock.file,
                p.line,
                p.name,
                p.version,
                match &p.source {
                    CrateSource::Registry(s) | CrateSource::Unknown(s) => s.as_str(),
                    _ => "?",
                }
            )));
    }
    Ok(())
}

/// The `dl` of the upstream's `config.json`.
fn config_dl(client: &Client, index: &Url, progress: &Progress) -> Result<String, BuildError> {
    let url = index.with_path(&format!("{}config.json", index.path()));
    let body = match fetch::document(client, &url, "application/json", progress)? {
        Document::Body(b) => b,
        Document::NotProvided(s) => {
            return Err(BuildError::Refused(format!(
                "{url} answered {s}: is --cargo-index-url a sparse registry's index?"
            )))
        }
    };
    let config: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| BuildError::Refused(format!("{url}: not JSON: {e}")))?;
    config
        .get("dl")
        .and_then(|d| d.as_str())
        .map(str::to_string)
        .ok_or_else(|| BuildError::Refused(format!("{url}: no \"dl\" string")))
}

/// The upstream's index files, each read once, fetched `jobs` at a time;
/// a crate the index does not have (404) is `None`.
pub(crate) struct IndexFiles<'a> {
    client: &'a Client,
    index: &'a Url,
    jobs: usize,
    progress: &'a Progress,
    cache: BTreeMap<String, Option<Rc<Vec<IndexLine>>>>,
}

impl IndexFiles<'_> {
    /// Fetches the files of `names` not read yet, in parallel.
    pub(crate) fn prefetch(&mut self, names: &[CrateName]) -> Result<(), BuildError> {
        let mut todo: Vec<&CrateName> = names
            .iter()
            .filter(|n| !self.cache.contains_key(&n.as_str().to_ascii_lowercase()))
            .collect();
        todo.sort();
        todo.dedup_by(|a, b| a.as_str().eq_ignore_ascii_case(b.as_str()));
        if todo.len() > 1 && !crate::progress::is_quiet() {
            eprintln!(
                "reading {} crates' index files from {}",
                todo.len(),
                self.index
            );
        }
        let (client, index, progress) = (self.client, self.index, self.progress);
        let files = pool::map(&todo, self.jobs, |name| {
            index_file(client, index, name, progress)
        });
        for (name, file) in todo.into_iter().zip(files) {
            self.cache
                .insert(name.as_str().to_ascii_lowercase(), file?.map(Rc::new));
        }
        Ok(())
    }

    /// The lines of `name`'s file, fetched if it was not.
    pub(crate) fn get(
        &mut self,
        name: &CrateName,
    ) -> Result<Option<Rc<Vec<IndexLine>>>, BuildError> {
        let key = name.as_str().to_ascii_lowercase();
        if !self.cache.contains_key(&key) {
            self.prefetch(std::slice::from_ref(name))?;
        }
        Ok(self.cache.get(&key).cloned().flatten())
    }
}

/// The upstream's index file of `name`, read and checked.
fn index_file(
    client: &Client,
    index: &Url,
    name: &CrateName,
    progress: &Progress,
) -> Result<Option<Vec<IndexLine>>, BuildError> {
    let url = index.with_path(&format!("{}{}", index.path(), name.index_path()));
    match fetch::document(client, &url, "*/*", progress)? {
        Document::Body(b) => served::parse_index_file(&b, name)
            .map(Some)
            .map_err(|e| BuildError::Refused(format!("{url}: {e}"))),
        Document::NotProvided(404 | 410) => Ok(None),
        Document::NotProvided(s) => Err(BuildError::Refused(format!(
            "{url} answered {s}: the index has no crate {name}"
        ))),
    }
}

/// The download URL of a crate from a `dl` template, as cargo forms it:
/// its markers replaced, or `/{crate}/{version}/download` appended when it
/// has none.
fn dl_url(
    dl: &str,
    name: &CrateName,
    version: &str,
    sum: &Sha256Digest,
) -> Result<Url, BuildError> {
    const MARKERS: [&str; 5] = [
        "{crate}",
        "{version}",
        "{prefix}",
        "{lowerprefix}",
        "{sha256-checksum}",
    ];
    let text = if MARKERS.iter().any(|m| dl.contains(m)) {
        dl.replace("{crate}", name.as_str())
            .replace("{version}", version)
            .replace("{lowerprefix}", &name.prefix().to_ascii_lowercase())
            .replace("{prefix}", &name.prefix())
            .replace("{sha256-checksum}", &sum.to_hex())
    } else {
        format!("{}/{name}/{version}/download", dl.trim_end_matches('/'))
    };
    Url::parse(&text)
        .map_err(|e| BuildError::Refused(format!("the index's dl gives {text:?}: {e}")))
}

/// Downloads every `.crate` (at most `jobs` at once), each verified
/// against the lock's checksum; a partial file resumes on a rerun.
fn download(
    net: &Net,
    jobs: &[(CrateName, String, Sha256Digest, FileJob)],
) -> Result<Vec<Fetched>, BuildError> {
    let files: Vec<&FileJob> = jobs.iter().map(|(_, _, _, j)| j).collect();
    let results = fetch::download_each(&files, net.jobs, net.cacert, net.work, "crates")?;
    let mut out = Vec::new();
    for ((name, version, checksum, job), r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(bytes)) => out.push(Fetched {
                name: name.clone(),
                version: version.clone(),
                checksum: *checksum,
                bytes,
            }),
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                return Err(BuildError::Refused(format!(
                    "{name} {version} from {}: expected sha256 {expected}, got {actual}; refusing the whole snapshot",
                    job.url
                )))
            }
            Some(Err(e)) => return Err(e.into()),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_urls_as_cargo_forms_them() {
        let sum = Sha256Digest::of(b"x");
        let name = CrateName::new("Serde_json").unwrap();
        let url = |dl| dl_url(dl, &name, "1.0.0+x", &sum).unwrap().to_string();
        assert_eq!(
            url("https://static.crates.io/crates"),
            "https://static.crates.io/crates/Serde_json/1.0.0+x/download"
        );
        assert_eq!(
            url("https://m/{prefix}/{lowerprefix}/{crate}-{version}-{sha256-checksum}"),
            format!("https://m/Se/rd/se/rd/Serde_json-1.0.0+x-{}", sum.to_hex())
        );
    }
}
