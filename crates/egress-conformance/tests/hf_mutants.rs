//! The Hub counterpart of `cargo_mutants.rs`: every Hub sub-probe fails on
//! a mirror that violates exactly what it checks, and passes on the
//! reference. Each mutant is the Hub reference mirror (A), the real
//! [`egress_mirror::Mirror`] serving the built-in run's Hub snapshot, with
//! one behaviour changed; other sub-probes may fail as a consequence, but
//! the one named must. Where a mutant needs the upstream it asks the Hub
//! canary over a raw loopback socket, as a pull-through cache would.

mod common;

use common::mutant::{self, body_of, with_body};
use egress_http::{Handler, Limits, Reply, Request, Response, Server};
use egress_mirror::Mirror;
use egress_model::{Upstream, Url};
use egress_references::builtin::demo_attestor;
use egress_references::hf::builtin::{demo_hf_snapshot, run_hf_against, start_hf_canary};
use egress_references::hf::canary::{self as hf_canary, HfCanary};
use std::io::{Read, Write};
use std::sync::Arc;

struct Mutant {
    kind: &'static str,
    mirror: Mirror,
    /// `host:port` of the canary's Hub origin.
    hub: String,
    /// A commit of the model the snapshot does not hold.
    old: String,
}

/// `method` `target` at `authority`, with `extra` header lines and `body`;
/// the status, the response head and the body.
fn upstream(
    authority: &str,
    method: &str,
    target: &str,
    extra: &str,
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let Ok(mut sock) = std::net::TcpStream::connect(authority) else {
        return (502, String::new(), Vec::new());
    };
    let head = format!(
        "{method} {target} HTTP/1.0\r\nHost: {authority}\r\nContent-Length: {}\r\n{extra}\r\n",
        body.len()
    );
    let mut raw = Vec::new();
    if sock.write_all(head.as_bytes()).is_err()
        || sock.write_all(body).is_err()
        || sock.read_to_end(&mut raw).is_err()
    {
        return (502, String::new(), Vec::new());
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    (
        status,
        head,
        raw.get(split + 4..).unwrap_or_default().to_vec(),
    )
}

/// The canary's answer to `req` (below `/hf`), its `Location` kept.
fn from_canary(hub: &str, req: &Request) -> Reply {
    let target = req.target.strip_prefix("/hf").unwrap_or(&req.target);
    let (status, head, body) = upstream(hub, req.method.as_str(), target, "", &req.body);
    let mut r = Response::new(status).with_body(body);
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("location") || k.eq_ignore_ascii_case("content-type") {
                r = r.with_header(k, v.trim());
            }
        }
    }
    r.into()
}

impl Mutant {
    fn handle(&self, req: Request) -> Reply {
        let k = self.kind;
        let t = req.target.clone();
        let write = !matches!(req.method.as_str(), "GET" | "HEAD");
        let hidden = hf_canary::UPSTREAM_ONLY;
        match k {
            "pass-tampered" if t.contains(&format!("/{}", hf_canary::TAMPERED)) => {
                return from_canary(&self.hub, &req)
            }
            "absent-repo" if t.contains(&format!("/{hidden}")) => {
                return from_canary(&self.hub, &req)
            }
            "absent-revision" if t.contains(&self.old) => return from_canary(&self.hub, &req),
            "absent-file" if t.ends_with(hf_canary::ABSENT_FILE) => {
                return from_canary(&self.hub, &req)
            }
            "xet-token" if t.contains("/xet-read-token/") => return from_canary(&self.hub, &req),
            "viewer" if t.contains("/parquet") => return from_canary(&self.hub, &req),
            "branch-live" if t.ends_with("/revision/main") => return from_canary(&self.hub, &req),
            "main-live" if t.contains("/resolve/main/") && req.method.as_str() == "GET" => {
                return from_canary(&self.hub, &req)
            }
            "contact" if t.ends_with("/revision/main") => {
                let _ = upstream(
                    &self.hub,
                    "GET",
                    &format!("/api/models/{}/revision/main", hf_canary::MODEL),
                    "",
                    b"",
                );
            }
            "token-forward" if req.header("authorization").is_some() => {
                let _ = upstream(
                    &self.hub,
                    "GET",
                    "/api/whoami-v2",
                    "Authorization: Bearer forwarded\r\n",
                    b"",
                );
            }
            "traversal" if t.contains("passwd") => {
                return Response::new(200)
                    .with_body(b"root:x:0:0:root:/root:/bin/sh\n".to_vec())
                    .into()
            }
            "manifest" if t == "/.well-known/egress-mirror/MANIFEST" => {
                return Response::new(404).into()
            }
            "accept-writes" if write && t.contains("/api/") => {
                return Response::new(200).with_body(b"{}".to_vec()).into()
            }
            "accept-discussion" if write && t.ends_with("/discussions") => {
                return Response::new(200).with_body(b"{\"num\":1}".to_vec()).into()
            }
            _ => {}
        }
        let r = match self.mirror.handle(req) {
            Reply::Response(r) => r,
            other => return other,
        };
        let ok = r.status == 200;
        let resolve = t.contains("/resolve/");
        match k {
            "digest-mismatch" if ok && resolve => {
                let mut b = body_of(&r);
                if let Some(x) = b.last_mut() {
                    *x ^= 1;
                }
                with_body(r, b)
            }
            "xet-header" if resolve => Reply::Response(r.with_header("X-Xet-Hash", "0".repeat(64))),
            "repo-commit" if resolve => {
                let mut r = r;
                for (n, v) in &mut r.headers {
                    if n.eq_ignore_ascii_case("x-repo-commit") {
                        *v = "0".repeat(40);
                    }
                }
                Reply::Response(r)
            }
            "card-html" if ok && t.ends_with("/README.md") => {
                let mut r = r;
                r.headers
                    .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
                let page = format!(
                    "<html><body>{}</body></html>",
                    String::from_utf8_lossy(&body_of(&r))
                );
                with_body(
                    r.with_header("Content-Type", "text/html; charset=utf-8"),
                    page.into_bytes(),
                )
            }
            "signature" if ok && t.ends_with("MANIFEST.sig") => {
                let mut b = body_of(&r);
                if let Some(x) = b.get_mut(40) {
                    *x = if *x == b'A' { b'B' } else { b'A' };
                }
                with_body(r, b)
            }
            "redirect" if r.status == 404 => Response::new(302)
                .with_header("Location", "http://egress-conformance.invalid/elsewhere")
                .into(),
            _ => Reply::Response(r),
        }
    }
}

fn run_mutant(kind: &'static str) -> egress_suite::Report {
    let canary: HfCanary = start_hf_canary().unwrap_or_else(|e| panic!("{e}"));
    let (snapshot, _dir) = demo_hf_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let id = snapshot.id();
    let mirror =
        Mirror::new(Arc::new(snapshot)).attest(demo_attestor(id).unwrap_or_else(|e| panic!("{e}")));
    let old = canary
        .plan()
        .hf
        .map(|h| h.absent_revision)
        .expect("the canary's Hub plan");
    let mutant = Arc::new(Mutant {
        kind,
        mirror,
        hub: Url::parse(canary.endpoint()).expect("url").authority(),
        old,
    });
    let handler = Arc::clone(&mutant);
    let server = Server::bind(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        move |req: Request| handler.handle(req),
        Limits::default(),
    )
    .expect("bind");
    let url = Url::parse(&format!("{}/hf", server.base_url())).expect("endpoint");
    let report = run_hf_against(kind, &url, &canary, Some(id)).unwrap_or_else(|e| panic!("{e}"));
    server.stop();
    mutant::assert_reverifies(&report, kind);
    report
}

#[test]
fn unmodified_wrapper_passes_everything() {
    mutant::assert_all_pass(&run_mutant("none"));
}

/// What a write route passed upstream carried is named: the bytes the
/// canary received, by length and sha256.
#[test]
fn a_forwarded_commit_is_named_with_its_body() {
    let r = run_hf_against_proxy();
    let p = r.probe("P6.write-routes").expect("P6.write-routes");
    assert_eq!(p.status, egress_model::Status::Fail, "{}", p.reason);
    assert!(p.reason.contains("-byte body (sha256 "), "{}", p.reason);
}

fn run_hf_against_proxy() -> egress_suite::Report {
    egress_references::hf::builtin::run_hf_proxy().unwrap_or_else(|e| panic!("{e}"))
}

macro_rules! mutants {
    ($($test:ident: $kind:literal => $probe:literal;)*) => {
        $(
            #[test]
            fn $test() {
                mutant::assert_fails(&run_mutant($kind), $kind, $probe);
            }
        )*

        /// Every sub-probe of the Hub table (controls aside) has a mutant above.
        #[test]
        fn every_sub_probe_has_a_mutant() {
            let covered = [$($probe),*];
            for sp in egress_suite::hf::TABLE.iter().filter(|s| s.predicate != "C") {
                assert!(covered.contains(&sp.id.as_str()), "no mutant for {}", sp.id);
            }
            for id in covered {
                assert!(
                    egress_suite::hf::TABLE.iter().any(|s| s.id == id),
                    "{id} is not a Hub sub-probe"
                );
            }
        }
    };
}

mutants! {
    p1_file_digests: "digest-mismatch" => "P1.file-digests";
    p1_run_wide_digests: "digest-mismatch" => "P1.run-wide-digests";
    p1_upstream_bad_digest: "pass-tampered" => "P1.upstream-bad-digest";
    p2_absent_repo: "absent-repo" => "P2.absent-repo";
    p2_absent_revision: "absent-revision" => "P2.absent-revision";
    p2_absent_file: "absent-file" => "P2.absent-file";
    p2_upstream_contact: "contact" => "P2.upstream-contact";
    p3_no_handoff: "xet-header" => "P3.no-handoff";
    p3_xet_read_token: "xet-token" => "P3.xet-read-token";
    p3_traversal: "traversal" => "P3.traversal";
    p3_auth_forward: "token-forward" => "P3.auth-forward";
    p3_run_wide_redirects: "redirect" => "P3.run-wide-redirects";
    p4_viewer_routes: "viewer" => "P4.viewer-routes";
    p4_card_bytes: "card-html" => "P4.card-bytes";
    p5_manifest: "manifest" => "P5.manifest";
    p5_signature: "signature" => "P5.signature";
    p5_branch_commit: "branch-live" => "P5.branch-commit";
    p5_repo_commit_header: "repo-commit" => "P5.repo-commit-header";
    p5_moved_main: "main-live" => "P5.moved-main";
    p6_write_routes: "accept-writes" => "P6.write-routes";
    p6_run_wide_writes: "accept-discussion" => "P6.run-wide-writes";
}
