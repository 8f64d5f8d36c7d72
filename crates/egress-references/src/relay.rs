//! How both caching proxies (B), PyPI's and npm's,
//! talk to their upstream and relay what comes back, and the passthrough
//! they both model: absolute-form targets and CONNECT tunnels, loopback only.

use crate::loopback::{is_loopback_url, loopback_addrs};
use egress_http::{Reply, Request, Response};
use egress_model::{Exchange, Url};
use egress_transcript::Client;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::Duration;

/// How long a file fetch may take before a caching proxy redirects to upstream.
pub const SLOW_FETCH: Duration = Duration::from_millis(150);

/// Request and response fields that describe one hop, never relayed.
pub(crate) const HOP_FIELDS: [&str; 9] = [
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "proxy-connection",
    "te",
    "upgrade",
    "expect",
];

pub(crate) fn limits(deadline: Duration) -> egress_transcript::Limits {
    egress_transcript::Limits {
        connect_timeout: deadline.min(Duration::from_secs(2)),
        idle_timeout: deadline.min(Duration::from_secs(5)),
        deadline,
        max_head_bytes: 64 * 1024,
        max_body_bytes: 64 * 1024 * 1024,
        record_bytes: 64 * 1024 * 1024,
    }
}

pub(crate) fn text(status: u16, body: &str) -> Reply {
    Response::text(status, body).into()
}

/// A JSON answer with status `status`.
pub(crate) fn json(status: u16, doc: &serde_json::Value) -> Reply {
    Response::new(status)
        .with_header("Content-Type", "application/json")
        .with_body(doc.to_string())
        .into()
}

/// The request's method, `target`, end-to-end headers and body.
pub(crate) fn outbound(req: &Request, target: &str) -> egress_transcript::Request {
    let mut out =
        egress_transcript::Request::new(req.method.clone(), target).body(req.body.clone());
    for (name, value) in &req.headers {
        if !HOP_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
            out = out.header(name, value);
        }
    }
    out
}

/// An upstream answer, relayed: status, end-to-end fields and body.
pub(crate) fn relay(ex: Exchange) -> Reply {
    let Some(resp) = ex.response else {
        let why = ex.error.unwrap_or_default();
        return text(502, &format!("upstream failed: {why}\n"));
    };
    let Some(status @ 200..=599) = resp.status else {
        return text(502, "upstream sent an invalid status\n");
    };
    let mut out = Response::new(status);
    for (name, value) in &resp.headers {
        if !HOP_FIELDS.contains(&name.to_ascii_lowercase().as_str()) {
            out = out.with_header(name, value);
        }
    }
    out.with_body(resp.body_prefix.0).into()
}

/// `GET http://host:port/path`: forwarded to that host if it is loopback.
pub(crate) fn absolute(req: &Request) -> Reply {
    let Ok(url) = Url::parse(&req.target) else {
        return text(400, "bad absolute-form target\n");
    };
    if !is_loopback_url(&url) {
        return text(502, "refusing to connect to a non-loopback host\n");
    }
    match Client::new(url.clone(), limits(Duration::from_secs(15)), None) {
        Ok(client) => {
            relay(client.send("proxy: absolute-form", &outbound(req, url.path_and_query())))
        }
        Err(e) => text(502, &format!("{e}\n")),
    }
}

/// `CONNECT host:port`: a tunnel, to loopback only.
pub(crate) fn connect(authority: &str) -> Reply {
    let Some((host, port)) = authority
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
    else {
        return text(400, "bad CONNECT target\n");
    };
    let Some(addrs) = loopback_addrs(host, port) else {
        return text(502, "refusing to tunnel to a non-loopback host\n");
    };
    let Some(upstream) = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).ok())
    else {
        return text(502, "cannot connect\n");
    };
    Reply::Takeover(
        Response::new(200),
        Box::new(move |client| splice(client, upstream)),
    )
}

/// Copies both ways until each side ends or stays idle for 10 s (also the
/// testbed's relay to the canary, `egress_testbed::relay`).
pub fn splice(client: TcpStream, upstream: TcpStream) {
    let idle = Some(Duration::from_secs(10));
    for s in [&client, &upstream] {
        let _ = s.set_read_timeout(idle);
        let _ = s.set_write_timeout(idle);
    }
    let pipe = |mut from: TcpStream, mut to: TcpStream| {
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    };
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = thread::spawn(move || pipe(c2, u2));
    pipe(upstream, client.try_clone().unwrap_or(client));
    let _ = up.join();
}

/// Whether the exchange ran out of time, before or during the body.
pub(crate) fn timed_out(ex: &Exchange) -> bool {
    ex.error.as_deref().is_some_and(|e| e.contains("timed out"))
        || ex
            .response
            .as_ref()
            .is_some_and(|r| r.body_end == egress_model::BodyEnd::Timeout)
}
