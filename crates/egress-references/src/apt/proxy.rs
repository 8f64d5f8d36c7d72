//! The caching proxy (B) for apt: a small pull-through cache of the apt
//! canary, as labs run apt-cacher-ng or approx. **Test fixture.**
//!
//! Every request is passed to the upstream as it came (absolute-form and
//! unknown paths included: apt-cacher-ng is an HTTP proxy for any host
//! unless `ForceManaged` is set, approx maps any path under a repository to
//! its upstream); `.deb`s it fetched whole are kept and served from memory
//! after, indexes are fetched again each time (so that a client sees the
//! upstream's current state, as after apt-cacher-ng's expiry). Its report
//! page, `/acng-report.html`, lists the cached packages with their
//! descriptions rendered through [`render_template`] (the B3 class) and
//! honours the maintenance actions apt-cacher-ng offers there: any
//! `do...` parameter empties the cache.

use crate::template::render_template;
use egress_http::{Reply, Request, Response, Server, ServerHandle};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

/// What the proxy keeps: `.deb` bytes by request target, and the last
/// `Packages` text it passed on.
#[derive(Default)]
struct Cache {
    debs: BTreeMap<String, Vec<u8>>,
    packages: String,
}

pub struct AptCachingProxy {
    server: ServerHandle,
}

/// An answer of the upstream: status, content type and body.
fn fetch(
    upstream: &str,
    method: &str,
    target: &str,
    body: &[u8],
) -> io::Result<(u16, String, Vec<u8>)> {
    let mut sock = std::net::TcpStream::connect(upstream)?;
    sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let head = format!(
        "{method} {target} HTTP/1.0\r\nHost: {upstream}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes())?;
    sock.write_all(body)?;
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("no response head"))?;
    let head = String::from_utf8_lossy(raw.get(..split).unwrap_or_default()).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "application/octet-stream".into());
    Ok((
        status,
        ctype,
        raw.get(split + 4..).unwrap_or_default().to_vec(),
    ))
}

fn report_page(cache: &mut Cache, target: &str) -> Reply {
    if target.contains("?do") || target.contains("&do") {
        cache.debs.clear();
    }
    let mut html = String::from("<html><body><h1>apt-cacher-ng report</h1><ul>\n");
    let entries = egress_apt::parse_packages(&cache.packages).unwrap_or_default();
    for e in entries {
        let description = e.paragraph.get("Description").unwrap_or_default();
        html.push_str(&format!(
            "<li>{} {}: {}</li>\n",
            e.package,
            e.version,
            render_template(description)
        ));
    }
    html.push_str(&format!(
        "</ul><p>{} files cached</p></body></html>\n",
        cache.debs.len()
    ));
    Response::new(200)
        .with_header("Content-Type", "text/html; charset=utf-8")
        .with_body(html)
        .into()
}

impl AptCachingProxy {
    /// Starts the proxy in front of `upstream` (`host:port` of the canary),
    /// serving the canary's paths as they are.
    pub fn start(upstream: &str) -> io::Result<Self> {
        let upstream = upstream.to_string();
        let cache = Arc::new(Mutex::new(Cache::default()));
        let server = Server::bind_loopback(move |req: Request| -> Reply {
            let mut cache = match cache.lock() {
                Ok(c) => c,
                Err(p) => p.into_inner(),
            };
            if req.target.starts_with("/acng-report.html") {
                return report_page(&mut cache, &req.target);
            }
            let method = req.method.to_string();
            let deb = method == "GET" && req.target.ends_with(".deb");
            if let Some(bytes) = cache.debs.get(&req.target).filter(|_| deb) {
                return Response::new(200)
                    .with_header("Content-Type", "application/vnd.debian.binary-package")
                    .with_body(bytes.clone())
                    .into();
            }
            match fetch(&upstream, &method, &req.target, &req.body) {
                Ok((status, ctype, body)) => {
                    if status == 200 && deb {
                        cache.debs.insert(req.target.clone(), body.clone());
                    }
                    if status == 200 && req.target.ends_with("/Packages") {
                        cache.packages = String::from_utf8_lossy(&body).into_owned();
                    }
                    Response::new(status)
                        .with_header("Content-Type", ctype)
                        .with_body(body)
                        .into()
                }
                Err(e) => Response::text(502, &format!("upstream: {e}\n")).into(),
            }
        })?;
        Ok(Self { server })
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn stop(self) {
        self.server.stop();
    }
}
