//! The apt counterpart of `mutants.rs`: every apt sub-probe fails on a
//! mirror that violates exactly what it checks, and passes on the
//! reference. Each mutant is the apt reference mirror (A), the real
//! [`egress_mirror::Mirror`] serving the built-in run's apt snapshot, with
//! one behaviour changed; other sub-probes may fail as a consequence, but
//! the one named must. Where a mutant needs the upstream it asks the apt
//! canary over a raw loopback socket, as a pull-through cache would.

mod common;

use common::lax_front::LaxFront;
use common::mutant::{self, body_of, with_body};
use egress_http::{Handler, Limits, Reply, Request, Response, Server};
use egress_mirror::Mirror;
use egress_model::{Sha256Digest, Url};
use egress_references::apt::builtin::{
    archive_path, demo_apt_snapshot, lab_keyring, run_apt_against, start_apt_canary,
};
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_references::builtin::demo_attestor;
use egress_references::render_template;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Mutant {
    kind: &'static str,
    mirror: Mirror,
    /// The archive root the mirror serves, e.g. `/apt/debian/`.
    archive: String,
    /// `host:port` of the canary.
    canary: String,
    count: AtomicUsize,
    /// Uploads into the pool received so far.
    writes: AtomicUsize,
    /// MANIFEST and SNAPSHOT.json claiming a layer (the "chain" mutant).
    claimed: (String, String),
}

/// GET `target` from the canary; the status and body.
fn upstream(authority: &str, method: &str, target: &str) -> (u16, Vec<u8>) {
    let Ok(mut sock) = std::net::TcpStream::connect(authority) else {
        return (502, Vec::new());
    };
    let head = format!("{method} {target} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
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

/// A target apt-cacher-ng would fetch: a release file or a `.deb`, no query.
fn debian_file(target: &str) -> bool {
    !target.contains('?')
        && ["/InRelease", "/Release", ".deb"]
            .iter()
            .any(|end| target.ends_with(end))
}

fn reply(status: u16, body: Vec<u8>) -> Reply {
    Response::new(status).with_body(body).into()
}

impl Mutant {
    /// The canary's path for a path below the archive root.
    fn on_canary(&self, target: &str) -> Option<String> {
        target
            .strip_prefix(&self.archive)
            .map(|rest| format!("{}/{rest}", apt_canary::ARCHIVE))
    }

    fn handle(&self, req: Request) -> Reply {
        let k = self.kind;
        let t = req.target.clone();
        let method = req.method.to_string();
        let write = !matches!(method.as_str(), "GET" | "HEAD");
        // An upload into the pool: refused below, but honoured in effect.
        if method == "PUT" && t.contains("/pool/") {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        match k {
            // As apt-cacher-ng does: a proxy for another host, but only for
            // what looks like a Debian file without a query (it answers 403
            // to anything else), so a probe in another protocol's shapes
            // would see it refuse.
            "absolute" if t.starts_with("http") && debian_file(&t) => {
                return reply(200, b"proxied\n".to_vec())
            }
            "connect" if method == "CONNECT" => return Response::new(200).into(),
            "remapped" if t.contains("/deb.debian.org/") || t.contains("/HTTPS///") => {
                return reply(200, b"remapped\n".to_vec())
            }
            "double-slash" if t.starts_with("//") && debian_file(&t) => {
                return reply(200, b"other host\n".to_vec())
            }
            "traversal" if t.contains("passwd") => {
                return reply(200, b"root:x:0:0:root:/root:/bin/sh\n".to_vec())
            }
            "webdav" if method == "PROPFIND" => return reply(207, b"<multistatus/>".to_vec()),
            "trace" if method == "TRACE" => return reply(200, req.target.into_bytes()),
            "vendor" if t.starts_with("/acng-report.html") => {
                return reply(200, b"<html>maintenance</html>".to_vec())
            }
            "writes" if write => return reply(200, b"ok\n".to_vec()),
            "chain" if t == "/.well-known/egress-mirror/MANIFEST" => {
                return reply(200, self.claimed.0.clone().into_bytes())
            }
            "chain" if t == "/.well-known/egress-mirror/SNAPSHOT.json" => {
                return reply(200, self.claimed.1.clone().into_bytes())
            }
            "manifest"
                if t.starts_with("/.well-known/egress-mirror/MANIFEST") && !t.contains(".sig") =>
            {
                return reply(404, Vec::new())
            }
            "indexes-forwarded" if t.contains("/dists/") => {
                if let Some(p) = self.on_canary(&t) {
                    let (s, b) = upstream(&self.canary, "GET", &p);
                    return reply(s, b);
                }
            }
            _ => {}
        }
        let r = match self.mirror.handle(req) {
            Reply::Response(r) => r,
            other => return other,
        };
        if k == "replicas" {
            return mutant::other_replica(&self.count, r);
        }
        let ok = r.status == 200;
        match k {
            "inrelease" if ok && t.ends_with("/InRelease") => {
                let b = String::from_utf8_lossy(&body_of(&r)).replacen("Label: ", "Label: x", 1);
                with_body(r, b.into_bytes())
            }
            "stable" if ok && t.ends_with("/InRelease") => {
                let n = self.count.fetch_add(1, Ordering::SeqCst);
                let mut b = body_of(&r);
                b.extend(format!("\n{n}\n").as_bytes());
                with_body(r, b)
            }
            "packages" if ok && t.ends_with("/Packages") => {
                let mut b = body_of(&r);
                b.extend(b"\n");
                with_body(r, b)
            }
            "absent-listed" if ok && t.ends_with("/Packages") => {
                let mut b = body_of(&r);
                let (_, up) = upstream(
                    &self.canary,
                    "GET",
                    "/debian/dists/canary/main/binary-amd64/Packages",
                );
                let text = String::from_utf8_lossy(&up).to_string();
                if let Some(stanza) = text
                    .split("\n\n")
                    .find(|s| s.contains(&format!("Package: {}\n", apt_canary::UPSTREAM_ONLY)))
                {
                    b.extend(format!("\n{stanza}\n").as_bytes());
                }
                with_body(r, b)
            }
            "template" if ok && t.ends_with("/Packages") => {
                let b = render_template(&String::from_utf8_lossy(&body_of(&r)));
                with_body(r, b.into_bytes())
            }
            "effect"
                if ok && t.ends_with("/Packages") && self.writes.load(Ordering::SeqCst) > 0 =>
            {
                let mut b = body_of(&r);
                b.extend(b"\nPackage: ec-uploaded\n");
                with_body(r, b)
            }
            "deb" if ok && t.ends_with(".deb") => {
                let mut b = body_of(&r);
                b.push(b'\n');
                with_body(r, b)
            }
            "tripwire" if ok && t.contains(apt_canary::TRIPWIRE) && t.ends_with(".deb") => {
                // As if the mirror unpacked the .deb and ran its postinst.
                let _ = upstream(&self.canary, "GET", "/tripwire/ec-tripwire-postinst");
                Reply::Response(r)
            }
            "signature" if ok && t.ends_with("MANIFEST.sig") => {
                let b = String::from_utf8_lossy(&body_of(&r)).replacen("AAAA", "BBBB", 1);
                with_body(r, b.into_bytes())
            }
            "forwarded" if r.status == 404 => match self.on_canary(&t) {
                Some(p) => {
                    let (s, b) = upstream(&self.canary, &method, &p);
                    reply(s, b)
                }
                None => Reply::Response(r),
            },
            "unknown" if r.status == 404 && t.starts_with(&self.archive) => {
                reply(200, b"<html>index</html>".to_vec())
            }
            "redirect" if r.status == 404 => Response::new(302)
                .with_header("Location", "http://egress-conformance.invalid/elsewhere")
                .into(),
            _ => Reply::Response(r),
        }
    }
}

fn run_mutant(kind: &'static str) -> egress_suite::Report {
    let canary: AptCanary = start_apt_canary().unwrap_or_else(|e| panic!("{e}"));
    let (snapshot, _dir) = demo_apt_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let id = snapshot.id();
    let archive = archive_path(&snapshot).expect("archive path");
    let claimed = mutant::claimed_layer(&snapshot);
    let attest_for = if kind == "attestation" {
        Sha256Digest::of(b"another snapshot")
    } else {
        id
    };
    let mirror = Mirror::new(Arc::new(snapshot))
        .attest(demo_attestor(attest_for).unwrap_or_else(|e| panic!("{e}")));
    let mutant = Arc::new(Mutant {
        kind,
        mirror,
        archive: archive.clone(),
        canary: Url::parse(&canary.base_url()).expect("url").authority(),
        count: AtomicUsize::new(0),
        writes: AtomicUsize::new(0),
        claimed,
    });
    let handler = Arc::clone(&mutant);
    let server = Server::bind(
        "127.0.0.1:0",
        move |req: Request| handler.handle(req),
        Limits::default(),
    )
    .expect("bind");
    let front = (kind == "smuggling").then(|| {
        let mut front = LaxFront::bind();
        front.serve(server.addr());
        front
    });
    let origin = front
        .as_ref()
        .map_or_else(|| server.base_url(), LaxFront::base_url);
    let url = Url::parse(&format!("{origin}{archive}")).expect("archive URL");
    let report = run_apt_against(kind, &url, &canary, lab_keyring(), Some(id))
        .unwrap_or_else(|e| panic!("{e}"));
    server.stop();
    mutant::assert_reverifies(&report, kind);
    report
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

        /// Every sub-probe of the apt catalog (controls aside) has a mutant above.
        #[test]
        fn every_sub_probe_has_a_mutant() {
            let covered = [$($probe),*];
            for sp in egress_suite::apt::TABLE.iter().filter(|s| s.predicate != "C") {
                assert!(covered.contains(&sp.id.as_str()), "no mutant for {}", sp.id);
            }
            for id in covered {
                assert!(
                    egress_suite::apt::TABLE.iter().any(|s| s.id == id),
                    "{id} is not an apt sub-probe"
                );
            }
        }
    };
}

mutants! {
    p1_release_signed: "inrelease" => "P1.release-signed";
    p1_index_digests: "packages" => "P1.index-digests";
    p1_deb_digests: "deb" => "P1.deb-digests";
    p1_upstream_uncovered: "forwarded" => "P1.upstream-uncovered";
    p1_run_wide_digests: "deb" => "P1.run-wide-digests";
    p2_absent_index: "absent-listed" => "P2.absent-index";
    p2_absent_pool: "forwarded" => "P2.absent-pool";
    p2_upstream_contact: "forwarded" => "P2.upstream-contact";
    p3_absolute_form: "absolute" => "P3.absolute-form";
    p3_proxy_style: "absolute" => "P3.proxy-style";
    p3_connect: "connect" => "P3.connect";
    p3_remapped_paths: "remapped" => "P3.remapped-paths";
    p3_double_slash: "double-slash" => "P3.double-slash";
    p3_traversal: "traversal" => "P3.traversal";
    p3_unknown_paths: "unknown" => "P3.unknown-paths";
    p3_request_smuggling: "smuggling" => "P3.request-smuggling";
    p3_run_wide_redirects: "redirect" => "P3.run-wide-redirects";
    p4_tripwire: "tripwire" => "P4.tripwire";
    p4_template_text: "template" => "P4.template-text";
    p5_manifest: "manifest" => "P5.manifest";
    p5_signature: "signature" => "P5.signature";
    p5_chain: "chain" => "P5.chain";
    p5_stable_bytes: "stable" => "P5.stable-bytes";
    p5_run_wide_snapshot: "replicas" => "P5.run-wide-snapshot";
    p5_expected_snapshot: "manifest" => "P5.expected-snapshot";
    p5_instance_attestation: "attestation" => "P5.instance-attestation";
    p5_upstream_new_version: "indexes-forwarded" => "P5.upstream-new-version";
    p5_upstream_replaced_bytes: "indexes-forwarded" => "P5.upstream-replaced-bytes";
    p6_webdav: "webdav" => "P6.webdav";
    p6_trace: "trace" => "P6.trace";
    p6_vendor_routes: "vendor" => "P6.vendor-routes";
    p6_effect: "effect" => "P6.effect";
    p6_run_wide_writes: "writes" => "P6.run-wide-writes";
}
