//! The cargo counterpart of `apt_mutants.rs`: every cargo sub-probe fails
//! on a mirror that violates exactly what it checks, and passes on the
//! reference. Each mutant is the cargo reference mirror (A), the real
//! [`egress_mirror::Mirror`] serving the built-in run's cargo snapshot,
//! with one behaviour changed; other sub-probes may fail as a consequence,
//! but the one named must. Where a mutant needs the upstream it asks the
//! cargo canary over a raw loopback socket, as a pull-through cache would.

mod common;

use common::mutant::{self, body_of, with_body};
use egress_http::{Handler, Limits, Reply, Request, Response, Server};
use egress_mirror::Mirror;
use egress_model::Url;
use egress_references::builtin::demo_attestor;
use egress_references::cargo::builtin::{
    demo_cargo_snapshot, free_loopback, run_cargo_against, start_cargo_canary,
};
use egress_references::cargo::canary::{self as cargo_canary, CargoCanary};
use std::io::{Read, Write};
use std::sync::Arc;

struct Mutant {
    kind: &'static str,
    mirror: Mirror,
    /// `host:port` of the canary's index and of its download/API origin.
    index: String,
    dl: String,
}

/// `method` `target` at `authority`, with `extra` header lines; the status
/// and body.
fn upstream(authority: &str, method: &str, target: &str, extra: &str) -> (u16, Vec<u8>) {
    let Ok(mut sock) = std::net::TcpStream::connect(authority) else {
        return (502, Vec::new());
    };
    let head = format!("{method} {target} HTTP/1.0\r\nHost: {authority}\r\n{extra}\r\n");
    let mut raw = Vec::new();
    if sock.write_all(head.as_bytes()).is_err() || sock.read_to_end(&mut raw).is_err() {
        return (502, Vec::new());
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
    let status = String::from_utf8_lossy(&raw[..split])
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    (status, raw.get(split + 4..).unwrap_or_default().to_vec())
}

fn reply(status: u16, body: Vec<u8>) -> Reply {
    Response::new(status).with_body(body).into()
}

fn index_path(name: &str) -> String {
    format!(
        "/cargo/index/{}",
        egress_model::CrateName::new(name).unwrap().index_path()
    )
}

/// The index lines of `body` whose version is among `held`'s.
fn only_versions_of(body: &[u8], held: &[u8]) -> Vec<u8> {
    let vers = |l: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(l)
            .ok()
            .and_then(|v| v["vers"].as_str().map(str::to_string))
    };
    let held: Vec<String> = held.split(|&b| b == b'\n').filter_map(vers).collect();
    let mut out = Vec::new();
    for l in body.split(|&b| b == b'\n') {
        if vers(l).is_some_and(|v| held.contains(&v)) {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

impl Mutant {
    fn handle(&self, req: Request) -> Reply {
        let k = self.kind;
        let t = req.target.clone();
        let method = req.method.to_string();
        let write = !matches!(method.as_str(), "GET" | "HEAD");
        let canary_index = t
            .strip_prefix("/cargo/index/")
            .map(|r| format!("/index/{r}"));
        match k {
            "pass-no-cksum" | "absent-served" | "index-live" => {
                let name = match k {
                    "pass-no-cksum" => cargo_canary::NO_CKSUM,
                    "absent-served" => cargo_canary::UPSTREAM_ONLY,
                    _ => cargo_canary::PRESENT,
                };
                if t == index_path(name) {
                    let (s, b) = upstream(
                        &self.index,
                        "GET",
                        canary_index.as_deref().unwrap_or_default(),
                        "",
                    );
                    return reply(s, b);
                }
            }
            "contact" if t.ends_with("/config.json") => {
                let _ = upstream(&self.index, "GET", "/index/config.json", "");
            }
            "token-forward" if req.header("authorization").is_some() => {
                let _ = upstream(
                    &self.dl,
                    "GET",
                    "/api/v1/me",
                    "Authorization: forwarded\r\n",
                );
            }
            "traversal" if t.contains("passwd") => {
                return reply(200, b"root:x:0:0:root:/root:/bin/sh\n".to_vec())
            }
            "readme" if t.ends_with("/readme") => {
                return reply(200, b"<h1>ec-template</h1>".to_vec())
            }
            "manifest" if t == "/.well-known/egress-mirror/MANIFEST" => {
                return reply(404, Vec::new())
            }
            "crate-live" if t.starts_with("/cargo/files/") => {
                // /cargo/files/<sha>/<name>-<version>.crate, from the canary.
                let file = t.rsplit('/').next().unwrap_or_default();
                let name = [
                    cargo_canary::PRESENT,
                    cargo_canary::TEMPLATE,
                    cargo_canary::YANKED,
                ]
                .into_iter()
                .find(|n| file.starts_with(&format!("{n}-")))
                .unwrap_or_default();
                let (s, b) = upstream(&self.dl, "GET", &format!("/crates/{name}/{file}"), "");
                return reply(s, b);
            }
            "forward-writes" if write && t.contains("/api/v1/") => {
                // A proxy that passes crates.io's write routes on, body
                // and all.
                let Ok(mut sock) = std::net::TcpStream::connect(&self.dl) else {
                    return reply(502, Vec::new());
                };
                let head = format!(
                    "{method} {t} HTTP/1.0\r\nHost: {}\r\nContent-Length: {}\r\n\r\n",
                    self.dl,
                    req.body.len()
                );
                let mut raw = Vec::new();
                let _ = sock.write_all(head.as_bytes());
                let _ = sock.write_all(&req.body);
                let _ = sock.read_to_end(&mut raw);
                return reply(403, raw);
            }
            "accept-writes" if write && t.contains("/api/v1/") => {
                return reply(200, b"{\"ok\":true}".to_vec())
            }
            "accept-unyank" if method == "PUT" && t.ends_with("/unyank") => {
                return reply(200, b"{\"ok\":true}".to_vec())
            }
            _ => {}
        }
        let r = match self.mirror.handle(req) {
            Reply::Response(r) => r,
            other => return other,
        };
        let ok = r.status == 200;
        match k {
            "cksum-mismatch" if ok && t.starts_with("/cargo/files/") => {
                let mut b = body_of(&r);
                if let Some(x) = b.last_mut() {
                    *x ^= 1;
                }
                with_body(r, b)
            }
            "config-elsewhere" if ok && t.ends_with("/config.json") => {
                let mut v: serde_json::Value = serde_json::from_slice(&body_of(&r)).unwrap();
                v["api"] = format!("http://{}", self.dl).into();
                with_body(r, v.to_string().into_bytes())
            }
            "unyanked" if ok && t == index_path(cargo_canary::YANKED) => {
                let b = String::from_utf8(body_of(&r)).unwrap();
                with_body(
                    r,
                    b.replace("\"yanked\":true", "\"yanked\":false")
                        .into_bytes(),
                )
            }
            "signature" if ok && t.ends_with("MANIFEST.sig") => {
                let mut b = body_of(&r);
                if let Some(x) = b.get_mut(40) {
                    *x = if *x == b'A' { b'B' } else { b'A' };
                }
                with_body(r, b)
            }
            "index-live-held" if ok && t == index_path(cargo_canary::PRESENT) => {
                let held = body_of(&r);
                let (s, live) = upstream(
                    &self.index,
                    "GET",
                    canary_index.as_deref().unwrap_or_default(),
                    "",
                );
                if s == 200 {
                    with_body(r, only_versions_of(&live, &held))
                } else {
                    Reply::Response(r)
                }
            }
            "redirect" if r.status == 404 => Response::new(302)
                .with_header("Location", "http://egress-conformance.invalid/elsewhere")
                .into(),
            _ => Reply::Response(r),
        }
    }
}

fn run_mutant(kind: &'static str) -> egress_suite::Report {
    let canary: CargoCanary = start_cargo_canary().unwrap_or_else(|e| panic!("{e}"));
    let addr = free_loopback().unwrap_or_else(|e| panic!("{e}"));
    let (snapshot, _dir) =
        demo_cargo_snapshot(&canary, &format!("http://{addr}")).unwrap_or_else(|e| panic!("{e}"));
    let id = snapshot.id();
    let mirror =
        Mirror::new(Arc::new(snapshot)).attest(demo_attestor(id).unwrap_or_else(|e| panic!("{e}")));
    let authority = |u: &str| Url::parse(u).expect("url").authority();
    let mutant = Arc::new(Mutant {
        kind,
        mirror,
        index: authority(canary.base_url()),
        dl: authority(canary.dl_origin()),
    });
    let handler = Arc::clone(&mutant);
    let server = Server::bind(
        addr,
        move |req: Request| handler.handle(req),
        Limits::default(),
    )
    .expect("bind");
    let url = Url::parse(&format!("{}/cargo/index/", server.base_url())).expect("index URL");
    let report = run_cargo_against(kind, &url, &canary, Some(id)).unwrap_or_else(|e| panic!("{e}"));
    server.stop();
    mutant::assert_reverifies(&report, kind);
    report
}

/// What a write route passed upstream carried is named: the bytes the
/// canary received, by length and sha256.
#[test]
fn a_forwarded_publish_is_named_with_its_body() {
    let r = run_mutant("forward-writes");
    let p = r.probe("P6.write-routes").expect("P6.write-routes");
    assert_eq!(p.status, egress_model::Status::Fail, "{}", p.reason);
    assert!(p.reason.contains("-byte body (sha256 "), "{}", p.reason);
}

#[test]
fn unmodified_wrapper_passes_everything() {
    mutant::assert_all_pass(&run_mutant("none"));
}

macro_rules! mutants {
    ($($test:ident: $kind:literal => $probe:literal;)*) => {
        $(
            #[test]
            fn $test() {
                mutant::assert_fails(&run_mutant($kind), $kind, $probe);
            }
        )*

        /// Every sub-probe of the cargo table (controls aside) has a mutant above.
        #[test]
        fn every_sub_probe_has_a_mutant() {
            let covered = [$($probe),*];
            for sp in egress_suite::cargo::TABLE.iter().filter(|s| s.predicate != "C") {
                assert!(covered.contains(&sp.id.as_str()), "no mutant for {}", sp.id);
            }
            for id in covered {
                assert!(
                    egress_suite::cargo::TABLE.iter().any(|s| s.id == id),
                    "{id} is not a cargo sub-probe"
                );
            }
        }
    };
}

mutants! {
    p1_cksum: "cksum-mismatch" => "P1.cksum";
    p1_run_wide_digests: "cksum-mismatch" => "P1.run-wide-digests";
    p1_upstream_uncovered: "pass-no-cksum" => "P1.upstream-uncovered";
    p2_absent: "absent-served" => "P2.absent";
    p2_new_publish: "index-live" => "P2.new-publish";
    p2_upstream_contact: "contact" => "P2.upstream-contact";
    p3_config_origin: "config-elsewhere" => "P3.config-origin";
    p3_traversal: "traversal" => "P3.traversal";
    p3_registry_token: "token-forward" => "P3.registry-token";
    p3_run_wide_redirects: "redirect" => "P3.run-wide-redirects";
    p4_render_routes: "readme" => "P4.render-routes";
    p5_manifest: "manifest" => "P5.manifest";
    p5_signature: "signature" => "P5.signature";
    p5_yanked_flags: "unyanked" => "P5.yanked-flags";
    p5_upstream_republished: "crate-live" => "P5.upstream-republished";
    p5_upstream_yank: "index-live-held" => "P5.upstream-yank";
    p6_write_routes: "accept-writes" => "P6.write-routes";
    p6_run_wide_writes: "accept-unyank" => "P6.run-wide-writes";
}
