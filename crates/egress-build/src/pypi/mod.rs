//! The PyPI part of a build: hashed requirements files, a uv.lock and
//! local wheels and sdists in; every pinned file found on its project page
//! (by its sha256), downloaded and verified. Wheels are read as zip files
//! for their METADATA, sdists stay opaque. With a mirror URL, the uv.lock
//! is rewritten to install from the mirror.

mod page;
mod target;
mod universe;

use crate::build::{add_source, read_input, Extra, Net, Part, Sources, Staged, INDEX_PATH};
use crate::error::BuildError;
use crate::fetch::{self, FetchError, FileJob};
use crate::progress::Progress;
use crate::select::Dropped;
use egress_lock::Lock;
use egress_model::{DistFilename, ProjectName, Sha256Digest, Url, Version};
use egress_simple::FileEntry;
use egress_snapshot::{pool, SnapshotBuilder, FILES_PREFIX};
use egress_transcript::{Client, Limits};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the mirror URL puts the rewritten uv.lock, inside the snapshot
/// directory.
pub const REWRITTEN_UV_LOCK: &str = "rewritten/uv.lock";

/// The index a build reads when none is given: PyPI's.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple/";

/// The PyPI inputs of a build, and their flags.
#[derive(clap::Args, Default, Debug)]
#[group(id = "pypi-inputs")]
pub struct Inputs {
    /// A hashed requirements file (pip-compile / uv pip compile
    /// --generate-hashes); repeatable.
    #[arg(long = "requirements", value_name = "FILE")]
    pub requirements: Vec<PathBuf>,
    /// A uv.lock (version 1).
    #[arg(long, value_name = "FILE")]
    pub uv_lock: Option<PathBuf>,
    /// A directory of wheels and sdists to add as they are; repeatable.
    #[arg(long, value_name = "DIR")]
    pub dist: Vec<PathBuf>,
    /// The index to fetch from (PEP 691 JSON or PEP 503 HTML).
    #[arg(long, value_name = "URL", default_value = DEFAULT_INDEX)]
    pub index_url: String,
    /// The mirror's base URL, e.g. http://127.0.0.1:8080: also write
    /// DIR/rewritten/uv.lock, whose file URLs point at the mirror.
    #[arg(long, value_name = "URL", requires = "uv_lock")]
    pub mirror_url: Option<String>,
    /// A PyPI universe: one project name per line, with an optional PEP 440
    /// specifier (`requests>=2.30`); `#` starts a comment.
    #[arg(
        id = "pypi_universe",
        long = "pypi-universe",
        value_name = "FILE",
        help_heading = "Universe"
    )]
    pub universe: Option<PathBuf>,
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// `--python-version`, `--platform`, `--implementation`, `--abi`,
/// `--include-sdists`, as given. Without a version or platform, every file
/// is kept (as before targets existed).
#[derive(clap::Args, Default, Clone, Debug)]
#[group(id = "pypi-targets")]
pub struct TargetArgs {
    /// The target's Python version (e.g. 3.11); repeatable, one target each.
    #[arg(long = "python-version", value_name = "X.Y", help_heading = "Targets")]
    pub python_versions: Vec<String>,
    /// A PEP 425 platform tag (e.g. manylinux_2_17_x86_64); repeatable, as
    /// pip's --platform: wheels for any of them are kept.
    #[arg(long = "platform", value_name = "TAG", help_heading = "Targets")]
    pub platforms: Vec<String>,
    /// The Python implementation tag: cp (default), pp, py.
    #[arg(long, value_name = "TAG", help_heading = "Targets")]
    pub implementation: Option<String>,
    /// An ABI tag (e.g. cp311, abi3, none); repeatable; by default derived
    /// from the version and implementation, as pip does.
    #[arg(long = "abi", value_name = "TAG", help_heading = "Targets")]
    pub abis: Vec<String>,
    /// Keep sdists too (with a target, only wheels are kept by default).
    #[arg(long, help_heading = "Targets")]
    pub include_sdists: bool,
}

/// A file some lock pins, and where.
#[derive(Debug, Clone)]
struct Wanted {
    name: ProjectName,
    version: Version,
    /// `file:line` of the first lock line pinning it.
    at: String,
    /// From uv.lock, used when the index gives none.
    upload_time: Option<String>,
}

/// A file ready for the builder: on disk (a local file, or a download
/// verified in the work directory), read only when it is staged, one at a
/// time.
struct File {
    path: PathBuf,
    sha256: Sha256Digest,
    yanked: Option<String>,
    upload_time: Option<String>,
}

impl File {
    /// The file's bytes, which must still hash to what was verified.
    fn read(&self, filename: &str) -> Result<Vec<u8>, BuildError> {
        let bytes = fs::read(&self.path).map_err(|cause| BuildError::Io {
            what: "read",
            path: self.path.clone(),
            cause,
        })?;
        if Sha256Digest::of(&bytes) != self.sha256 {
            return Err(BuildError::Refused(format!(
                "{filename}: {} changed after it was verified; build again",
                self.path.display()
            )));
        }
        Ok(bytes)
    }
}

pub(crate) struct Pypi {
    inputs: Inputs,
    index: Option<Url>,
    mirror: Option<String>,
    /// The uv.lock's name and text, for the rewrite.
    uv_lock_text: Option<(String, String)>,
    /// The uv.lock's file names by digest: where the rewrite points a file
    /// a target left out (at the mirror too, where it is a 404).
    uv_lock_files: BTreeMap<Sha256Digest, String>,
    wanted: BTreeMap<Sha256Digest, Wanted>,
    /// Local files by name.
    local: BTreeMap<String, File>,
    /// The pinned digests to download, by project.
    by_project: BTreeMap<ProjectName, Vec<Sha256Digest>>,
    fetched: BTreeMap<String, File>,
    targets: Option<target::Targets>,
    universe: Vec<universe::Line>,
    /// Universe files downloaded, each kept as a verified partial file.
    chosen: Vec<(universe::Chosen, PathBuf)>,
    dropped: Dropped,
    counts: (usize, usize),
    /// A dry run's files and bytes: what it would download.
    planned: Planned,
}

/// A dry run's files and bytes (as the index lists the sizes).
#[derive(Default)]
struct Planned {
    files: usize,
    bytes: u64,
}

impl Pypi {
    /// The projects and versions the locks pin.
    fn pinned(&self) -> (usize, usize) {
        let projects: BTreeSet<&ProjectName> = self.wanted.values().map(|w| &w.name).collect();
        let versions: BTreeSet<(&ProjectName, &Version)> = self
            .wanted
            .values()
            .map(|w| (&w.name, &w.version))
            .collect();
        (projects.len(), versions.len())
    }

    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            index: None,
            mirror: None,
            uv_lock_text: None,
            uv_lock_files: BTreeMap::new(),
            wanted: BTreeMap::new(),
            local: BTreeMap::new(),
            by_project: BTreeMap::new(),
            fetched: BTreeMap::new(),
            targets: None,
            universe: Vec::new(),
            chosen: Vec::new(),
            dropped: Dropped::default(),
            counts: (0, 0),
            planned: Planned::default(),
        }
    }
}

impl Part for Pypi {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--requirements", "--uv-lock", "--dist", "--pypi-universe"]
    }

    fn has_inputs(&self) -> bool {
        let i = &self.inputs;
        !i.requirements.is_empty()
            || i.uv_lock.is_some()
            || !i.dist.is_empty()
            || i.universe.is_some()
    }

    fn check(&mut self, builder: &mut SnapshotBuilder) -> Result<(), BuildError> {
        self.index = Some(index_url(&self.inputs.index_url)?);
        self.targets = target::Targets::new(&self.inputs.targets)?;
        if let Some(t) = &self.targets {
            let s = builder.selection_mut();
            s.pypi_targets = t.recorded();
            s.include_sdists = t.include_sdists();
        }
        if let Some(m) = &self.inputs.mirror_url {
            let url = Url::parse(m).map_err(|e| BuildError::Usage(format!("--mirror-url: {e}")))?;
            if url.path_and_query().contains('?') {
                return Err(BuildError::Usage(
                    "--mirror-url: must not carry a query string".into(),
                ));
            }
            self.mirror = Some(m.trim_end_matches('/').to_string());
        }
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        // Locks -> the digests wanted, each with the first place that pins it.
        let mut locks: Vec<Lock> = Vec::new();
        for path in &self.inputs.requirements {
            let (text, digest) = read_input("--requirements", path)?;
            locks.push(egress_lock::parse_requirements(
                &path.display().to_string(),
                &text,
            )?);
            add_source(sources, "requirements", path, digest);
        }
        if let Some(path) = &self.inputs.uv_lock {
            let (text, digest) = read_input("--uv-lock", path)?;
            let mut lock = egress_lock::parse_uv_lock(&path.display().to_string(), &text)?;
            for f in lock.pins.iter().flat_map(|p| &p.files) {
                if let Some(name) = &f.filename {
                    self.uv_lock_files.insert(f.sha256, name.clone());
                }
            }
            // uv locks for every platform; with a target, only what `uv
            // sync` installs there is wanted (its graph, markers evaluated).
            if let Some(t) = &self.targets {
                let needed = egress_lock::uv_lock_needed(&lock.file, &text, &|m| {
                    egress_select::pypi::Marker::parse(m).map_or(true, |m| t.applies(Some(&m), &[]))
                })?;
                lock.pins.retain(|pin| {
                    let keep = needed.contains(&(pin.name.clone(), pin.version.clone()));
                    if !keep {
                        let what = format!("{}=={} (not installed there)", pin.name, pin.version);
                        self.dropped.drop("marker", &what, None);
                    }
                    keep
                });
            }
            locks.push(lock);
            add_source(sources, "uv.lock", path, digest);
            self.uv_lock_text = Some((path.display().to_string(), text));
        }
        if let Some(path) = &self.inputs.universe {
            let (text, digest) = read_input("--pypi-universe", path)?;
            self.universe = universe::read_lines(path, &text)?;
            add_source(sources, "pypi-universe", path, digest);
        }
        for lock in &locks {
            for note in &lock.notes {
                eprintln!("note: {note}");
            }
            for pin in &lock.pins {
                if let (Some(t), Some(marker)) = (&self.targets, &pin.marker) {
                    // A marker pip could not read is kept, as pip keeps it.
                    let applies = egress_select::pypi::Marker::parse(marker)
                        .map_or(true, |m| t.applies(Some(&m), &[]));
                    if !applies {
                        let what = format!("{}=={} ; {marker}", pin.name, pin.version);
                        self.dropped.drop("marker", &what, None);
                        continue;
                    }
                }
                for f in &pin.files {
                    let at = format!("{}:{}", lock.file, f.line);
                    match self.wanted.get(&f.sha256) {
                        Some(w) if (&w.name, &w.version) != (&pin.name, &pin.version) => {
                            return Err(BuildError::Conflict(format!(
                                "{at}: sha256 {} is pinned for {}=={} here and for {}=={} at {}; one file cannot be both",
                                f.sha256, pin.name, pin.version, w.name, w.version, w.at
                            )));
                        }
                        Some(_) => {}
                        None => {
                            self.wanted.insert(
                                f.sha256,
                                Wanted {
                                    name: pin.name.clone(),
                                    version: pin.version.clone(),
                                    at,
                                    upload_time: f.upload_time.clone(),
                                },
                            );
                        }
                    }
                }
            }
        }

        // Local files are taken as they are; a pinned digest found among
        // them needs no download.
        let mut local_digests = BTreeSet::new();
        for dir in &self.inputs.dist {
            let files = local_dists(dir)?;
            // Hashed on every core, one file in memory per core.
            let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
            let digests = pool::map(&files, jobs, |(_, path)| {
                let bytes = fs::read(path).map_err(crate::local::fail("--dist", path))?;
                Ok::<_, BuildError>(Sha256Digest::of(&bytes))
            });
            for ((name, path), digest) in files.into_iter().zip(digests) {
                let digest = digest?;
                if self.local.contains_key(&name) {
                    return Err(BuildError::Conflict(format!(
                        "--dist: {name} is given twice; keep one"
                    )));
                }
                add_source(sources, "dist", Path::new(&name), digest);
                local_digests.insert(digest);
                self.local.insert(
                    name,
                    File {
                        path,
                        sha256: digest,
                        yanked: None,
                        upload_time: None,
                    },
                );
            }
        }
        for (d, w) in &self.wanted {
            if !local_digests.contains(d) {
                self.by_project.entry(w.name.clone()).or_default().push(*d);
            }
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        let lock_target = LockTarget {
            targets: self.targets.as_ref(),
            dropped: &mut self.dropped,
            planned: &mut self.planned,
        };
        self.fetched = fetch_all(net, index, &self.wanted, &self.by_project, lock_target)?;
        if !self.universe.is_empty() {
            let selected = universe::select(net, index, &self.universe, self.targets.as_ref())?;
            for note in &selected.notes {
                eprintln!("note: {note}");
            }
            self.dropped.merge(selected.dropped);
            self.counts = (selected.projects, selected.versions);
            if net.dry_run {
                self.planned.bytes += selected
                    .files
                    .iter()
                    .filter_map(|c| c.entry.size)
                    .sum::<u64>();
                self.planned.files += selected.files.len();
            } else {
                self.chosen = download_universe(net, selected.files, &mut self.dropped)?;
            }
        }
        Ok(())
    }

    fn planned(&self) -> Staged {
        Staged {
            files: self.planned.files,
            bytes: self.planned.bytes,
            projects: self.counts.0 + self.pinned().0,
            versions: self.counts.1 + self.pinned().1,
            dropped: self.dropped.clone(),
            ..Staged::default()
        }
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        out: &Path,
    ) -> Result<Staged, BuildError> {
        let pinned = self.pinned();
        let mut staged = self.local;
        let downloaded = self.fetched.len() + self.chosen.len();
        let chosen = self.chosen.into_iter().map(|(c, path)| {
            let f = File {
                path,
                sha256: c.sha256,
                yanked: c.entry.yanked,
                upload_time: c.entry.upload_time,
            };
            (c.entry.filename, f)
        });
        for (filename, f) in self.fetched.into_iter().chain(chosen) {
            if let Some(old) = staged.get(&filename) {
                if old.sha256 != f.sha256 {
                    return Err(BuildError::Conflict(format!(
                        "{filename}: the file given with --dist differs from the one the lock pins; drop one"
                    )));
                }
            }
            staged.insert(filename, f);
        }
        let mut filenames: BTreeMap<Sha256Digest, String> = BTreeMap::new();
        let mut done = Staged {
            files: staged.len(),
            downloaded,
            projects: self.counts.0 + pinned.0,
            versions: self.counts.1 + pinned.1,
            dropped: self.dropped,
            ..Staged::default()
        };
        for (filename, f) in staged {
            if f.upload_time.is_none() {
                done.untimed += 1;
            }
            let bytes = f.read(&filename)?;
            done.bytes += bytes.len() as u64;
            if self.mirror.is_some() {
                // Only the uv.lock rewrite needs them (a million of them
                // are 140 MB).
                filenames.insert(f.sha256, filename.clone());
            }
            builder
                .add_dist_with(&filename, bytes, f.yanked, f.upload_time)
                .map_err(BuildError::Rejected)?;
        }
        // The rewrite is prepared before anything is written, so that a
        // lock it cannot rewrite leaves nothing behind.
        if let (Some(base), Some((name, text))) = (&self.mirror, &self.uv_lock_text) {
            // A file a target left out keeps a URL on the mirror too (a 404
            // there), so the lock names no other host; uv never asks for it
            // on the target.
            let url_for = |d: &Sha256Digest| {
                filenames
                    .get(d)
                    .or_else(|| self.targets.as_ref().and(self.uv_lock_files.get(d)))
                    .map(|f| format!("{base}{FILES_PREFIX}{}/{f}", d.to_hex()))
            };
            let registry = format!("{base}{}", INDEX_PATH.trim_end_matches('/'));
            let text = egress_lock::rewrite_uv_lock(name, text, &registry, &url_for)?;
            let path = out.join(REWRITTEN_UV_LOCK);
            done.extras.push(Extra {
                note: format!(
                    "uv.lock for the mirror: {} (uv sync --frozen installs from {base})",
                    path.display()
                ),
                path,
                text,
            });
        }
        Ok(done)
    }
}

/// The index URL as a directory (trailing `/`), without a query.
fn index_url(raw: &str) -> Result<Url, BuildError> {
    let url = Url::parse(raw).map_err(|e| BuildError::Usage(format!("--index-url: {e}")))?;
    if url.path_and_query().contains('?') {
        return Err(BuildError::Usage(
            "--index-url: must not carry a query string".into(),
        ));
    }
    let path = url.path();
    Ok(if path.ends_with('/') {
        url
    } else {
        url.with_path(&format!("{path}/"))
    })
}

/// Local wheels and sdists, sorted by name; other files are noted and left.
fn local_dists(dir: &Path) -> Result<Vec<(String, PathBuf)>, BuildError> {
    crate::local::list_dir(
        dir,
        "--dist",
        &[".whl", ".tar.gz", ".zip"],
        "a wheel or sdist file",
    )
}

/// A page entry's sha256, if it lists one.
fn listed_sha256(entry: &egress_simple::FileEntry) -> Option<Sha256Digest> {
    entry
        .hashes
        .get("sha256")
        .and_then(|h| Sha256Digest::from_hex(h).ok())
}
/// Finds every wanted file on its project page, then downloads and verifies
/// all of them. Returns them by filename.
fn fetch_all(
    net: &Net,
    index: &Url,
    wanted: &BTreeMap<Sha256Digest, Wanted>,
    by_project: &BTreeMap<ProjectName, Vec<Sha256Digest>>,
    lock_target: LockTarget,
) -> Result<BTreeMap<String, File>, BuildError> {
    let page_client = Client::new(index.clone(), fetch::page_limits(), net.cacert)?;
    let projects: Vec<(&ProjectName, &Vec<Sha256Digest>)> = by_project.iter().collect();
    let quiet = Progress::new(0, 0);
    if !projects.is_empty() {
        eprintln!("reading {} project pages from {index}", projects.len());
    }
    let pages = pool::map(&projects, net.jobs, |(name, _)| {
        let url = index.with_path(&format!("{}{name}/", index.path()));
        page::project_page(&page_client, &url, &quiet)
    });

    // Each pinned digest must be listed on its project's page.
    let mut jobs: Vec<(FileJob, Option<String>, Option<String>)> = Vec::new();
    let mut unlisted = Vec::new();
    // Pins (name, version) with a file for the target, and those without.
    let mut kept_pins: BTreeSet<(&ProjectName, &Version)> = BTreeSet::new();
    let mut left_out: BTreeMap<(&ProjectName, &Version), (&str, Vec<String>)> = BTreeMap::new();
    // Each pin's files a target can install, to keep the best of.
    let mut installable: BTreeMap<(&ProjectName, &Version), Vec<Listed>> = BTreeMap::new();
    for ((name, digests), page) in projects.iter().zip(pages) {
        let (page_url, page) = page?;
        for d in digests.iter() {
            let Some(w) = wanted.get(d) else { continue };
            let Some(entry) = page.files.iter().find(|f| listed_sha256(f) == Some(*d)) else {
                unlisted.push(format!(
                    "sha256 {d} pinned for {}=={} at {} is listed by no file on {page_url}",
                    w.name, w.version, w.at
                ));
                continue;
            };
            let project_ok = DistFilename::parse(&entry.filename).is_ok_and(|f| &f.name == *name);
            if !project_ok {
                return Err(BuildError::Refused(format!(
                    "{page_url} lists {:?} for sha256 {d} (pinned for {}=={} at {}), which is not a file of {name}",
                    entry.filename, w.name, w.version, w.at
                )));
            }
            if let Some(t) = lock_target.targets {
                if let Err(rule) = t.file(&entry.filename) {
                    lock_target.dropped.drop(rule, &entry.filename, entry.size);
                    let e = left_out
                        .entry((&w.name, &w.version))
                        .or_insert((&w.at, Vec::new()));
                    e.1.push(entry.filename.clone());
                    continue;
                }
            }
            kept_pins.insert((&w.name, &w.version));
            installable.entry((&w.name, &w.version)).or_default().push((
                *d,
                page_url.clone(),
                entry.clone(),
            ));
        }
    }
    for (_, files) in installable {
        // With targets, only what an installer there would choose.
        let keep = match lock_target.targets {
            Some(t) => t.best(
                &files
                    .iter()
                    .map(|(_, _, e)| e.filename.as_str())
                    .collect::<Vec<_>>(),
            ),
            None => vec![true; files.len()],
        };
        for ((d, page_url, entry), keep) in files.into_iter().zip(keep) {
            if !keep {
                lock_target
                    .dropped
                    .drop("superseded", &entry.filename, entry.size);
                continue;
            }
            let Some(w) = wanted.get(&d) else { continue };
            let url = page_url.join(&entry.url).map_err(|e| {
                BuildError::Refused(format!("{page_url}: file URL of {}: {e}", entry.filename))
            })?;
            let upload_time = entry
                .upload_time
                .clone()
                .or_else(|| w.upload_time.clone())
                .filter(|t| SnapshotBuilder::is_valid_upload_time(t));
            check_cutoff(net, &entry.filename, w, upload_time.as_deref())?;
            jobs.push((
                FileJob {
                    filename: entry.filename.clone(),
                    url,
                    expect: fetch::Expect::Sha256(d),
                    size: entry.size,
                },
                entry.yanked.clone(),
                upload_time,
            ));
        }
    }
    if let Some(first) = unlisted.first() {
        let more = match unlisted.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(BuildError::Refused(format!(
            "{first}{more}; the index does not serve what the lock pins"
        )));
    }
    if let Some(t) = lock_target.targets {
        let mut without = left_out.iter().filter(|(pin, _)| !kept_pins.contains(*pin));
        if let Some(((name, version), (at, files))) = without.next() {
            let more = match without.count() {
                0 => String::new(),
                n => format!(" (and {n} more pins)"),
            };
            return Err(BuildError::Usage(format!(
                "{name}=={version} (pinned at {at}) has no file for the target {}: its {} files are for other targets (e.g. {}){more}; add a --platform or --python-version it has a wheel for, or --include-sdists",
                t.describe(),
                files.len(),
                t.nearest(files).join(", ")
            )));
        }
    }

    if net.dry_run {
        lock_target.planned.files += jobs.len();
        lock_target.planned.bytes += jobs.iter().filter_map(|(j, _, _)| j.size).sum::<u64>();
        return Ok(BTreeMap::new());
    }
    let file_jobs: Vec<&FileJob> = jobs.iter().map(|(j, _, _)| j).collect();
    let results = download_files(net, &file_jobs, AfterFailure::Stop)?;

    let mut out = BTreeMap::new();
    let mut first_error = None;
    for ((job, yanked, upload_time), r) in jobs.into_iter().zip(results) {
        match r {
            Some(Ok(())) => {
                let (path, sha256) = match &job.expect {
                    fetch::Expect::Sha256(d) => (net.work.join(job.expect.part_name(&job.url)), *d),
                    fetch::Expect::Sri512(_) | fetch::Expect::GitBlob(_) => continue,
                };
                out.insert(
                    job.filename,
                    File {
                        path,
                        sha256,
                        yanked,
                        upload_time,
                    },
                );
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                let Some(w) = wanted.get(&expected) else {
                    return Err(FetchError::Mismatch { expected, actual }.into());
                };
                // A mismatch outranks any other failure: it is the one that
                // says the index serves other bytes than the lock pins.
                return Err(BuildError::Refused(format!(
                    "{} ({}=={}, pinned at {}) from {}: expected sha256 {expected}, got {actual}; refusing the whole snapshot",
                    job.filename, w.name, w.version, w.at, job.url
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

/// What a lock build does with its targets: drops the files no target can
/// install, and counts them.
struct LockTarget<'a> {
    targets: Option<&'a target::Targets>,
    dropped: &'a mut Dropped,
    /// A dry run's files and bytes.
    planned: &'a mut Planned,
}

/// With `--exclude-newer`, a pinned file must have been uploaded at or
/// before the cutoff: a lock that pins a newer file cannot be served under
/// that cutoff, and one with no upload time cannot be shown to be.
fn check_cutoff(
    net: &Net,
    filename: &str,
    w: &Wanted,
    upload_time: Option<&str>,
) -> Result<(), BuildError> {
    let Some(cutoff) = &net.rules.exclude_newer else {
        return Ok(());
    };
    let pin = format!("{}=={} (pinned at {})", w.name, w.version, w.at);
    match upload_time.map(egress_model::Timestamp::parse) {
        Some(Ok(t)) if cutoff.excludes(t) => Err(BuildError::Refused(format!(
            "{filename} of {pin} was uploaded at {t}, after --exclude-newer {}; pin an older version or move the cutoff",
            cutoff.text
        ))),
        Some(Ok(_)) => Ok(()),
        _ => Err(BuildError::NoUploadTimes(format!(
            "{filename} of {pin}: the index lists no upload time for it, and --exclude-newer is given; use an index that serves PEP 700 upload times, or build without --exclude-newer"
        ))),
    }
}

/// A pinned file as its page lists it: digest, page URL, entry.
type Listed = (Sha256Digest, Url, FileEntry);

/// A download verified and kept in the work directory, or why not.
type Downloaded = Result<(), FetchError>;

/// Whether a failed download stops the others from starting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AfterFailure {
    /// A lock's: one missing file fails the build, so stop.
    Stop,
    /// A universe's: a file whose bytes differ is left out, go on.
    GoOn,
}

/// Downloads every job, `net.jobs` at a time, each verified against its
/// digest and kept in the work directory (`part_name`) for the stage to
/// read one at a time; a rerun after an interruption finds it complete and
/// fetches nothing. One result per job, `None` for a job not started.
fn download_files(
    net: &Net,
    jobs: &[&FileJob],
    after_failure: AfterFailure,
) -> Result<Vec<Option<Downloaded>>, BuildError> {
    // One client per origin: files often live elsewhere (PyPI's file host).
    let mut clients: HashMap<String, Client> = HashMap::new();
    for job in jobs {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(job.url.origin()) {
            let c = Client::new(job.url.clone(), Limits::download(), net.cacert)?;
            slot.insert(c);
        }
    }
    let total = jobs.iter().filter_map(|j| j.size).sum();
    let progress = Progress::new(jobs.len(), total);
    let stop = AtomicBool::new(false);
    let results = pool::map(jobs, net.jobs, |job| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", job.url))));
        };
        let part = net.work.join(job.expect.part_name(&job.url));
        let r = fetch::download(client, job, &part, &progress);
        match &r {
            Ok(bytes) => progress.done(&job.filename, bytes.len() as u64, ""),
            Err(_) if after_failure == AfterFailure::Stop => stop.store(true, Ordering::Relaxed),
            Err(_) => {}
        }
        Some(r.map(drop))
    });
    progress.finish();
    Ok(results)
}

/// Downloads the universe's files into the work directory, each verified
/// against the sha256 its page lists. A file whose bytes differ is left
/// out and reported (under `--strict`, the build stops); so is one over
/// `--max-file-bytes` whose page gave no size.
fn download_universe(
    net: &Net,
    chosen: Vec<universe::Chosen>,
    dropped: &mut Dropped,
) -> Result<Vec<(universe::Chosen, PathBuf)>, BuildError> {
    let jobs: Vec<FileJob> = chosen
        .iter()
        .map(|c| FileJob {
            filename: c.entry.filename.clone(),
            url: c.url.clone(),
            expect: fetch::Expect::Sha256(c.sha256),
            size: c.entry.size,
        })
        .collect();
    let refs: Vec<&FileJob> = jobs.iter().collect();
    let results = download_files(net, &refs, AfterFailure::GoOn)?;
    let mut out = Vec::new();
    let mut first_error = None;
    for ((c, job), r) in chosen.into_iter().zip(&jobs).zip(results) {
        let part = net.work.join(job.expect.part_name(&job.url));
        match r {
            Some(Ok(_)) => {
                let size = fs::metadata(&part).map_or(0, |m| m.len());
                if net.rules.max_file_bytes.is_some_and(|max| size > max) {
                    dropped.drop("max-file-bytes", &c.entry.filename, Some(size));
                    continue;
                }
                out.push((c, part));
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                let what = format!(
                    "{} from {} (sha256 {actual}, the index lists {expected})",
                    c.entry.filename, c.url
                );
                if net.rules.strict {
                    return Err(BuildError::Refused(format!(
                        "{what}: the bytes do not match the registry's hash; --strict stops here"
                    )));
                }
                eprintln!("refused: {what}: the bytes do not match the registry's hash; left out");
                dropped.drop("hash-mismatch", &c.entry.filename, c.entry.size);
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
