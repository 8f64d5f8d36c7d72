//! Evidence records: what went over the wire, what the controlled upstream saw,
//! and the verdicts derived from them.
//!
//! A verdict must be a pure function of its evidence, so these types hold
//! everything a judge reads. Timings are recorded for people, never read by a
//! judge.

use crate::h2::H2Conversation;
use crate::wire::truncate;
pub use crate::wire::{ListenEnd, WireBytes};
use crate::{Method, Sha256Digest};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How reading a response body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyEnd {
    /// The body ended where its framing said it would (or at EOF with no framing).
    Complete,
    /// The body was longer than the read cap; reading stopped there.
    CapReached,
    /// The deadline passed before the body ended.
    Timeout,
    /// The connection failed or the framing was invalid before the body ended.
    Broken,
    /// A HEAD request or a status that carries no body.
    NoBody,
}

/// One HTTP response as it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRecord {
    /// The status line as received (lossy UTF-8, without CRLF).
    pub status_line: String,
    /// The parsed status code, if the status line was valid HTTP/1.x.
    pub status: Option<u16>,
    /// Header fields in arrival order, names as sent.
    pub headers: Vec<(String, String)>,
    /// Number of body bytes read (after removing chunked framing).
    pub body_len: u64,
    /// SHA-256 of the body bytes read.
    pub body_sha256: Sha256Digest,
    /// The first bytes of the body, at most the recording cap.
    pub body_prefix: WireBytes,
    /// How reading the body ended.
    pub body_end: BodyEnd,
}

impl ResponseRecord {
    /// The value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The whole body, if it was read completely and fits in the recorded prefix.
    pub fn full_body(&self) -> Option<&[u8]> {
        (self.body_end == BodyEnd::Complete && self.body_prefix.0.len() as u64 == self.body_len)
            .then_some(self.body_prefix.as_bytes())
    }

    pub fn is_success(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }

    pub fn is_redirect(&self) -> bool {
        matches!(self.status, Some(300..=399))
    }
}

/// One request and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Why the suite made this request, e.g. "project page (PEP 691 JSON)".
    pub label: String,
    /// `host:port` the connection went to.
    pub peer: String,
    /// Request bytes exactly as written to the socket (TLS plaintext for https).
    pub request: WireBytes,
    pub response: Option<ResponseRecord>,
    /// Transport failure, if any: refused, reset, timeout, malformed response.
    pub error: Option<String>,
    /// Wall time of the exchange, for people; judges never read it.
    pub elapsed_ms: u64,
    /// What the server sent on the connection after the first response,
    /// recorded only by probes that listen for it (request smuggling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Afterwards>,
    /// The HTTP/2 conversation, for exchanges that spoke HTTP/2 (then
    /// `request` holds every byte sent, preface and frames, and `response`
    /// is empty: each stream's answer is in the frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<Box<H2Conversation>>,
}

/// Everything a server sent after its first response on one connection,
/// and how listening for it ended: whatever a desynchronised server answers
/// to the bytes behind a refused request shows up here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Afterwards {
    /// The bytes, exactly as received, up to the listening cap.
    pub bytes: WireBytes,
    pub end: ListenEnd,
}

impl Exchange {
    pub fn status(&self) -> Option<u16> {
        self.response.as_ref().and_then(|r| r.status)
    }

    /// The request target (second word of the request line), lossy. Over
    /// HTTP/2 that is the preface's `*`: each stream's request is in `h2`.
    pub fn request_target(&self) -> String {
        let line = self
            .request
            .0
            .split(|&b| b == b'\n')
            .next()
            .unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        text.split(' ').nth(1).unwrap_or_default().to_string()
    }

    /// The request method (first word of the request line), lossy. Over
    /// HTTP/2 that is the preface's `PRI`: each stream's request is in `h2`.
    pub fn request_method(&self) -> String {
        let line = self
            .request
            .0
            .split(|&b| b == b' ')
            .next()
            .unwrap_or_default();
        String::from_utf8_lossy(line).into_owned()
    }

    /// One-line summary: `GET /simple/x/ -> 200 (1234 bytes, sha256 abcd…)`.
    pub fn summary(&self) -> String {
        if let Some(c) = &self.h2 {
            return match &self.error {
                Some(e) => format!("{} [{e}]", c.summary()),
                None => c.summary(),
            };
        }
        let req = format!(
            "{} {}",
            self.request_method(),
            truncate(&self.request_target(), 90)
        );
        match (&self.response, &self.error) {
            (Some(r), err) => {
                let mut s = format!(
                    "{req} -> {} ({} bytes, sha256 {}…)",
                    r.status.map_or_else(|| "?".to_string(), |s| s.to_string()),
                    r.body_len,
                    r.body_sha256.to_hex().get(..12).unwrap_or_default()
                );
                if let Some(loc) = r.header("location") {
                    s.push_str(&format!(" Location: {}", truncate(loc, 80)));
                }
                if let Some(e) = err {
                    s.push_str(&format!(" [{e}]"));
                }
                s
            }
            (None, Some(e)) => format!("{req} -> no response [{e}]"),
            (None, None) => format!("{req} -> no response"),
        }
    }
}

/// A request the controlled upstream (the canary) received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamRequest {
    /// Sequence number in the canary's log, increasing.
    pub seq: u64,
    pub method: Method,
    pub target: String,
    /// `true` when the request hit the tripwire route (an artifact's build code ran).
    pub tripwire: bool,
    /// `true` when it carried an `Authorization` header (a registry token
    /// passed on); the value itself is never logged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authorization: bool,
    /// What a request with a body sent: its length and sha256 (a publish's
    /// tarball, an upload, a commit), so that what a write route received
    /// is on record, not only that it was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyRecord>,
}

/// The length and sha256 of a request body an upstream received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyRecord {
    pub bytes: u64,
    pub sha256: crate::Sha256Digest,
}

/// Something the suite observed besides an exchange with the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Observation {
    /// Requests the controlled upstream logged during a window of the run.
    UpstreamLog {
        window: String,
        requests: Vec<UpstreamRequest>,
    },
    /// A change the suite made at the controlled upstream during the run.
    UpstreamMutation {
        description: String,
        filename: String,
        before: Option<Sha256Digest>,
        after: Sha256Digest,
    },
    /// An input the user supplied (a manifest file, an allowed-signers file),
    /// recorded so that the verdict can be re-derived offline.
    Input { name: String, bytes: WireBytes },
    /// The control page asked for again right after a sub-probe whose
    /// requests got no answer: silence counts as a refusal only from a
    /// target that still serves (one that crashed mid-run would otherwise
    /// "refuse" everything after).
    Alive { exchange: Exchange },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Fail,
    Inconclusive,
    /// The sub-probe needs an input this run does not have (e.g. a controlled
    /// upstream); it counts for nothing, and a predicate of only skipped
    /// sub-probes is inconclusive.
    Skipped,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::Inconclusive => "INCONCLUSIVE",
            Self::Skipped => "SKIPPED",
        })
    }
}

/// A sub-probe's evidence and verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// Stable identifier, e.g. `P3.absolute-form`.
    pub id: String,
    pub status: Status,
    /// One line: why the evidence leads to the status.
    pub reason: String,
    pub exchanges: Vec<Exchange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Observation>,
}

/// A predicate's verdict, aggregated from its sub-probes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredicateVerdict {
    pub id: String,
    pub status: Status,
    pub reason: String,
}
