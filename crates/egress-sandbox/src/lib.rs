//! The sandbox-side scan (`egress-conformance sandbox-scan`): run inside a
//! sandbox, it reports every path out with its evidence and judges them
//! as the suite judges a mirror. PASS only when the mirror is the one
//! thing reachable; every other path is a FAIL that names it. What a
//! client is told that leads nowhere from the sandbox (a configured host
//! whose name does not resolve, or that no connection reaches) is a
//! notice, reported beside the findings with the attempt that failed.
//!
//! One binary, no set-up: it reads /proc, /sys and configuration files
//! itself, and makes its own connections, HTTP requests ([`egress_transcript`])
//! and DNS queries ([`dns`], over UDP to the resolvers in /etc/resolv.conf).
//!
//! - [`checks::CHECKS`]: the checks in order, each a collector and a judge;
//! - [`collect`]: the only code that reads the sandbox or the network;
//! - [`doors`]: the doors a client configuration names and what the
//!   sandbox's resolver says of their hosts, read by collectors and judges;
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
pub mod doors;
pub mod evidence;
pub mod judge;
pub mod names;
pub mod net;
pub mod render;

pub use collect::{Context, Timeouts};
pub use evidence::{Evidence, Notice, NoticeKind, ScanPlan, ScanRecord, ScanReport, SCAN_SCHEMA};

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
    let judged = judge_all(&ctx.plan, &mut records);
    ScanReport {
        schema: SCAN_SCHEMA.to_string(),
        tool: format!("egress-conformance {}", env!("CARGO_PKG_VERSION")),
        started_unix,
        plan: ctx.plan.clone(),
        records,
        notices: judged.notices,
        outcome: judged.outcome,
    }
}

/// What [`judge_all`] derives beyond each record's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub outcome: Status,
    /// Every check's notices, in check order.
    pub notices: Vec<Notice>,
}

/// Judges every record from its evidence, applies the positive control
/// (an attempt that found nothing, and a configured host found
/// unreachable, count only when the mirror answered), and returns the
/// notices and the outcome: FAIL if any check fails, else INCONCLUSIVE if
/// any is, else PASS. Notices never change the outcome.
pub fn judge_all(plan: &ScanPlan, records: &mut [ScanRecord]) -> Judgement {
    let mut notices = Vec::new();
    let mut unreachable = Vec::new();
    for r in records.iter_mut() {
        let j = match checks::check(&r.id) {
            Some(c) => (c.judge)(plan, &r.evidence),
            None => judge::Judged {
                status: Status::Inconclusive,
                reason: "not a check this version knows".into(),
                paths: Vec::new(),
                notices: Vec::new(),
            },
        };
        r.status = j.status;
        r.reason = j.reason;
        r.paths = j.paths;
        if j.notices.iter().any(|n| n.kind == NoticeKind::Unreachable) {
            unreachable.push(r.id.clone());
        }
        notices.extend(j.notices.into_iter().map(|n| Notice {
            check: r.id.clone(),
            ..n
        }));
    }
    let control_ok = records
        .iter()
        .any(|r| r.id == "C.mirror" && r.status == Status::Pass);
    if !control_ok {
        for r in records.iter_mut() {
            let attempt = checks::check(&r.id).is_some_and(|c| c.kind == Kind::Attempt);
            if (attempt || unreachable.contains(&r.id)) && r.status == Status::Pass {
                r.status = Status::Inconclusive;
                r.reason = format!(
                    "{}; but the mirror did not answer (C.mirror), so finding nothing proves nothing",
                    r.reason
                );
            }
        }
    }
    let has = |s: Status| records.iter().any(|r| r.status == s);
    let outcome = if has(Status::Fail) {
        Status::Fail
    } else if has(Status::Inconclusive) || !control_ok {
        Status::Inconclusive
    } else {
        Status::Pass
    };
    Judgement { outcome, notices }
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
    let judged = judge_all(&report.plan, &mut records);
    let outcome = judged.outcome;
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
    if judged.notices != report.notices {
        let lines = |n: &[Notice]| n.iter().map(Notice::line).collect::<Vec<_>>().join("; ");
        out.push(Disagreement {
            id: "notices".into(),
            recorded: (Status::Pass, lines(&report.notices)),
            derived: (Status::Pass, lines(&judged.notices)),
        });
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
    fn a_cargo_registry_token_in_the_sandbox_is_a_finding() {
        // Read as the scan reads it: files redacted, values never kept.
        let dir = std::env::temp_dir().join(format!("egress-cargo-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let creds = dir.join("credentials.toml");
        std::fs::write(&creds, "[registry]\ntoken = \"cio-s3cr3t\"\n").unwrap();
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            "[registries.lab]\nindex = \"sparse+http://198.51.100.1:8080/cargo/index/\"\n",
        )
        .unwrap();
        let file = crate::collect::read_file(&creds, true);
        let Evidence::File { bytes: Some(b), .. } = &file else {
            panic!("{file:?}")
        };
        assert!(!b.lossy().contains("s3cr3t"), "{}", b.lossy());
        let p = plan();
        let clean = vec![crate::collect::read_file(&config, true)];
        assert_eq!(judge::cargo_config(&p, &clean).status, Status::Pass);
        let j = judge::cargo_config(&p, &[clean[0].clone(), file]);
        assert_eq!(j.status, Status::Fail, "{j:?}");
        assert_eq!(j.paths, [format!("{} line 2", creds.display())]);
        let env = Evidence::Env {
            vars: vec![("CARGO_REGISTRIES_LAB_TOKEN".into(), "<redacted>".into())],
        };
        let j = judge::cargo_config(&p, &[env]);
        assert_eq!(j.paths, ["$CARGO_REGISTRIES_LAB_TOKEN"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hugging_face_token_in_the_sandbox_is_a_finding() {
        let dir = std::env::temp_dir().join(format!("egress-hf-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "hf_s3cr3tvalue\n").unwrap();
        let empty = dir.join("stored_tokens");
        std::fs::write(&empty, "").unwrap();
        let file = crate::collect::secret_file(&token);
        let Evidence::File { bytes: Some(b), .. } = &file else {
            panic!("{file:?}")
        };
        assert!(!b.lossy().contains("s3cr3t"), "{}", b.lossy());
        let p = plan();
        let endpoint = Evidence::Env {
            vars: vec![("HF_ENDPOINT".into(), "http://198.51.100.1:8080/hf".into())],
        };
        let absent = crate::collect::secret_file(&dir.join("nonesuch"));
        let clean = vec![
            endpoint.clone(),
            crate::collect::secret_file(&empty),
            absent,
        ];
        let j = judge::hf_config(&p, &clean);
        assert_eq!(j.status, Status::Pass, "{j:?}");
        let j = judge::hf_config(&p, &[endpoint.clone(), file]);
        assert_eq!(j.status, Status::Fail, "{j:?}");
        assert_eq!(j.paths, [format!("{} (a token file)", token.display())]);
        let env = Evidence::Env {
            vars: vec![
                ("HF_ENDPOINT".into(), "http://198.51.100.1:8080/hf".into()),
                ("HF_TOKEN".into(), "<redacted>".into()),
            ],
        };
        let j = judge::hf_config(&p, &[env]);
        assert_eq!(
            (j.status, j.paths.clone()),
            (Status::Fail, vec!["$HF_TOKEN".to_string()])
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_mirror_alone_passes_a_canary_reached_fails() {
        let p = plan();
        let mut r = records(200, TcpOutcome::Unreachable);
        assert_eq!(judge_all(&p, &mut r).outcome, Status::Pass, "{r:#?}");
        let mut r = records(200, TcpOutcome::Connected);
        assert_eq!(judge_all(&p, &mut r).outcome, Status::Fail);
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
        assert_eq!(judge_all(&p, &mut r).outcome, Status::Inconclusive);
        let canary = r.iter().find(|r| r.id == "R.canary").unwrap();
        assert_eq!(canary.status, Status::Inconclusive);
        assert!(canary.reason.contains("C.mirror"), "{}", canary.reason);
        // A path found open is a FAIL even so.
        let mut r = records(404, TcpOutcome::Connected);
        assert_eq!(judge_all(&p, &mut r).outcome, Status::Fail);
    }

    #[test]
    fn verify_names_a_verdict_the_evidence_does_not_support() {
        let p = plan();
        let mut records = records(200, TcpOutcome::Connected);
        let judged = judge_all(&p, &mut records);
        let mut report = ScanReport {
            schema: SCAN_SCHEMA.into(),
            tool: "t".into(),
            started_unix: 0,
            plan: p,
            records,
            notices: judged.notices,
            outcome: judged.outcome,
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

    fn file(path: &str, text: &str) -> Evidence {
        Evidence::File {
            path: path.into(),
            bytes: Some(WireBytes(text.as_bytes().to_vec())),
            error: None,
        }
    }

    fn env(vars: &[(&str, &str)]) -> Evidence {
        Evidence::Env {
            vars: vars
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    /// What a sealed sandbox's resolver files say: no entry, no nameserver.
    fn sealed_resolver() -> Vec<Evidence> {
        vec![
            file(doors::HOSTS_FILE, "127.0.0.1 localhost\n"),
            file(doors::RESOLV_CONF, "# no nameserver\n"),
        ]
    }

    fn tcp_to(host: &str, addr: &str, outcome: TcpOutcome) -> Evidence {
        Evidence::Tcp(TcpAttempt {
            label: host.into(),
            addr: addr.into(),
            outcome,
            detail: if outcome == TcpOutcome::Refused {
                "Connection refused (os error 111)".into()
            } else {
                String::new()
            },
            elapsed_ms: 1,
        })
    }

    const STOCK: &str = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";
    const STOCK_PATH: &str = "/etc/apt/sources.list.d/debian.sources";

    #[test]
    fn configs_naming_only_the_mirror_pass_without_notices() {
        let p = plan();
        let ok = judge::client_config(
            &p,
            &[
                env(&[("PIP_INDEX_URL", "http://198.51.100.1:8080/simple/")]),
                file("/etc/pip.conf", "[global]\nindex-url = http://198.51.100.1:8080/simple/\ntrusted-host = 198.51.100.1\n"),
            ],
        );
        assert_eq!(ok.status, Status::Pass, "{}", ok.reason);
        assert!(ok.notices.is_empty());
        // apt.conf's `//` comments are not npm's `//host/` keys.
        let apt_conf = "// see http://example.com/\nAPT\n{\n  NeverAutoRemove { \"^pg$\"; };\n};\n";
        let quiet = judge::client_config(&p, &[file("/etc/apt/apt.conf.d/01x", apt_conf)]);
        assert_eq!(quiet.status, Status::Pass, "{:?}", quiet.paths);
        assert!(quiet.notices.is_empty());
    }

    #[test]
    fn stock_apt_sources_in_a_sealed_sandbox_are_a_notice() {
        let p = plan();
        let mut ev = vec![file(STOCK_PATH, STOCK)];
        // Not tried at all (a report from before the attempts): unknown.
        let j = judge::client_config(&p, &ev);
        assert_eq!(j.status, Status::Inconclusive, "{}", j.reason);
        ev.extend(sealed_resolver());
        let j = judge::client_config(&p, &ev);
        assert_eq!(j.status, Status::Pass, "{}", j.reason);
        assert!(j.paths.is_empty());
        let [n] = j.notices.as_slice() else {
            panic!("{:?}", j.notices)
        };
        assert_eq!(n.kind, NoticeKind::Unreachable);
        assert_eq!(n.configured, "http://deb.debian.org/debian");
        assert_eq!(n.place, format!("{STOCK_PATH} line 1"));
        assert!(
            n.attempt.starts_with("name resolution failed")
                && n.attempt.contains("names no nameserver"),
            "{}",
            n.attempt
        );
        // The snapshot URL in a comment is no source.
        assert!(!j.notices.iter().any(|n| n.configured.contains("snapshot")));
    }

    #[test]
    fn a_door_that_answers_fails_one_that_refuses_is_a_notice() {
        let p = plan();
        let conf = file(
            "/etc/apt/apt.conf.d/01proxy",
            "// a proxy\nAcquire::http::Proxy \"http://203.0.113.9:3128/\";\n",
        );
        let mut ev = vec![conf.clone()];
        ev.extend(sealed_resolver());
        ev.push(tcp_to(
            "203.0.113.9",
            "203.0.113.9:3128",
            TcpOutcome::Connected,
        ));
        ev.push(Evidence::Http(exchange(400, b"")));
        let j = judge::client_config(&p, &ev);
        assert_eq!(j.status, Status::Fail);
        assert!(
            j.paths[0].contains("/etc/apt/apt.conf.d/01proxy line 2: http://203.0.113.9:3128/: a proxy that answers at 203.0.113.9:3128"),
            "{:?}",
            j.paths
        );
        let mut ev = vec![conf];
        ev.extend(sealed_resolver());
        ev.push(tcp_to(
            "203.0.113.9",
            "203.0.113.9:3128",
            TcpOutcome::Refused,
        ));
        let j = judge::client_config(&p, &ev);
        assert_eq!(j.status, Status::Pass, "{}", j.reason);
        assert!(j.notices[0].attempt.contains("refused"), "{:?}", j.notices);
        // A name the sandbox's resolver answers, at an address that
        // accepts: FAIL.
        let name = dns::Name::new("deb.debian.org").unwrap();
        let q = dns::encode_query(9, &name, dns::TYPE_A);
        let reply = dns::encode_reply(
            &dns::parse(&q).unwrap(),
            &["198.51.100.80".parse().unwrap()],
            60,
        );
        let mut ev = vec![
            file(STOCK_PATH, STOCK),
            file(doors::RESOLV_CONF, "nameserver 198.51.100.53\n"),
        ];
        ev.push(Evidence::Dns(crate::evidence::DnsAttempt {
            server: "198.51.100.53:53".into(),
            query: WireBytes(q),
            reply: Some(WireBytes(reply)),
            error: None,
            elapsed_ms: 1,
        }));
        ev.push(tcp_to(
            "deb.debian.org",
            "198.51.100.80:80",
            TcpOutcome::Connected,
        ));
        let j = judge::client_config(&p, &ev);
        assert_eq!(j.status, Status::Fail);
        assert!(
            j.paths[0].contains("198.51.100.80:80 (deb.debian.org: DNS)"),
            "{:?}",
            j.paths
        );
    }

    #[test]
    fn a_proxy_that_answers_fails_whatever_it_claims() {
        let p = plan();
        // On the mirror's own host but not its socket: a door past it.
        let mut ev = vec![env(&[("HTTPS_PROXY", "http://198.51.100.1:3128")])];
        ev.extend(sealed_resolver());
        ev.push(tcp_to(
            "198.51.100.1",
            "198.51.100.1:3128",
            TcpOutcome::Connected,
        ));
        ev.push(Evidence::Http(exchange(200, b"page")));
        let j = judge::proxy_env(&p, &ev);
        assert_eq!(j.status, Status::Fail);
        assert!(
            j.paths[0].starts_with("HTTPS_PROXY=http://198.51.100.1:3128: a proxy that answers"),
            "{:?}",
            j.paths
        );
        // The mirror's socket itself, as --mirror names it: not tried.
        let j = judge::proxy_env(&p, &[env(&[("http_proxy", "198.51.100.1:8080")])]);
        assert_eq!(j.status, Status::Pass, "{}", j.reason);
        // A value the scan cannot read: it cannot tell.
        let j = judge::proxy_env(&p, &[env(&[("ALL_PROXY", "http://:3128")])]);
        assert_eq!(j.status, Status::Inconclusive, "{}", j.reason);
    }

    #[test]
    fn unread_files_and_go_direct_are_notices() {
        let p = plan();
        let denied = Evidence::File {
            path: "/etc/pip.conf".into(),
            bytes: None,
            error: Some("Permission denied (os error 13)".into()),
        };
        let absent = Evidence::File {
            path: "/root/.pip/pip.conf".into(),
            bytes: None,
            error: Some("absent".into()),
        };
        let j = judge::client_config(&p, &[denied, absent]);
        assert_eq!(j.status, Status::Pass);
        let [n] = j.notices.as_slice() else {
            panic!("{:?}", j.notices)
        };
        assert_eq!(
            (n.kind, n.place.as_str()),
            (NoticeKind::Unread, "/etc/pip.conf")
        );
        assert_eq!(n.attempt, "cannot read: Permission denied (os error 13)");
        let j = judge::client_config(
            &p,
            &[env(&[("GOPROXY", "http://198.51.100.1:8080,direct")])],
        );
        assert_eq!(j.status, Status::Pass);
        assert_eq!(j.notices[0].kind, NoticeKind::NoHost);
    }

    #[test]
    fn an_unreachable_host_counts_only_when_the_mirror_answered() {
        let p = plan();
        for (control, want) in [(200, Status::Pass), (503, Status::Inconclusive)] {
            let mut r = records(control, TcpOutcome::Unreachable);
            let apt = r.iter_mut().find(|r| r.id == "S.apt").unwrap();
            apt.evidence = vec![file(STOCK_PATH, STOCK)];
            apt.evidence.extend(sealed_resolver());
            let j = judge_all(&p, &mut r);
            let apt = r.iter().find(|r| r.id == "S.apt").unwrap();
            assert_eq!(apt.status, want, "{}", apt.reason);
            assert_eq!(j.notices.len(), 1);
            assert_eq!(j.notices[0].check, "S.apt");
            if want == Status::Pass {
                assert_eq!(j.outcome, Status::Pass, "a notice never fails a scan");
                let report = ScanReport {
                    schema: SCAN_SCHEMA.into(),
                    tool: "t".into(),
                    started_unix: 0,
                    plan: p.clone(),
                    records: r.clone(),
                    notices: j.notices.clone(),
                    outcome: j.outcome,
                };
                assert!(verify(&report).is_empty());
                let text = render::text(&report);
                let line = text.lines().find(|l| l.starts_with("  notice: ")).unwrap();
                assert!(
                    line.contains("S.apt") && line.contains("deb.debian.org"),
                    "{line}"
                );
                assert!(text.find("notice:").unwrap() > text.find("S.apt").unwrap());
                let junit = render::junit(&report);
                assert!(junit.contains("<property name=\"notice\""), "{junit}");
                assert_eq!(junit.matches("<failure").count(), 0);
                let json: serde_json::Value = serde_json::from_str(&render::json(&report)).unwrap();
                assert_eq!(json["notices"][0]["check"], "S.apt");
                assert_eq!(json["notices"][0]["kind"], "unreachable");
                // A dropped notice does not verify.
                let mut tampered = report.clone();
                tampered.notices.clear();
                assert_eq!(verify(&tampered)[0].id, "notices");
            }
        }
    }

    #[test]
    fn lockfiles() {
        let p = plan();
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
