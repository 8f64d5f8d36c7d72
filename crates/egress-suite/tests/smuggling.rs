//! `P3.request-smuggling`'s collector and judge against small servers on
//! loopback: a strict one passes, a lax one fails naming the case and the
//! exchange, and one that answers 404 to everything or closes every
//! connection is INCONCLUSIVE, never PASS; one that refuses every query
//! string passes only with the bare positive control. Every verdict is
//! re-derived from the record alone after a JSON round trip, as
//! `report verify` does.

use egress_model::{ProbeRecord, Status, Url};
use egress_suite::collect::Collector;
use egress_suite::common::{cases, smuggling};
use egress_suite::facts::{ControlFacts, Controls};
use egress_suite::judge::{Judge, Verdict};
use egress_suite::{ManifestSource, Plan};
use egress_transcript::{Client, Limits, Listen};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// What a fake server does with each request head it reads.
#[derive(Clone, Copy)]
enum Kind {
    /// Serves exactly `GET <target> HTTP/1.1`, `Host`, optional `Accept`
    /// and `Connection: close`, nothing else, with this status; anything
    /// else gets 400 and a close.
    Strict(u16),
    /// Frames by Content-Length only (Transfer-Encoding ignored), answers
    /// every request with this status and keeps the connection open.
    Lax(u16),
    /// Closes every connection without an answer.
    Closes,
    /// As `Strict(200)`, but answers 403 and closes for any target with a
    /// query string, as apt-cacher-ng refuses every one.
    NoQuery,
}

const PAGE: &[u8] = b"<html>the hidden page</html>";

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn respond(s: &mut TcpStream, status: u16, body: &[u8], close: bool) -> bool {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    );
    s.write_all(head.as_bytes()).is_ok() && s.write_all(body).is_ok()
}

fn strict_ok(head: &str) -> bool {
    let mut lines = head.split("\r\n");
    let (Some(first), Some(host)) = (lines.next(), lines.next()) else {
        return false;
    };
    let mut parts = first.split(' ');
    let good_line = parts.next() == Some("GET")
        && parts
            .next()
            .is_some_and(|t| t.starts_with('/') && t.bytes().all(|b| b.is_ascii_graphic()))
        && parts.next() == Some("HTTP/1.1")
        && parts.next().is_none();
    let good_host = host.strip_prefix("Host: ").is_some_and(|h| {
        !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b':')
    });
    let rest: Vec<&str> = lines
        .filter(|l| !l.starts_with("Accept: ") && *l != "Connection: close")
        .collect();
    good_line && good_host && rest.is_empty()
}

fn serve_connection(mut s: TcpStream, kind: Kind) {
    if matches!(kind, Kind::Closes) {
        return;
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let Some(end) = find(&buf, b"\r\n\r\n") else {
            if buf.len() > 8 * 1024 && matches!(kind, Kind::Strict(_) | Kind::NoQuery) {
                respond(&mut s, 431, b"too long", true);
                let _ = s.shutdown(std::net::Shutdown::Write);
                // Drain what is still coming, so the close is no reset.
                while matches!(s.read(&mut chunk), Ok(n) if n > 0) {}
                return;
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let length: usize = head
            .split("\r\n")
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        let close = head.contains("Connection: close");
        let page = |status| if status == 200 { PAGE } else { &b"no"[..] };
        let ok = match kind {
            Kind::Strict(status) => {
                if !strict_ok(&head) {
                    respond(&mut s, 400, b"bad request", true);
                    // Let the client read the answer before the close.
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    thread::sleep(Duration::from_millis(50));
                    return;
                }
                respond(&mut s, status, page(status), close)
            }
            Kind::NoQuery if head.split(' ').nth(1).is_some_and(|t| t.contains('?')) => {
                respond(&mut s, 403, b"forbidden", true);
                let _ = s.shutdown(std::net::Shutdown::Write);
                thread::sleep(Duration::from_millis(50));
                return;
            }
            Kind::NoQuery => {
                if !strict_ok(&head) {
                    respond(&mut s, 400, b"bad request", true);
                    let _ = s.shutdown(std::net::Shutdown::Write);
                    thread::sleep(Duration::from_millis(50));
                    return;
                }
                respond(&mut s, 200, PAGE, close)
            }
            Kind::Lax(status) => respond(&mut s, status, page(status), close),
            Kind::Closes => false,
        };
        if !ok || close {
            return;
        }
        let take = (end + 4 + length).min(buf.len());
        buf.drain(..take);
    }
}

fn server(kind: Kind) -> Url {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        for s in l.incoming().flatten() {
            thread::spawn(move || serve_connection(s, kind));
        }
    });
    Url::parse(&format!("http://127.0.0.1:{port}/simple/")).unwrap()
}

struct Facts(Controls);

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.0.status(control)
    }
    fn served_artifact(&self) -> Option<Url> {
        None
    }
}

fn plan(url: &Url) -> Plan<()> {
    Plan {
        index_url: url.to_string(),
        packages: (),
        present_source: "test".into(),
        upstream: None,
        manifest: ManifestSource::WellKnown,
        allowed_signers: false,
        destructive: false,
        expect: Default::default(),
    }
}

fn judge(plan: &Plan<()>, rec: &ProbeRecord) -> Verdict {
    let facts = Facts(Controls(vec![("C.project-html".into(), Status::Pass)]));
    let j = Judge {
        plan,
        facts: &facts,
        records: std::slice::from_ref(rec),
    };
    smuggling::judge(&j, rec, "C.project-html")
}

/// Collects against a server of `kind` and judges the record, then judges
/// it again from its JSON form.
fn run(kind: Kind) -> (Verdict, ProbeRecord) {
    run_with(kind, false)
}

/// [`run`], the positive control asking for the bare path when `bare_control`.
fn run_with(kind: Kind, bare_control: bool) -> (Verdict, ProbeRecord) {
    let url = server(kind);
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    let client = Client::new(url.clone(), limits, None).unwrap();
    let plan = plan(&url);
    let c = Collector {
        client: &client,
        plan: &plan,
        upstream: None,
        allowed_signers: None,
        fresh: "ecm0000000000000000",
    };
    let listen = Listen {
        quiet: Duration::from_millis(300),
        ..Listen::default()
    };
    let hidden = smuggling::Hidden {
        path: "/simple/ec-present/".into(),
        accept: "text/html",
        bare_control,
    };
    let ev = smuggling::collect_with(&c, Some(&hidden), listen);
    let mut rec = ProbeRecord {
        id: "P3.request-smuggling".into(),
        status: Status::Inconclusive,
        reason: String::new(),
        exchanges: ev.exchanges,
        observations: ev.observations,
    };
    let v = judge(&plan, &rec);
    (rec.status, rec.reason) = v.clone();
    let back: ProbeRecord = serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap();
    assert_eq!(judge(&plan, &back), v, "re-derived from the record");
    (v, rec)
}

#[test]
fn a_strict_server_passes() {
    let t = Instant::now();
    let ((status, reason), rec) = run(Kind::Strict(200));
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(reason.contains("400×"), "{reason}");
    assert!(reason.contains("/simple/ec-present/"), "{reason}");
    assert_eq!(
        rec.exchanges.len(),
        1 + egress_model::smuggling::SMUGGLING_CORPUS.len()
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn a_lax_server_fails_naming_the_case_and_the_exchange() {
    let ((status, reason), _) = run(Kind::Lax(200));
    assert_eq!(status, Status::Fail, "{reason}");
    // The first case of the corpus is CL.TE: its POST is answered 200.
    assert!(
        reason.contains("cl-te (Content-Length covers the smuggled request"),
        "{reason}"
    );
    assert!(reason.contains("POST / was answered 200"), "{reason}");
    // te-cl: the lax framing leaves the hidden GET to be read and served.
    assert!(reason.contains("te-cl"), "{reason}");
}

#[test]
fn a_server_that_answers_404_to_everything_is_never_a_pass() {
    // Strict about framing: every case refused and closed, but the control
    // shows no second request answered, so silence proves nothing.
    let ((status, reason), rec) = run(Kind::Strict(404));
    assert_eq!(status, Status::Inconclusive, "{reason}");
    assert!(reason.contains("[404, 404, 404]"), "{reason}");
    assert_eq!(
        rec.exchanges.len(),
        1 + egress_model::smuggling::SMUGGLING_CORPUS.len()
    );
    // Lax about framing: the 404 to the request hidden behind a refused
    // one is an answer all the same.
    let ((status, reason), _) = run(Kind::Lax(404));
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(
        reason.contains("POST / was answered 404, then 404, 404 on the same connection"),
        "{reason}"
    );
}

#[test]
fn a_server_that_closes_every_connection_is_inconclusive() {
    let ((status, reason), _) = run(Kind::Closes);
    assert_eq!(status, Status::Inconclusive, "{reason}");
    assert!(reason.contains("positive control"), "{reason}");
}

/// The lax server's answer to te-cl, as recorded: its 200 to the POST,
/// then the hidden page. With only the first answer (a refusal) and the
/// hidden page after it, the case fails for what came after the refusal.
#[test]
fn what_follows_a_refusal_fails_the_case() {
    use egress_model::smuggling::SMUGGLING_CORPUS;
    use egress_model::{Afterwards, BodyEnd, Exchange, ListenEnd, ResponseRecord, WireBytes};
    let case = SMUGGLING_CORPUS.iter().find(|c| c.id == "te-cl").unwrap();
    let refused = |after: &[u8], end: ListenEnd| Exchange {
        label: smuggling::case_label(case),
        peer: "127.0.0.1:1".into(),
        request: WireBytes(case.build("/simple/ec-present/?ec=ecm0123456789abcdef")),
        response: Some(ResponseRecord {
            status_line: "HTTP/1.1 400 Bad Request".into(),
            status: Some(400),
            headers: vec![("Content-Length".into(), "0".into())],
            body_len: 0,
            body_sha256: egress_model::Sha256Digest::of(b""),
            body_prefix: WireBytes(Vec::new()),
            body_end: BodyEnd::Complete,
        }),
        error: None,
        elapsed_ms: 0,
        after: Some(Afterwards {
            bytes: WireBytes(after.to_vec()),
            end,
        }),
        h2: None,
    };
    let rec = ProbeRecord {
        id: "P3.request-smuggling".into(),
        status: Status::Inconclusive,
        reason: String::new(),
        exchanges: Vec::new(),
        observations: Vec::new(),
    };
    let hidden = [egress_model::Sha256Digest::of(PAGE)];
    let mut page = b"HTTP/1.1 200 OK\r\nContent-Length: 28\r\n\r\n".to_vec();
    page.extend_from_slice(PAGE);
    let v = smuggling::judge_case(case, &refused(&page, ListenEnd::Closed), &hidden, &rec);
    let cases::CaseVerdict::Fail(why) = v else {
        panic!("{v:?}")
    };
    assert!(
        why.contains("answered 400, then 200 on the same connection with the hidden target's page"),
        "{why}"
    );
    assert!(matches!(
        smuggling::judge_case(case, &refused(b"junk", ListenEnd::Closed), &hidden, &rec),
        cases::CaseVerdict::Fail(_)
    ));
    assert_eq!(
        smuggling::judge_case(case, &refused(b"", ListenEnd::Reset), &hidden, &rec),
        cases::CaseVerdict::Refused("400".into())
    );
    assert!(matches!(
        smuggling::judge_case(case, &refused(b"", ListenEnd::Quiet), &hidden, &rec),
        cases::CaseVerdict::Unclear(_)
    ));
    // The hidden request's token at the upstream fails the case on its own.
    let seen = ProbeRecord {
        observations: vec![egress_model::Observation::UpstreamLog {
            window: "P3.request-smuggling".into(),
            requests: vec![egress_model::UpstreamRequest {
                seq: 7,
                method: egress_model::Method::Get,
                target: "/simple/ec-present/?ec=ecm0123456789abcdef".into(),
                tripwire: false,
                authorization: false,
                body: None,
            }],
        }],
        ..rec.clone()
    };
    let v = smuggling::judge_case(case, &refused(b"", ListenEnd::Closed), &hidden, &seen);
    let cases::CaseVerdict::Fail(why) = v else {
        panic!("{v:?}")
    };
    assert!(
        why.contains("reached the upstream as GET /simple/ec-present/?ec=ecm0123456789abcdef"),
        "{why}"
    );
}

#[test]
fn a_server_that_refuses_every_query_needs_the_bare_control() {
    // The marked control is refused for its query alone: silence proves
    // nothing then.
    let ((status, reason), _) = run_with(Kind::NoQuery, false);
    assert_eq!(status, Status::Inconclusive, "{reason}");
    assert!(reason.contains("[403]"), "{reason}");
    // The bare control shows it answers a second request on a connection;
    // the cases, still marked, are refused and closed.
    let ((status, reason), rec) = run_with(Kind::NoQuery, true);
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(
        rec.exchanges
            .first()
            .is_some_and(|ex| ex.request_target() == "/simple/ec-present/"),
        "the control asks for the bare path"
    );
    assert!(
        rec.exchanges
            .get(1)
            .is_some_and(|ex| String::from_utf8_lossy(ex.request.as_bytes()).contains("?ec=")),
        "the cases hide the marked request"
    );
}
