//! The npm counterpart of `mutants.rs`: every npm sub-probe fails on a
//! mirror that violates exactly what it checks, and passes on the reference.
//! Each mutant is the npm reference mirror (A), the real
//! [`egress_mirror::Mirror`] serving the demonstration npm snapshot, with one
//! behaviour changed; other sub-probes may fail as a consequence, but the one
//! named must.
//!
//! Where a mutant needs an upstream it asks the npm canary over a raw
//! loopback socket, as a pull-through registry would, and rewrites the
//! canary's tarball URLs onto its own origin, as such registries do.

mod common;

use common::h2_front::{Fault, H2Front};
use common::lax_front::LaxFront;
use common::mutant::{self, attestor_for, body_of, with_body, AttestState, OTHER_CREATED};
use egress_http::{Handler, Limits, Method, Reply, Request, Response, Server};
use egress_mirror::Mirror;
use egress_model::{Status, Url};
use egress_references::npm::builtin::{
    demo_npm_snapshot, demo_npm_snapshot_at, run_npm_against, start_npm_canary,
};
use egress_references::npm::canary::{
    BAD_INTEGRITY, NO_INTEGRITY, OFFSITE, PRESENT, TEMPLATE, TRIPWIRE, UPSTREAM_ONLY,
};
use egress_references::render_template;
use egress_snapshot::{well_known, Snapshot};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The media type of abbreviated packuments.
const ABBREVIATED: &str = "application/vnd.npm.install-v1+json";
const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n";
/// The lifecycle scripts npm runs when it installs a package.
const INSTALL_SCRIPTS: [&str; 3] = ["preinstall", "install", "postinstall"];

/// What exists only once the listener is bound: the snapshot's packuments
/// carry absolute tarball URLs on the mirror's own address.
struct Late {
    mirror: Mirror,
    snapshot: Arc<Snapshot>,
    /// `http://127.0.0.1:PORT`
    origin: String,
}

struct Mutant {
    kind: &'static str,
    late: OnceLock<Late>,
    /// The npm canary's registry origin and its CDN origin.
    canary: String,
    cdn: String,
    count: AtomicUsize,
    /// Publish documents the mutant kept, by packument path.
    published: Mutex<HashMap<String, Vec<u8>>>,
    attest: AttestState,
}

// ------------------------------------------------------------------ helpers

fn json_reply(status: u16, doc: &Value) -> Reply {
    Response::new(status)
        .with_header("Content-Type", "application/json")
        .with_body(doc.to_string())
        .into()
}

fn strip_integrity(dist: &mut Value) {
    if let Some(d) = dist.as_object_mut() {
        d.remove("integrity");
    }
}

/// `/<name>/-/<name>-<version>.tgz` (scoped names in either spelling) as
/// `(name, version)`.
fn tarball_of(path: &str) -> Option<(String, String)> {
    let (name, file) = path.strip_prefix('/')?.split_once("/-/")?;
    let name = name.replace("%2f", "/").replace("%2F", "/");
    let bare = name.rsplit('/').next()?;
    let version = file
        .strip_prefix(bare)?
        .strip_prefix('-')?
        .strip_suffix(".tgz")?;
    Some((name.clone(), version.to_string()))
}

/// Whether `path` is `/<name>` or below it.
fn of_package(path: &str, name: &str) -> bool {
    path.strip_prefix('/')
        .and_then(|p| p.strip_prefix(name))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `/<name>/<version-or-tag>` for an unscoped name.
fn version_route(path: &str) -> Option<(&str, &str)> {
    let (name, rest) = path.strip_prefix('/')?.split_once('/')?;
    let ok = !name.is_empty()
        && !name.starts_with(['@', '-', '.'])
        && !rest.is_empty()
        && !rest.contains('/')
        && rest != "-";
    ok.then_some((name, rest))
}

/// Where a registry that writes packages accepts a document: not `/-/...`.
fn package_path(path: &str) -> bool {
    path.len() > 1 && !path.starts_with("/-/") && !path.starts_with("/.")
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match (
            s[i],
            s.get(i + 1).and_then(|&b| hex(b)),
            s.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

fn replace(s: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// A lenient UTF-8 decoder that accepts overlong forms of `.`, `/` and `\`.
fn overlong(s: &[u8]) -> Vec<u8> {
    let s = replace(s, &[0xe0, 0x80, 0xae], b".");
    let s = replace(&s, &[0xc0, 0xae], b".");
    let s = replace(&s, &[0xc0, 0xaf], b"/");
    replace(&s, &[0xc1, 0x9c], b"\\")
}

/// The path a registry that maps requests onto its storage directory sees,
/// with the decoder that each traversal mutant gets wrong.
fn storage_path(kind: &str, path: &str) -> Vec<u8> {
    let raw = path.as_bytes();
    match kind {
        "P3.dotdot-percent" => percent_decode(raw),
        "P3.dotdot-double" => percent_decode(&percent_decode(raw)),
        "P3.dotdot-backslash" => replace(&percent_decode(&percent_decode(raw)), b"\\", b"/"),
        "P3.dotdot-overlong" => replace(&overlong(&percent_decode(raw)), b"\\", b"/"),
        _ => raw.to_vec(),
    }
}

/// Whether that storage path climbs out of the storage directory to a file
/// the host has.
fn escapes_to_passwd(kind: &str, path: &str) -> bool {
    let p = storage_path(kind, path);
    p.windows(3).any(|w| w == b"../") && p.ends_with(b"etc/passwd")
}

/// The `http://` URLs in the install scripts of a package.json document.
fn script_urls(manifest: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for script in INSTALL_SCRIPTS {
        let text = manifest["scripts"][script].as_str().unwrap_or_default();
        let mut rest = text;
        while let Some(i) = rest.find("http://") {
            let from = &rest[i..];
            let end = from
                .find(|c: char| !c.is_ascii_graphic() || "'\"`()\\<>".contains(c))
                .unwrap_or(from.len());
            out.push(from[..end].to_string());
            rest = &from[end..];
        }
    }
    out
}

/// `http://host:port/path` as `("http://host:port", "/path")`.
fn split_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    Some((format!("http://{authority}"), path.to_string()))
}

struct Fetched {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

/// A plain GET over a raw socket (the mutant's "upstream client"), to
/// loopback addresses only: nothing here may leave the machine.
fn upstream_get(origin: &str, target: &str, accept: &str) -> Option<Fetched> {
    let authority = origin.strip_prefix("http://")?;
    let addr: SocketAddr = authority.parse().ok()?;
    if !addr.ip().is_loopback() {
        return None;
    }
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {authority}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let end = out.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    Some(Fetched {
        status,
        content_type,
        body: out[end + 4..].to_vec(),
    })
}

// ------------------------------------------------------------------ mutant

impl Mutant {
    fn late(&self) -> &Late {
        self.late.get().expect("the snapshot is set before the run")
    }

    fn inner(&self, req: Request) -> Response {
        match self.late().mirror.handle(req) {
            Reply::Response(r) => r,
            _ => Response::new(500),
        }
    }

    fn pass(&self, req: Request) -> Reply {
        Reply::Response(self.inner(req))
    }

    /// The mirror's answer to a GET of `target` with `accept`.
    fn inner_get(&self, req: &Request, target: &str, accept: &str) -> Response {
        self.inner(Request {
            method: Method::Get,
            target: target.into(),
            version: "HTTP/1.1".into(),
            headers: vec![("Accept".into(), accept.into())],
            body: Vec::new(),
            peer: req.peer,
        })
    }

    /// The mirror's answer with `edit` applied to it, if it is a packument.
    fn edit_packument(&self, req: Request, edit: impl FnOnce(&mut Value)) -> Reply {
        let r = self.inner(req);
        let doc = serde_json::from_slice::<Value>(&body_of(&r))
            .ok()
            .filter(|d| d["versions"].is_object());
        match doc {
            Some(mut doc) if r.status == 200 => {
                edit(&mut doc);
                with_body(r, serde_json::to_vec(&doc).unwrap_or_default())
            }
            _ => Reply::Response(r),
        }
    }

    /// [`Mutant::edit_packument`], on every version's `dist`.
    fn edit_dists(&self, req: Request, edit: impl Fn(&mut Value)) -> Reply {
        self.edit_packument(req, |doc| {
            if let Some(versions) = doc["versions"].as_object_mut() {
                versions.values_mut().for_each(|v| edit(&mut v["dist"]));
            }
        })
    }

    /// The upstream's answer to the same request, the canary's origins in
    /// its documents rewritten onto the mirror's own.
    fn relay(&self, origin: &str, target: &str, accept: &str) -> Reply {
        let Some(up) = upstream_get(origin, target, accept) else {
            return Response::text(502, "bad gateway\n").into();
        };
        let mut body = up.body;
        if up.content_type.contains("json") {
            let own = self.late().origin.as_bytes();
            body = replace(&body, self.canary.as_bytes(), own);
            body = replace(&body, self.cdn.as_bytes(), own);
        }
        Response::new(up.status)
            .with_header("Content-Type", up.content_type)
            .with_body(body)
            .into()
    }

    /// An absolute URL (or `//authority/path`) fetched on the client's behalf.
    fn forward(&self, url: &str, accept: &str) -> Reply {
        match split_url(url) {
            Some((origin, path)) => self.relay(&origin, &path, accept),
            None => Response::text(502, "bad gateway\n").into(),
        }
    }

    /// What a registry that "scans" packages does when a tarball is served:
    /// it runs the version's install scripts. Their text is read from the
    /// upstream's version document, which carries the tarball's
    /// package.json; running them is modelled as performing every `http://`
    /// request they name, to loopback only.
    fn run_install_scripts(&self, name: &str, version: &str) {
        let Some(doc) = upstream_get(
            &self.canary,
            &format!("/{name}/{version}"),
            "application/json",
        )
        .and_then(|f| serde_json::from_slice::<Value>(&f.body).ok()) else {
            return;
        };
        for url in script_urls(&doc) {
            if let Some((origin, path)) = split_url(&url) {
                let _ = upstream_get(&origin, &path, "*/*");
            }
        }
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
        let method = req.method.clone();
        let get = method == "GET" || method == "HEAD";
        let accept = req.header("accept").unwrap_or("*/*").to_string();
        let abbreviated = accept.contains(ABBREVIATED);
        let tarball = tarball_of(&path);
        let own = self.late().origin.clone();
        match self.kind {
            // ---------------------------------------------------------- P1
            "P1.integrity-full" if get && !abbreviated => self.edit_dists(req, strip_integrity),
            "P1.integrity-abbreviated" if get && abbreviated => {
                self.edit_dists(req, strip_integrity)
            }
            "P1.bytes-match" if get && tarball.is_some() => {
                let r = self.inner(req);
                let mut b = body_of(&r);
                if let Some(last) = b.last_mut() {
                    *last ^= 0xff;
                }
                with_body(r, b)
            }
            // `npm view name@version` answered from metadata kept without
            // the integrity.
            "P1.version-document" if get && version_route(&path).is_some() => {
                let (name, wanted) = version_route(&path).unwrap_or_default();
                let full = self.inner_get(&req, &format!("/{name}"), "application/json");
                let doc: Value = serde_json::from_slice(&body_of(&full)).unwrap_or_default();
                let version = doc["dist-tags"][wanted].as_str().unwrap_or(wanted);
                let mut v = doc["versions"][version].clone();
                if !v.is_object() {
                    return self.pass(req);
                }
                strip_integrity(&mut v["dist"]);
                json_reply(200, &v)
            }
            "P1.upstream-no-integrity" if get && of_package(&path, NO_INTEGRITY) => {
                self.relay(&self.canary, &target, &accept)
            }
            "P1.upstream-bad-integrity" if get && of_package(&path, BAD_INTEGRITY) => {
                self.relay(&self.canary, &target, &accept)
            }
            // ---------------------------------------------------------- P2
            "P2.absent-packument"
                if get && of_package(&path, UPSTREAM_ONLY) && tarball.is_none() =>
            {
                self.relay(&self.canary, &target, &accept)
            }
            "P2.absent-tarball" if get && of_package(&path, UPSTREAM_ONLY) && tarball.is_some() => {
                self.relay(&self.canary, &target, &accept)
            }
            // A pull-through registry: the package's packument from the
            // upstream, its tarballs from wherever the upstream keeps them.
            "P2.offsite-tarball" if get && of_package(&path, OFFSITE) => {
                let from = if tarball.is_some() {
                    &self.cdn
                } else {
                    &self.canary
                };
                self.relay(from, &target, &accept)
            }
            // Packuments that send the client to the upstream for tarballs.
            "P2.offsite-listing" if get => {
                let canary = self.canary.clone();
                self.edit_dists(req, |d| {
                    if let Some(t) = d["tarball"].as_str() {
                        d["tarball"] = t.replace(&own, &canary).into();
                    }
                })
            }
            // Revalidates every packument it serves with the upstream.
            "P2.upstream-contact" if get && tarball.is_none() => {
                let r = self.inner(req);
                if r.status == 200 && !path.starts_with("/.well-known/") {
                    let _ = upstream_get(&self.canary, &target, &accept);
                }
                Reply::Response(r)
            }
            // ---------------------------------------------------------- P3
            "P3.absolute-form" if lower.starts_with("http://") => self.forward(&target, &accept),
            "P3.connect" if method == "CONNECT" => Response::new(200).into(),
            kind @ ("P3.dotdot-raw"
            | "P3.dotdot-percent"
            | "P3.dotdot-double"
            | "P3.dotdot-backslash"
            | "P3.dotdot-overlong")
                if escapes_to_passwd(kind, &path) =>
            {
                Response::text(200, PASSWD).into()
            }
            "P3.double-slash" if path.starts_with("//") => {
                self.forward(&format!("http:{target}"), &accept)
            }
            // Decodes a scoped name it does not hold and asks the upstream.
            "P3.scoped-encodings"
                if get
                    && (lower.starts_with("/%40")
                        || (path.starts_with("/@") && lower.contains("%25"))) =>
            {
                let decoded = percent_decode(target.as_bytes());
                match String::from_utf8(decoded) {
                    Ok(t) if t.bytes().all(|b| b.is_ascii_graphic()) => {
                        self.relay(&self.canary, &t, &accept)
                    }
                    _ => self.pass(req),
                }
            }
            "P3.host-headers" if get && req.header("x-forwarded-host").is_some() => {
                let public = format!(
                    "{}://{}",
                    req.header("x-forwarded-proto").unwrap_or("http"),
                    req.header("x-forwarded-host").unwrap_or_default()
                );
                self.edit_dists(req, |d| {
                    if let Some(t) = d["tarball"].as_str() {
                        d["tarball"] = t.replace(&own, &public).into();
                    }
                })
            }
            "P3.registry-routes" if get && path == "/-/whoami" => {
                json_reply(200, &json!({ "username": "anonymous" }))
            }
            "P3.registry-routes" if get && path.starts_with("/-/all") => {
                json_reply(200, &json!({ "_updated": 0 }))
            }
            // A web UI's fallback: unknown `/-/` routes get its index page.
            "P3.unknown-route" if get && path.starts_with("/-/") => {
                let r = self.inner(req);
                if r.status == 404 {
                    return Response::new(200)
                        .with_header("Content-Type", "text/html")
                        .with_body("<!DOCTYPE html><title>registry</title><div id=app></div>\n")
                        .into();
                }
                Reply::Response(r)
            }
            // Hands the client to the upstream for the tarballs it holds.
            "P3.offsite-redirect" if get && tarball.is_some() => {
                let r = self.inner(req);
                if r.status != 200 {
                    return Reply::Response(r);
                }
                Response::new(302)
                    .with_header("Location", format!("{}{path}", self.canary))
                    .into()
            }
            // ---------------------------------------------------------- P4
            "P4.tripwire" if get && tarball.is_some() => {
                let r = self.inner(req);
                if let (200, Some((name, version))) = (r.status, &tarball) {
                    self.run_install_scripts(name, version);
                }
                Reply::Response(r)
            }
            // A web UI that renders the package's README through a template
            // engine (the README as the upstream lists it).
            "P4.template-text" if get && path.starts_with("/-/verdaccio/data/package/readme/") => {
                let name = &path["/-/verdaccio/data/package/readme/".len()..];
                let readme = upstream_get(&self.canary, &format!("/{name}"), "application/json")
                    .and_then(|f| serde_json::from_slice::<Value>(&f.body).ok())
                    .and_then(|d| d["readme"].as_str().map(str::to_string));
                match readme {
                    Some(text) => Response::new(200)
                        .with_header("Content-Type", "text/html")
                        .with_body(render_template(&text))
                        .into(),
                    None => self.pass(req),
                }
            }
            // ---------------------------------------------------------- P5
            "P5.manifest" if path == well_known::MANIFEST => {
                Response::text(404, "no manifest\n").into()
            }
            "P5.chain" if path == well_known::MANIFEST || path == well_known::SNAPSHOT_JSON => {
                let (manifest, doc) = mutant::claimed_layer(&self.late().snapshot);
                let body = if path == well_known::MANIFEST {
                    manifest
                } else {
                    doc
                };
                Response::text(200, &body).into()
            }
            "P5.signature" if path == well_known::SIGNATURE => {
                let other = egress_signing::SigningKey::from_seed([7; 32], "someone-else");
                Response::text(
                    200,
                    &other.sign(
                        egress_signing::SNAPSHOT_NAMESPACE,
                        &self.late().snapshot.manifest_bytes,
                    ),
                )
                .into()
            }
            // Lists a version the snapshot does not hold (an alias of latest).
            "P5.served-in-manifest" if get && of_package(&path, PRESENT) && tarball.is_none() => {
                self.edit_packument(req, |doc| {
                    let latest = doc["dist-tags"]["latest"].as_str().unwrap_or_default();
                    let mut v = doc["versions"][latest].clone();
                    v["version"] = "1.2.0".into();
                    doc["versions"]["1.2.0"] = v;
                })
            }
            // Serves the present package's latest version as published
            // after the signed cutoff.
            "P5.cutoff" if get && of_package(&path, PRESENT) && tarball.is_none() => self
                .edit_packument(req, |doc| {
                    let latest = doc["dist-tags"]["latest"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    if doc.get("time").is_some() {
                        doc["time"][latest] = "2025-07-01T00:00:00.000Z".into();
                    }
                }),
            // Rewrites the template package's latest publish time to an
            // earlier one, still before the cutoff, on a packument no other
            // sub-probe holds to the manifest.
            "P5.cutoff-rewritten" if get && !abbreviated && path == format!("/{TEMPLATE}") => self
                .edit_packument(req, |doc| {
                    let latest = doc["dist-tags"]["latest"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    if let Some(t) = doc.get_mut("time").and_then(|t| t.get_mut(&latest)) {
                        *t = "2024-12-01T00:00:00.000Z".into();
                    }
                }),
            "P5.run-wide-snapshot" => mutant::other_replica(&self.count, self.inner(req)),
            "P5.stable-bytes" if get && tarball.is_some() => {
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
            // The present package as the upstream has it now.
            "P5.upstream"
                if get
                    && (path == format!("/{PRESENT}")
                        || tarball.as_ref().is_some_and(|(n, _)| n == PRESENT)) =>
            {
                self.relay(&self.canary, &target, &accept)
            }
            // ---------------------------------------------------------- P6
            "P6.publish" if method == "PUT" && package_path(&path) && !path.contains("/-rev/") => {
                json_reply(
                    201,
                    &json!({ "ok": "created new package", "success": true }),
                )
            }
            "P6.unpublish"
                if (method == "DELETE" && package_path(&path))
                    || (method == "PUT" && path.contains("/-rev/")) =>
            {
                json_reply(200, &json!({ "ok": true }))
            }
            "P6.dist-tags"
                if !get && path.starts_with("/-/package/") && path.contains("/dist-tags") =>
            {
                json_reply(201, &json!({ "ok": true }))
            }
            "P6.adduser" if method == "PUT" && path.starts_with("/-/user/org.couchdb.user:") => {
                json_reply(201, &json!({ "ok": true, "token": "npm_made-up" }))
            }
            "P6.login-tokens"
                if [
                    "/-/v1/login",
                    "/-/npm/v1/tokens",
                    "/-/npm/v1/user",
                    "/-/user/token/",
                ]
                .iter()
                .any(|p| path.starts_with(p)) =>
            {
                json_reply(
                    200,
                    &json!({ "ok": true, "token": "npm_made-up", "objects": [] }),
                )
            }
            // Verdaccio's audit middleware: the body goes upstream, the
            // client gets a refusal.
            "P6.vendor-routes" if method == "POST" && path.starts_with("/-/npm/v1/security/") => {
                let _ = upstream_get(&self.canary, &target, "application/json");
                Response::text(404, "not found\n").into()
            }
            "P6.webdav" if method == "PROPFIND" => Response::new(207)
                .with_header("Content-Type", "application/xml")
                .with_body("<multistatus xmlns=\"DAV:\"/>")
                .into(),
            "P6.trace" if method == "TRACE" => {
                Response::text(200, &format!("TRACE {target} HTTP/1.1\r\n")).into()
            }
            // Refuses the publish, after keeping it.
            "P6.effect" if method == "PUT" && package_path(&path) && !path.contains("/-rev/") => {
                if let Ok(mut doc) = serde_json::from_slice::<Value>(&req.body) {
                    if let Some(d) = doc.as_object_mut() {
                        d.remove("_attachments");
                    }
                    let mut kept = self.published.lock().expect("lock");
                    kept.insert(path, serde_json::to_vec(&doc).unwrap_or_default());
                }
                json_reply(403, &json!({ "error": "forbidden" }))
            }
            "P6.effect" if get => {
                let kept = self.published.lock().expect("lock").get(&path).cloned();
                match kept {
                    Some(doc) => Response::new(200)
                        .with_header("Content-Type", "application/json")
                        .with_body(doc)
                        .into(),
                    None => self.pass(req),
                }
            }
            // ---------------------------------------------- run-wide rules
            // `npm view name@version` answered by a redirect to the
            // upstream, which P1.version-document reads as a refusal.
            "P3.run-wide-redirects" if get && version_route(&path).is_some() => Response::new(302)
                .with_header("Location", format!("{}{path}", self.canary))
                .into(),
            // Wrong bytes only for the tripwire's tarball, which only
            // P4.tripwire fetches (and does not check against its listing).
            "P1.run-wide-digests"
                if get && tarball.as_ref().is_some_and(|(n, _)| n == TRIPWIRE) =>
            {
                let r = self.inner(req);
                let mut b = body_of(&r);
                if let Some(last) = b.last_mut() {
                    *last ^= 0xff;
                }
                with_body(r, b)
            }
            // Answers `npm audit` itself, as many registries do: a POST that
            // only P3.registry-routes sends.
            "P6.run-wide-writes" if method == "POST" && path.starts_with("/-/npm/v1/security/") => {
                json_reply(200, &json!({}))
            }
            // Replicas that disagree on `latest`: every other read of the
            // present package's packuments moves it, with no upstream change.
            "tag-flaps" if get && path == format!("/{PRESENT}") => {
                let odd = self.count.fetch_add(1, Ordering::SeqCst) % 2 == 1;
                self.edit_packument(req, |doc| {
                    if odd {
                        doc["dist-tags"]["latest"] = "1.0.0".into();
                    }
                })
            }
            // Replicas that disagree: every other read of the present
            // package's full packument carries other bytes, with no write
            // anywhere.
            "replicas-disagree" if get && !abbreviated && path == format!("/{PRESENT}") => {
                let odd = self.count.fetch_add(1, Ordering::SeqCst) % 2 == 1;
                self.edit_packument(req, |doc| {
                    if odd {
                        doc["_replica"] = "the other one".into();
                    }
                })
            }
            _ => self.pass(req),
        }
    }
}

fn run_mutant(kind: &'static str) -> egress_suite::Report {
    let canary = start_npm_canary().unwrap_or_else(|e| panic!("{e}"));
    let mutant = Arc::new(Mutant {
        kind,
        late: OnceLock::new(),
        canary: canary.base_url(),
        cdn: canary.offsite_origin(),
        count: AtomicUsize::new(0),
        published: Mutex::default(),
        attest: AttestState::default(),
    });
    let handler = Arc::clone(&mutant);
    let server = Server::bind(
        "127.0.0.1:0",
        move |req: Request| handler.handle(req),
        Limits::default(),
    )
    .expect("bind");
    // The smuggling mutant is the mirror behind a front that frames by
    // Content-Length alone and serves whatever follows on the connection;
    // the snapshot names the front's origin, which clients see.
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
    let origin = front
        .as_ref()
        .map(LaxFront::base_url)
        .or_else(|| h2_front.as_ref().map(H2Front::base_url))
        .unwrap_or_else(|| server.base_url());
    let registry = format!("{origin}/");
    // A mirror started on another snapshot: the same content, another ID.
    let snapshot = match kind {
        "P5.expected-snapshot" => demo_npm_snapshot_at(&canary, &registry, OTHER_CREATED),
        _ => demo_npm_snapshot(&canary, &registry),
    };
    let snapshot = Arc::new(snapshot.unwrap_or_else(|e| panic!("{e}")));
    if kind == "attest-another-snapshot" {
        let other = demo_npm_snapshot_at(&canary, &registry, OTHER_CREATED)
            .unwrap_or_else(|e| panic!("{e}"));
        let id = other.id();
        let _ = mutant
            .attest
            .other
            .set(Mirror::new(Arc::new(other)).attest(attestor_for("none", id)));
    }
    let _ = mutant.late.set(Late {
        mirror: Mirror::new(Arc::clone(&snapshot)).attest(attestor_for(kind, snapshot.id())),
        snapshot,
        origin,
    });
    let url = Url::parse(&registry).expect("registry URL");
    let report = run_npm_against(kind, &url, &canary).unwrap_or_else(|e| panic!("{e}"));
    server.stop();
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

        /// Every sub-probe of the npm catalog (controls aside) has a mutant above.
        #[test]
        fn every_sub_probe_has_a_mutant() {
            let covered = [$($probe),*];
            for sp in egress_suite::npm::TABLE.iter().filter(|s| s.predicate != "C") {
                assert!(covered.contains(&sp.id.as_str()), "no mutant for {}", sp.id);
            }
            for id in covered {
                assert!(
                    egress_suite::npm::TABLE.iter().any(|s| s.id == id),
                    "{id} is not an npm sub-probe"
                );
            }
        }
    };
}

mutants! {
    p1_integrity_full: "P1.integrity-full" => "P1.integrity-full";
    p1_integrity_abbreviated: "P1.integrity-abbreviated" => "P1.integrity-abbreviated";
    p1_bytes_match: "P1.bytes-match" => "P1.bytes-match";
    p1_version_document: "P1.version-document" => "P1.version-document";
    p1_upstream_no_integrity: "P1.upstream-no-integrity" => "P1.upstream-no-integrity";
    p1_upstream_bad_integrity: "P1.upstream-bad-integrity" => "P1.upstream-bad-integrity";
    p2_absent_packument: "P2.absent-packument" => "P2.absent-packument";
    p2_absent_tarball: "P2.absent-tarball" => "P2.absent-tarball";
    p2_offsite_tarball: "P2.offsite-tarball" => "P2.offsite-tarball";
    p2_offsite_listing: "P2.offsite-listing" => "P2.offsite-tarball";
    p2_upstream_contact: "P2.upstream-contact" => "P2.upstream-contact";
    p3_absolute_form: "P3.absolute-form" => "P3.absolute-form";
    p3_connect: "P3.connect" => "P3.connect";
    p3_dotdot_raw: "P3.dotdot-raw" => "P3.dotdot-raw";
    p3_dotdot_percent: "P3.dotdot-percent" => "P3.dotdot-percent";
    p3_dotdot_double: "P3.dotdot-double" => "P3.dotdot-double";
    p3_dotdot_backslash: "P3.dotdot-backslash" => "P3.dotdot-backslash";
    p3_dotdot_overlong: "P3.dotdot-overlong" => "P3.dotdot-overlong";
    p3_double_slash: "P3.double-slash" => "P3.double-slash";
    p3_scoped_encodings: "P3.scoped-encodings" => "P3.scoped-encodings";
    p3_host_headers: "P3.host-headers" => "P3.host-headers";
    p3_registry_routes: "P3.registry-routes" => "P3.registry-routes";
    p3_unknown_route: "P3.unknown-route" => "P3.unknown-route";
    p3_offsite_redirect: "P3.offsite-redirect" => "P3.offsite-redirect";
    p3_request_smuggling: "P3.request-smuggling" => "P3.request-smuggling";
    p3_h2_smuggling: "P3.h2-smuggling" => "P3.h2-smuggling";
    p4_tripwire: "P4.tripwire" => "P4.tripwire";
    p4_template_text: "P4.template-text" => "P4.template-text";
    p5_manifest: "P5.manifest" => "P5.manifest";
    p5_signature: "P5.signature" => "P5.signature";
    p5_chain: "P5.chain" => "P5.chain";
    p5_served_in_manifest: "P5.served-in-manifest" => "P5.served-in-manifest";
    p5_stable_bytes: "P5.stable-bytes" => "P5.stable-bytes";
    p5_run_wide_snapshot: "P5.run-wide-snapshot" => "P5.run-wide-snapshot";
    p5_cutoff: "P5.cutoff" => "P5.cutoff";
    p5_expected_snapshot: "P5.expected-snapshot" => "P5.expected-snapshot";
    p5_attest_replayed_nonce: "attest-replayed-nonce" => "P5.instance-attestation";
    p5_attest_uncertified_key: "attest-uncertified-key" => "P5.instance-attestation";
    p5_attest_wrong_certificate: "attest-wrong-certificate" => "P5.instance-attestation";
    p5_attest_foreign_certificate: "attest-foreign-certificate" => "P5.instance-attestation";
    p5_attest_another_snapshot: "attest-another-snapshot" => "P5.instance-attestation";
    p5_upstream_new_version: "P5.upstream" => "P5.upstream-new-version";
    p5_upstream_replaced_bytes: "P5.upstream" => "P5.upstream-replaced-bytes";
    p5_upstream_dist_tag: "P5.upstream" => "P5.upstream-dist-tag";
    p6_publish: "P6.publish" => "P6.publish";
    p6_unpublish: "P6.unpublish" => "P6.unpublish";
    p6_dist_tags: "P6.dist-tags" => "P6.dist-tags";
    p6_adduser: "P6.adduser" => "P6.adduser";
    p6_login_tokens: "P6.login-tokens" => "P6.login-tokens";
    p6_webdav: "P6.webdav" => "P6.webdav";
    p6_trace: "P6.trace" => "P6.trace";
    p6_effect: "P6.effect" => "P6.effect";
    p1_run_wide_digests: "P1.run-wide-digests" => "P1.run-wide-digests";
    p3_run_wide_redirects: "P3.run-wide-redirects" => "P3.run-wide-redirects";
    p6_run_wide_writes: "P6.run-wide-writes" => "P6.run-wide-writes";
    p6_vendor_routes: "P6.vendor-routes" => "P6.vendor-routes";
}

/// A mirror whose replicas disagree changes a packument with no write at
/// all: that is P5's finding, and P6.effect cannot lay it on the writes.
#[test]
fn a_packument_that_changes_without_writes_is_p5s_not_p6s() {
    let r = run_mutant("replicas-disagree");
    let stable = r.probe("P5.stable-bytes").expect("P5.stable-bytes");
    assert_eq!(stable.status, Status::Fail, "{}", stable.reason);
    assert!(
        stable.reason.contains("P6.effect: the packument"),
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

/// A `latest` that flaps with no upstream change is not laid on the
/// upstream's move of the tag: P5.upstream-dist-tag is INCONCLUSIVE, and P5
/// still FAILs on the instability itself.
#[test]
fn a_tag_that_flaps_before_the_upstream_moves_it_is_not_laid_on_the_move() {
    let r = run_mutant("tag-flaps");
    let tag = r
        .probe("P5.upstream-dist-tag")
        .expect("P5.upstream-dist-tag");
    assert_eq!(tag.status, Status::Inconclusive, "{}", tag.reason);
    assert!(tag.reason.contains("see P5.stable-bytes"), "{}", tag.reason);
    let stable = r.probe("P5.stable-bytes").expect("P5.stable-bytes");
    assert_eq!(stable.status, Status::Fail, "{}", stable.reason);
}

/// The two cutoff faults, named by P5.cutoff: the present package's latest
/// version served as published after the signed cutoff (P5.served-in-manifest
/// sees the same packument's other bytes: nothing outside P5 fails), and the
/// template package's publish time rewritten to an earlier one, still
/// before the cutoff, which nothing but P5.cutoff holds to the manifest.
#[test]
fn cutoff_faults_are_named_by_p5_cutoff() {
    let cases = [
        (
            "P5.cutoff",
            "/ec-present serves ec-present@",
            "after the signed cutoff 2025-06-01T00:00:00Z; SNAPSHOT.json records 2025-01-01T",
        ),
        (
            "P5.cutoff-rewritten",
            "/ec-template-text serves ec-template-text@",
            "with upload time 2024-12-01T00:00:00.000Z, SNAPSHOT.json records 2025-01-01T",
        ),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&(kind, start, words)| {
            std::thread::spawn(move || (run_mutant(kind), kind, start, words))
        })
        .collect();
    for run in runs {
        let (report, kind, start, words) = run.join().expect("mutant run");
        mutant::assert_fails(&report, kind, "P5.cutoff");
        let rec = report.probe("P5.cutoff").expect("record");
        assert!(
            rec.reason.starts_with(start) && rec.reason.contains(words),
            "{kind}: {}",
            rec.reason
        );
        for p in &report.probes {
            let alone = kind == "P5.cutoff-rewritten" || !p.id.starts_with("P5.");
            if p.id == "P5.cutoff"
                || !alone
                || mutant::skipped_for_plain_http(p)
                || mutant::skipped_without_times(p)
            {
                continue;
            }
            assert_eq!(p.status, Status::Pass, "{kind}: {} {}", p.id, p.reason);
        }
    }
}
