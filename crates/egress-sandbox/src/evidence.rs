//! What a scan records: the plan it ran with, and per check the evidence
//! (files and environment read, connections, HTTP exchanges, DNS queries)
//! its verdict is derived from. Judges read these and nothing else, so
//! `report verify` can derive every verdict again.

use egress_model::{Exchange, Status, WireBytes};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

pub const SCAN_SCHEMA: &str = "egress-conformance/sandbox-scan/v1";

/// One thing the scan read or tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Evidence {
    /// A file as read (secrets in configuration files redacted), or why it
    /// could not be.
    File {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<WireBytes>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The names in a directory, or why it could not be listed.
    Dir {
        path: String,
        entries: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Environment variables (name, value; secrets redacted).
    Env { vars: Vec<(String, String)> },
    /// A TCP connection attempt.
    Tcp(TcpAttempt),
    /// An HTTP exchange, exactly as sent and received.
    Http(Exchange),
    /// A DNS query over UDP and the reply, as bytes.
    Dns(DnsAttempt),
}

/// How a TCP connection attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpOutcome {
    /// The handshake completed: the address is reachable.
    Connected,
    /// A host answered with a reset (nothing listens on that port).
    Refused,
    /// The sandbox has no route, or a router said the host is unreachable.
    Unreachable,
    /// Nothing answered before the timeout.
    TimedOut,
    /// Any other error (recorded in `detail`).
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpAttempt {
    /// Why the scan tried it, e.g. `canary`, `gateway`, `metadata`.
    pub label: String,
    /// `ip:port` (`[ip]:port` for IPv6).
    pub addr: String,
    pub outcome: TcpOutcome,
    /// The error text, if any.
    pub detail: String,
    /// For people; judges never read it.
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsAttempt {
    /// The resolver, `ip:53`.
    pub server: String,
    /// The query exactly as sent.
    pub query: WireBytes,
    /// The first reply that carried the query's id, exactly as received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<WireBytes>,
    /// Why there is no reply: a send error, a port-unreachable, a timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// What the scan was asked to do, and what it fixed before it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPlan {
    /// The mirror URL as given.
    pub mirror: String,
    /// Its host (lower case, no brackets) and port.
    pub mirror_host: String,
    pub mirror_port: u16,
    /// The addresses the mirror's host resolved to when the scan started.
    pub mirror_addrs: Vec<IpAddr>,
    /// `--canary` addresses, `ip:port`.
    pub canaries: Vec<String>,
    /// `--canary-zone`: a zone whose names only the canary's DNS answers.
    pub canary_zone: Option<String>,
    /// Unique to this run: in the canary-zone name and every probe path.
    pub token: String,
    /// `--lockfiles DIR`.
    pub lockfiles: Option<String>,
    /// Public registry host names the scan tries to resolve.
    pub public_names: Vec<String>,
    /// Ports tried on every gateway and on the metadata addresses.
    pub gateway_ports: Vec<u16>,
}

impl ScanPlan {
    /// The name looked up under the canary's zone.
    pub fn canary_name(&self) -> Option<String> {
        self.canary_zone
            .as_ref()
            .map(|z| format!("egress-scan-{}.{}", self.token, z.trim_end_matches('.')))
    }

    /// The path every probe request asks for.
    pub fn probe_path(&self) -> String {
        format!("/egress-sandbox-scan/{}", self.token)
    }

    /// Whether `addr` (`ip:port`) is the mirror's own socket.
    pub fn is_mirror_socket(&self, addr: &str) -> bool {
        addr.parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.port() == self.mirror_port && self.mirror_addrs.contains(&a.ip()))
    }
}

/// One check's evidence and verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanRecord {
    /// `C.mirror`, `S.routes`, `R.canary`...
    pub id: String,
    pub status: Status,
    /// One line: why the evidence leads to the status.
    pub reason: String,
    /// Each path out the evidence shows, named (empty unless FAIL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    pub evidence: Vec<Evidence>,
}

/// Why a notice is not a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoticeKind {
    /// The configuration names a host the sandbox could not reach: its
    /// name did not resolve, or no connection to it completed. It counts
    /// only when the positive control (`C.mirror`) passed.
    Unreachable,
    /// The configuration names no one host to try (go's `direct`).
    NoHost,
    /// A configuration file or directory the scan could not read.
    Unread,
}

/// What a client is told that leads nowhere from this sandbox: reported
/// beside the findings, never as one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    /// The check that found it, e.g. `S.apt`.
    pub check: String,
    pub kind: NoticeKind,
    /// What is configured: a URL, a proxy, a host, as written.
    pub configured: String,
    /// Where: a variable's name, or `FILE line N`, or a file's path.
    pub place: String,
    /// The attempt that failed, or the error that stopped the read.
    pub attempt: String,
}

impl Notice {
    /// One line for people.
    pub fn line(&self) -> String {
        if self.configured.is_empty() {
            format!("{} {}: {}", self.check, self.place, self.attempt)
        } else {
            format!(
                "{} {}: {}: {}",
                self.check, self.place, self.configured, self.attempt
            )
        }
    }
}

/// A whole scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanReport {
    pub schema: String,
    pub tool: String,
    pub started_unix: u64,
    pub plan: ScanPlan,
    pub records: Vec<ScanRecord>,
    /// Beside the findings (each record's `paths`): what is configured but
    /// leads nowhere, each with the attempt that shows it.
    #[serde(default)]
    pub notices: Vec<Notice>,
    pub outcome: Status,
}

impl ScanReport {
    /// 0 pass, 1 fail, 3 inconclusive.
    pub fn exit_code(&self) -> u8 {
        match self.outcome {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::Inconclusive | Status::Skipped => 3,
        }
    }
    pub fn record(&self, id: &str) -> Option<&ScanRecord> {
        self.records.iter().find(|r| r.id == id)
    }
}

impl Evidence {
    /// One line for people.
    pub fn summary(&self) -> String {
        match self {
            Evidence::File { path, bytes, error } => match (bytes, error) {
                (Some(b), _) => format!("read {path} ({} bytes)", b.0.len()),
                (None, Some(e)) => format!("{path}: {e}"),
                (None, None) => format!("{path}: not read"),
            },
            Evidence::Dir {
                path,
                entries,
                error,
            } => match error {
                Some(e) => format!("{path}/: {e}"),
                None => format!("{path}/: {} entries", entries.len()),
            },
            Evidence::Env { vars } => {
                let names: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
                if names.is_empty() {
                    "environment: none of its variables set".into()
                } else {
                    format!("environment: {}", names.join(", "))
                }
            }
            Evidence::Tcp(t) => {
                let how = match t.outcome {
                    TcpOutcome::Connected => "connected".to_string(),
                    TcpOutcome::Refused => "refused (a host answered; nothing listens)".into(),
                    TcpOutcome::Unreachable => format!("unreachable ({})", t.detail),
                    TcpOutcome::TimedOut => "no answer (timed out)".into(),
                    TcpOutcome::Failed => format!("failed ({})", t.detail),
                };
                format!("TCP {} ({}): {how}", t.addr, t.label)
            }
            Evidence::Http(e) => format!("{} via {}", e.summary(), e.peer),
            Evidence::Dns(d) => d.summary(),
        }
    }
}

impl DnsAttempt {
    /// The reply read back when it answers the query (same id, a
    /// response): the question's name and type, and the reply.
    pub fn answer(&self) -> Option<(String, u16, crate::dns::Message)> {
        let q = crate::dns::parse(self.query.as_bytes()).ok()?;
        let question = q.questions.first()?;
        let reply = crate::dns::parse(self.reply.as_ref()?.as_bytes()).ok()?;
        (reply.is_response() && reply.id == q.id).then_some((
            question.name.clone(),
            question.qtype,
            reply,
        ))
    }

    /// `DNS A pypi.org via 192.0.2.53:53 -> NOERROR, 1 address (…)`.
    pub fn summary(&self) -> String {
        let q = crate::dns::parse(self.query.as_bytes()).ok();
        let (name, qtype) = q
            .as_ref()
            .and_then(|m| m.questions.first())
            .map_or(("?".to_string(), "?".to_string()), |q| {
                (q.name.clone(), crate::dns::type_name(q.qtype))
            });
        let head = format!("DNS {qtype} {name} via {}", self.server);
        match (&self.reply, &self.error) {
            (Some(r), _) => match crate::dns::parse(r.as_bytes()) {
                Ok(m) => {
                    let addrs: Vec<String> =
                        m.addresses().iter().map(ToString::to_string).collect();
                    format!(
                        "{head} -> {}, {} answer(s){}",
                        crate::dns::rcode_name(m.rcode()),
                        m.answers.len(),
                        if addrs.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", addrs.join(", "))
                        }
                    )
                }
                Err(e) => format!("{head} -> unreadable reply ({e})"),
            },
            (None, Some(e)) => format!("{head} -> no reply ({e})"),
            (None, None) => format!("{head} -> no reply"),
        }
    }
}

/// The files read whole in `ev`: (path, text).
pub(crate) fn files(ev: &[Evidence]) -> Vec<(&str, String)> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::File {
                path,
                bytes: Some(b),
                ..
            } => Some((path.as_str(), b.lossy())),
            _ => None,
        })
        .collect()
}

/// The text of the file read at `name`.
pub(crate) fn file(ev: &[Evidence], name: &str) -> Option<String> {
    files(ev)
        .into_iter()
        .find(|(p, _)| *p == name)
        .map(|(_, t)| t)
}

/// The variables recorded in `ev`: (name, value).
pub(crate) fn vars(ev: &[Evidence]) -> Vec<(&str, &str)> {
    ev.iter()
        .flat_map(|e| match e {
            Evidence::Env { vars } => vars
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect()
}

pub(crate) fn tcps(ev: &[Evidence]) -> Vec<&TcpAttempt> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Tcp(t) => Some(t),
            _ => None,
        })
        .collect()
}

pub(crate) fn exchanges(ev: &[Evidence]) -> Vec<&Exchange> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Http(x) => Some(x),
            _ => None,
        })
        .collect()
}

pub(crate) fn dnss(ev: &[Evidence]) -> Vec<&DnsAttempt> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Dns(d) => Some(d),
            _ => None,
        })
        .collect()
}
