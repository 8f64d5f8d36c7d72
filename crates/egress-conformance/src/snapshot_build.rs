//! `snapshot build`: lockfiles in, a signed snapshot out.
//!
//! Every file that enters the snapshot is either a local file given with
//! `--dist` or a download whose bytes hash to a digest a lockfile pins.
//! Nothing is built or run (P4): wheels are read as zip files for their
//! METADATA, sdists stay opaque. npm tarballs pinned by a package-lock.json
//! are verified against its sha512 integrity, and the upstream registry's
//! `dist.signatures` and keys document are replayed verbatim where they sign
//! that integrity (see `snapshot_npm`). Any disagreement between the index and the
//! locks refuses the whole snapshot, and then nothing is written at `--out`.

use crate::fetch::{self, FetchError, FileJob};
use crate::keygen::DEFAULT_PRINCIPAL;
use crate::progress::{human, Progress};
use crate::{exit, output, pool, Failure};
use egress_lock::{Lock, LockError};
use egress_model::{DistFilename, ProjectName, Sha256Digest, Url, Version};
use egress_signing::SigningKey;
use egress_snapshot::{SnapshotBuilder, SnapshotError, FILES_PREFIX};
use egress_transcript::{Client, Limits};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the snapshot serves its index; project pages are below it.
const INDEX_PATH: &str = "/simple/";
/// Where `--mirror-url` puts the rewritten uv.lock, inside `--out`.
pub const REWRITTEN_UV_LOCK: &str = "rewritten/uv.lock";

#[derive(clap::Args)]
pub struct BuildArgs {
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
    #[arg(long, value_name = "URL", default_value = "https://pypi.org/simple/")]
    pub index_url: String,
    /// The OpenSSH ed25519 private key (unencrypted) that signs the MANIFEST.
    #[arg(long, value_name = "FILE")]
    pub sign_key: PathBuf,
    /// The principal in the shipped allowed_signers; by default the key's
    /// comment.
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// Parallel downloads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
    /// The snapshot directory to write (atomically; an existing snapshot there
    /// is replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The mirror's base URL, e.g. http://127.0.0.1:8080: also write
    /// DIR/rewritten/uv.lock, whose file URLs point at the mirror.
    #[arg(long, value_name = "URL", requires = "uv_lock")]
    pub mirror_url: Option<String>,
    /// An npm package-lock.json (lockfile version 2 or 3): every tarball it
    /// pins is fetched from its `resolved` URL, verified against its sha512
    /// integrity, and served with pre-rendered packuments.
    #[arg(long, value_name = "FILE")]
    pub npm_lock: Option<PathBuf>,
    /// The mirror's absolute base URL as npm clients will reach it, e.g.
    /// http://127.0.0.1:8080/; required with --npm-lock, because npm needs
    /// absolute tarball URLs in packuments.
    #[arg(long, value_name = "URL")]
    pub npm_registry_url: Option<String>,
    /// PEM file of CA certificates to trust for an https index.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
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

/// A file ready for the builder.
struct Staged {
    bytes: Vec<u8>,
    yanked: Option<String>,
    upload_time: Option<String>,
}

fn refused(m: impl Into<String>) -> Failure {
    Failure {
        code: exit::REFUSED,
        message: m.into(),
        source: None,
    }
}

fn read_input(what: &str, path: &Path) -> Result<(String, Sha256Digest), Failure> {
    let bytes =
        fs::read(path).map_err(|e| Failure::input(format!("{what} {}: {e}", path.display())))?;
    let digest = Sha256Digest::of(&bytes);
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::input(format!("{what} {}: not UTF-8 text", path.display())))?;
    Ok((text, digest))
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Records an input in `sources` under `kind:<file name>`, or under the
/// path as given when two inputs share a file name.
fn add_source(
    sources: &mut BTreeMap<String, Sha256Digest>,
    kind: &str,
    path: &Path,
    d: Sha256Digest,
) {
    let key = format!("{kind}:{}", file_name(path));
    let key = if sources.get(&key).is_some_and(|old| *old != d) {
        format!("{kind}:{}", path.display())
    } else {
        key
    };
    sources.insert(key, d);
}

fn lock_error(e: LockError) -> Failure {
    Failure::input(e.to_string())
}

/// RFC 3339 UTC, seconds precision, from the system clock.
fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The index URL as a directory (trailing `/`), without a query.
fn index_url(raw: &str) -> Result<Url, Failure> {
    let url = Url::parse(raw).map_err(|e| Failure::usage(format!("--index-url: {e}")))?;
    if url.path_and_query().contains('?') {
        return Err(Failure::usage("--index-url: must not carry a query string"));
    }
    let path = url.path();
    Ok(if path.ends_with('/') {
        url
    } else {
        url.with_path(&format!("{path}/"))
    })
}

/// Local wheels and sdists, sorted by name; other files are noted and left.
fn local_dists(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let fail = |e: std::io::Error| Failure::input(format!("--dist {}: {e}", dir.display()));
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let is_dist = [".whl", ".tar.gz", ".zip"]
            .iter()
            .any(|x| name.ends_with(x));
        if !is_dist || !path.is_file() {
            eprintln!(
                "note: --dist {}: {name} skipped: not a wheel or sdist file",
                dir.display()
            );
            continue;
        }
        let bytes = fs::read(&path)
            .map_err(|e| Failure::input(format!("--dist {}: {e}", path.display())))?;
        out.push((name, bytes));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn snapshot_failure(e: SnapshotError) -> Failure {
    match e {
        SnapshotError::NotASnapshotDir(_) | SnapshotError::Symlink(_) => {
            Failure::input(e.to_string())
        }
        _ => Failure::internal(e.to_string()),
    }
}

/// A page entry's sha256, if it lists one.
fn listed_sha256(entry: &egress_simple::FileEntry) -> Option<Sha256Digest> {
    entry
        .hashes
        .get("sha256")
        .and_then(|h| Sha256Digest::from_hex(h).ok())
}

pub fn main(args: BuildArgs) -> Result<u8, Failure> {
    if args.requirements.is_empty()
        && args.uv_lock.is_none()
        && args.dist.is_empty()
        && args.npm_lock.is_none()
    {
        return Err(Failure::usage(
            "give at least one of --requirements, --uv-lock, --dist or --npm-lock",
        ));
    }
    // Checked by the builder's own rules before anything is downloaded.
    let mut builder = SnapshotBuilder::new(INDEX_PATH);
    match (&args.npm_lock, &args.npm_registry_url) {
        (Some(_), None) => {
            return Err(Failure::usage(
                "--npm-lock needs --npm-registry-url URL, the mirror's base URL as npm will reach it (npm requires absolute tarball URLs in packuments)",
            ))
        }
        (None, Some(_)) => {
            return Err(Failure::usage("--npm-registry-url is only used with --npm-lock"))
        }
        (Some(_), Some(url)) => builder
            .npm_registry_url(url)
            .map_err(|e| Failure::usage(format!("--npm-registry-url: {e}")))?,
        (None, None) => {}
    }
    if args.jobs == 0 || args.jobs > 64 {
        return Err(Failure::usage("--jobs: give a number between 1 and 64"));
    }
    let index = index_url(&args.index_url)?;
    let mirror = match &args.mirror_url {
        None => None,
        Some(m) => {
            let url = Url::parse(m).map_err(|e| Failure::usage(format!("--mirror-url: {e}")))?;
            if url.path_and_query().contains('?') {
                return Err(Failure::usage(
                    "--mirror-url: must not carry a query string",
                ));
            }
            Some(m.trim_end_matches('/').to_string())
        }
    };

    // Refuse an unusable --out before downloading anything (write_dir checks
    // again when it writes).
    if let Ok(m) = fs::symlink_metadata(&args.out) {
        let holds_snapshot = || {
            fs::symlink_metadata(args.out.join(egress_snapshot::MANIFEST_FILE))
                .is_ok_and(|m| m.is_file())
        };
        let empty = || fs::read_dir(&args.out).is_ok_and(|mut d| d.next().is_none());
        if m.file_type().is_symlink() || !m.is_dir() || !(empty() || holds_snapshot()) {
            return Err(Failure::input(format!(
                "--out {}: exists and is not an empty directory or a snapshot; choose an empty or new directory",
                args.out.display()
            )));
        }
    }

    // The key first: a build that cannot be signed should not download.
    let (key_text, _) = read_input("--sign-key", &args.sign_key)?;
    let key = SigningKey::from_openssh(&key_text)
        .map_err(|e| Failure::input(format!("--sign-key {}: {e}", args.sign_key.display())))?;
    let principal = args
        .principal
        .clone()
        .or_else(|| Some(key.comment().trim().to_string()).filter(|c| !c.is_empty()))
        .unwrap_or_else(|| DEFAULT_PRINCIPAL.to_string());

    // Locks -> the digests wanted, each with the first place that pins it.
    let mut sources = BTreeMap::new();
    let mut locks: Vec<Lock> = Vec::new();
    for path in &args.requirements {
        let (text, digest) = read_input("--requirements", path)?;
        locks.push(
            egress_lock::parse_requirements(&path.display().to_string(), &text)
                .map_err(lock_error)?,
        );
        add_source(&mut sources, "requirements", path, digest);
    }
    let mut uv_lock_text = None;
    if let Some(path) = &args.uv_lock {
        let (text, digest) = read_input("--uv-lock", path)?;
        locks.push(
            egress_lock::parse_uv_lock(&path.display().to_string(), &text).map_err(lock_error)?,
        );
        add_source(&mut sources, "uv.lock", path, digest);
        uv_lock_text = Some((path.display().to_string(), text));
    }
    let mut npm_lock = None;
    if let Some(path) = &args.npm_lock {
        let (text, digest) = read_input("--npm-lock", path)?;
        npm_lock = Some(
            egress_lock::parse_package_lock(&path.display().to_string(), &text)
                .map_err(lock_error)?,
        );
        add_source(&mut sources, "package-lock.json", path, digest);
    }
    let mut wanted: BTreeMap<Sha256Digest, Wanted> = BTreeMap::new();
    for lock in &locks {
        for note in &lock.notes {
            eprintln!("note: {note}");
        }
        for pin in &lock.pins {
            for f in &pin.files {
                let at = format!("{}:{}", lock.file, f.line);
                match wanted.get(&f.sha256) {
                    Some(w) if (&w.name, &w.version) != (&pin.name, &pin.version) => {
                        return Err(Failure::input(format!(
                            "{at}: sha256 {} is pinned for {}=={} here and for {}=={} at {}; one file cannot be both",
                            f.sha256, pin.name, pin.version, w.name, w.version, w.at
                        )));
                    }
                    Some(_) => {}
                    None => {
                        wanted.insert(
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

    // Local files are taken as they are; a pinned digest found among them
    // needs no download.
    let mut staged: BTreeMap<String, Staged> = BTreeMap::new();
    let mut local_digests = BTreeSet::new();
    for dir in &args.dist {
        for (name, bytes) in local_dists(dir)? {
            let digest = Sha256Digest::of(&bytes);
            if staged.contains_key(&name) {
                return Err(Failure::input(format!(
                    "--dist: {name} is given twice; keep one"
                )));
            }
            add_source(&mut sources, "dist", Path::new(&name), digest);
            local_digests.insert(digest);
            staged.insert(
                name,
                Staged {
                    bytes,
                    yanked: None,
                    upload_time: None,
                },
            );
        }
    }
    let mut by_project: BTreeMap<ProjectName, Vec<Sha256Digest>> = BTreeMap::new();
    for (d, w) in &wanted {
        if !local_digests.contains(d) {
            by_project.entry(w.name.clone()).or_default().push(*d);
        }
    }

    let work = work_dir(&args.out)?;
    let result = fetch_all(&args, &index, &wanted, &by_project, &work).and_then(|fetched| {
        let npm = match &npm_lock {
            Some(lock) => {
                let tarballs =
                    crate::snapshot_npm::fetch_npm(lock, args.jobs, args.cacert.as_deref(), &work)?;
                // Only once every tarball matched its lock.
                let evidence = crate::snapshot_npm::fetch_npm_signatures(
                    lock,
                    args.jobs,
                    args.cacert.as_deref(),
                )?;
                (tarballs, evidence)
            }
            None => Default::default(),
        };
        Ok((fetched, npm))
    });
    // The partial files are only worth keeping for an interrupted run.
    let _ = fs::remove_dir_all(&work);
    let (fetched, (npm_fetched, npm_evidence)) = result?;
    for line in &npm_evidence.lines {
        eprintln!("{line}");
    }
    let downloaded = fetched.len();
    for (filename, s) in fetched {
        if let Some(old) = staged.get(&filename) {
            if Sha256Digest::of(&old.bytes) != Sha256Digest::of(&s.bytes) {
                return Err(Failure::input(format!(
                    "{filename}: the file given with --dist differs from the one the lock pins; drop one"
                )));
            }
        }
        staged.insert(filename, s);
    }

    let mut filenames: BTreeMap<Sha256Digest, String> = BTreeMap::new();
    let files = staged.len() + npm_lock.as_ref().map_or(0, |l| l.pins.len());
    let mut bytes_total = 0u64;
    for (filename, s) in staged {
        let digest = Sha256Digest::of(&s.bytes);
        bytes_total += s.bytes.len() as u64;
        filenames.insert(digest, filename.clone());
        builder
            .add_dist_with(&filename, s.bytes, s.yanked, s.upload_time)
            .map_err(|e| Failure::input(e.to_string()))?;
    }
    let npm_files = npm_fetched.len();
    for t in npm_fetched {
        bytes_total += t.bytes.len() as u64;
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
            .map_err(|e| Failure::input(e.to_string()))?;
    }
    // Replayed as the upstream registry published them (see snapshot_npm).
    if let Some(keys) = npm_evidence.keys {
        builder
            .npm_registry_keys(keys)
            .map_err(|e| Failure::internal(e.to_string()))?;
    }
    for s in npm_evidence.signed {
        builder
            .add_npm_signatures(&s.name, &s.version, &s.integrity, s.signatures)
            .map_err(|e| Failure::internal(e.to_string()))?;
    }
    for (name, digest) in sources {
        builder.source(&name, digest);
    }

    // The rewrite is prepared before anything is written, so that a lock it
    // cannot rewrite leaves nothing behind.
    let rewritten = match (&mirror, &uv_lock_text) {
        (Some(base), Some((name, text))) => {
            let url_for = |d: &Sha256Digest| {
                filenames
                    .get(d)
                    .map(|f| format!("{base}{FILES_PREFIX}{}/{f}", d.to_hex()))
            };
            let registry = format!("{base}{}", INDEX_PATH.trim_end_matches('/'));
            Some(
                egress_lock::rewrite_uv_lock(name, text, &registry, &url_for)
                    .map_err(lock_error)?,
            )
        }
        _ => None,
    };

    let snapshot = builder
        .build(&now_rfc3339(), Some(&key), &principal)
        .map_err(|e| Failure::input(e.to_string()))?;
    snapshot.write_dir(&args.out).map_err(snapshot_failure)?;
    crate::outln!(
        "snapshot {} written to {}: {files} files ({} downloaded), {}, signed by {principal} ({})",
        snapshot.id(),
        args.out.display(),
        downloaded + npm_files,
        human(bytes_total),
        key.public().fingerprint()
    );
    if let Some(text) = rewritten {
        let path = args.out.join(REWRITTEN_UV_LOCK);
        let fail =
            |e: std::io::Error| Failure::internal(format!("cannot write {}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(fail)?;
        }
        output::write_atomic(&path, text.as_bytes()).map_err(fail)?;
        crate::outln!(
            "uv.lock for the mirror: {} (uv sync --frozen installs from {})",
            path.display(),
            mirror.as_deref().unwrap_or_default()
        );
    }
    Ok(exit::PASS)
}

/// `.<out name>.parts` beside `--out`: partial downloads live there, so an
/// interrupted run resumes, and nothing half-written is ever inside `--out`.
fn work_dir(out: &Path) -> Result<PathBuf, Failure> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Failure::usage("--out: give a directory name"))?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let work = parent.join(format!(".{name}.parts"));
    fs::create_dir_all(&work)
        .map_err(|e| Failure::internal(format!("cannot create {}: {e}", work.display())))?;
    Ok(work)
}

/// Finds every wanted file on its project page, then downloads and verifies
/// all of them. Returns them by filename.
fn fetch_all(
    args: &BuildArgs,
    index: &Url,
    wanted: &BTreeMap<Sha256Digest, Wanted>,
    by_project: &BTreeMap<ProjectName, Vec<Sha256Digest>>,
    work: &Path,
) -> Result<BTreeMap<String, Staged>, Failure> {
    let page_client = Client::new(index.clone(), fetch::page_limits(), args.cacert.as_deref())
        .map_err(|e| Failure::input(e.to_string()))?;
    let projects: Vec<(&ProjectName, &Vec<Sha256Digest>)> = by_project.iter().collect();
    let quiet = Progress::new(0, 0);
    if !projects.is_empty() {
        eprintln!("reading {} project pages from {index}", projects.len());
    }
    let pages = pool::map(&projects, args.jobs, |(name, _)| {
        let url = index.with_path(&format!("{}{name}/", index.path()));
        fetch::project_page(&page_client, &url, &quiet)
    });

    // Each pinned digest must be listed on its project's page.
    let mut jobs: Vec<(FileJob, Option<String>, Option<String>)> = Vec::new();
    let mut unlisted = Vec::new();
    for ((name, digests), page) in projects.iter().zip(pages) {
        let (page_url, page) = page.map_err(fetch_failure)?;
        for d in digests.iter() {
            let w = &wanted[d];
            let Some(entry) = page.files.iter().find(|f| listed_sha256(f) == Some(*d)) else {
                unlisted.push(format!(
                    "sha256 {d} pinned for {}=={} at {} is listed by no file on {page_url}",
                    w.name, w.version, w.at
                ));
                continue;
            };
            let project_ok = DistFilename::parse(&entry.filename).is_ok_and(|f| &f.name == *name);
            if !project_ok {
                return Err(refused(format!(
                    "{page_url} lists {:?} for sha256 {d} (pinned for {}=={} at {}), which is not a file of {name}",
                    entry.filename, w.name, w.version, w.at
                )));
            }
            let url = page_url
                .join(&entry.url)
                .map_err(|e| refused(format!("{page_url}: file URL of {}: {e}", entry.filename)))?;
            let upload_time = entry
                .upload_time
                .clone()
                .or_else(|| w.upload_time.clone())
                .filter(|t| SnapshotBuilder::is_valid_upload_time(t));
            jobs.push((
                FileJob {
                    filename: entry.filename.clone(),
                    url,
                    expect: fetch::Expect::Sha256(*d),
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
        return Err(refused(format!(
            "{first}{more}; the index does not serve what the lock pins"
        )));
    }

    // One client per origin: files often live elsewhere (PyPI's file host).
    let mut clients: HashMap<String, Client> = HashMap::new();
    for (job, _, _) in &jobs {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(job.url.origin()) {
            let c = Client::new(job.url.clone(), Limits::download(), args.cacert.as_deref())
                .map_err(|e| Failure::input(e.to_string()))?;
            slot.insert(c);
        }
    }
    let total = jobs.iter().filter_map(|(j, _, _)| j.size).sum();
    let progress = Progress::new(jobs.len(), total);
    // After the first failure no new download starts.
    let stop = AtomicBool::new(false);
    let results = pool::map(&jobs, args.jobs, |(job, _, _)| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let client = &clients[&job.url.origin()];
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

    let mut out = BTreeMap::new();
    let mut first_error = None;
    for ((job, yanked, upload_time), r) in jobs.into_iter().zip(results) {
        match r {
            Some(Ok(bytes)) => {
                out.insert(
                    job.filename,
                    Staged {
                        bytes,
                        yanked,
                        upload_time,
                    },
                );
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                let w = &wanted[&expected];
                // A mismatch outranks any other failure: it is the one that
                // says the index serves other bytes than the lock pins.
                return Err(refused(format!(
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
        Some(e) => Err(fetch_failure(e)),
        None => Ok(out),
    }
}

pub(crate) fn fetch_failure(e: FetchError) -> Failure {
    match e {
        FetchError::Refused(m) => refused(m),
        FetchError::Failed(m) => Failure::internal(format!("cannot fetch {m}")),
        FetchError::Mismatch { expected, actual } => {
            refused(format!("expected sha256 {expected}, got {actual}"))
        }
        FetchError::IntegrityMismatch { expected, actual } => {
            refused(format!("expected integrity {expected}, got {actual}"))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_format() {
        let t = super::now_rfc3339();
        assert!(
            egress_snapshot::SnapshotBuilder::is_valid_upload_time(&t),
            "{t}"
        );
        assert!(t.starts_with("20"), "{t}");
    }
}
