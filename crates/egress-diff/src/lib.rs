//! `snapshot diff`: what changed between two snapshots, for the person who
//! signs off a layer.
//!
//! [`diff`] reads both snapshots' views through
//! [`StoredSnapshot`](egress_snapshot::StoredSnapshot)'s public API (every
//! byte verified against its digest; layers are read as any snapshot), and
//! lists what was added and removed: PyPI projects, versions and files (from
//! the PEP 691 JSON project pages), npm packages, versions and tarballs (from
//! the full packuments) and apt `.deb` files (by served path). Each addition
//! carries the [`FlagKind`]s a reviewer must look at. The result is
//! deterministic: everything is sorted, and the only times in it are the
//! snapshots' own. [`Diff::to_markdown`] is for a reviewer,
//! [`Diff::to_json`] has the stable schema [`SCHEMA`] (documented in
//! docs/snapshot-format.md, "Reviewing a layer: snapshot diff").

// Reads bytes a snapshot supplies: no indexing, slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod cli;
pub mod fixtures;
mod flags;
mod names;
mod read;
mod render;

use egress_model::{DistKind, Sha256Digest, Timestamp};
use egress_select::npm::Semver;
use egress_select::pypi::Pep440Version;
use egress_snapshot::StoredSnapshot;
use read::{Maintainer, NpmPackage, PypiProject, Unread, View};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

pub use flags::MAX_ARCHIVE_BYTES;
pub use names::{popular_npm, popular_pypi};
pub use read::MAX_PAGE_BYTES;

/// The JSON output's schema name.
pub const SCHEMA: &str = "egress-conformance/snapshot-diff/v1";

/// `--recent-days`' default.
pub const DEFAULT_RECENT_DAYS: u32 = 7;

/// Which of the two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Old,
    New,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Old => "OLD",
            Side::New => "NEW",
        })
    }
}

/// Why no diff could be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The directory is not a snapshot (no readable `MANIFEST` and
    /// `SNAPSHOT.json` that agree).
    #[error("{side} {}: not a snapshot: {source}", dir.display())]
    Open {
        side: Side,
        dir: PathBuf,
        #[source]
        source: egress_snapshot::SnapshotError,
    },
    /// What it serves cannot be read as a snapshot serves it (a page that
    /// does not parse, a file it lists and does not serve).
    #[error("{side}: {what}: {why}")]
    Malformed {
        side: Side,
        what: String,
        why: String,
    },
    /// A blob does not verify against its digest.
    #[error("{side}: {what} does not verify: {problem}")]
    Blob {
        side: Side,
        what: String,
        problem: String,
    },
    #[error("{side}: {what}: cannot read: {source}")]
    Read {
        side: Side,
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The signature does not verify against the signers given.
    #[error("{side} {}: signature does not verify: {source}", dir.display())]
    Signature {
        side: Side,
        dir: PathBuf,
        #[source]
        source: egress_snapshot::SnapshotError,
    },
}

/// The two kinds of [`DiffError`], for exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffErrorKind {
    /// Not a snapshot, or not one whose pages can be read.
    NotASnapshot,
    /// A snapshot whose bytes or signature do not verify.
    Unverified,
}

impl DiffError {
    pub fn kind(&self) -> DiffErrorKind {
        match self {
            DiffError::Open { .. } | DiffError::Malformed { .. } => DiffErrorKind::NotASnapshot,
            DiffError::Blob { .. } | DiffError::Read { .. } | DiffError::Signature { .. } => {
                DiffErrorKind::Unverified
            }
        }
    }
}

/// What a reviewer is asked to look at in an addition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagKind {
    /// npm `preinstall`, `install` or `postinstall`: code npm runs at install.
    InstallScript,
    /// npm `binding.gyp`: npm runs `node-gyp rebuild` at install.
    BindingGyp,
    /// A PyPI version with no wheel: pip builds it, running its code.
    SdistOnly,
    /// A `.pth` file in a wheel: run at every interpreter start.
    PthFile,
    /// Native code: extension modules, a non-`none` ABI tag, `.node`
    /// addons, `binding.gyp`.
    NativeCode,
    /// Uploaded within the recent window before the cutoff.
    RecentUpload,
    /// A new name close to one already held or to a popular one.
    SimilarName,
    /// npm maintainers differ from those of the old snapshot's newest version.
    MaintainersChanged,
    /// A new version whose major is above every major the old snapshot held.
    MajorJump,
    /// The old snapshot served other bytes under this file name.
    BytesChanged,
    /// The file could not be inspected; the checks above were not made.
    Unreadable,
}

impl FlagKind {
    pub const ALL: [FlagKind; 11] = [
        FlagKind::InstallScript,
        FlagKind::BindingGyp,
        FlagKind::SdistOnly,
        FlagKind::PthFile,
        FlagKind::NativeCode,
        FlagKind::RecentUpload,
        FlagKind::SimilarName,
        FlagKind::MaintainersChanged,
        FlagKind::MajorJump,
        FlagKind::BytesChanged,
        FlagKind::Unreadable,
    ];

    /// The name in both outputs: `install-script`, `pth-file`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            FlagKind::InstallScript => "install-script",
            FlagKind::BindingGyp => "binding-gyp",
            FlagKind::SdistOnly => "sdist-only",
            FlagKind::PthFile => "pth-file",
            FlagKind::NativeCode => "native-code",
            FlagKind::RecentUpload => "recent-upload",
            FlagKind::SimilarName => "similar-name",
            FlagKind::MaintainersChanged => "maintainers-changed",
            FlagKind::MajorJump => "major-jump",
            FlagKind::BytesChanged => "bytes-changed",
            FlagKind::Unreadable => "unreadable",
        }
    }

    /// One line on why it matters.
    pub fn meaning(self) -> &'static str {
        match self {
            FlagKind::InstallScript => "npm runs the package's own script at install",
            FlagKind::BindingGyp => "npm builds the package (node-gyp) at install",
            FlagKind::SdistOnly => "no wheel: pip runs the package's build at install",
            FlagKind::PthFile => "a .pth file in a wheel runs at every Python start",
            FlagKind::NativeCode => "compiled code, not readable as source",
            FlagKind::RecentUpload => "uploaded shortly before the cutoff: little time for the world to notice a bad release",
            FlagKind::SimilarName => "a new name close to a held or popular one (typosquatting)",
            FlagKind::MaintainersChanged => "other people can publish it than before",
            FlagKind::MajorJump => "a new major version: breaking changes, a new codebase or a takeover",
            FlagKind::BytesChanged => "the old snapshot served other bytes under this name",
            FlagKind::Unreadable => "the file could not be inspected: the other checks were not made",
        }
    }
}

/// One flag on an addition: what and why, on one line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Flag {
    pub flag: FlagKind,
    /// One line; text from a package is quoted as a code span.
    pub detail: String,
}

impl Flag {
    pub(crate) fn new(flag: FlagKind, detail: String) -> Self {
        Flag { flag, detail }
    }
}

/// `pypi`, `npm` or `apt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Pypi,
    Npm,
    Apt,
}

impl Ecosystem {
    pub fn label(self) -> &'static str {
        match self {
            Ecosystem::Pypi => "PyPI",
            Ecosystem::Npm => "npm",
            Ecosystem::Apt => "apt",
        }
    }
}

/// One snapshot, as the diff names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotInfo {
    /// The snapshot ID (SHA-256 of its `MANIFEST`), hex.
    pub id: String,
    /// `SNAPSHOT.json`'s `created`.
    pub created: String,
    /// `selection.exclude_newer`, if it was built with a cutoff.
    pub exclude_newer: Option<String>,
    /// For a layer: its parent's ID.
    pub parent: Option<String>,
}

/// The window of [`FlagKind::RecentUpload`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recent {
    pub days: u32,
    /// The end of the window: NEW's `exclude_newer`, else its `created`.
    pub cutoff: String,
    /// `exclude_newer` or `created`.
    pub cutoff_from: &'static str,
}

/// Counts of one ecosystem.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub projects_added: usize,
    pub projects_removed: usize,
    pub versions_added: usize,
    pub versions_removed: usize,
    pub files_added: usize,
    pub files_removed: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub pypi: Counts,
    pub npm: Counts,
    pub apt: Counts,
    /// Every flag kind, with how many times it was raised (0 included).
    pub flags: BTreeMap<&'static str, usize>,
}

/// A project (PyPI), package (npm) or Debian package (apt) with something
/// added or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectChange {
    pub ecosystem: Ecosystem,
    /// PyPI: the PEP 503 name; npm: the name; apt: the package name of the
    /// `.deb` file name.
    pub name: String,
    /// Added: the old snapshot did not have it; removed: the new one has
    /// none of it left.
    pub whole: bool,
    /// Flags on the name (`similar-name`); always empty for a removal.
    pub flags: Vec<Flag>,
    pub versions: Vec<VersionChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionChange {
    pub version: String,
    /// Added: no file of this version was in the old snapshot; removed:
    /// none is left in the new one.
    pub whole: bool,
    /// `sdist-only`, `major-jump`, `maintainers-changed`.
    pub flags: Vec<Flag>,
    pub files: Vec<FileChange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The file name (wheel, sdist, tarball, `.deb`).
    pub name: String,
    /// The path the mirror serves it at.
    pub path: String,
    pub sha256: String,
    /// Bytes, where the snapshot says (PEP 700 `size`; npm and apt: the
    /// blob's length when it was read, else absent).
    pub size: Option<u64>,
    /// `SNAPSHOT.json`'s `upload_times` entry for the path.
    pub uploaded: Option<String>,
    /// Flags read from the file itself and its upload time.
    pub flags: Vec<Flag>,
}

/// The whole diff; see the crate documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub schema: &'static str,
    pub old: SnapshotInfo,
    pub new: SnapshotInfo,
    pub recent: Recent,
    pub summary: Summary,
    pub added: Vec<ProjectChange>,
    pub removed: Vec<ProjectChange>,
}

/// How a diff is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The [`FlagKind::RecentUpload`] window, in days before the cutoff.
    pub recent_days: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recent_days: DEFAULT_RECENT_DAYS,
        }
    }
}

/// Opens `old` and `new` as snapshots, checks each signature against
/// `signers` when given, and diffs them.
pub fn diff_dirs(
    old: &Path,
    new: &Path,
    signers: Option<&egress_signing::AllowedSigners>,
    options: &Options,
) -> Result<Diff, DiffError> {
    let open = |side: Side, dir: &Path| {
        let store = StoredSnapshot::open(dir).map_err(|source| DiffError::Open {
            side,
            dir: dir.to_path_buf(),
            source,
        })?;
        if let Some(signers) = signers {
            store
                .verify_signature(signers)
                .map_err(|source| DiffError::Signature {
                    side,
                    dir: dir.to_path_buf(),
                    source,
                })?;
        }
        Ok(store)
    };
    let old = open(Side::Old, old)?;
    let new = open(Side::New, new)?;
    diff(&old, &new, options)
}

fn info(store: &StoredSnapshot) -> SnapshotInfo {
    let doc = store.doc();
    SnapshotInfo {
        id: store.id().to_hex(),
        created: doc.created.clone(),
        exclude_newer: doc.selection.as_ref().and_then(|s| s.exclude_newer.clone()),
        parent: store.layer().map(|l| l.parent.to_hex()),
    }
}

/// The diff of `old` to `new`; see the crate documentation.
pub fn diff(
    old: &StoredSnapshot,
    new: &StoredSnapshot,
    options: &Options,
) -> Result<Diff, DiffError> {
    let old_view = read::view(old, Side::Old, new)?;
    let new_view = read::view(new, Side::New, old)?;
    let new_info = info(new);
    let (cutoff, cutoff_from) = match &new_info.exclude_newer {
        Some(t) => (t.clone(), "exclude_newer"),
        None => (new_info.created.clone(), "created"),
    };
    let recent = Recent {
        days: options.recent_days,
        cutoff,
        cutoff_from,
    };
    let ctx = Ctx {
        new,
        window: Timestamp::parse(&recent.cutoff)
            .ok()
            .map(|c| (c, i64::from(options.recent_days) * 86_400)),
        upload_times: &new_view.upload_times,
    };
    let mut added = Vec::new();
    added.extend(pypi_added(&ctx, &old_view, &new_view)?);
    added.extend(npm_added(&ctx, &old_view, &new_view)?);
    added.extend(apt_changes(
        &old_view.apt,
        &new_view.apt,
        Ecosystem::Apt,
        true,
    ));
    let mut removed = Vec::new();
    removed.extend(pypi_removed(&old_view, &new_view));
    removed.extend(npm_removed(&old_view, &new_view));
    removed.extend(apt_changes(
        &new_view.apt,
        &old_view.apt,
        Ecosystem::Apt,
        false,
    ));
    for list in [&mut added, &mut removed] {
        list.sort_by(|a, b| (a.ecosystem, &a.name).cmp(&(b.ecosystem, &b.name)));
    }
    let summary = summarize(&added, &removed);
    Ok(Diff {
        schema: SCHEMA,
        old: info(old),
        new: new_info,
        recent,
        summary,
        added,
        removed,
    })
}

struct Ctx<'a> {
    new: &'a StoredSnapshot,
    /// The cutoff and the window's length in seconds.
    window: Option<(Timestamp, i64)>,
    upload_times: &'a BTreeMap<String, String>,
}

impl Ctx<'_> {
    /// The file's upload time, and `recent-upload` when it is in the window.
    fn uploaded(&self, path: &str, flags: &mut Vec<Flag>) -> Option<String> {
        let text = self.upload_times.get(path)?;
        if let (Some((cutoff, window)), Ok(at)) = (self.window, Timestamp::parse(text)) {
            let before = cutoff.unix_secs().saturating_sub(at.unix_secs());
            if before < 0 {
                flags.push(Flag::new(
                    FlagKind::RecentUpload,
                    format!("uploaded {text}, after the cutoff {cutoff}"),
                ));
            } else if before < window {
                flags.push(Flag::new(
                    FlagKind::RecentUpload,
                    format!(
                        "uploaded {text}, {} before the cutoff {cutoff}",
                        span(before)
                    ),
                ));
            }
        }
        Some(text.clone())
    }

    /// The bytes of an added archive, or an `unreadable` flag.
    fn archive(
        &self,
        path: &str,
        digest: &Sha256Digest,
    ) -> Result<Result<Vec<u8>, Flag>, DiffError> {
        Ok(
            read::read_blob(self.new, Side::New, path, digest, MAX_ARCHIVE_BYTES)?.map_err(
                |Unread::TooLarge(n)| {
                    Flag::new(
                        FlagKind::Unreadable,
                        format!("{n} bytes, larger than the {MAX_ARCHIVE_BYTES}-byte limit: not inspected"),
                    )
                },
            ),
        )
    }
}

/// `3 d 4 h` style, for a window's offsets.
fn span(secs: i64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// The major of a PyPI version as `(epoch, first release part)`.
fn pypi_major(v: &str) -> Option<(u64, u64)> {
    let p = Pep440Version::parse(v).ok()?;
    Some((p.epoch(), p.release().first().copied().unwrap_or(0)))
}

fn npm_major(v: &str) -> Option<u64> {
    Semver::parse(v).ok().map(|s| s.major())
}

fn pypi_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (Pep440Version::parse(a), Pep440Version::parse(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

fn similar(
    name: &str,
    held: &BTreeSet<String>,
    popular: &BTreeSet<String>,
    what: &str,
) -> Vec<Flag> {
    let found = names::close_names(name, held.iter(), popular);
    if found.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = found
        .iter()
        .map(|(d, other, source)| {
            let whence = match source {
                names::Source::Held => "held".to_string(),
                names::Source::Popular => format!("popular {what} name"),
            };
            format!("{} ({whence}, distance {d})", flags::quote(other))
        })
        .collect();
    vec![Flag::new(
        FlagKind::SimilarName,
        format!("close to {}", list.join(", ")),
    )]
}

fn finish(mut flags: Vec<Flag>) -> Vec<Flag> {
    flags.sort();
    flags.dedup();
    flags
}

fn pypi_added(ctx: &Ctx<'_>, old: &View, new: &View) -> Result<Vec<ProjectChange>, DiffError> {
    let popular = names::popular_pypi();
    let held: BTreeSet<String> = old
        .pypi
        .keys()
        .chain(&old.unchanged_pypi)
        .cloned()
        .collect();
    let empty = PypiProject::default();
    let mut out = Vec::new();
    for (name, project) in &new.pypi {
        let before = old.pypi.get(name);
        let was = before.unwrap_or(&empty);
        let old_versions: BTreeSet<&str> = was.files.values().map(|f| f.version.as_str()).collect();
        let top_major = old_versions.iter().filter_map(|v| pypi_major(v)).max();
        let mut by_version: BTreeMap<&str, Vec<FileChange>> = BTreeMap::new();
        for (filename, f) in &project.files {
            let previous = was.files.get(filename);
            if previous.is_some_and(|p| p.sha256 == f.sha256) {
                continue;
            }
            let mut flags = Vec::new();
            if let Some(p) = previous {
                flags.push(Flag::new(
                    FlagKind::BytesChanged,
                    format!("OLD served sha256 {} under this name", p.sha256.to_hex()),
                ));
            }
            let uploaded = ctx.uploaded(&f.path, &mut flags);
            if f.kind == DistKind::Wheel {
                match ctx.archive(&f.path, &f.sha256)? {
                    Ok(bytes) => flags.extend(flags::wheel(filename, &bytes)),
                    Err(flag) => flags.push(flag),
                }
            }
            by_version
                .entry(f.version.as_str())
                .or_default()
                .push(FileChange {
                    name: filename.clone(),
                    path: f.path.clone(),
                    sha256: f.sha256.to_hex(),
                    size: f.size,
                    uploaded,
                    flags: finish(flags),
                });
        }
        if by_version.is_empty() {
            continue;
        }
        let mut versions = Vec::new();
        for (version, files) in by_version {
            let whole = !old_versions.contains(version);
            let mut flags = Vec::new();
            let has_wheel = project
                .files
                .values()
                .any(|f| f.version == version && f.kind == DistKind::Wheel);
            if !has_wheel {
                flags.push(Flag::new(
                    FlagKind::SdistOnly,
                    "no wheel for this version: pip would build the sdist, running its setup code"
                        .into(),
                ));
            }
            if let (true, Some(top), Some(this)) = (whole, top_major, pypi_major(version)) {
                if this > top {
                    flags.push(Flag::new(
                        FlagKind::MajorJump,
                        format!(
                            "major {} above every major OLD held (highest {})",
                            this.1, top.1
                        ),
                    ));
                }
            }
            versions.push(VersionChange {
                version: version.to_string(),
                whole,
                flags: finish(flags),
                files,
            });
        }
        versions.sort_by(|a, b| pypi_order(&a.version, &b.version));
        let flags = match before {
            None => similar(name, &held, &popular, "PyPI"),
            Some(_) => Vec::new(),
        };
        out.push(ProjectChange {
            ecosystem: Ecosystem::Pypi,
            name: name.clone(),
            whole: before.is_none(),
            flags,
            versions,
        });
    }
    Ok(out)
}

fn pypi_removed(old: &View, new: &View) -> Vec<ProjectChange> {
    let empty = PypiProject::default();
    let mut out = Vec::new();
    for (name, project) in &old.pypi {
        let now = new.pypi.get(name);
        let left = now.unwrap_or(&empty);
        let left_versions: BTreeSet<&str> =
            left.files.values().map(|f| f.version.as_str()).collect();
        let mut by_version: BTreeMap<&str, Vec<FileChange>> = BTreeMap::new();
        for (filename, f) in &project.files {
            if left.files.contains_key(filename) {
                continue;
            }
            by_version
                .entry(f.version.as_str())
                .or_default()
                .push(FileChange {
                    name: filename.clone(),
                    path: f.path.clone(),
                    sha256: f.sha256.to_hex(),
                    size: f.size,
                    uploaded: old.upload_times.get(&f.path).cloned(),
                    flags: Vec::new(),
                });
        }
        if by_version.is_empty() {
            continue;
        }
        let mut versions: Vec<VersionChange> = by_version
            .into_iter()
            .map(|(version, files)| VersionChange {
                version: version.to_string(),
                whole: !left_versions.contains(version),
                flags: Vec::new(),
                files,
            })
            .collect();
        versions.sort_by(|a, b| pypi_order(&a.version, &b.version));
        out.push(ProjectChange {
            ecosystem: Ecosystem::Pypi,
            name: name.clone(),
            whole: now.is_none(),
            flags: Vec::new(),
            versions,
        });
    }
    out
}

/// The maintainers of the old package's newest version that lists any.
fn reference_maintainers(package: &NpmPackage) -> Option<(&str, &[Maintainer])> {
    package
        .versions
        .iter()
        .filter(|(_, v)| !v.maintainers.is_empty())
        .max_by(|a, b| egress_snapshot::npm::semver_cmp(a.0, b.0))
        .map(|(version, v)| (version.as_str(), v.maintainers.as_slice()))
}

fn maintainers_flag(reference: Option<(&str, &[Maintainer])>, now: &[Maintainer]) -> Option<Flag> {
    let (at, before) = reference?;
    if now.is_empty() {
        return None;
    }
    let names = |list: &[Maintainer]| -> BTreeMap<String, Option<String>> {
        list.iter().map(|(n, e)| (n.clone(), e.clone())).collect()
    };
    let (before, now) = (names(before), names(now));
    let mut parts = Vec::new();
    let quote_all = |list: Vec<&String>| {
        list.into_iter()
            .map(|n| flags::quote(n))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let joined: Vec<&String> = now.keys().filter(|n| !before.contains_key(*n)).collect();
    let left: Vec<&String> = before.keys().filter(|n| !now.contains_key(*n)).collect();
    let emails: Vec<&String> = now
        .iter()
        .filter(|(n, e)| before.get(*n).is_some_and(|old| old != *e))
        .map(|(n, _)| n)
        .collect();
    if !joined.is_empty() {
        parts.push(format!("added {}", quote_all(joined)));
    }
    if !left.is_empty() {
        parts.push(format!("removed {}", quote_all(left)));
    }
    if !emails.is_empty() {
        parts.push(format!("email changed for {}", quote_all(emails)));
    }
    (!parts.is_empty()).then(|| {
        Flag::new(
            FlagKind::MaintainersChanged,
            format!("since {at} in OLD: {}", parts.join("; ")),
        )
    })
}

fn npm_added(ctx: &Ctx<'_>, old: &View, new: &View) -> Result<Vec<ProjectChange>, DiffError> {
    let popular = names::popular_npm();
    let held: BTreeSet<String> = old.npm.keys().chain(&old.unchanged_npm).cloned().collect();
    let empty = NpmPackage::default();
    let mut out = Vec::new();
    for (name, package) in &new.npm {
        let before = old.npm.get(name);
        let was = before.unwrap_or(&empty);
        let top_major = was.versions.keys().filter_map(|v| npm_major(v)).max();
        let reference = reference_maintainers(was);
        let mut versions = Vec::new();
        for (version, v) in &package.versions {
            let previous = was.versions.get(version);
            if previous.is_some_and(|p| p.sha256 == v.sha256) {
                continue;
            }
            let mut file_flags = Vec::new();
            if let Some(p) = previous {
                file_flags.push(Flag::new(
                    FlagKind::BytesChanged,
                    format!("OLD served sha256 {} for this version", p.sha256.to_hex()),
                ));
            }
            let uploaded = ctx.uploaded(&v.path, &mut file_flags);
            let mut size = None;
            match ctx.archive(&v.path, &v.sha256)? {
                Ok(bytes) => {
                    size = Some(bytes.len() as u64);
                    file_flags.extend(flags::npm_tarball(&bytes));
                }
                Err(flag) => file_flags.push(flag),
            }
            let mut flags = Vec::new();
            flags.extend(maintainers_flag(reference, &v.maintainers));
            if let (None, Some(top), Some(this)) = (previous, top_major, npm_major(version)) {
                if this > top {
                    flags.push(Flag::new(
                        FlagKind::MajorJump,
                        format!("major {this} above every major OLD held (highest {top})"),
                    ));
                }
            }
            versions.push(VersionChange {
                version: version.clone(),
                whole: previous.is_none(),
                flags: finish(flags),
                files: vec![FileChange {
                    name: v.filename.clone(),
                    path: v.path.clone(),
                    sha256: v.sha256.to_hex(),
                    size,
                    uploaded,
                    flags: finish(file_flags),
                }],
            });
        }
        if versions.is_empty() {
            continue;
        }
        versions.sort_by(|a, b| egress_snapshot::npm::semver_cmp(&a.version, &b.version));
        let flags = match before {
            None => similar(name, &held, &popular, "npm"),
            Some(_) => Vec::new(),
        };
        out.push(ProjectChange {
            ecosystem: Ecosystem::Npm,
            name: name.clone(),
            whole: before.is_none(),
            flags,
            versions,
        });
    }
    Ok(out)
}

fn npm_removed(old: &View, new: &View) -> Vec<ProjectChange> {
    let mut out = Vec::new();
    for (name, package) in &old.npm {
        let now = new.npm.get(name);
        let mut versions: Vec<VersionChange> = package
            .versions
            .iter()
            .filter(|(version, _)| now.is_none_or(|p| !p.versions.contains_key(*version)))
            .map(|(version, v)| VersionChange {
                version: version.clone(),
                whole: true,
                flags: Vec::new(),
                files: vec![FileChange {
                    name: v.filename.clone(),
                    path: v.path.clone(),
                    sha256: v.sha256.to_hex(),
                    size: None,
                    uploaded: old.upload_times.get(&v.path).cloned(),
                    flags: Vec::new(),
                }],
            })
            .collect();
        if versions.is_empty() {
            continue;
        }
        versions.sort_by(|a, b| egress_snapshot::npm::semver_cmp(&a.version, &b.version));
        out.push(ProjectChange {
            ecosystem: Ecosystem::Npm,
            name: name.clone(),
            whole: now.is_none(),
            flags: Vec::new(),
            versions,
        });
    }
    out
}

/// `.deb` paths in `to` and not (with the same bytes) in `from`, grouped by
/// the package and version their file name gives (`name_version_arch.deb`).
fn apt_changes(
    from: &BTreeMap<String, Sha256Digest>,
    to: &BTreeMap<String, Sha256Digest>,
    ecosystem: Ecosystem,
    adding: bool,
) -> Vec<ProjectChange> {
    let held_names: BTreeSet<String> = from.keys().map(|p| deb_parts(p).0).collect();
    let mut by_name: BTreeMap<String, BTreeMap<String, Vec<FileChange>>> = BTreeMap::new();
    for (path, digest) in to {
        let previous = from.get(path);
        if previous == Some(digest) || (!adding && previous.is_some()) {
            continue;
        }
        let (name, version) = deb_parts(path);
        let mut flags = Vec::new();
        if let (true, Some(p)) = (adding, previous) {
            flags.push(Flag::new(
                FlagKind::BytesChanged,
                format!("OLD served sha256 {} at this path", p.to_hex()),
            ));
        }
        by_name
            .entry(name)
            .or_default()
            .entry(version)
            .or_default()
            .push(FileChange {
                name: path.rsplit('/').next().unwrap_or(path).to_string(),
                path: path.clone(),
                sha256: digest.to_hex(),
                size: None,
                uploaded: None,
                flags,
            });
    }
    by_name
        .into_iter()
        .map(|(name, versions)| ProjectChange {
            ecosystem,
            whole: !held_names.contains(&name),
            name,
            flags: Vec::new(),
            versions: versions
                .into_iter()
                .map(|(version, files)| VersionChange {
                    version,
                    whole: true,
                    flags: Vec::new(),
                    files,
                })
                .collect(),
        })
        .collect()
}

/// A `.deb` path's package name and version, from `name_version_arch.deb`
/// (`%3a` in the version is the epoch's `:`); the file name and "" if it
/// is not so shaped.
fn deb_parts(path: &str) -> (String, String) {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".deb").unwrap_or(file);
    let mut parts = stem.split('_');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(v), Some(_), None) if !n.is_empty() && !v.is_empty() => {
            (n.to_string(), v.replace("%3a", ":").replace("%3A", ":"))
        }
        _ => (file.to_string(), String::new()),
    }
}

fn summarize(added: &[ProjectChange], removed: &[ProjectChange]) -> Summary {
    let mut s = Summary {
        flags: FlagKind::ALL.iter().map(|k| (k.as_str(), 0)).collect(),
        ..Summary::default()
    };
    for (list, is_added) in [(added, true), (removed, false)] {
        for p in list {
            let counts = match p.ecosystem {
                Ecosystem::Pypi => &mut s.pypi,
                Ecosystem::Npm => &mut s.npm,
                Ecosystem::Apt => &mut s.apt,
            };
            let versions = p.versions.iter().filter(|v| v.whole).count();
            let files: usize = p.versions.iter().map(|v| v.files.len()).sum();
            let whole = usize::from(p.whole);
            if is_added {
                counts.projects_added += whole;
                counts.versions_added += versions;
                counts.files_added += files;
            } else {
                counts.projects_removed += whole;
                counts.versions_removed += versions;
                counts.files_removed += files;
            }
            let all = p.flags.iter().chain(
                p.versions
                    .iter()
                    .flat_map(|v| v.flags.iter().chain(v.files.iter().flat_map(|f| &f.flags))),
            );
            for flag in all {
                if let Some(n) = s.flags.get_mut(flag.flag.as_str()) {
                    *n += 1;
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deb_names_majors_and_spans() {
        assert_eq!(
            deb_parts("/apt/debian/pool/main/h/hello/hello_1%3a2.10-3_amd64.deb"),
            ("hello".to_string(), "1:2.10-3".to_string())
        );
        assert_eq!(
            deb_parts("/apt/x/odd.deb"),
            ("odd.deb".to_string(), String::new())
        );
        assert_eq!(pypi_major("1!0.5"), Some((1, 0)));
        // An epoch outranks any major.
        assert!(pypi_major("1!0.1") > pypi_major("2.0"));
        assert_eq!(npm_major("3.1.4-rc.1"), Some(3));
        assert_eq!(npm_major("x"), None);
        assert_eq!(span(59), "0 min");
        assert_eq!(span(3 * 3600 + 120), "3 h 2 min");
        assert_eq!(span(2 * 86_400 + 3600), "2 d 1 h");
    }

    #[test]
    fn maintainer_changes_are_named() {
        let m = |n: &str, e: Option<&str>| (n.to_string(), e.map(str::to_string));
        let before = [m("alice", Some("a@x")), m("bob", None)];
        let same = maintainers_flag(
            Some(("1.0.0", &before)),
            &[m("bob", None), m("alice", Some("a@x"))],
        );
        assert_eq!(same, None);
        let f = maintainers_flag(Some(("1.0.0", &before)), &[m("alice", Some("evil@y"))]).unwrap();
        assert_eq!(f.flag, FlagKind::MaintainersChanged);
        assert_eq!(
            f.detail,
            "since 1.0.0 in OLD: removed `bob`; email changed for `alice`"
        );
        // Nothing to compare with: no flag.
        assert_eq!(maintainers_flag(None, &before), None);
        assert_eq!(maintainers_flag(Some(("1.0.0", &before)), &[]), None);
    }
}
