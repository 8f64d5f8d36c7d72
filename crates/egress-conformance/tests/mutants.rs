//! Every sub-probe fails on a mirror that violates exactly what it checks and
//! passes on the reference. Each mutant is the reference mirror (A) with one
//! behaviour changed; other sub-probes may fail as a consequence, but the one
//! named must.

mod common;

use common::h2_front::{Fault, H2Front};
use common::lax_front::LaxFront;
use common::mutant::{self, attestor_for, body_of, with_body, AttestState, OTHER_CREATED};
use egress_http::{Handler, Reply, Request, Response, Server};
use egress_mirror::Mirror;
use egress_model::Status;
use egress_references::pypi::builtin::{
    demo_snapshot, demo_snapshot_at, index_of, run_against, start_canary,
};
use egress_references::pypi::canary::Canary;
use egress_snapshot::Snapshot;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct Mutant {
    inner: Mirror,
    snapshot: Arc<Snapshot>,
    kind: &'static str,
    canary: String,
    count: AtomicUsize,
    wrote: AtomicBool,
    attest: AttestState,
}

fn ok(text: &str) -> Reply {
    Response::text(200, text).into()
}

/// A plain GET to the canary over a raw socket (the mutant's "upstream client").
fn canary_get(base: &str, path: &str, accept: &str) -> Vec<u8> {
    let authority = base.trim_start_matches("http://");
    let Ok(mut s) = TcpStream::connect(authority) else {
        return Vec::new();
    };
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => out[i + 4..].to_vec(),
        None => Vec::new(),
    }
}

impl Mutant {
    fn inner(&self, req: Request) -> Response {
        match self.inner.handle(req) {
            Reply::Response(r) => r,
            _ => Response::new(500),
        }
    }

    /// The snapshot's file path for a filename.
    fn file_path(&self, filename: &str) -> Option<String> {
        self.snapshot
            .doc
            .served
            .iter()
            .find(|e| e.path.starts_with("/files/") && e.path.ends_with(&format!("/{filename}")))
            .map(|e| e.path.clone())
    }

    fn reroute(&self, mut req: Request, path: &str) -> Reply {
        req.target = path.to_string();
        Reply::Response(self.inner(req))
    }
}

impl Handler for Mutant {
    fn handle(&self, req: Request) -> Reply {
        if let Some(r) = mutant::attest_answer(self.kind, &self.attest, &req, |r| self.inner(r)) {
            return r;
        }
        let target = req.target.clone();
        let lower = target.to_ascii_lowercase();
        let path = req.path().to_string();
        let accept = req.header("accept").unwrap_or("").to_string();
        let html = !accept.contains("json");
        match self.kind {
            "P1.html-hashes" if path.starts_with("/simple/") && html => {
                let r = self.inner(req);
                let text = String::from_utf8_lossy(&body_of(&r)).into_owned();
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(i) = rest.find("#sha256=") {
                    out.push_str(&rest[..i]);
                    rest = &rest[(i + 8 + 64).min(rest.len())..];
                }
                out.push_str(rest);
                with_body(r, out.into_bytes())
            }
            "P1.json-hashes" if path.starts_with("/simple/") && !html => {
                let r = self.inner(req);
                let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&body_of(&r)) else {
                    return Reply::Response(r);
                };
                if let Some(files) = v.get_mut("files").and_then(|f| f.as_array_mut()) {
                    for f in files {
                        f["hashes"] = serde_json::json!({});
                    }
                }
                with_body(r, serde_json::to_vec(&v).unwrap_or_default())
            }
            "P1.bytes-match" if path.starts_with("/files/") && !path.ends_with(".metadata") => {
                let r = self.inner(req);
                let mut b = body_of(&r);
                if let Some(last) = b.last_mut() {
                    *last ^= 0xff;
                }
                with_body(r, b)
            }
            "P1.altered-digest" if path.starts_with("/files/") => {
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                match self.file_path(&name) {
                    Some(p) => self.reroute(req, &p),
                    None => Reply::Response(self.inner(req)),
                }
            }
            "P1.name-version-path" if path.starts_with("/packages/") => {
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                match self.file_path(&name) {
                    Some(p) => self.reroute(req, &p),
                    None => Reply::Response(self.inner(req)),
                }
            }
            "P1.upstream-no-digest" if path == "/simple/ec-no-digest/" => ok(
                "<!DOCTYPE html><html><body><a href=\"/nd/ec_no_digest-1.0.0-py3-none-any.whl\">ec_no_digest-1.0.0-py3-none-any.whl</a></body></html>",
            ),
            "P1.upstream-bad-digest" if path == "/simple/ec-bad-digest/" => {
                let zeros = "0".repeat(64);
                ok(&format!("<!DOCTYPE html><html><body><a href=\"/bd/ec_bad_digest-1.0.0-py3-none-any.whl#sha256={zeros}\">ec_bad_digest-1.0.0-py3-none-any.whl</a></body></html>"))
            }
            "P1.upstream-bad-digest" if path.starts_with("/bd/") => ok("PK\u{3}\u{4} bytes that are not what the page says"),
            "P2.absent-page" if path == "/simple/ec-upstream-only/" => {
                let zeros = "0".repeat(64);
                ok(&format!("<!DOCTYPE html><html><body><a href=\"/files/{zeros}/ec_upstream_only-1.0.0-py3-none-any.whl#sha256={zeros}\">ec_upstream_only-1.0.0-py3-none-any.whl</a></body></html>"))
            }
            "P2.absent-file" if lower.contains("ec_upstream_only") => ok("PK\u{3}\u{4} not really"),
            "P2.upstream-contact" => {
                let _ = canary_get(&self.canary, "/simple/", "text/html");
                Reply::Response(self.inner(req))
            }
            "P3.absolute-form" if lower.starts_with("http://") => ok("forwarded"),
            "P3.connect" if req.method == "CONNECT" => Response::new(200).into(),
            "P3.dotdot-raw" if target.contains("/../") => ok("root:x:0:0:root:/root:/bin/sh"),
            "P3.dotdot-percent"
                if lower.contains("%2e%2e")
                    || lower.contains("..%2f")
                    || lower.contains(".%2e") =>
            {
                ok("root:x:0:0")
            }
            "P3.dotdot-double" if lower.contains("%25") => ok("root:x:0:0"),
            "P3.dotdot-backslash" if target.contains('\\') || lower.contains("%5c") => {
                ok("root:x:0:0")
            }
            "P3.dotdot-overlong"
                if lower.contains("%c0") || lower.contains("%c1") || lower.contains("%e0%80") =>
            {
                ok("root:x:0:0")
            }
            "P3.double-slash" if target.starts_with("//") => ok("forwarded"),
            "P3.url-param" if lower.contains("url=") => {
                let to = target
                    .split("url=")
                    .nth(1)
                    .unwrap_or("http://127.0.0.9:9/")
                    .to_string();
                Response::new(302).with_header("Location", to).into()
            }
            "P3.unknown-route" => {
                let r = self.inner(req);
                if r.status == 404 && !path.starts_with("/simple/") && !path.starts_with("/files/")
                {
                    ok("welcome")
                } else {
                    Reply::Response(r)
                }
            }
            "P3.offsite-redirect" if path == "/simple/ec-present" => Response::new(301)
                .with_header("Location", "http://127.0.0.9:9/simple/ec-present/")
                .into(),
            "P4.metadata-sdist" if path.ends_with(".tar.gz.metadata") => {
                ok("Metadata-Version: 2.1\nName: built\nVersion: 0.1.0\n")
            }
            "P4.tripwire" if path.contains("ec_tripwire") && path.ends_with(".tar.gz") => {
                let _ = canary_get(&self.canary, "/tripwire/mutant-build", "*/*");
                Reply::Response(self.inner(req))
            }
            "P4.template-text" if path == "/pypi/ec-template-text/json" => {
                ok("{\"info\":{\"summary\":\"ECT-A49 ECT-B49\"}}")
            }
            "P5.manifest" if path == egress_snapshot::well_known::MANIFEST => {
                Response::text(404, "no manifest\n").into()
            }
            "P5.chain"
                if path == egress_snapshot::well_known::MANIFEST
                    || path == egress_snapshot::well_known::SNAPSHOT_JSON =>
            {
                let (manifest, doc) = mutant::claimed_layer(&self.snapshot);
                ok(if path == egress_snapshot::well_known::MANIFEST {
                    &manifest
                } else {
                    &doc
                })
            }
            "P5.signature" if path == egress_snapshot::well_known::SIGNATURE => {
                let other = egress_signing::SigningKey::from_seed([7; 32], "someone-else");
                ok(&other.sign(
                    egress_signing::SNAPSHOT_NAMESPACE,
                    &self.snapshot.manifest_bytes,
                ))
            }
            "P5.index-in-manifest" if path == "/simple/" && html => {
                let r = self.inner(req);
                let mut b = body_of(&r);
                b.extend_from_slice(b"<!-- served but not in the manifest -->\n");
                with_body(r, b)
            }
            // One upload time on a page no other sub-probe holds to the
            // manifest, moved after the signed cutoff, or rewritten to an
            // earlier time (still before it).
            "P5.cutoff-after" | "P5.cutoff-rewritten"
                if path == "/simple/ec-template-text/" && !html =>
            {
                let r = self.inner(req);
                let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&body_of(&r)) else {
                    return Reply::Response(r);
                };
                let time = match self.kind {
                    "P5.cutoff-after" => "2025-07-01T00:00:00.000000Z",
                    _ => "2024-12-01T00:00:00.000000Z",
                };
                if let Some(f) = v.get_mut("files").and_then(|f| f.get_mut(0)) {
                    f["upload-time"] = time.into();
                }
                with_body(r, serde_json::to_vec(&v).unwrap_or_default())
            }
            "P5.run-wide-snapshot" => mutant::other_replica(&self.count, self.inner(req)),
            "P5.stable-bytes" if path.starts_with("/files/") && !path.ends_with(".metadata") => {
                let r = self.inner(req);
                if self.count.fetch_add(1, Ordering::SeqCst) % 2 == 1 {
                    let mut b = body_of(&r);
                    if let Some(last) = b.last_mut() {
                        *last ^= 0xff;
                    }
                    return with_body(r, b);
                }
                Reply::Response(r)
            }
            "P5.upstream" if path == "/simple/ec-present/" && html => {
                // Lists what the upstream lists now, at the snapshot's URL shape.
                let body = canary_get(&self.canary, "/simple/ec-present/", "text/html");
                let Ok(mut page) = egress_simple::parse_project_html(&body) else {
                    return Reply::Response(self.inner(req));
                };
                for f in &mut page.files {
                    let sha = f.hashes.get("sha256").cloned().unwrap_or_default();
                    f.url = format!("/files/{sha}/{}", f.filename);
                }
                ok(&egress_simple::render_project_html(&page))
            }
            "P6.write-methods"
                if matches!(req.method.as_str(), "POST" | "PUT" | "DELETE" | "PATCH") =>
            {
                ok("done")
            }
            "P6.legacy-upload"
                if req.method == "POST"
                    && String::from_utf8_lossy(&req.body).contains("file_upload") =>
            {
                ok("uploaded")
            }
            "P6.user-routes"
                if (req.method == "PUT" || req.method == "POST")
                    && (path.matches('/').count() == 1
                        || path.starts_with("/-/user/")
                        || path.contains("login")
                        || path.contains("account")) =>
            {
                Response::text(201, "created").into()
            }
            "P6.webdav" if req.method == "PROPFIND" => {
                Response::text(207, "<multistatus xmlns=\"DAV:\"/>").into()
            }
            "P6.trace" if req.method == "TRACE" => {
                ok(&format!("{} {} HTTP/1.1", req.method, req.target))
            }
            // proxpi's cache drop, honoured silently: a refusal on the
            // wire, a refetch from the upstream behind it.
            "P6.vendor-routes" if req.method == "DELETE" && path.starts_with("/cache/") => {
                let _ = canary_get(&self.canary, "/simple/ec-present/", "text/html");
                Response::text(404, "not found").into()
            }
            "P6.effect" if req.method == "POST" => {
                self.wrote.store(true, Ordering::SeqCst);
                Response::text(403, "forbidden").into()
            }
            "P6.effect" if path == "/simple/" && self.wrote.load(Ordering::SeqCst) => {
                let r = self.inner(req);
                let mut b = body_of(&r);
                b.extend_from_slice(b"<!-- changed by a refused write -->\n");
                with_body(r, b)
            }
            // Run-wide rules. proxpi's answer to a PEP 658 request for an
            // sdist: a redirect to its upstream, which P4.metadata-sdist
            // reads as a refusal.
            "P3.run-wide-redirects" if path.ends_with(".tar.gz.metadata") => Response::new(302)
                .with_header("Location", format!("http://127.0.0.9:9{path}"))
                .into(),
            // Wrong bytes only for the tripwire's sdist, which only
            // P4.tripwire fetches (and does not check against its listing).
            "P1.run-wide-digests" if path.contains("ec_tripwire") && path.ends_with(".tar.gz") => {
                let r = self.inner(req);
                let mut b = body_of(&r);
                if let Some(last) = b.last_mut() {
                    *last ^= 0xff;
                }
                with_body(r, b)
            }
            "P6.run-wide-writes" if req.method == "DELETE" => Response::new(204).into(),
            // Replicas that disagree: every other read of the root index
            // carries other bytes, with no write anywhere.
            "replicas-disagree" if path == "/simple/" && html => {
                let r = self.inner(req);
                if self.count.fetch_add(1, Ordering::SeqCst) % 2 == 1 {
                    let mut b = body_of(&r);
                    b.extend_from_slice(b"<!-- the other replica -->\n");
                    return with_body(r, b);
                }
                Reply::Response(r)
            }
            _ => Reply::Response(self.inner(req)),
        }
    }
}

fn run_mutant(kind: &'static str) -> egress_suite::Report {
    let canary: Canary = start_canary().unwrap_or_else(|e| panic!("{e}"));
    // A mirror started on another snapshot: the same content, another ID.
    let snapshot = match kind {
        "P5.expected-snapshot" => demo_snapshot_at(&canary, OTHER_CREATED),
        _ => demo_snapshot(&canary),
    };
    let snapshot = Arc::new(snapshot.unwrap_or_else(|e| panic!("{e}")));
    let mutant = Mutant {
        inner: Mirror::new(snapshot.clone()).attest(attestor_for(kind, snapshot.id())),
        snapshot,
        kind,
        canary: canary.base_url(),
        count: AtomicUsize::new(0),
        wrote: AtomicBool::new(false),
        attest: AttestState::default(),
    };
    if kind == "attest-another-snapshot" {
        let other =
            Arc::new(demo_snapshot_at(&canary, OTHER_CREATED).unwrap_or_else(|e| panic!("{e}")));
        let id = other.id();
        let _ = mutant
            .attest
            .other
            .set(Mirror::new(other).attest(attestor_for("none", id)));
    }
    let server = Server::bind_loopback(mutant).expect("bind");
    // The smuggling mutant is the mirror behind a front that frames by
    // Content-Length alone and serves whatever follows on the connection.
    let front = (kind == "P3.request-smuggling").then(|| {
        let mut front = LaxFront::bind();
        front.serve(server.addr());
        front
    });
    // The HTTP/2 mutant is the mirror behind an h2c front that relays each
    // request to the authority its `:authority` names.
    let h2_front = (kind == "P3.h2-smuggling").then(|| {
        let mut front = H2Front::bind();
        front.serve(server.addr(), Fault::RoutesByAuthority);
        front
    });
    let base = front
        .as_ref()
        .map(LaxFront::base_url)
        .or_else(|| h2_front.as_ref().map(H2Front::base_url))
        .unwrap_or_else(|| server.base_url());
    let index = index_of(&base).unwrap_or_else(|e| panic!("{e}"));
    let report = run_against(kind, &index, &canary).unwrap_or_else(|e| panic!("{e}"));
    mutant::assert_reverifies(&report, kind);
    report
}

fn assert_fails(kind: &'static str, probe: &str) {
    mutant::assert_fails(&run_mutant(kind), kind, probe);
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
                assert_fails($kind, $probe);
            }
        )*

        /// Every sub-probe of the catalog (controls aside) has a mutant above.
        #[test]
        fn every_sub_probe_has_a_mutant() {
            let covered = [$($probe),*];
            for sp in egress_suite::pypi::TABLE.iter().filter(|s| s.predicate != "C") {
                assert!(covered.contains(&sp.id.as_str()), "no mutant for {}", sp.id);
            }
        }
    };
}

mutants! {
    p1_html_hashes: "P1.html-hashes" => "P1.html-hashes";
    p1_json_hashes: "P1.json-hashes" => "P1.json-hashes";
    p1_bytes_match: "P1.bytes-match" => "P1.bytes-match";
    p1_altered_digest: "P1.altered-digest" => "P1.altered-digest";
    p1_name_version_path: "P1.name-version-path" => "P1.name-version-path";
    p1_upstream_no_digest: "P1.upstream-no-digest" => "P1.upstream-no-digest";
    p1_upstream_bad_digest: "P1.upstream-bad-digest" => "P1.upstream-bad-digest";
    p2_absent_page: "P2.absent-page" => "P2.absent-page";
    p2_absent_file: "P2.absent-file" => "P2.absent-file";
    p2_upstream_contact: "P2.upstream-contact" => "P2.upstream-contact";
    p3_absolute_form: "P3.absolute-form" => "P3.absolute-form";
    p3_connect: "P3.connect" => "P3.connect";
    p3_dotdot_raw: "P3.dotdot-raw" => "P3.dotdot-raw";
    p3_dotdot_percent: "P3.dotdot-percent" => "P3.dotdot-percent";
    p3_dotdot_double: "P3.dotdot-double" => "P3.dotdot-double";
    p3_dotdot_backslash: "P3.dotdot-backslash" => "P3.dotdot-backslash";
    p3_dotdot_overlong: "P3.dotdot-overlong" => "P3.dotdot-overlong";
    p3_double_slash: "P3.double-slash" => "P3.double-slash";
    p3_url_param: "P3.url-param" => "P3.url-param";
    p3_unknown_route: "P3.unknown-route" => "P3.unknown-route";
    p3_offsite_redirect: "P3.offsite-redirect" => "P3.offsite-redirect";
    p3_request_smuggling: "P3.request-smuggling" => "P3.request-smuggling";
    p3_h2_smuggling: "P3.h2-smuggling" => "P3.h2-smuggling";
    p4_metadata_sdist: "P4.metadata-sdist" => "P4.metadata-sdist";
    p4_tripwire: "P4.tripwire" => "P4.tripwire";
    p4_template_text: "P4.template-text" => "P4.template-text";
    p5_manifest: "P5.manifest" => "P5.manifest";
    p5_signature: "P5.signature" => "P5.signature";
    p5_chain: "P5.chain" => "P5.chain";
    p5_index_in_manifest: "P5.index-in-manifest" => "P5.index-in-manifest";
    p5_stable_bytes: "P5.stable-bytes" => "P5.stable-bytes";
    p5_expected_snapshot: "P5.expected-snapshot" => "P5.expected-snapshot";
    p5_run_wide_snapshot: "P5.run-wide-snapshot" => "P5.run-wide-snapshot";
    p5_cutoff: "P5.cutoff-after" => "P5.cutoff";
    p5_attest_replayed_nonce: "attest-replayed-nonce" => "P5.instance-attestation";
    p5_attest_uncertified_key: "attest-uncertified-key" => "P5.instance-attestation";
    p5_attest_wrong_certificate: "attest-wrong-certificate" => "P5.instance-attestation";
    p5_attest_foreign_certificate: "attest-foreign-certificate" => "P5.instance-attestation";
    p5_attest_another_snapshot: "attest-another-snapshot" => "P5.instance-attestation";
    p5_upstream_new_version: "P5.upstream" => "P5.upstream-new-version";
    p5_upstream_replaced_bytes: "P5.upstream" => "P5.upstream-replaced-bytes";
    p6_write_methods: "P6.write-methods" => "P6.write-methods";
    p6_legacy_upload: "P6.legacy-upload" => "P6.legacy-upload";
    p6_user_routes: "P6.user-routes" => "P6.user-routes";
    p6_webdav: "P6.webdav" => "P6.webdav";
    p6_trace: "P6.trace" => "P6.trace";
    p6_effect: "P6.effect" => "P6.effect";
    p1_run_wide_digests: "P1.run-wide-digests" => "P1.run-wide-digests";
    p3_run_wide_redirects: "P3.run-wide-redirects" => "P3.run-wide-redirects";
    p6_run_wide_writes: "P6.run-wide-writes" => "P6.run-wide-writes";
    p6_vendor_routes: "P6.vendor-routes" => "P6.vendor-routes";
}

/// The proxpi case: the `.metadata` redirect off the origin is met only by
/// P4.metadata-sdist, which reads it as a refusal; the run-wide rule names
/// that sub-probe and the exchange.
#[test]
fn an_offsite_redirect_met_by_a_p4_probe_fails_p3() {
    let r = run_mutant("P3.run-wide-redirects");
    let rec = r.probe("P3.run-wide-redirects").expect("record");
    assert!(
        rec.reason.contains("P4.metadata-sdist: GET /files/")
            && rec.reason.contains("ec_tripwire-0.1.0.tar.gz")
            && rec.reason.contains("-> 302 to http://127.0.0.9:9/"),
        "{}",
        rec.reason
    );
    assert!(rec.exchanges.is_empty(), "a run-wide rule sends nothing");
}

/// A mirror whose replicas disagree changes a page with no write at all:
/// that is P5's finding, and P6.effect cannot lay it on the writes.
#[test]
fn a_page_that_changes_without_writes_is_p5s_not_p6s() {
    let r = run_mutant("replicas-disagree");
    let stable = r.probe("P5.stable-bytes").expect("P5.stable-bytes");
    assert_eq!(stable.status, Status::Fail, "{}", stable.reason);
    assert!(
        stable.reason.contains("P6.effect: the index"),
        "{}",
        stable.reason
    );
    let effect = r.probe("P6.effect").expect("P6.effect");
    assert_eq!(effect.status, Status::Inconclusive, "{}", effect.reason);
    assert!(
        effect
            .reason
            .contains("changed without any write: see P5.stable-bytes"),
        "{}",
        effect.reason
    );
    assert_eq!(r.predicate("P5").map(|p| p.status), Some(Status::Fail));
    assert_ne!(r.predicate("P6").map(|p| p.status), Some(Status::Fail));
}

/// The smuggling mutant: a front framing by Content-Length alone passes the
/// body of a CL.TE request on whole (no desync there), but reads the
/// request hidden behind a TE.CL one as the next and serves it; the reason
/// names the case and the exchange.
#[test]
fn a_front_framing_by_content_length_serves_the_hidden_request() {
    let r = run_mutant("P3.request-smuggling");
    let rec = r.probe("P3.request-smuggling").expect("record");
    assert_eq!(rec.status, Status::Fail, "{}", rec.reason);
    assert!(
        rec.reason.contains("te-cl (chunked covers the smuggled request, Content-Length ends before it): POST / was answered 405, then 200, 400 on the same connection with the hidden target's page"),
        "{}",
        rec.reason
    );
    let cl_te = rec
        .exchanges
        .iter()
        .find(|e| e.label == "smuggling case cl-te")
        .expect("cl-te recorded");
    assert_eq!(cl_te.status(), Some(405), "{}", cl_te.summary());
}

/// The HTTP/2 mutant: an h2c front that routes by `:authority` takes the
/// request whose `:authority` names the canary (and whose `host` names the
/// target) there; the reason names the case, its 200 and the token the
/// canary saw.
#[test]
fn an_h2_front_routing_by_authority_is_named() {
    let r = run_mutant("P3.h2-smuggling");
    let rec = r.probe("P3.h2-smuggling").expect("record");
    assert_eq!(rec.status, Status::Fail, "{}", rec.reason);
    for words in [
        "h2-authority-host-mismatch (:authority naming the upstream, host naming the target)",
        "was answered 200 on stream 3",
        "its token reached the upstream as GET /simple/ec-present/?ec=ecm",
    ] {
        assert!(rec.reason.contains(words), "{}", rec.reason);
    }
}

/// Each attestation mutant fails P5.instance-attestation naming its fault,
/// and the mirror started on another snapshot fails --expect-snapshot
/// naming both IDs.
#[test]
fn attestation_faults_are_named() {
    let cases = [
        (
            "attest-replayed-nonce",
            "P5.instance-attestation",
            "a replayed or precomputed statement",
        ),
        (
            "attest-uncertified-key",
            "P5.instance-attestation",
            "is not certified",
        ),
        (
            "attest-wrong-certificate",
            "P5.instance-attestation",
            "it certifies instance key",
        ),
        (
            "attest-foreign-certificate",
            "P5.instance-attestation",
            "not certified by an allowed lab key",
        ),
        (
            "attest-another-snapshot",
            "P5.instance-attestation",
            "another snapshot's statement",
        ),
        (
            "P5.expected-snapshot",
            "P5.expected-snapshot",
            "not the expected",
        ),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&(kind, probe, words)| {
            std::thread::spawn(move || (run_mutant(kind), kind, probe, words))
        })
        .collect();
    for run in runs {
        let (report, kind, probe, words) = run.join().expect("mutant run");
        let rec = report.probe(probe).expect("record");
        assert_eq!(rec.status, Status::Fail, "{kind}: {}", rec.reason);
        assert!(rec.reason.contains(words), "{kind}: {}", rec.reason);
    }
}

/// The unmodified reference passes the whole chain: its instance key is
/// certified by the demonstration key for the snapshot it serves.
#[test]
fn the_reference_attests_its_instance() {
    let report = run_mutant("none");
    let rec = report.probe("P5.instance-attestation").expect("record");
    assert_eq!(rec.status, Status::Pass, "{}", rec.reason);
    assert!(
        rec.reason
            .contains("certified by built-in-reference@egress-conformance")
            && rec.reason.contains("the one served and expected"),
        "{}",
        rec.reason
    );
    let expected = report.probe("P5.expected-snapshot").expect("record");
    assert_eq!(expected.status, Status::Pass, "{}", expected.reason);
}

/// A page serving one file newer than the signed cutoff, and one whose
/// upload time is rewritten to an earlier time still before it: both FAIL
/// P5.cutoff naming the page, the file and both times, and nothing else
/// (no other sub-probe holds that page to the manifest). The reference
/// passes it, with its times compared.
#[test]
fn cutoff_faults_are_p5_cutoffs_alone() {
    let cases = [
        (
            "P5.cutoff-after",
            "/simple/ec-template-text/ serves ec_template_text-1.0.0-py3-none-any.whl with upload time 2025-07-01T00:00:00.000000Z, after the signed cutoff 2025-06-01T00:00:00Z; SNAPSHOT.json records 2025-01-01T",
        ),
        (
            "P5.cutoff-rewritten",
            "/simple/ec-template-text/ serves ec_template_text-1.0.0-py3-none-any.whl with upload time 2024-12-01T00:00:00.000000Z, SNAPSHOT.json records 2025-01-01T",
        ),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&(kind, words)| std::thread::spawn(move || (run_mutant(kind), kind, words)))
        .collect();
    for run in runs {
        let (report, kind, words) = run.join().expect("mutant run");
        mutant::assert_fails(&report, kind, "P5.cutoff");
        let rec = report.probe("P5.cutoff").expect("record");
        assert!(rec.reason.starts_with(words), "{kind}: {}", rec.reason);
        for p in report.probes.iter().filter(|p| p.id != "P5.cutoff") {
            assert!(
                p.status == Status::Pass
                    || mutant::skipped_for_plain_http(p)
                    || mutant::skipped_without_times(p),
                "{kind}: {} {} {}",
                p.id,
                p.status,
                p.reason
            );
        }
    }
    let reference = run_mutant("none");
    let rec = reference.probe("P5.cutoff").expect("record");
    assert_eq!(rec.status, Status::Pass, "{}", rec.reason);
    assert!(
        rec.reason
            .contains("of the 3 JSON project pages SNAPSHOT.json lists")
            && rec
                .reason
                .contains("none after the signed cutoff 2025-06-01T00:00:00Z"),
        "{}",
        rec.reason
    );
}
