//! The caching proxy (B) for cargo: a small pull-through cache of the cargo
//! canary, as labs put nginx's `proxy_cache` or crates-io-proxy in front of
//! crates.io. **Test fixture.**
//!
//! Under `/cargo/index/` it passes index files to the canary's index
//! (fetched again each time, as a short cache expiry does) and rewrites
//! `config.json`'s `dl` to its own `/cargo/dl/`, leaving `api` on the
//! upstream; under `/cargo/dl/` it fetches from the canary's download
//! origin and keeps each `.crate` fetched whole; `/api/` is passed to the
//! upstream's API origin. Requests go upstream as they came, method, body
//! and `Authorization` header included.

use crate::request_log::lock;
use egress_http::{Reply, Request, Response, Server, ServerHandle};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

pub struct CargoCachingProxy {
    server: ServerHandle,
}

fn fetch(upstream: &str, req: &Request, target: &str) -> io::Result<(u16, String, Vec<u8>)> {
    let mut sock = std::net::TcpStream::connect(upstream)?;
    sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let auth = req
        .header("authorization")
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{} {target} HTTP/1.0\r\nHost: {upstream}\r\n{auth}Content-Length: {}\r\n\r\n",
        req.method,
        req.body.len()
    );
    sock.write_all(head.as_bytes())?;
    sock.write_all(&req.body)?;
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

fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

impl CargoCachingProxy {
    /// Starts the proxy in front of the canary whose index origin is
    /// `index` and download/API origin `dl` (both `http://host:port`).
    pub fn start(index: &str, dl: &str) -> io::Result<Self> {
        let (index, dl) = (authority(index), authority(dl));
        let cache: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let me: Arc<Mutex<String>> = Arc::default();
        let me_in = Arc::clone(&me);
        let server = Server::bind_loopback(move |req: Request| -> Reply {
            let path = req.path().to_string();
            let (upstream, target) = if let Some(rest) = req.target.strip_prefix("/cargo/index/") {
                (&index, format!("/index/{rest}"))
            } else if let Some(rest) = req.target.strip_prefix("/cargo/dl/") {
                (&dl, format!("/{rest}"))
            } else if req.target.starts_with("/api/") {
                (&dl, req.target.clone())
            } else {
                return Response::text(404, "not found\n").into();
            };
            let get = req.method == egress_model::Method::Get;
            let is_crate = get && path.ends_with(".crate");
            if let Some(bytes) = lock(&cache).get(&req.target).filter(|_| is_crate) {
                return Response::new(200)
                    .with_header("Content-Type", "application/gzip")
                    .with_body(bytes.clone())
                    .into();
            }
            match fetch(upstream, &req, &target) {
                Ok((status, ctype, mut body)) => {
                    if status == 200 && is_crate {
                        lock(&cache).insert(req.target.clone(), body.clone());
                    }
                    if status == 200 && path == "/cargo/index/config.json" {
                        if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&body) {
                            let mine = lock(&me_in).clone();
                            v["dl"] = format!(
                                "{mine}/cargo/dl/crates/{{crate}}/{{crate}}-{{version}}.crate"
                            )
                            .into();
                            body = v.to_string().into_bytes();
                        }
                    }
                    Response::new(status)
                        .with_header("Content-Type", ctype)
                        .with_body(body)
                        .into()
                }
                Err(e) => Response::text(502, &format!("upstream: {e}\n")).into(),
            }
        })?;
        *lock(&me) = server.base_url();
        Ok(Self { server })
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The sparse index root a sandbox names.
    pub fn index_url(&self) -> String {
        format!("{}/cargo/index/", self.base_url())
    }

    pub fn stop(self) {
        self.server.stop();
    }
}
