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
        cacert: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{TcpAttempt, TcpOutcome};
    use egress_model::{BodyEnd, Exchange, ResponseRecord, Sha256Digest, WireBytes};

    fn plan() -> ScanPlan {
        ScanPlan {
            mirror: "http://198.51.100.1:8080/simple/".into(),
            mirror_host: "198.51.100.1".into(),
            mirror_port: 8080,
            mirror_addrs: vec!["198.51.100.1".parse().unwrap()],
            canaries: vec!["203.0.113.1:8700".into()],
            canary_zone: Some("canary.example".into()),
            token: "00".into(),
            lockfiles: None,
            public_names: vec!["pypi.org".into()],
            gateway_ports: GATEWAY_PORTS.to_vec(),
        }
    }

    fn exchange(status: u16, body: &[u8]) -> Exchange {
        Exchange {
            label: "x".into(),
            peer: "198.51.100.1:8080".into(),
            request: WireBytes(b"GET /simple/ HTTP/1.1\r\n\r\n".to_vec()),
            response: Some(ResponseRecord {
                status_line: format!("HTTP/1.1 {status} X"),
                status: Some(status),
                headers: Vec::new(),
                body_len: body.len() as u64,
                body_sha256: Sha256Digest::of(body),
                body_prefix: WireBytes(body.to_vec()),
                body_end: BodyEnd::Complete,
            }),
            error: None,
            elapsed_ms: 1,
            after: None,
            h2: None,
        }
    }

    fn tcp(addr: &str, outcome: TcpOutcome) -> Evidence {
        Evidence::Tcp(TcpAttempt {
            label: "canary".into(),
            addr: addr.into(),
            outcome,
            detail: String::new(),
            elapsed_ms: 1,
        })
    }

    /// A record of every check, each with no evidence but these.
    fn records(control: u16, canary: TcpOutcome) -> Vec<ScanRecord> {
        CHECKS
            .iter()
            .map(|c| ScanRecord {
                id: c.id.into(),
                status: Status::Skipped,
                reason: String::new(),
                paths: Vec::new(),
                evidence: match c.id {
                    "C.mirror" => vec![Evidence::Http(exchange(control, b"page"))],
                    "R.canary" => vec![tcp("203.0.113.1:8700", canary)],
                    "R.metadata" => vec![tcp("169.254.169.254:80", TcpOutcome::Unreachable)],
                    "R.mirror-connect" => vec![Evidence::Http(exchange(405, b""))],
                    "R.mirror-absolute" => vec![
                        Evidence::Http(exchange(200, b"page")),
                        Evidence::Http(exchange(400, b"")),
                    ],
                    "S.routes" => vec![Evidence::File {
                        path: "/proc/net/route".into(),
                        bytes: Some(WireBytes(b"Iface\n".to_vec())),
                        error: None,
                    }],
                    _ => Vec::new(),
                },
            })
            .collect()
    }

    #[test]
    fn the_mirror_alone_passes_a_canary_reached_fails() {
        let p = plan();
        let mut r = records(200, TcpOutcome::Unreachable);
        assert_eq!(judge_all(&p, &mut r), Status::Pass, "{r:#?}");
        let mut r = records(200, TcpOutcome::Connected);
        assert_eq!(judge_all(&p, &mut r), Status::Fail);
        let canary = r.iter().find(|r| r.id == "R.canary").unwrap();
        assert_eq!(
            canary.paths,
            ["203.0.113.1:8700 (canary) accepts TCP connections"]
        );
    }

    #[test]
    fn a_mirror_that_does_not_answer_makes_every_closed_path_inconclusive() {
        // A server that answers 404 to everything (or nothing at all)
        // cannot make "unreachable" count.
        let p = plan();
        let mut r = records(404, TcpOutcome::Unreachable);
        assert_eq!(judge_all(&p, &mut r), Status::Inconclusive);
        let canary = r.iter().find(|r| r.id == "R.canary").unwrap();
        assert_eq!(canary.status, Status::Inconclusive);
        assert!(canary.reason.contains("C.mirror"), "{}", canary.reason);
        // A path found open is a FAIL even so.
        let mut r = records(404, TcpOutcome::Connected);
        assert_eq!(judge_all(&p, &mut r), Status::Fail);
    }

    #[test]
    fn verify_names_a_verdict_the_evidence_does_not_support() {
        let p = plan();
        let mut records = records(200, TcpOutcome::Connected);
        let outcome = judge_all(&p, &mut records);
        let mut report = ScanReport {
            schema: SCAN_SCHEMA.into(),
            tool: "t".into(),
            started_unix: 0,
            plan: p,
            records,
            outcome,
        };
        assert!(verify(&report).is_empty());
        let json = render::json(&report);
        let back: ScanReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        // Claim the canary was not reached.
        let canary = report
            .records
            .iter_mut()
            .find(|r| r.id == "R.canary")
            .unwrap();
        canary.status = Status::Pass;
        canary.paths.clear();
        report.outcome = Status::Pass;
        let ids: Vec<String> = verify(&report).into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["R.canary", "outcome"]);
        report.records.retain(|r| r.id != "R.canary");
        assert!(verify(&report).iter().any(|d| d.id == "R.canary"));
    }

    #[test]
    fn client_configs_and_lockfiles() {
        let p = plan();
        let file = |path: &str, text: &str| Evidence::File {
            path: path.into(),
            bytes: Some(WireBytes(text.as_bytes().to_vec())),
            error: None,
        };
        let env = |vars: &[(&str, &str)]| Evidence::Env {
            vars: vars
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        };
        let ok = judge::client_config(
            &p,
            &[
                env(&[("PIP_INDEX_URL", "http://198.51.100.1:8080/simple/")]),
                file("/etc/pip.conf", "[global]\nindex-url = http://198.51.100.1:8080/simple/\ntrusted-host = 198.51.100.1\n"),
            ],
        );
        assert_eq!(ok.status, Status::Pass, "{}", ok.reason);
        // apt.conf's `//` comments are not npm's `//host/` keys.
        let apt_conf = "// see http://example.com/\nAPT\n{\n  NeverAutoRemove { \"^pg$\"; };\n};\n";
        let quiet = judge::client_config(&p, &[file("/etc/apt/apt.conf.d/01x", apt_conf)]);
        assert_eq!(quiet.status, Status::Pass, "{:?}", quiet.paths);
        for (ev, needle) in [
            (file("/etc/apt/apt.conf.d/01proxy", "// a proxy\nAcquire::http::Proxy \"http://203.0.113.9:3128/\";\n"), "/etc/apt/apt.conf.d/01proxy line 2: http://203.0.113.9:3128/"),
            (env(&[("UV_INDEX", "pub=https://pypi.org/simple")]), "UV_INDEX: https://pypi.org/simple"),
            (env(&[("GOPROXY", "https://198.51.100.1:8080,direct")]), "direct"),
            (env(&[("PIP_TRUSTED_HOST", "pypi.org")]), "host pypi.org"),
            (file("/root/.npmrc", "//registry.npmjs.org/:_authToken=<redacted>\n"), "/root/.npmrc line 1: host registry.npmjs.org"),
            (file("/etc/apt/sources.list.d/debian.sources", "Types: deb\nURIs: http://deb.debian.org/debian\n"), "deb.debian.org"),
            (file("/root/.cargo/config.toml", "[source.crates-io]\nreplace-with = \"m\"\n[source.m]\nregistry = \"sparse+https://index.crates.io/\"\n"), "index.crates.io"),
        ] {
            let j = judge::client_config(&p, &[ev]);
            assert_eq!(j.status, Status::Fail, "{needle}");
            assert!(j.paths.iter().any(|x| x.contains(needle)), "{needle}: {:?}", j.paths);
        }
        let mut lp = p.clone();
        lp.lockfiles = Some("/locks".into());
        let lock = r#"{"lockfileVersion": 3, "packages": {"node_modules/a": {"resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz"}}}"#;
        let j = judge::lockfiles(&lp, &[file("/locks/package-lock.json", lock)]);
        assert_eq!(j.status, Status::Fail);
        assert!(
            j.paths[0].contains("node_modules/a: resolved https://registry.npmjs.org/"),
            "{:?}",
            j.paths
        );
        let j = judge::lockfiles(&lp, &[file("/locks/uv.lock", "version = [")]);
        assert_eq!(j.status, Status::Inconclusive);
        assert_eq!(judge::lockfiles(&p, &[]).status, Status::Skipped);
    }
}
