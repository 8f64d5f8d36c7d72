//! The sandbox-side scan (`egress-conformance sandbox-scan`): run inside a
//! sandbox, it reports every path out with its evidence and judges them
//! as the suite judges a mirror. PASS only when the mirror is the one
//! thing reachable; every other path is a FAIL that names it.
//!
//! One binary, no set-up: it reads /proc, /sys and configuration files
//! itself, and makes its own connections, HTTP requests ([`egress_transcript`])
//! and DNS queries ([`dns`], over UDP to the resolvers in /etc/resolv.conf).
//!
//! - [`checks::CHECKS`]: the checks in order, each a collector and a judge;
//! - [`collect`]: the only code that reads the sandbox or the network;
//! - [`judge`]: pure functions of a plan and recorded evidence, so that
//!   [`verify`] derives every verdict again from a saved report;
//! - [`render`]: text, JSON and JUnit.

// A reader of untrusted bytes (DNS replies, /proc, configuration files):
// no indexing, string slicing or unwrap that could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod checks;
pub mod collect;
pub mod dns;
pub mod evidence;
pub mod judge;
pub mod names;
pub mod net;
pub mod render;

pub use collect::{Context, Timeouts};
pub use evidence::{Evidence, ScanPlan, ScanRecord, ScanReport, SCAN_SCHEMA};

use checks::{Kind, CHECKS};
use egress_model::{Status, Url};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Public registry host names the scan tries to resolve.
pub const PUBLIC_NAMES: [&str; 12] = [
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "github.com",
    "objects.githubusercontent.com",
    "index.crates.io",
    "static.crates.io",
    "proxy.golang.org",
    "repo1.maven.org",
];

/// Ports tried on every gateway: web, TLS and the usual proxy ports.
pub const GATEWAY_PORTS: [u16; 4] = [80, 443, 3128, 8080];

/// What a scan is asked to do.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    pub mirror: String,
    pub canaries: Vec<String>,
    pub canary_zone: Option<String>,
    pub lockfiles: Option<PathBuf>,
}

/// A bad option, named.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("--mirror {0}: {1}")]
    Mirror(String, String),
    #[error(
        "--canary {0}: give an IP address and a port, e.g. 203.0.113.7:8700 or [2001:db8::7]:8700"
    )]
    Canary(String),
    #[error("--canary-zone {0}: {1}")]
    Zone(String, String),
    #[error("--lockfiles {0}: not a directory")]
    Lockfiles(String),
}

fn token() -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::getrandom(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The plan: options checked, the mirror's addresses resolved (with the
/// system's resolver, as the sandbox's clients would), a fresh token.
pub fn plan(o: &ScanOptions) -> Result<ScanPlan, ScanError> {
    let url =
        Url::parse(&o.mirror).map_err(|e| ScanError::Mirror(o.mirror.clone(), e.to_string()))?;
    let host = url.host_unbracketed().to_ascii_lowercase();
    let mirror_addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => (host.as_str(), url.port())
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default(),
    };
    let mut canaries = Vec::new();
    for c in &o.canaries {
        let a: SocketAddr = c.parse().map_err(|_| ScanError::Canary(c.clone()))?;
        canaries.push(a.to_string());
    }
    let canary_zone = match &o.canary_zone {
        Some(z) => Some(
            dns::Name::new(z)
                .map_err(|e| ScanError::Zone(z.clone(), e.to_string()))?
                .to_string(),
        ),
        None => None,
    };
    if let Some(d) = &o.lockfiles {
        if !d.is_dir() {
            return Err(ScanError::Lockfiles(d.display().to_string()));
        }
    }
    Ok(ScanPlan {
        mirror: o.mirror.clone(),
        mirror_host: host,
        mirror_port: url.port(),
        mirror_addrs,
        canaries,
        canary_zone,
        token: token(),
        lockfiles: o.lockfiles.as_ref().map(|d| d.display().to_string()),
        public_names: PUBLIC_NAMES.iter().map(ToString::to_string).collect(),
        gateway_ports: GATEWAY_PORTS.to_vec(),
    })
}

/// The context of this process: its environment, home and working directory.
pub fn context(plan: ScanPlan, timeouts: Timeouts) -> Context {
    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let home = env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v));
    Context {
        plan,
        env,
        home,
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        timeouts,
    }
}

/// Runs every check (all at once) and judges them.
pub fn run(ctx: &Context) -> ScanReport {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let evidence: Vec<Vec<Evidence>> = std::thread::scope(|s| {
        let handles: Vec<_> = CHECKS
            .iter()
            .map(|c| s.spawn(move || (c.collect)(ctx)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut records: Vec<ScanRecord> = CHECKS
        .iter()
        .zip(evidence)
        .map(|(c, evidence)| ScanRecord {
            id: c.id.to_string(),
            status: Status::Skipped,
            reason: String::new(),
            paths: Vec::new(),
            evidence,
        })
        .collect();
    let outcome = judge_all(&ctx.plan, &mut records);
    ScanReport {
        schema: SCAN_SCHEMA.to_string(),
        tool: format!("egress-conformance {}", env!("CARGO_PKG_VERSION")),
        started_unix,
        plan: ctx.plan.clone(),
        records,
        outcome,
    }
}

/// Judges every record from its evidence, applies the positive control
/// (an attempt that found nothing counts only when the mirror answered),
/// and returns the outcome: FAIL if any check fails, else INCONCLUSIVE if
/// any is, else PASS.
pub fn judge_all(plan: &ScanPlan, records: &mut [ScanRecord]) -> Status {
    for r in records.iter_mut() {
        let j = match checks::check(&r.id) {
            Some(c) => (c.judge)(plan, &r.evidence),
            None => judge::Judged {
                status: Status::Inconclusive,
                reason: "not a check this version knows".into(),
                paths: Vec::new(),
            },
        };
        r.status = j.status;
        r.reason = j.reason;
        r.paths = j.paths;
    }
    let control_ok = records
        .iter()
        .any(|r| r.id == "C.mirror" && r.status == Status::Pass);
    if !control_ok {
        for r in records.iter_mut() {
            let attempt = checks::check(&r.id).is_some_and(|c| c.kind == Kind::Attempt);
            if attempt && r.status == Status::Pass {
                r.status = Status::Inconclusive;
                r.reason = format!(
                    "{}; but the mirror did not answer (C.mirror), so finding nothing proves nothing",
                    r.reason
                );
            }
        }
    }
    let has = |s: Status| records.iter().any(|r| r.status == s);
    if has(Status::Fail) {
        Status::Fail
    } else if has(Status::Inconclusive) || !control_ok {
        Status::Inconclusive
    } else {
        Status::Pass
    }
}

/// A recorded verdict the evidence does not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub id: String,
    pub recorded: (Status, String),
    pub derived: (Status, String),
}

/// Derives every verdict of `report` again from its evidence and lists
/// those that differ from what it records (checks, outcome, missing checks).
pub fn verify(report: &ScanReport) -> Vec<Disagreement> {
    let mut records = report.records.clone();
    let outcome = judge_all(&report.plan, &mut records);
    let mut out = Vec::new();
    for (old, new) in report.records.iter().zip(&records) {
        if old.status != new.status || old.reason != new.reason || old.paths != new.paths {
            out.push(Disagreement {
                id: old.id.clone(),
                recorded: (old.status, old.reason.clone()),
                derived: (new.status, new.reason.clone()),
            });
        }
    }
    for c in CHECKS {
        if report.record(c.id).is_none() {
            out.push(Disagreement {
                id: c.id.to_string(),
                recorded: (Status::Skipped, "missing from the report".into()),
                derived: (Status::Inconclusive, "check absent".into()),
            });
        }
    }
    if outcome != report.outcome {
        out.push(Disagreement {
            id: "outcome".into(),
            recorded: (report.outcome, String::new()),
            derived: (outcome, String::new()),
        });
    }
    out
}
