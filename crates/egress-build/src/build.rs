//! A snapshot build: lockfiles in, a signed snapshot out.
//!
//! Every file that enters the snapshot is either a local file or a download
//! whose bytes hash to a digest a lockfile pins. Nothing is built or run
//! (P4). Each protocol does its share as a [`Part`] (see [`crate::parts`]):
//! it checks its options, reads its locks, fetches and verifies what they
//! pin, and adds it to the builder. Any disagreement between an index and
//! the locks refuses the whole snapshot, and then nothing is written at
//! `out`.

use crate::error::BuildError;
use crate::select::{Dropped, Rules};
use egress_cli::store::write_atomic;
use egress_model::Sha256Digest;
use egress_signing::SigningKey;
use egress_snapshot::{SnapshotBuilder, SnapshotError};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the snapshot serves its index; project pages are below it.
pub(crate) const INDEX_PATH: &str = "/simple/";
/// The principal of a signing key without a comment, when none is given.
pub const DEFAULT_PRINCIPAL: &str = "snapshot-signer@egress-mirror";

/// What every protocol shares.
pub struct Common {
    /// The OpenSSH ed25519 private key (unencrypted) that signs the MANIFEST.
    pub sign_key: PathBuf,
    /// The principal in the shipped allowed_signers; by default the key's
    /// comment, else [`DEFAULT_PRINCIPAL`].
    pub principal: Option<String>,
    /// Parallel downloads, 1 to 64.
    pub jobs: usize,
    /// The snapshot directory to write (atomically; an existing snapshot
    /// there is replaced).
    pub out: PathBuf,
    /// PEM file of CA certificates to trust for https.
    pub cacert: Option<PathBuf>,
    /// The cutoff and the universe rules, for every protocol.
    pub rules: Rules,
    /// Select and report, download nothing, write nothing.
    pub dry_run: bool,
    /// Build a layer on a snapshot (see egress_snapshot::chain).
    pub layer: Layering,
}

/// `--base`, `--remove` and who the base must be signed by.
#[derive(Default)]
pub struct Layering {
    /// The snapshot this build is a layer on.
    pub base: Option<PathBuf>,
    /// `NAME==VERSION` (PyPI) or `NAME@VERSION` (npm): taken out of the
    /// base's view, with a signed tombstone.
    pub remove: Vec<String>,
    /// The allowed-signers file the base (and every layer below it) must
    /// verify against; by default the key of `--sign-key`.
    pub base_signers: Option<PathBuf>,
}

/// The inputs of each source, as the protocols read them; see `crate::parts`.
pub(crate) type Sources = BTreeMap<String, Sha256Digest>;

/// Where and how a part fetches.
pub(crate) struct Net<'a> {
    pub(crate) jobs: usize,
    pub(crate) cacert: Option<&'a Path>,
    /// Partial downloads live here, so an interrupted run resumes.
    pub(crate) work: &'a Path,
    /// The cutoff and the universe rules.
    pub(crate) rules: &'a Rules,
    /// Select only: no file is downloaded.
    pub(crate) dry_run: bool,
}

/// What a part added to the builder.
#[derive(Default)]
pub(crate) struct Staged {
    pub(crate) files: usize,
    pub(crate) downloaded: usize,
    pub(crate) bytes: u64,
    /// Projects (npm packages) and versions with at least one file.
    pub(crate) projects: usize,
    pub(crate) versions: usize,
    /// What each selection rule dropped.
    pub(crate) dropped: Dropped,
    /// Distribution files the upstream gave no upload time for.
    pub(crate) untimed: usize,
    /// Files to write beside the snapshot once it is written.
    pub(crate) extras: Vec<Extra>,
}

impl Staged {
    fn add(&mut self, s: Staged) {
        self.files += s.files;
        self.downloaded += s.downloaded;
        self.bytes += s.bytes;
        self.projects += s.projects;
        self.versions += s.versions;
        self.dropped.merge(s.dropped);
        self.untimed += s.untimed;
        self.extras.extend(s.extras);
    }
}

/// A file written after the snapshot (the rewritten uv.lock), and the line
/// that says so.
pub(crate) struct Extra {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    pub(crate) note: String,
}

/// One protocol's share of a build.
pub(crate) trait Part {
    /// The flags that give this protocol an input.
    fn input_flags(&self) -> &'static [&'static str];
    fn has_inputs(&self) -> bool;
    /// Checks the options before anything is read or downloaded; may set
    /// what the builder needs from them.
    fn check(&mut self, builder: &mut SnapshotBuilder) -> Result<(), BuildError>;
    /// Reads the locks and local files, each recorded in `sources`.
    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError>;
    /// Downloads and verifies everything the locks pin (in a dry run, only
    /// selects it).
    fn fetch(&mut self, net: &Net) -> Result<(), BuildError>;
    /// After a dry run's `fetch`: what `stage` would add, sizes as the
    /// index announced them. Nothing by default.
    fn planned(&self) -> Staged {
        Staged::default()
    }
    /// Told the snapshot signing key and the build's time (seconds since
    /// the epoch) before `stage`, for a part that signs what it serves
    /// (apt's Release); nothing by default.
    fn signing(&mut self, _key: &SigningKey, _now: u64) {}
    /// Adds what was read and fetched to the builder.
    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        out: &Path,
    ) -> Result<Staged, BuildError>;
}

/// Reads an input file as text; returns it with its sha256.
pub(crate) fn read_input(
    what: &'static str,
    path: &Path,
) -> Result<(String, Sha256Digest), BuildError> {
    let bytes = fs::read(path).map_err(|cause| BuildError::Read {
        what,
        path: path.to_path_buf(),
        cause,
    })?;
    let digest = Sha256Digest::of(&bytes);
    let text = String::from_utf8(bytes).map_err(|_| BuildError::NotUtf8 {
        what,
        path: path.to_path_buf(),
    })?;
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
pub(crate) fn add_source(sources: &mut Sources, kind: &str, path: &Path, d: Sha256Digest) {
    let key = format!("{kind}:{}", file_name(path));
    let key = if sources.get(&key).is_some_and(|old| *old != d) {
        format!("{kind}:{}", path.display())
    } else {
        key
    };
    sources.insert(key, d);
}
/// Seconds since the epoch, from the system clock.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// RFC 3339 UTC, seconds precision.
fn rfc3339(secs: u64) -> String {
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

/// Builds the snapshot from every part's inputs and writes it at
/// `common.out`; `report` gets what a user is told on standard output.
pub(crate) fn run(
    common: &Common,
    mut parts: Vec<Box<dyn Part>>,
    mut report: impl FnMut(&str),
) -> Result<(), BuildError> {
    if common.layer.base.is_none() && !common.layer.remove.is_empty() {
        return Err(BuildError::Usage(
            "--remove takes a version out of a base: give --base".into(),
        ));
    }
    if common.layer.base.is_none() && !parts.iter().any(|p| p.has_inputs()) {
        let flags: Vec<&str> = parts
            .iter()
            .flat_map(|p| p.input_flags())
            .copied()
            .collect();
        let list = match flags.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => flags.join(""),
        };
        return Err(BuildError::Usage(format!("give at least one of {list}")));
    }
    // Checked by the builder's own rules before anything is downloaded.
    let mut builder = SnapshotBuilder::new(INDEX_PATH);
    for part in &mut parts {
        part.check(&mut builder)?;
    }
    if common.jobs == 0 || common.jobs > 64 {
        return Err(BuildError::Usage(
            "--jobs: give a number between 1 and 64".into(),
        ));
    }

    // Refuse an unusable --out before downloading anything (write_dir checks
    // again when it writes).
    let out = &common.out;
    if let Ok(m) = fs::symlink_metadata(out) {
        let holds_snapshot = || {
            fs::symlink_metadata(out.join(egress_snapshot::MANIFEST_FILE))
                .is_ok_and(|m| m.is_file())
        };
        let empty = || fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
        if m.file_type().is_symlink() || !m.is_dir() || !(empty() || holds_snapshot()) {
            return Err(BuildError::Conflict(format!(
                "--out {}: exists and is not an empty directory or a snapshot; choose an empty or new directory",
                out.display()
            )));
        }
    }

    // The key first: a build that cannot be signed should not download.
    let (key_text, _) = read_input("--sign-key", &common.sign_key)?;
    let key = SigningKey::from_openssh(&key_text).map_err(|cause| BuildError::SignKey {
        path: common.sign_key.clone(),
        cause,
    })?;
    let principal = common
        .principal
        .clone()
        .or_else(|| Some(key.comment().trim().to_string()).filter(|c| !c.is_empty()))
        .unwrap_or_else(|| DEFAULT_PRINCIPAL.to_string());

    let base = match &common.layer.base {
        Some(dir) => Some(crate::layer::open_base(
            dir,
            common.layer.base_signers.as_deref(),
            &key,
            &principal,
            common.jobs,
        )?),
        None => None,
    };

    let mut sources = Sources::new();
    for part in &mut parts {
        part.read(&mut sources)?;
    }
    let work = work_dir(out)?;
    // Blobs go to disk as they are added, beside --out (the same
    // filesystem, so writing the snapshot links them into place): a
    // universe need not fit in memory. A staging directory left by an
    // interrupted run is only a cache of what is rebuilt anyway.
    let staging = work.join("staging");
    let _ = fs::remove_dir_all(&staging);
    if let Err(e) = builder.stage_on_disk(&staging) {
        let _ = fs::remove_dir_all(&work);
        return Err(BuildError::Write(e));
    }
    if let Some(base) = &base {
        let staged =
            crate::layer::stage_base(&mut builder, base, &common.layer.remove, &mut report);
        if staged.is_err() {
            let _ = fs::remove_dir_all(&work);
        }
        staged?;
    }
    let net = Net {
        jobs: common.jobs,
        cacert: common.cacert.as_deref(),
        work: &work,
        rules: &common.rules,
        dry_run: common.dry_run,
    };
    // The partial and verified files stay until the snapshot is written: a
    // run interrupted before then (killed, or the machine stopped) resumes
    // from them. A build that fails leaves nothing behind.
    let fetched = parts.iter_mut().try_for_each(|p| p.fetch(&net));
    if fetched.is_err() {
        let _ = fs::remove_dir_all(&work);
    }
    fetched?;
    let rules = &common.rules;
    if common.dry_run {
        let mut total = Staged::default();
        for part in &parts {
            total.add(part.planned());
        }
        let _ = fs::remove_dir_all(&work);
        report(&format!(
            "dry run, nothing downloaded or written: would select {} projects, {} versions, {} files, {} (sizes as the index lists them)",
            total.projects,
            total.versions,
            total.files,
            crate::progress::human(total.bytes)
        ));
        for line in total.dropped.lines() {
            report(&line);
        }
        return Ok(());
    }
    if rules.exclude_newer.is_some()
        || rules.versions_per_project.is_some()
        || rules.max_file_bytes.is_some()
        || rules.closure
    {
        let s = builder.selection_mut();
        s.exclude_newer = rules.exclude_newer.as_ref().map(|c| c.text.clone());
        s.versions_per_project = rules.versions_per_project;
        s.max_file_bytes = rules.max_file_bytes;
        s.closure = rules.closure;
    }

    let now = now_secs();
    for part in &mut parts {
        part.signing(&key, now);
    }
    let mut total = Staged::default();
    for part in parts {
        match part.stage(&mut builder, out) {
            Ok(s) => total.add(s),
            Err(e) => {
                let _ = fs::remove_dir_all(&work);
                return Err(e);
            }
        }
    }
    for (name, digest) in sources {
        builder.source(&name, digest);
    }

    // Rendered and streamed to disk: the build never holds the documents
    // of a universe whole.
    let written = builder
        .write(out, &rfc3339(now), &key, &principal)
        .map_err(|e| match e {
            SnapshotError::Io { .. }
            | SnapshotError::NotASnapshotDir(_)
            | SnapshotError::Symlink(_)
            | SnapshotError::Blobs(_) => BuildError::Write(e),
            e => BuildError::Rejected(e),
        });
    let _ = fs::remove_dir_all(&work);
    let snapshot = written?;
    report(&format!(
        "snapshot {} written to {}: {} files ({} downloaded), {}, signed by {principal} ({})",
        snapshot.id,
        out.display(),
        total.files,
        total.downloaded,
        crate::progress::human(total.bytes),
        key.public().fingerprint()
    ));
    if total.projects > 0 {
        report(&format!(
            "selected {} projects, {} versions, {} files, {}",
            total.projects,
            total.versions,
            total.files,
            crate::progress::human(total.bytes)
        ));
    }
    if let Some(cutoff) = &rules.exclude_newer {
        report(&format!(
            "cutoff (signed): nothing uploaded after {}",
            cutoff.text
        ));
    }
    for line in total.dropped.lines() {
        report(&line);
    }
    if total.untimed > 0 {
        report(&format!(
            "{} files have no upload time (local files, or the upstream gave none): none is invented, and SNAPSHOT.json lists no time for them",
            total.untimed
        ));
    }
    for extra in total.extras {
        let fail = |cause| BuildError::Io {
            what: "write",
            path: extra.path.clone(),
            cause,
        };
        if let Some(dir) = extra.path.parent() {
            fs::create_dir_all(dir).map_err(fail)?;
        }
        write_atomic(&extra.path, extra.text.as_bytes()).map_err(fail)?;
        report(&extra.note);
    }
    Ok(())
}

/// `.<out name>.parts` beside `--out`: partial downloads live there, so an
/// interrupted run resumes, and nothing half-written is ever inside `--out`.
fn work_dir(out: &Path) -> Result<PathBuf, BuildError> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| BuildError::Usage("--out: give a directory name".into()))?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let work = parent.join(format!(".{name}.parts"));
    fs::create_dir_all(&work).map_err(|cause| BuildError::Io {
        what: "create",
        path: work.clone(),
        cause,
    })?;
    Ok(work)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_format() {
        let t = super::rfc3339(super::now_secs());
        assert!(
            egress_snapshot::SnapshotBuilder::is_valid_upload_time(&t),
            "{t}"
        );
        assert!(t.starts_with("20"), "{t}");
    }
}
