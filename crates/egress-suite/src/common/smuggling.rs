//! `P3.request-smuggling`, for every protocol: the request-smuggling and
//! desync corpus ([`egress_model::smuggling::SMUGGLING_CORPUS`], the payloads
//! the mirror's own test proves refused) sent raw to the target, each case
//! on a connection of its own, and judged by what arrives after the refusal.
//!
//! Each case is a first request whose framing or head is ambiguous or
//! invalid, followed on the same connection by a well-formed *hidden*
//! request for a page the target serves (the protocol names it and its
//! `Accept`: PyPI's present project page, npm's present packument), with a
//! fresh marker token in its query. The collector records everything the
//! target sends after its first answer, until it closes or falls quiet
//! ([`Client::send_raw_listening`](egress_transcript::Client::send_raw_listening)),
//! and the judge reads only that record, so `report verify` re-derives it.
//!
//! A case is refused when the first request is answered 4xx/5xx (502/504
//! aside) or not at all, nothing follows, and the target closes the
//! connection. It fails when the hidden request is answered (any response
//! after the first, or stray bytes where a refusing server sends none), when
//! the malformed request is answered as valid (1xx, 2xx, 3xx) or passed on
//! (502/504), or when the hidden request's token reaches the controlled
//! upstream; a failure needs no control. Silence proves something only if
//! the target answers a second request on one connection at all: for a
//! PASS, the positive control pipelines the hidden request three times (the
//! last with `Connection: close`), and the first two must be answered 200.
//!
//! When the target stops taking connections while the cases are in flight
//! (a case crashed it), the cases that were not sent or got no answer go
//! again, alone, each once the target serves the page again and each
//! followed by the page: the case after which the page is not served is
//! named as the one that stops the target (a crash refuses nothing), and
//! the others are judged on a running target.

use crate::collect::{token, Collector, Evidence};
use crate::common::cases::{self, CaseVerdict, Outcomes};
use crate::common::passthrough::NOWHERE;
use crate::facts::{find, ControlFacts};
use crate::judge::{fail, inconclusive, pass, short, tally, Judge, Verdict};
use egress_model::smuggling::{Smuggle, SmugglingCase, SMUGGLING_CORPUS};
use egress_model::{Exchange, ProbeRecord, Sha256Digest, Url};
use egress_transcript::Listen;

/// The label of the positive control's exchange.
pub const CONTROL: &str = "positive control: the hidden request pipelined three times";

/// The label of a case's exchange.
pub fn case_label(case: &SmugglingCase) -> String {
    format!("smuggling case {}", case.id)
}

/// The request every case hides: a page the target serves, and the
/// `Accept` it needs (proxpi answers 406 without one).
#[derive(Debug, Clone)]
pub struct Hidden {
    /// Origin-form path (and query, if any) of the page.
    pub path: String,
    pub accept: &'static str,
    /// The positive control asks for `path` without a marker: for a
    /// protocol whose caches refuse every query string (apt-cacher-ng
    /// answers 403), where a marked control would fail for that alone. The
    /// cases still hide the marked request: any answer to it is a FAIL.
    pub bare_control: bool,
}

impl Hidden {
    /// The path with a fresh marker token in its query.
    pub(crate) fn target(&self) -> String {
        let sep = if self.path.contains('?') { '&' } else { '?' };
        format!("{}{sep}ec={}", self.path, token())
    }

    /// The header lines the hidden request carries after Host.
    fn fields(&self) -> String {
        format!("Accept: {}\r\n", self.accept)
    }

    /// One request of the positive control, optionally closing.
    fn request(&self, host: &str, close: bool) -> String {
        let close = if close { "Connection: close\r\n" } else { "" };
        let target = if self.bare_control {
            self.path.clone()
        } else {
            self.target()
        };
        format!(
            "GET {target} HTTP/1.1\r\nHost: {host}\r\n{}{close}\r\n",
            self.fields()
        )
    }
}

/// Sends the positive control and every case of the corpus, each hiding a
/// GET of `hidden` behind its malformed request. Nothing is sent when no
/// such page is known.
pub fn collect<P>(c: &Collector<P>, hidden: Option<&Hidden>) -> Evidence {
    collect_with(c, hidden, Listen::default())
}

/// [`collect`] with other listening bounds (tests use a short quiet period).
pub fn collect_with<P>(c: &Collector<P>, hidden: Option<&Hidden>, listen: Listen) -> Evidence {
    let mut ev = Evidence::default();
    let Some(hidden) = hidden else { return ev };
    let host = c.client.base().host_header();
    // The authority the absolute-form and second-Host cases name: the
    // controlled upstream's `host:port` (loopback in the built-in run and the
    // testbed), else a name that never resolves; never a name real DNS
    // would be asked about.
    let other = c
        .plan
        .upstream
        .as_ref()
        .and_then(|u| Url::parse(&u.origin).ok())
        .map_or_else(|| NOWHERE.to_string(), |u| u.authority());
    c.window("P3.request-smuggling", &mut ev, |ev| {
        let control = [
            hidden.request(&host, false),
            hidden.request(&host, false),
            hidden.request(&host, true),
        ]
        .concat();
        ev.push(
            c.client
                .send_raw_listening(CONTROL, control.as_bytes(), &listen),
        );
        // The cases are sent even when the control fails: what a target
        // answers to them can still show it out of step (a FAIL needs no
        // control), though silence then proves nothing.
        let fields = hidden.fields();
        let payloads: Vec<(String, Vec<u8>)> = SMUGGLING_CORPUS
            .iter()
            .map(|case| {
                let target = hidden.target();
                let raw = case.build_with(&Smuggle {
                    host: &host,
                    other: &other,
                    target: &target,
                    fields: &fields,
                });
                (case_label(case), raw)
            })
            .collect();
        let client = c.client;
        let batch = cases::in_order(&payloads, |(label, raw)| {
            client.send_raw_listening(label, raw, &listen)
        });
        // A case the target never took means it stopped (crashed,
        // restarting) while the cases were in flight. Then every case that
        // got no answer or was not sent goes again, alone, each once the
        // target serves again and each followed by the page: the case
        // that stops the target is named, and the others are measured on
        // a running target.
        let stopped = batch.iter().any(|ex| ex.after.is_none());
        let again: Vec<&(String, Vec<u8>)> = payloads
            .iter()
            .zip(&batch)
            .filter(|(_, ex)| ex.after.is_none() || ex.status().is_none())
            .map(|(p, _)| p)
            .collect();
        ev.exchanges.extend(batch);
        if stopped {
            for (label, raw) in again {
                let back = c.until_served(&hidden.path, Some(hidden.accept), |ms| {
                    format!("the page, before {label} is sent again alone ({ms} ms waited)")
                });
                let up = back.status() == Some(200);
                ev.push(back);
                if !up {
                    break;
                }
                ev.push(client.send_raw_listening(&alone_label(label), raw, &listen));
                ev.push(client.get(&after_label(label), &hidden.path, Some(hidden.accept)));
            }
        }
    });
    ev
}

/// The label of a case sent again on its own (after the target stopped
/// while the cases were in flight).
pub fn alone_label(case_label: &str) -> String {
    format!("{case_label}, sent again alone")
}

/// The label of the page asked for right after a case sent alone.
pub fn after_label(case_label: &str) -> String {
    format!("the page, right after {case_label} sent alone")
}

/// A response the target sent after its first on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Later {
    /// The status line, as received (lossy, without CRLF).
    pub status_line: String,
    pub status: Option<u16>,
    /// SHA-256 of the body as far as it was recorded, chunked framing removed.
    pub body_sha256: Sha256Digest,
}

/// Splits what a server sent after its first response into responses
/// (framed by `Content-Length` or chunked; without either, the body runs to
/// the end) and the bytes that start no response. CR and LF between
/// responses are skipped. Never fails: a truncated response counts as one.
pub fn split_responses(mut bytes: &[u8]) -> (Vec<Later>, &[u8]) {
    let mut out = Vec::new();
    loop {
        while let Some(rest) = bytes.strip_prefix(b"\r").or(bytes.strip_prefix(b"\n")) {
            bytes = rest;
        }
        if bytes.is_empty() || !bytes.starts_with(b"HTTP/") {
            return (out, bytes);
        }
        let (head, body) = match find_seq(bytes, b"\r\n\r\n") {
            Some(i) => (
                bytes.get(..i).unwrap_or_default(),
                bytes.get(i + 4..).unwrap_or_default(),
            ),
            None => (bytes, &b""[..]),
        };
        let head = String::from_utf8_lossy(head).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default().to_string();
        let status = status_line
            .split(' ')
            .nth(1)
            .filter(|s| s.len() == 3)
            .and_then(|s| s.parse::<u16>().ok());
        let field = |name: &str| {
            head.split("\r\n").skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_ascii_lowercase())
            })
        };
        let no_body = matches!(status, Some(100..=199 | 204 | 304));
        let (content, rest): (Vec<u8>, &[u8]) = if no_body {
            (Vec::new(), body)
        } else if field("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            dechunk(body)
        } else if let Some(n) = field("content-length").and_then(|v| v.parse::<usize>().ok()) {
            let n = n.min(body.len());
            (
                body.get(..n).unwrap_or_default().to_vec(),
                body.get(n..).unwrap_or_default(),
            )
        } else {
            (body.to_vec(), &b""[..])
        };
        out.push(Later {
            status_line,
            status,
            body_sha256: Sha256Digest::of(&content),
        });
        bytes = rest;
    }
}

fn find_seq(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A chunked body and what follows it; a broken or truncated one runs to
/// the end.
fn dechunk(mut bytes: &[u8]) -> (Vec<u8>, &[u8]) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = find_seq(bytes, b"\r\n") else {
            return (out, &b""[..]);
        };
        let line = String::from_utf8_lossy(bytes.get(..eol).unwrap_or_default()).into_owned();
        let size = line.split(';').next().unwrap_or_default().trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return (out, &b""[..]);
        };
        bytes = bytes.get(eol + 2..).unwrap_or_default();
        if size == 0 {
            // Trailers up to the empty line.
            return match find_seq(bytes, b"\r\n") {
                Some(0) => (out, bytes.get(2..).unwrap_or_default()),
                _ => match find_seq(bytes, b"\r\n\r\n") {
                    Some(i) => (out, bytes.get(i + 4..).unwrap_or_default()),
                    None => (out, &b""[..]),
                },
            };
        }
        let Some(data) = bytes.get(..size) else {
            out.extend_from_slice(bytes);
            return (out, &b""[..]);
        };
        out.extend_from_slice(data);
        bytes = bytes.get(size..).unwrap_or_default();
        bytes = bytes.strip_prefix(b"\r\n").unwrap_or(bytes);
    }
}

/// The digests of the hidden page as the positive control served it, or
/// why the control does not show a second request answered on one
/// connection.
pub fn control_bodies(ex: &Exchange) -> Result<Vec<Sha256Digest>, String> {
    let later = ex
        .after
        .as_ref()
        .map(|a| split_responses(a.bytes.as_bytes()).0)
        .unwrap_or_default();
    let answered: Vec<(Option<u16>, Sha256Digest)> = ex
        .response
        .iter()
        .filter(|r| r.status.is_some())
        .map(|r| (r.status, r.body_sha256))
        .chain(later.iter().map(|l| (l.status, l.body_sha256)))
        .collect();
    let shown: Vec<String> = answered
        .iter()
        .map(|(s, _)| s.map_or_else(|| "?".to_string(), |s| s.to_string()))
        .collect();
    match answered.as_slice() {
        [(Some(200), a), (Some(200), b), ..] => Ok(vec![*a, *b]),
        _ => Err(format!(
            "three pipelined GETs of {} on one connection were answered [{}]{}, not 200 twice",
            short(&hidden_path_of(ex)),
            shown.join(", "),
            ex.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        )),
    }
}

/// The target of the first request of an exchange, without its token.
fn hidden_path_of(ex: &Exchange) -> String {
    let t = ex.request_target();
    t.split_once("?ec=")
        .or_else(|| t.split_once("&ec="))
        .map_or(t.clone(), |(p, _)| p.to_string())
}

fn status_text(s: Option<u16>) -> String {
    s.map_or_else(|| "?".into(), |s| s.to_string())
}

/// Judges one case's exchange. `hidden` holds the digests of the hidden
/// page as the control served it; `record` supplies the upstream log.
pub fn judge_case(
    case: &SmugglingCase,
    ex: &Exchange,
    hidden: &[Sha256Digest],
    record: &ProbeRecord,
) -> CaseVerdict {
    let Some(after) = &ex.after else {
        return CaseVerdict::Unclear(format!(
            "{}: not sent{}",
            case.id,
            ex.error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    };
    let request = format!("{} {}", ex.request_method(), short(&ex.request_target()));
    let first = ex.response.as_ref().and_then(|r| r.status);
    let first_is_hidden = ex
        .response
        .as_ref()
        .is_some_and(|r| hidden.contains(&r.body_sha256));
    let whose = |hidden: bool| {
        if hidden {
            " with the hidden target's page"
        } else {
            ""
        }
    };
    // What shows the target out of step, in the order it happened.
    let mut faults = Vec::new();
    let mut answered = match first {
        Some(s @ (502 | 504)) => {
            faults.push(format!(
                "{request} was answered {s}: the target passed it on to another server"
            ));
            true
        }
        Some(s) if !(400..=599).contains(&s) => {
            faults.push(format!(
                "{request} was answered {s}{}: the malformed request was taken as valid",
                whose(first_is_hidden)
            ));
            true
        }
        _ => false,
    };
    let complete = ex.response.as_ref().is_some_and(|r| {
        r.status.is_some()
            && matches!(
                r.body_end,
                egress_model::BodyEnd::Complete | egress_model::BodyEnd::NoBody
            )
    });
    let bytes = after.bytes.as_bytes();
    let lead = |answered: bool| {
        if answered {
            "then".to_string()
        } else {
            format!("{request} was answered {}, then", status_text(first))
        }
    };
    if complete {
        let (later, stray) = split_responses(bytes);
        if let Some(l) = later.first() {
            let all: Vec<String> = later.iter().map(|l| status_text(l.status)).collect();
            faults.push(format!(
                "{} {} on the same connection{}: the request hidden behind it was answered ({})",
                lead(answered),
                all.join(", "),
                whose(later.iter().any(|l| hidden.contains(&l.body_sha256))),
                short(&l.status_line)
            ));
            answered = true;
        }
        if !stray.is_empty() {
            faults.push(format!(
                "{} {} more bytes that start no response ({:?})",
                lead(answered),
                stray.len(),
                short(&String::from_utf8_lossy(stray))
            ));
        }
    } else {
        // No clean HTTP/1.x answer came first: an HTTP/1.x response inside
        // what followed is the hidden request answered all the same.
        let body = ex
            .response
            .as_ref()
            .map(|r| r.body_prefix.as_bytes())
            .unwrap_or_default();
        if [body, bytes]
            .iter()
            .any(|b| find_seq(b, b"HTTP/1.").is_some())
        {
            faults.push(format!(
                "{request} got an answer that is no HTTP/1.x response, with an HTTP/1.x response after it"
            ));
        }
    }
    if let Some(at) = cases::reached_upstream(ex, record) {
        faults.push(format!("the hidden request reached the upstream as {at}"));
    }
    if let Some(v) = CaseVerdict::from_faults(case.id, case.what, &faults) {
        return v;
    }
    if !after.end.closed() {
        return CaseVerdict::Unclear(match first {
            Some(s) => format!(
                "{}: answered {s}, then left the connection open ({:?})",
                case.id, after.end
            ),
            None => format!(
                "{}: no answer, and the connection stayed open ({:?})",
                case.id, after.end
            ),
        });
    }
    CaseVerdict::Refused(match first {
        Some(s) => s.to_string(),
        None => "closed".into(),
    })
}

/// Judges a case sent again alone, and the page asked for right after it:
/// no answer followed by the page not served is the target stopping (a
/// crash), which refuses nothing.
fn judge_alone(
    case: &SmugglingCase,
    ex: &Exchange,
    after: Option<&Exchange>,
    hidden: &[Sha256Digest],
    record: &ProbeRecord,
) -> CaseVerdict {
    let v = judge_case(case, ex, hidden, record);
    let served_after = after.is_some_and(|a| a.status() == Some(200));
    match v {
        CaseVerdict::Refused(_) if ex.status().is_none() && !served_after => {
            CaseVerdict::Unclear(format!(
                "{} ({}) stops the target: sent again alone, it got no answer, and the page asked for right after was not served ({}); a target that stops shows no refusal",
                case.id,
                case.what,
                after.map_or_else(|| "not asked".into(), Exchange::summary)
            ))
        }
        v => v,
    }
}

/// The judge: requires the protocol's `control` (a served page), then this
/// sub-probe's own positive control, then judges every case of the corpus.
pub fn judge<P, F: ControlFacts>(j: &Judge<P, F>, rec: &ProbeRecord, control: &str) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    let Some(ctrl) = find(rec, CONTROL) else {
        return inconclusive("no page to hide behind the payloads is known, so nothing was sent");
    };
    let served = control_bodies(ctrl);
    let hidden = served.clone().unwrap_or_default();
    let mut o = Outcomes::default();
    for case in SMUGGLING_CORPUS {
        let label = case_label(case);
        let batch = find(rec, &label).map(|ex| judge_case(case, ex, &hidden, rec));
        let alone = find(rec, &alone_label(&label))
            .map(|ex| judge_alone(case, ex, find(rec, &after_label(&label)), &hidden, rec));
        // What the case got among the others stands when it shows a fault;
        // otherwise what it got alone, when it was sent again.
        let verdict = match (batch, alone) {
            (Some(f @ CaseVerdict::Fail(_)), _) => Some(f),
            (_, Some(a)) => Some(a),
            (b, None) => b,
        };
        o.add(case.id, verdict);
    }
    let total = SMUGGLING_CORPUS.len();
    // What a target answers out of step shows on its own; only a PASS
    // needs the control.
    if let Some(first) = o.first_fail(8) {
        return fail(format!(
            "{} of {total} smuggling payloads desynchronise the target: {first}",
            o.fails.len()
        ));
    }
    if let Err(why) = served {
        return inconclusive(format!(
            "positive control: {why}; silence after a refusal proves nothing on a target that does not answer a second request on one connection ({} of {total} payloads refused)",
            o.refused.len()
        ));
    }
    if let Some(first) = o.unclear.first() {
        return inconclusive(format!(
            "{} of {total} payloads neither refused and closed nor answered past the refusal: {first}",
            o.unclear.len()
        ));
    }
    pass(format!(
        "all {total} smuggling payloads refused, nothing answered after the refusal, and the connection closed ({}); the control's pipelined GETs of {} were answered 200",
        tally(&o.refused),
        short(&hidden_path_of(ctrl))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_after_the_first_are_split() {
        let (l, stray) = split_responses(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi\r\nHTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\nxyz",
        );
        let s: Vec<_> = l.iter().map(|l| l.status).collect();
        assert_eq!(s, [Some(200), Some(404)]);
        assert_eq!(l[0].body_sha256, Sha256Digest::of(b"hi"));
        assert_eq!(l[1].body_sha256, Sha256Digest::of(b"no"));
        assert_eq!(stray, b"xyz");
        let (l, stray) = split_responses(b"HTTP/1.1 200 OK\r\nContent-Le");
        assert_eq!(l.len(), 1);
        assert!(stray.is_empty());
        let (l, stray) = split_responses(b"garbage");
        assert!(l.is_empty());
        assert_eq!(stray, b"garbage");
        assert_eq!(split_responses(b"").0.len(), 0);
    }
}
