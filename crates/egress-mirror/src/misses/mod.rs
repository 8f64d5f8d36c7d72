//! The misses log: what a sandbox asked the mirror for and did not get.
//!
//! `egress-mirror --misses-log FILE` appends one JSON line per distinct ask
//! for a project, version or file the snapshot lacks, and one per distinct
//! name it served (for the coverage); `egress-conformance snapshot misses`
//! reads the lines back and writes a universe for the next layer. This
//! module is the one home of the format: [`Record`] is what a line says,
//! [`Record::to_line`] writes it and [`Record::parse`] reads it back, with
//! every field checked as strictly as it was written.
//!
//! - [`classify`] reads a request path as an ask (pure: no I/O, no state);
//! - [`writer`]: the bounded, never-blocking writer the mirror runs;
//! - [`aggregate`]: the reader, the aggregation and its two renderings;
//! - [`cli`]: the binary's `--misses-*` flags and `misses_*` config keys.
//!
//! Nothing here fetches anything: the mirror has no client, and a miss is
//! answered with the same 404 as any absent path, before and whatever the
//! log does.

pub mod aggregate;
pub mod cli;
pub mod command;
pub mod writer;

use egress_model::{DistFilename, NpmName, ProjectName, Sha256Digest, Timestamp};
use egress_snapshot::FILES_PREFIX;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

pub use aggregate::{aggregate_files, Aggregate, AggregateError, OutputFormat};
pub use writer::{Limits, MissesLog, OpenError, Recorder};

/// The format's version, `v` on every line.
pub const FORMAT_VERSION: u32 = 1;
/// The PyPI index prefix a page path is read under when the snapshot's own
/// index is not served (a snapshot with no PyPI part still logs pip's asks).
pub const PYPI_INDEX: &str = "/simple/";
/// The longest line the reader accepts; the writer's own bound
/// ([`Limits::line`]) is at most this.
pub const MAX_LINE: usize = 4096;

/// The registry protocol an ask speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Pypi,
    Npm,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Pypi => "pypi",
            Protocol::Npm => "npm",
        }
    }
}

/// What an ask wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The page or packument of a project the snapshot does not hold.
    Project,
    /// A file of a project the snapshot holds, in a version (or a file) it
    /// does not hold.
    Version,
    /// A file of a project the snapshot does not hold at all (e.g. a
    /// lockfile's URL).
    File,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Project => "project",
            Kind::Version => "version",
            Kind::File => "file",
        }
    }
}

/// One ask: a validated, normalised name, and the version and file name
/// when the path has them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ask {
    pub protocol: Protocol,
    pub kind: Kind,
    /// PEP 503 normalised (PyPI); as npm spells it (npm).
    pub name: String,
    pub version: Option<String>,
    pub filename: Option<String>,
}

/// A run: one mirror start, named by 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(u64);

impl RunId {
    /// A run ID for this process now (its PID, the time, the snapshot):
    /// distinct for every start in practice, and not chosen by any client.
    pub fn new(snapshot: &Sha256Digest) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let seed = format!(
            "{}:{}:{}:{}",
            std::process::id(),
            now.as_secs(),
            now.subsec_nanos(),
            snapshot.to_hex()
        );
        let digest = Sha256Digest::of(seed.as_bytes());
        let mut first = [0u8; 8];
        for (slot, byte) in first.iter_mut().zip(digest.as_bytes().iter()) {
            *slot = *byte;
        }
        Self(u64::from_be_bytes(first))
    }

    fn parse(text: &str) -> Option<Self> {
        let hex = text.len() == 16
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        hex.then(|| u64::from_str_radix(text, 16).ok())
            .flatten()
            .map(Self)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// What a run's writer counted: lines written and asks not written, by
/// why. Cumulative over the run; the last summary line holds the totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Miss lines written.
    pub misses: u64,
    /// Served lines written.
    pub served: u64,
    /// Asks dropped because the writer's queue was full.
    pub dropped_queue: u64,
    /// Asks dropped because their client had logged `per_client` misses.
    pub dropped_per_client: u64,
    /// Asks dropped because `entries` distinct misses (or served names)
    /// were logged.
    pub dropped_full: u64,
    /// Asks whose line would have been longer than `line` bytes.
    pub dropped_long: u64,
    /// Lines the file did not take (disk full, I/O error).
    pub write_errors: u64,
}

impl Counts {
    /// Every ask not written, whatever the reason.
    pub fn dropped(&self) -> u64 {
        self.dropped_queue
            .saturating_add(self.dropped_per_client)
            .saturating_add(self.dropped_full)
            .saturating_add(self.dropped_long)
            .saturating_add(self.write_errors)
    }

    /// Adds `other` (another run's totals).
    pub fn add(&mut self, other: &Counts) {
        self.misses = self.misses.saturating_add(other.misses);
        self.served = self.served.saturating_add(other.served);
        self.dropped_queue = self.dropped_queue.saturating_add(other.dropped_queue);
        self.dropped_per_client = self
            .dropped_per_client
            .saturating_add(other.dropped_per_client);
        self.dropped_full = self.dropped_full.saturating_add(other.dropped_full);
        self.dropped_long = self.dropped_long.saturating_add(other.dropped_long);
        self.write_errors = self.write_errors.saturating_add(other.write_errors);
    }
}

/// One line of the log, typed and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The mirror started: the first line of a run.
    Start {
        time: i64,
        run: RunId,
        snapshot: Sha256Digest,
        limits: Limits,
    },
    /// An ask for something the snapshot lacks.
    Miss {
        time: i64,
        run: RunId,
        ask: Ask,
        client: IpAddr,
    },
    /// A name the snapshot served (a page, packument or file of it).
    Served {
        time: i64,
        run: RunId,
        protocol: Protocol,
        name: String,
    },
    /// The run's counts so far.
    Summary {
        time: i64,
        run: RunId,
        counts: Counts,
    },
}

/// A line as JSON: every field of every event, the absent ones left out.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    v: u32,
    event: String,
    time: String,
    run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limits: Option<WireLimits>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol: Option<Protocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<Kind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counts: Option<Counts>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireLimits {
    entries: usize,
    per_client: usize,
    line: usize,
}

/// Why a line is not one the mirror writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("not a JSON object of the misses-log fields ({0})")]
    NotJson(String),
    #[error("format version {0}, this reader knows {FORMAT_VERSION}")]
    Version(u32),
    #[error("unknown event {0:?}")]
    Event(String),
    #[error("field {0} is missing")]
    Missing(&'static str),
    #[error("field {0} does not belong to this event")]
    Extra(&'static str),
    #[error("field {0} is not valid")]
    Invalid(&'static str),
}

fn time_text(secs: i64) -> String {
    Timestamp::from_unix(secs, 0).to_rfc3339()
}

/// Whole seconds, exactly as the writer prints them.
fn parse_time(text: &str) -> Result<i64, LineError> {
    let t = Timestamp::parse(text).map_err(|_| LineError::Invalid("time"))?;
    (time_text(t.unix_secs()) == text)
        .then(|| t.unix_secs())
        .ok_or(LineError::Invalid("time"))
}

/// A file name as logged: letters, digits and `._+!~-`, not starting with
/// `.`, at most 255 bytes.
fn is_safe_filename(name: &str) -> bool {
    name.len() <= 255
        && !name.starts_with('.')
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+!~-".contains(&b))
}

/// An npm tarball's version: `<bare name>-<version>.tgz`.
fn npm_tarball_version<'a>(name: &NpmName, filename: &'a str) -> Option<&'a str> {
    let version = filename
        .strip_suffix(".tgz")?
        .strip_prefix(name.bare())?
        .strip_prefix('-')?;
    egress_snapshot::npm::is_safe_version(version).then_some(version)
}

impl Ask {
    /// Checks that every field is what [`classify`] could have produced.
    fn check(&self) -> Result<(), LineError> {
        match self.protocol {
            Protocol::Pypi => {
                let name = ProjectName::new(&self.name).map_err(|_| LineError::Invalid("name"))?;
                if name.as_str() != self.name {
                    return Err(LineError::Invalid("name"));
                }
            }
            Protocol::Npm => {
                NpmName::new(&self.name).map_err(|_| LineError::Invalid("name"))?;
            }
        }
        match (self.kind, &self.version, &self.filename) {
            (Kind::Project, None, None) => Ok(()),
            (Kind::Project, Some(_), _) => Err(LineError::Extra("version")),
            (Kind::Project, _, Some(_)) => Err(LineError::Extra("filename")),
            (_, None, _) => Err(LineError::Missing("version")),
            (_, _, None) => Err(LineError::Missing("filename")),
            (_, Some(version), Some(filename)) => {
                if !is_safe_filename(filename) {
                    return Err(LineError::Invalid("filename"));
                }
                let agrees = match self.protocol {
                    Protocol::Pypi => DistFilename::parse(filename).is_ok_and(|d| {
                        d.name.as_str() == self.name && d.version.as_str() == version
                    }),
                    Protocol::Npm => NpmName::new(&self.name)
                        .is_ok_and(|n| npm_tarball_version(&n, filename) == Some(version.as_str())),
                };
                if agrees {
                    Ok(())
                } else {
                    Err(LineError::Invalid("filename"))
                }
            }
        }
    }
}

impl Record {
    pub fn run(&self) -> RunId {
        match self {
            Record::Start { run, .. }
            | Record::Miss { run, .. }
            | Record::Served { run, .. }
            | Record::Summary { run, .. } => *run,
        }
    }

    /// The line, without its newline.
    pub fn to_line(&self) -> String {
        let mut w = Wire {
            v: FORMAT_VERSION,
            ..Wire::default()
        };
        match self {
            Record::Start {
                time,
                run,
                snapshot,
                limits,
            } => {
                w.event = "start".into();
                w.time = time_text(*time);
                w.run = run.to_string();
                w.snapshot = Some(snapshot.to_hex());
                w.limits = Some(WireLimits {
                    entries: limits.entries,
                    per_client: limits.per_client,
                    line: limits.line,
                });
            }
            Record::Miss {
                time,
                run,
                ask,
                client,
            } => {
                w.event = "miss".into();
                w.time = time_text(*time);
                w.run = run.to_string();
                w.protocol = Some(ask.protocol);
                w.kind = Some(ask.kind);
                w.name = Some(ask.name.clone());
                w.version = ask.version.clone();
                w.filename = ask.filename.clone();
                w.client = Some(client.to_string());
            }
            Record::Served {
                time,
                run,
                protocol,
                name,
            } => {
                w.event = "served".into();
                w.time = time_text(*time);
                w.run = run.to_string();
                w.protocol = Some(*protocol);
                w.name = Some(name.clone());
            }
            Record::Summary { time, run, counts } => {
                w.event = "summary".into();
                w.time = time_text(*time);
                w.run = run.to_string();
                w.counts = Some(*counts);
            }
        }
        // A struct of strings, numbers and enums always serialises.
        serde_json::to_string(&w).unwrap_or_default()
    }

    /// Reads one line (without its newline) as the writer wrote it.
    pub fn parse(line: &str) -> Result<Self, LineError> {
        if line.len() > MAX_LINE {
            return Err(LineError::TooLong);
        }
        let w: Wire = serde_json::from_str(line).map_err(|e| {
            // serde's message can quote the input: keep only its category.
            LineError::NotJson(
                match e.classify() {
                    serde_json::error::Category::Io => "unreadable",
                    serde_json::error::Category::Syntax => "syntax error",
                    serde_json::error::Category::Data => "unknown, missing or mistyped field",
                    serde_json::error::Category::Eof => "cut short",
                }
                .to_string(),
            )
        })?;
        if w.v != FORMAT_VERSION {
            return Err(LineError::Version(w.v));
        }
        let time = parse_time(&w.time)?;
        let run = RunId::parse(&w.run).ok_or(LineError::Invalid("run"))?;
        let none = |present: bool, field: &'static str| {
            if present {
                Err(LineError::Extra(field))
            } else {
                Ok(())
            }
        };
        let record = match w.event.as_str() {
            "start" => {
                let limits = w.limits.ok_or(LineError::Missing("limits"))?;
                let snapshot = w
                    .snapshot
                    .as_deref()
                    .ok_or(LineError::Missing("snapshot"))
                    .and_then(|h| {
                        Sha256Digest::from_hex(h).map_err(|_| LineError::Invalid("snapshot"))
                    })?;
                for (present, field) in [
                    (w.protocol.is_some(), "protocol"),
                    (w.kind.is_some(), "kind"),
                    (w.name.is_some(), "name"),
                    (w.version.is_some(), "version"),
                    (w.filename.is_some(), "filename"),
                    (w.client.is_some(), "client"),
                    (w.counts.is_some(), "counts"),
                ] {
                    none(present, field)?;
                }
                Record::Start {
                    time,
                    run,
                    snapshot,
                    limits: Limits {
                        entries: limits.entries,
                        per_client: limits.per_client,
                        line: limits.line,
                        ..Limits::default()
                    },
                }
            }
            "miss" => {
                let ask = Ask {
                    protocol: w.protocol.ok_or(LineError::Missing("protocol"))?,
                    kind: w.kind.ok_or(LineError::Missing("kind"))?,
                    name: w.name.ok_or(LineError::Missing("name"))?,
                    version: w.version,
                    filename: w.filename,
                };
                ask.check()?;
                let client = w
                    .client
                    .as_deref()
                    .ok_or(LineError::Missing("client"))?
                    .parse::<IpAddr>()
                    .map_err(|_| LineError::Invalid("client"))?;
                for (present, field) in [
                    (w.snapshot.is_some(), "snapshot"),
                    (w.limits.is_some(), "limits"),
                    (w.counts.is_some(), "counts"),
                ] {
                    none(present, field)?;
                }
                Record::Miss {
                    time,
                    run,
                    ask,
                    client,
                }
            }
            "served" => {
                let protocol = w.protocol.ok_or(LineError::Missing("protocol"))?;
                let name = w.name.ok_or(LineError::Missing("name"))?;
                Ask {
                    protocol,
                    kind: Kind::Project,
                    name: name.clone(),
                    version: None,
                    filename: None,
                }
                .check()?;
                for (present, field) in [
                    (w.snapshot.is_some(), "snapshot"),
                    (w.limits.is_some(), "limits"),
                    (w.kind.is_some(), "kind"),
                    (w.version.is_some(), "version"),
                    (w.filename.is_some(), "filename"),
                    (w.client.is_some(), "client"),
                    (w.counts.is_some(), "counts"),
                ] {
                    none(present, field)?;
                }
                Record::Served {
                    time,
                    run,
                    protocol,
                    name,
                }
            }
            "summary" => {
                let counts = w.counts.ok_or(LineError::Missing("counts"))?;
                for (present, field) in [
                    (w.snapshot.is_some(), "snapshot"),
                    (w.limits.is_some(), "limits"),
                    (w.protocol.is_some(), "protocol"),
                    (w.kind.is_some(), "kind"),
                    (w.name.is_some(), "name"),
                    (w.version.is_some(), "version"),
                    (w.filename.is_some(), "filename"),
                    (w.client.is_some(), "client"),
                ] {
                    none(present, field)?;
                }
                Record::Summary { time, run, counts }
            }
            _ => return Err(LineError::Event(printable(&w.event, 32))),
        };
        Ok(record)
    }
}

/// `text` with anything but printable ASCII escaped, cut to `max`
/// characters: what this module ever prints of a line it was given.
pub fn printable(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .flat_map(|c| {
            let escaped: Vec<char> = if c == ' ' || c.is_ascii_graphic() {
                vec![c]
            } else {
                c.escape_unicode().collect()
            };
            escaped
        })
        .collect()
}

/// A request path read as an ask, before the snapshot is consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// `<prefix><name>/`: a PyPI project page; `prefix` ends with `/`.
    PypiPage { prefix: String, name: ProjectName },
    /// `/files/<sha256>/<filename>`: a wheel or sdist.
    PypiFile {
        dist: DistFilename,
        filename: String,
    },
    /// `/<name>`, `/@scope%2fname`, `/@scope/name`: a packument.
    NpmPackument { name: NpmName },
    /// `/<name>/-/<bare>-<version>.tgz`: a tarball.
    NpmTarball {
        name: NpmName,
        version: String,
        filename: String,
    },
}

/// Reads a request path (the target without its query, as received) as an
/// ask, or `None` when it names no package by the rules of either
/// protocol: nothing else is ever logged.
pub fn classify(path: &str) -> Option<Asked> {
    if path.len() > 1024 {
        return None;
    }
    if let Some(rest) = path.strip_prefix(FILES_PREFIX) {
        let (digest, filename) = rest.split_once('/')?;
        Sha256Digest::from_hex(digest).ok()?;
        if !is_safe_filename(filename) {
            return None;
        }
        let dist = DistFilename::parse(filename).ok()?;
        return Some(Asked::PypiFile {
            dist,
            filename: filename.to_string(),
        });
    }
    if let Some(dir) = path.strip_suffix('/') {
        let (prefix, name) = dir.rsplit_once('/')?;
        if prefix.is_empty() {
            return None;
        }
        let name = ProjectName::new(name).ok()?;
        return Some(Asked::PypiPage {
            prefix: format!("{prefix}/"),
            name,
        });
    }
    let rest = path.strip_prefix('/')?;
    if let Some((name, filename)) = rest.split_once("/-/") {
        let name = NpmName::new(name).ok()?;
        if !is_safe_filename(filename) {
            return None;
        }
        let version = npm_tarball_version(&name, filename)?.to_string();
        return Some(Asked::NpmTarball {
            name,
            version,
            filename: filename.to_string(),
        });
    }
    let name = match rest.split_once("%2f").or_else(|| rest.split_once("%2F")) {
        Some((scope, bare)) if scope.starts_with('@') => format!("{scope}/{bare}"),
        Some(_) => return None,
        None => rest.to_string(),
    };
    Some(Asked::NpmPackument {
        name: NpmName::new(&name).ok()?,
    })
}

impl Asked {
    /// The protocol and name this ask is about.
    pub fn name(&self) -> (Protocol, String) {
        match self {
            Asked::PypiPage { name, .. } => (Protocol::Pypi, name.as_str().to_string()),
            Asked::PypiFile { dist, .. } => (Protocol::Pypi, dist.name.as_str().to_string()),
            Asked::NpmPackument { name } | Asked::NpmTarball { name, .. } => {
                (Protocol::Npm, name.as_str().to_string())
            }
        }
    }

    /// Whether a served path is a name's page, packument or file: a PyPI
    /// page only under an index that is itself served (or `/simple/`), so
    /// that the index is not taken for a project called `simple`.
    pub fn is_served_name(&self, served: impl Fn(&str) -> bool) -> bool {
        match self {
            Asked::PypiPage { prefix, .. } => prefix == PYPI_INDEX || served(prefix),
            _ => true,
        }
    }

    /// The ask to log for this path, answered 404: `None` when it is not a
    /// package ask or when the snapshot does hold what it names under its
    /// canonical spelling (`/simple/Foo/` when `/simple/foo/` is served).
    /// `served(path)` says whether the snapshot serves a path.
    pub fn miss(self, served: impl Fn(&str) -> bool) -> Option<Ask> {
        match self {
            Asked::PypiPage { prefix, name } => {
                if !(prefix == PYPI_INDEX || served(&prefix)) {
                    return None;
                }
                if served(&format!("{prefix}{}/", name.as_str())) {
                    return None;
                }
                Some(Ask {
                    protocol: Protocol::Pypi,
                    kind: Kind::Project,
                    name: name.as_str().to_string(),
                    version: None,
                    filename: None,
                })
            }
            Asked::PypiFile { dist, filename } => {
                let held = served(&format!("{PYPI_INDEX}{}/", dist.name.as_str()));
                Some(Ask {
                    protocol: Protocol::Pypi,
                    kind: if held { Kind::Version } else { Kind::File },
                    name: dist.name.as_str().to_string(),
                    version: Some(dist.version.as_str().to_string()),
                    filename: Some(filename),
                })
            }
            Asked::NpmPackument { name } => {
                if name.scope().is_some() && served(&format!("/{}", name.as_str())) {
                    return None;
                }
                Some(Ask {
                    protocol: Protocol::Npm,
                    kind: Kind::Project,
                    name: name.as_str().to_string(),
                    version: None,
                    filename: None,
                })
            }
            Asked::NpmTarball {
                name,
                version,
                filename,
            } => {
                let held = served(&name.packument_path());
                Some(Ask {
                    protocol: Protocol::Npm,
                    kind: if held { Kind::Version } else { Kind::File },
                    name: name.as_str().to_string(),
                    version: Some(version),
                    filename: Some(filename),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn miss(path: &str, served: &[&str]) -> Option<Ask> {
        classify(path)?.miss(|p| served.contains(&p))
    }

    #[test]
    fn paths_read_as_asks() {
        let a = miss("/simple/Foo.Bar/", &[]).unwrap();
        assert_eq!(
            (a.protocol, a.kind, a.name.as_str()),
            (Protocol::Pypi, Kind::Project, "foo-bar")
        );
        // Held under its canonical spelling: not a miss.
        assert!(miss("/simple/Foo/", &["/simple/foo/"]).is_none());
        // Another index, logged only when that index is served.
        assert!(miss("/pypi/simple/x/", &[]).is_none());
        assert!(miss("/pypi/simple/x/", &["/pypi/simple/"]).is_some());
        let f = miss(&format!("/files/{SHA}/foo_bar-1.0-py3-none-any.whl"), &[]).unwrap();
        assert_eq!(
            (f.kind, f.name.as_str(), f.version.as_deref()),
            (Kind::File, "foo-bar", Some("1.0"))
        );
        let v = miss(
            &format!("/files/{SHA}/foo_bar-2.0.tar.gz"),
            &["/simple/foo-bar/"],
        )
        .unwrap();
        assert_eq!(v.kind, Kind::Version);
        let p = miss("/@scope%2fpkg", &[]).unwrap();
        assert_eq!((p.protocol, p.name.as_str()), (Protocol::Npm, "@scope/pkg"));
        assert!(miss("/@scope%2Fpkg", &["/@scope/pkg"]).is_none());
        let t = miss("/@s/left-pad/-/left-pad-1.3.0.tgz", &["/@s%2fleft-pad"]).unwrap();
        assert_eq!(
            (t.kind, t.version.as_deref(), t.filename.as_deref()),
            (Kind::Version, Some("1.3.0"), Some("left-pad-1.3.0.tgz"))
        );
        assert_eq!(miss("/left-pad", &[]).unwrap().kind, Kind::Project);
        for junk in [
            "/",
            "/simple/",
            "/.well-known/egress-mirror/MANIFEST",
            "/-/npm/v1/keys",
            "/a/b",
            "/x%2fy",
            "/left-pad/-/other-1.0.0.tgz",
            "/left-pad/-/left-pad-v1.tgz",
            "/simple/-a/",
            "/simple/%41/",
            "/files/zz/x-1.0.tar.gz",
            "/files/0000/x-1.0.tar.gz",
            "/x/-/x-1.0.0.tgz%00",
            "/_x",
            "/\u{1b}[2J",
        ] {
            assert!(miss(junk, &[]).is_none(), "{junk:?}");
        }
        let long = format!("/{}", "a".repeat(2000));
        assert!(classify(&long).is_none());
    }

    fn roundtrip(r: &Record) {
        let line = r.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(&Record::parse(&line).unwrap(), r, "{line}");
    }

    #[test]
    fn every_record_reads_back_as_written() {
        let run = RunId(0x0123_4567_89ab_cdef);
        roundtrip(&Record::Start {
            time: 1_796_000_000,
            run,
            snapshot: Sha256Digest::of(b"x"),
            limits: Limits::default(),
        });
        roundtrip(&Record::Miss {
            time: 1_796_000_001,
            run,
            ask: miss(&format!("/files/{SHA}/foo-1.0.tar.gz"), &[]).unwrap(),
            client: "::1".parse().unwrap(),
        });
        roundtrip(&Record::Served {
            time: 1_796_000_002,
            run,
            protocol: Protocol::Npm,
            name: "@a/b".into(),
        });
        roundtrip(&Record::Summary {
            time: 1_796_000_003,
            run,
            counts: Counts {
                misses: 3,
                dropped_full: 9,
                ..Counts::default()
            },
        });
        let line = Record::Miss {
            time: 1_796_000_001,
            run,
            ask: miss("/simple/requests/", &[]).unwrap(),
            client: "10.0.0.7".parse().unwrap(),
        }
        .to_line();
        assert_eq!(
            line,
            r#"{"v":1,"event":"miss","time":"2026-11-30T00:53:21Z","run":"0123456789abcdef","protocol":"pypi","kind":"project","name":"requests","client":"10.0.0.7"}"#
        );
    }

    #[test]
    fn lines_the_writer_would_not_write_are_refused() {
        let good = r#"{"v":1,"event":"miss","time":"2026-11-30T02:13:21Z","run":"0123456789abcdef","protocol":"pypi","kind":"project","name":"requests","client":"10.0.0.7"}"#;
        assert!(Record::parse(good).is_ok());
        for (bad, why) in [
            ("", "NotJson"),
            ("# pypi", "NotJson"),
            ("[1]", "NotJson"),
            (&good.replace("\"v\":1", "\"v\":2"), "Version"),
            (&good.replace("miss", "hit"), "Event"),
            (&good.replace("requests", "Requests"), "Invalid(\"name\")"),
            (&good.replace("requests", "re\\u001b[2Jq"), "Invalid(\"name\")"),
            (&good.replace("02:13:21Z", "02:13:21.5Z"), "Invalid(\"time\")"),
            (&good.replace("10.0.0.7", "localhost"), "Invalid(\"client\")"),
            (&good.replace("0123456789abcdef", "0123456789ABCDEF"), "Invalid(\"run\")"),
            (&good.replace("\"kind\":\"project\"", "\"kind\":\"file\""), "Missing(\"version\")"),
            (&good.replace("}", ",\"extra\":1}"), "NotJson"),
            (&good.replace("}", ",\"counts\":{\"misses\":0,\"served\":0,\"dropped_queue\":0,\"dropped_per_client\":0,\"dropped_full\":0,\"dropped_long\":0,\"write_errors\":0}}"), "Extra(\"counts\")"),
            (&good.replace("\"name\":\"requests\"", "\"name\":\"requests\",\"version\":\"1.0\",\"filename\":\"other-1.0.tar.gz\"").replace("project", "file"), "Invalid(\"filename\")"),
            (&format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_LINE)), "TooLong"),
        ] {
            let e = Record::parse(bad).unwrap_err();
            assert!(format!("{e:?}").starts_with(why), "{bad:?}: {e:?}");
            assert!(!e.to_string().contains('\u{1b}'));
        }
    }

    #[test]
    fn printable_escapes_controls() {
        assert_eq!(printable("a\u{1b}[2J\u{9b}b", 10), "a\\u{1b}[2J\\u{9b}b");
        assert_eq!(printable("abcdef", 3), "abc");
    }
}
