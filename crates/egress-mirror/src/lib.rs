//! egress-mirror: the conformant reference mirror.
//!
//! It serves one loaded, verified [`Snapshot`] and nothing else. Every
//! invariant below is a predicate of the project made structural:
//!
//! - P1 digest binding: every byte served is a blob whose digest was checked
//!   when the snapshot was loaded (`BlobStore` holds only matching bytes);
//!   files live at `/files/<sha256>/<name>` and every page carries hashes.
//! - P2 replay only: this crate has no HTTP client and no upstream setting;
//!   nothing outside the snapshot exists to be served.
//! - P3 no path passthrough: only origin-form targets; the path (query
//!   stripped) is looked up byte for byte in a table built from
//!   `SNAPSHOT.json`. No decoding, no normalisation, no filesystem, no
//!   redirects, so no encoding of `..` can mean anything.
//! - P4 no build path: responses are pre-rendered blobs; nothing is rendered,
//!   built or evaluated per request.
//! - P5 immutability: the table is built once from an immutable snapshot and
//!   every response names the snapshot ID in `X-Egress-Snapshot`.
//! - P6 no control channel: GET and HEAD only; every other method is 405.

#![forbid(unsafe_code)]

use egress_http::{Handler, Limits, Reply, Request, Response, Server, ServerHandle};
use egress_model::Sha256Digest;
use egress_simple::{negotiate, Format, HTML_V1, JSON_V1};
use egress_snapshot::{well_known, Snapshot, FILES_PREFIX, TEXT_PLAIN};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const PAGE: &str = "public, max-age=600";
/// The evidence documents describe the snapshot being served now; a client
/// checking the running instance must revalidate them every time.
const EVIDENCE: &str = "no-cache";

/// One representation: bytes and the headers that describe them.
#[derive(Debug, Clone)]
struct Rep {
    content_type: String,
    etag: String,
    cache_control: &'static str,
    body: Arc<[u8]>,
}

#[derive(Debug, Clone)]
enum Route {
    One(Rep),
    /// A simple-API page in both serialisations (PEP 691).
    Negotiated {
        html: Rep,
        json: Rep,
    },
}

/// The request handler. See the crate documentation for its rules.
#[derive(Debug)]
pub struct Mirror {
    snapshot: Arc<Snapshot>,
    id_hex: String,
    routes: HashMap<String, Route>,
}

impl Mirror {
    /// Builds the route table from the snapshot's `served` entries and its
    /// evidence documents. Call [`Snapshot::check`] first (as [`serve`]
    /// does, and as `load_dir` and the builder did): an entry whose blob is
    /// absent, or a path with an unexpected set of entries, is left out of
    /// the table here, so it is answered 404 rather than with anything
    /// unverified.
    pub fn new(snapshot: Arc<Snapshot>) -> Self {
        let mut by_path: HashMap<&str, Vec<Rep>> = HashMap::new();
        let mut incomplete = Vec::new();
        for e in &snapshot.doc.served {
            // The store holds only bytes that hash to their key, so `body`
            // matches `e.sha256` without hashing again per request.
            match snapshot.blobs.get(&e.sha256) {
                Some(body) => by_path.entry(&e.path).or_default().push(Rep {
                    content_type: e.content_type.clone(),
                    etag: etag(&e.sha256),
                    cache_control: cache_control(&e.path),
                    body,
                }),
                None => incomplete.push(e.path.as_str()),
            }
        }
        let mut routes = HashMap::new();
        for (path, mut reps) in by_path {
            if incomplete.contains(&path) {
                continue;
            }
            let route = match reps.len() {
                1 => reps.pop().map(Route::One),
                2 => {
                    let html = reps
                        .iter()
                        .position(|r| r.content_type.eq_ignore_ascii_case(HTML_V1));
                    let json = reps
                        .iter()
                        .position(|r| r.content_type.eq_ignore_ascii_case(JSON_V1));
                    match (html, json) {
                        (Some(h), Some(j)) => Some(Route::Negotiated {
                            html: reps[h].clone(),
                            json: reps[j].clone(),
                        }),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(route) = route {
                routes.insert(path.to_string(), route);
            }
        }
        // The evidence documents. `check` forbids served entries at these
        // paths; inserting last makes the evidence win regardless.
        let mut evidence = vec![
            (well_known::MANIFEST, snapshot.manifest_bytes.clone()),
            (well_known::SNAPSHOT_JSON, snapshot.doc_bytes.clone()),
        ];
        if let Some(sig) = &snapshot.signature {
            evidence.push((well_known::SIGNATURE, sig.clone().into_bytes()));
        }
        for (path, bytes) in evidence {
            let rep = Rep {
                content_type: TEXT_PLAIN.to_string(),
                etag: etag(&Sha256Digest::of(&bytes)),
                cache_control: EVIDENCE,
                body: Arc::from(bytes),
            };
            routes.insert(path.to_string(), Route::One(rep));
        }
        Self {
            id_hex: snapshot.id().to_hex(),
            snapshot,
            routes,
        }
    }

    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// Number of distinct paths answered with 200.
    pub fn path_count(&self) -> usize {
        self.routes.len()
    }

    fn respond(&self, req: &Request) -> Response {
        // P6: a mirror has nothing to change, so nothing but reads exists.
        // CONNECT lands here too: this is not a proxy.
        if req.method != "GET" && req.method != "HEAD" {
            return Response::text(
                405,
                "method not allowed: this mirror only answers GET and HEAD\n",
            )
            .with_header("Allow", "GET, HEAD");
        }
        // P3: absolute-form (`GET http://host/...`), authority-form and `*`
        // are proxy or server-wide requests; a mirror serves only its own
        // paths.
        if !req.target.starts_with('/') {
            return Response::text(
                400,
                "only origin-form request targets (starting with '/') are served\n",
            );
        }
        // The query is dropped, never interpreted (`?url=` means nothing
        // here); the path is matched exactly as received.
        let Some(route) = self.routes.get(req.path()) else {
            return Response::text(404, &format!("not in snapshot {}\n", &self.id_hex[..12]));
        };
        let (rep, content_type, negotiated) = match route {
            Route::One(rep) => (rep, rep.content_type.as_str(), false),
            Route::Negotiated { html, json } => match negotiate(joined(req, "Accept").as_deref()) {
                Some((Format::Json, ct)) => (json, ct, true),
                Some((Format::Html, ct)) => (html, ct, true),
                None => {
                    return Response::text(406, &format!("not acceptable: this page is available as {JSON_V1}, {HTML_V1} or text/html\n"))
                        .with_header("Vary", "Accept");
                }
            },
        };
        let mut resp = Response::new(200);
        if negotiated {
            resp = resp.with_header("Vary", "Accept");
        }
        resp = resp
            .with_header("ETag", rep.etag.as_str())
            .with_header("Cache-Control", rep.cache_control);
        if let Some(tags) = joined(req, "If-None-Match") {
            if etag_matches(&tags, &rep.etag) {
                // No body; the length is that of the representation.
                return Response {
                    status: 304,
                    ..resp
                }
                .with_header("Content-Length", rep.body.len().to_string());
            }
        }
        resp.with_header("Content-Type", content_type)
            .with_body(Arc::clone(&rep.body))
    }
}

impl Handler for Mirror {
    fn handle(&self, req: Request) -> Reply {
        self.respond(&req)
            .with_header("X-Egress-Snapshot", self.id_hex.as_str())
            .with_header("X-Content-Type-Options", "nosniff")
            .into()
    }
}

/// Checks the snapshot, then serves it on `addr` (e.g. `127.0.0.1:8080`).
/// An inconsistent snapshot is an `InvalidData` error: nothing is served.
pub fn serve(snapshot: Arc<Snapshot>, addr: &str) -> io::Result<ServerHandle> {
    snapshot
        .check()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    Server::bind(addr, Mirror::new(snapshot), Limits::default())
}

fn etag(digest: &Sha256Digest) -> String {
    format!("\"sha256:{}\"", digest.to_hex())
}

fn cache_control(path: &str) -> &'static str {
    if path.starts_with(FILES_PREFIX) {
        // Addressed by digest: the bytes at this path can never change.
        IMMUTABLE
    } else if path.starts_with(well_known::DIR) {
        EVIDENCE
    } else {
        PAGE
    }
}

/// All fields with this name joined with ", " (RFC 9110 §5.3), or `None`.
fn joined(req: &Request, name: &str) -> Option<String> {
    let values: Vec<&str> = req.headers_named(name).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// `If-None-Match` uses the weak comparison (RFC 9110 §13.1.2): `W/` is
/// ignored; `*` matches any current representation.
fn etag_matches(header: &str, etag: &str) -> bool {
    header
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_comparison() {
        let tag = "\"sha256:ab\"";
        assert!(etag_matches(tag, tag));
        assert!(etag_matches("W/\"sha256:ab\"", tag));
        assert!(etag_matches("\"x\", \"sha256:ab\"", tag));
        assert!(etag_matches("*", tag));
        assert!(!etag_matches("\"sha256:ac\"", tag));
        assert!(!etag_matches("sha256:ab", tag));
    }

    #[test]
    fn cache_classes() {
        assert_eq!(cache_control("/files/ab/x.whl"), IMMUTABLE);
        assert_eq!(cache_control("/simple/x/"), PAGE);
        assert_eq!(cache_control(well_known::ALLOWED_SIGNERS), EVIDENCE);
    }
}
