//! egress-mirror: the conformant reference mirror.
//!
//! It serves one verified snapshot and nothing else, from memory
//! ([`Mirror::new`], [`serve`]: a loaded [`Snapshot`]) or straight from its
//! directory ([`Mirror::from_store`], [`serve_dir`]: a [`StoredSnapshot`],
//! what the `egress-mirror` binary deploys). Both backends share one route
//! table and one request path, so the rules below are written once. Every
//! invariant is a predicate of the project made structural:
//!
//! - P1 digest binding: every byte served is a blob whose digest was checked:
//!   in memory when the snapshot was loaded (`BlobStore` holds only matching
//!   bytes); on disk through the open file handle before it is served, and
//!   again whenever the file changes (see [`StoredSnapshot`]). A blob that
//!   fails is a 500 and a log line naming it, never a 200 with other bytes.
//!   Blobs over 256 KiB are copied from their verified files in chunks
//!   (the default), or, with a budget set, served zero-copy (`sendfile`)
//!   only from sealed copies whose bytes the kernel will never let change
//!   (see [`Mirror::zero_copy_budget`]); never from the store's files.
//!   Files live at `/files/<sha256>/<name>` and every page carries hashes;
//!   npm tarballs at `/<name>/-/<file>`, each listed with its sha512
//!   `dist.integrity` in pre-rendered packuments (full or abbreviated by
//!   `Accept`, scoped names as `/@scope%2fname` and `/@scope/name`).
//! - P2 replay only: this crate has no HTTP client and no upstream setting;
//!   nothing outside the snapshot exists to be served.
//! - P3 no path passthrough: only origin-form targets; the path (query
//!   stripped) is looked up byte for byte in a table built from
//!   `SNAPSHOT.json`. No decoding, no normalisation, no request path ever
//!   reaches the filesystem (blobs are opened by digest only), no redirects,
//!   so no encoding of `..` can mean anything.
//! - P4 no build path: responses are pre-rendered blobs; nothing is rendered,
//!   built or evaluated per request.
//! - P5 immutability: the table is built once from an immutable snapshot and
//!   every response names the snapshot ID in `X-Egress-Snapshot`. With an
//!   [`Attestor`] ([`Mirror::attest`]), the instance answers a verifier's
//!   nonce at `/.well-known/egress-mirror/attest/<nonce hex>` with a
//!   statement signed by its instance key (see `attest.rs`).
//! - P6 no control channel: GET and HEAD only; every other method is 405.
//!
//! The `egress-mirror` binary is a thin layer over this crate: it parses
//! its flags and hands them to [`config`] (the config file, flags over file
//! over defaults, the exit codes), then calls [`run::run`] (start-up in
//! order: everything read that confinement would forbid, then Landlock
//! (`confine.rs`) before any thread exists, then serving a
//! [`SwappableMirror`] and watching for swaps on SIGHUP or a re-pointed
//! `current` link, `watch.rs`). The misses log's flags and keys are
//! [`misses::cli`].

pub mod admin;
mod attest;

pub use attest::{own_binary_sha256, Attestor, BadNonce};
pub mod config;
#[cfg(unix)]
mod confine;
#[cfg(unix)]
pub mod run;
#[cfg(unix)]
mod swap;
#[cfg(unix)]
mod watch;
#[cfg(unix)]
pub use swap::{
    serve_swappable_over, MakeMirror, SwapError, SwappableMirror, Swapped, PREVIOUS_GENERATIONS,
};
pub mod misses;
pub mod proxy_cli;
pub mod range;
pub mod tls;

#[cfg(unix)]
use egress_http::SealedFile;
use egress_http::{
    Body, Config, Handler, Limits, Method, Reply, Request, Response, Server, ServerHandle,
};
use egress_model::{Accept, Sha256Digest};
use egress_simple::{negotiate, Format, HTML_V1, JSON_V1};
use egress_snapshot::{
    well_known, ServedIndex, Snapshot, FILES_PREFIX, NPM_ABBREVIATED, NPM_JSON, TEXT_PLAIN,
};
#[cfg(unix)]
use egress_snapshot::{BlobProblem, StoredSnapshot};
use std::fs::File;
use std::io::{self, Write};
use std::net::ToSocketAddrs;
use std::sync::{Arc, OnceLock};

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const PAGE: &str = "public, max-age=600";
/// The evidence documents describe the snapshot being served now; a client
/// checking the running instance must revalidate them every time.
const EVIDENCE: &str = "no-cache";

/// Where log lines go: one line per call, without the trailing newline.
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

fn stderr_sink() -> LogSink {
    // A closed stderr loses the line but must not panic a connection thread.
    Arc::new(|line: &str| {
        let _ = writeln!(io::stderr().lock(), "{line}");
    })
}

/// Where a representation's bytes come from.
#[derive(Debug, Clone)]
enum Source {
    /// Bytes already verified (a `BlobStore` blob or an evidence document).
    Memory(Arc<[u8]>),
    /// The store's file for `Rep::digest` (a blob, or `MANIFEST` or
    /// `SNAPSHOT.json` by theirs), verified per request.
    Stored,
}

/// One representation: where its bytes are and the headers that describe
/// them. Made per request from the served index (nothing per path is held
/// beyond the index itself).
#[derive(Debug, Clone)]
struct Rep<'a> {
    content_type: &'a str,
    digest: Sha256Digest,
    cache_control: &'static str,
    source: Source,
}

#[derive(Debug, Clone)]
enum Route<'a> {
    One(Rep<'a>),
    /// A simple-API page in both serialisations (PEP 691).
    Negotiated {
        html: Rep<'a>,
        json: Rep<'a>,
    },
    /// An npm packument, full and abbreviated; the full one unless the
    /// client prefers the abbreviated one (see [`prefers_abbreviated`]).
    Packument {
        full: Rep<'a>,
        abbreviated: Rep<'a>,
    },
}

/// An evidence document: its well-known path, digest and bytes.
#[derive(Debug)]
struct Evidence {
    path: &'static str,
    digest: Sha256Digest,
    source: Source,
}

#[derive(Debug)]
enum Backend {
    Memory(Arc<Snapshot>),
    #[cfg(unix)]
    Stored(Arc<StoredSnapshot>),
}

/// The request handler. See the crate documentation for its rules.
pub struct Mirror {
    backend: Backend,
    id: Sha256Digest,
    id_hex: String,
    /// Answers attestation nonces when set ([`Mirror::attest`]).
    attestor: Option<Arc<Attestor>>,
    /// What is served where, for a memory backend (a stored one has its
    /// own: [`StoredSnapshot::served`]).
    index: ServedIndex,
    evidence: Vec<Evidence>,
    log_requests: bool,
    log: LogSink,
    /// Asks for what the snapshot lacks, and names it served, go here
    /// ([`Mirror::record_misses`]).
    misses: Option<misses::Recorder>,
    /// Every answer is counted here when set ([`Mirror::count_into`]).
    metrics: Option<Arc<admin::Metrics>>,
    /// The headers a Hugging Face file is served with, by its path
    /// ([`egress_snapshot::hf::resolve_headers`]: derived from the signed
    /// trees, once, when the mirror is made).
    hf: std::collections::HashMap<String, Vec<(&'static str, String)>>,
    /// Whether this process can serve sealed copies zero-copy: probed once,
    /// on the first stored blob too large for memory (or by
    /// [`Mirror::zero_copy`]).
    zero_copy: OnceLock<bool>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("backend", &self.backend)
            .field("id_hex", &self.id_hex)
            .field("paths", &self.path_count())
            .field("log_requests", &self.log_requests)
            .finish_non_exhaustive()
    }
}

/// The evidence documents a mirror serving from memory publishes, from
/// their exact bytes.
fn evidence_in_memory(
    manifest_bytes: &[u8],
    doc_bytes: &[u8],
    signature: Option<&str>,
) -> Vec<Evidence> {
    let mut docs = vec![
        (well_known::MANIFEST, manifest_bytes.to_vec()),
        (well_known::SNAPSHOT_JSON, doc_bytes.to_vec()),
    ];
    if let Some(sig) = signature {
        docs.push((well_known::SIGNATURE, sig.as_bytes().to_vec()));
    }
    docs.into_iter()
        .map(|(path, bytes)| Evidence {
            path,
            digest: Sha256Digest::of(&bytes),
            source: Source::Memory(Arc::from(bytes)),
        })
        .collect()
}

impl Mirror {
    /// Serves a snapshot held in memory. Call [`Snapshot::check`] first (as
    /// [`serve`] does, and as `load_dir` and the builder did): an entry whose
    /// blob is absent is answered 404 rather than with anything unverified.
    pub fn new(snapshot: Arc<Snapshot>) -> Self {
        let index = ServedIndex::from_entries(&snapshot.doc.served);
        let evidence = evidence_in_memory(
            &snapshot.manifest_bytes,
            &snapshot.doc_bytes,
            snapshot.signature.as_deref(),
        );
        Self::with_routes(
            Backend::Memory(Arc::clone(&snapshot)),
            snapshot.id(),
            index,
            evidence,
        )
    }

    /// Serves a snapshot straight from its directory. Each blob is verified
    /// through its open file handle before it is served (see
    /// [`StoredSnapshot::open_blob`]); a blob that fails is a 500 and a log
    /// line naming it.
    #[cfg(unix)]
    ///
    /// Nothing per path is built: requests are looked up in the store's
    /// [`ServedIndex`], and `MANIFEST` and `SNAPSHOT.json` are served from
    /// their files, verified against their digests (the snapshot ID, and
    /// the one `MANIFEST` lists) as blobs are, so a snapshot of a million
    /// entries starts in about the time it takes to read those two files.
    pub fn from_store(store: Arc<StoredSnapshot>) -> Self {
        let mut evidence = vec![
            Evidence {
                path: well_known::MANIFEST,
                digest: store.id(),
                source: Source::Stored,
            },
            Evidence {
                path: well_known::SNAPSHOT_JSON,
                digest: store.doc_digest(),
                source: Source::Stored,
            },
        ];
        if let Some(sig) = store.signature() {
            evidence.push(Evidence {
                path: well_known::SIGNATURE,
                digest: Sha256Digest::of(sig.as_bytes()),
                source: Source::Memory(Arc::from(sig.as_bytes())),
            });
        }
        let id = store.id();
        Self::with_routes(Backend::Stored(store), id, ServedIndex::default(), evidence)
    }

    fn with_routes(
        backend: Backend,
        id: Sha256Digest,
        index: ServedIndex,
        evidence: Vec<Evidence>,
    ) -> Self {
        Self {
            backend,
            id,
            id_hex: id.to_hex(),
            attestor: None,
            index,
            evidence,
            log_requests: false,
            log: stderr_sink(),
            misses: None,
            metrics: None,
            hf: std::collections::HashMap::new(),
            zero_copy: OnceLock::new(),
        }
        .with_hf_headers()
    }

    /// Reads the Hugging Face trees the snapshot serves at commits, each a
    /// verified blob, into the headers of the files they list.
    fn with_hf_headers(mut self) -> Self {
        let trees: Vec<(String, Sha256Digest)> = self
            .served()
            .iter()
            .filter(|(path, _, _)| {
                path.starts_with(egress_snapshot::hf::HF_PREFIX) && path.contains("/tree/")
            })
            .map(|(path, _, digest)| (path.to_string(), digest))
            .collect();
        if trees.is_empty() {
            return self;
        }
        let blob = |d: &Sha256Digest| -> Option<Vec<u8>> {
            match &self.backend {
                Backend::Memory(snapshot) => snapshot.blobs.get(d).map(|b| b.to_vec()),
                // Verified through its open file, as any blob served.
                #[cfg(unix)]
                Backend::Stored(store) => {
                    use std::io::Read;
                    let (file, len) = store.open_blob(d).ok()?.into_parts();
                    let mut out = Vec::new();
                    file.take(len).read_to_end(&mut out).ok()?;
                    Some(out)
                }
            }
        };
        let hf =
            egress_snapshot::hf::resolve_headers(trees.iter().map(|(p, d)| (p.as_str(), *d)), blob);
        self.hf = hf;
        self
    }

    /// Counts every answer into `metrics` (the admin listener's
    /// `/metrics`).
    pub fn count_into(mut self, metrics: Arc<admin::Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The memory budget, in bytes, for sealed copies of stored blobs over
    /// 256 KiB (default [`egress_snapshot::DEFAULT_ZERO_COPY_BUDGET`], 0:
    /// zero-copy off, the verified chunk copy below). A blob is read from its file once, hashed
    /// while it is copied into an anonymous memfd, and the memfd is sealed
    /// against any change only if the digest matches; from then on the blob
    /// is served from that memfd with `sendfile(2)`, while its file is still
    /// `lstat`ed on every request and re-verified when it changes. Copies
    /// are dropped least recently used first to stay within the budget; a
    /// blob that does not fit is copied from its verified file in 64 KiB
    /// chunks, as it is when zero-copy is off or unavailable. No effect on
    /// a mirror serving from memory.
    pub fn zero_copy_budget(self, bytes: u64) -> Self {
        #[cfg(unix)]
        if let Backend::Stored(store) = &self.backend {
            store.set_zero_copy_budget(bytes);
        }
        let _ = bytes;
        self
    }

    /// Whether stored blobs over 256 KiB are served zero-copy from sealed
    /// copies: the budget is not 0, and this process can make sealed memfds
    /// and `sendfile` from them (checked once; if it cannot, e.g. under a
    /// seccomp filter or off Linux, one line says why and the budget is set
    /// to 0).
    pub fn zero_copy(&self) -> bool {
        match &self.backend {
            #[cfg(unix)]
            Backend::Stored(store) => {
                store.zero_copy_usage().budget > 0
                    && *self.zero_copy.get_or_init(|| match probe_zero_copy() {
                        Ok(()) => true,
                        Err(why) => {
                            store.set_zero_copy_budget(0);
                            (self.log)(&format!(
                                "egress-mirror: zero-copy serving unavailable ({why}); blobs over 256 KiB are copied from their verified files instead"
                            ));
                            false
                        }
                    })
            }
            Backend::Memory(_) => false,
        }
    }

    /// Answers `GET /.well-known/egress-mirror/attest/<nonce hex>` with
    /// `attestor`'s signed statement for this snapshot. Without it, that
    /// path is not found, like any other outside the snapshot.
    pub fn attest(self, attestor: Attestor) -> Self {
        self.attest_shared(Arc::new(attestor))
    }

    /// [`Mirror::attest`] with an attestor shared with other mirrors: the
    /// generations of a [`SwappableMirror`] are one instance, one key.
    pub fn attest_shared(mut self, attestor: Arc<Attestor>) -> Self {
        self.attestor = Some(attestor);
        self
    }

    /// The attestor, when the mirror answers attestation nonces.
    pub fn attestor(&self) -> Option<&Attestor> {
        self.attestor.as_deref()
    }

    /// Logs one line per request (method, target, status, body bytes,
    /// digest of the representation) to the log sink.
    pub fn log_requests(mut self, on: bool) -> Self {
        self.log_requests = on;
        self
    }

    /// Notes in the misses log (see [`misses`]) every answered ask for a
    /// package: a 404 for a name, version or file the snapshot lacks, and
    /// each name served. The answer itself is the same with or without it;
    /// the request path only tries to queue a message, never waits.
    pub fn record_misses(mut self, recorder: misses::Recorder) -> Self {
        self.misses = Some(recorder);
        self
    }

    /// What [`Mirror::record_misses`] notes for one answered request.
    fn note_ask(&self, recorder: &misses::Recorder, req: &Request, status: u16) {
        let served = |path: &str| self.served().at(path).is_some();
        match status {
            404 => {
                if let Some(ask) = misses::classify(req.path()).and_then(|a| a.miss(served)) {
                    recorder.miss(ask, req.peer.ip());
                }
            }
            200 | 304 => {
                if let Some(asked) = misses::classify(req.path()) {
                    if asked.is_served_name(served) {
                        let (protocol, name) = asked.name();
                        recorder.served(protocol, name);
                    }
                }
            }
            _ => {}
        }
    }

    /// Where log lines go; standard error by default. Blob failures are
    /// always logged; requests only with [`Mirror::log_requests`].
    pub fn log_to(mut self, sink: LogSink) -> Self {
        self.log = sink;
        self
    }

    /// The in-memory snapshot, for a mirror made by [`Mirror::new`].
    pub fn snapshot(&self) -> Option<&Arc<Snapshot>> {
        match &self.backend {
            Backend::Memory(s) => Some(s),
            #[cfg(unix)]
            Backend::Stored(_) => None,
        }
    }

    /// The snapshot ID, hex.
    pub fn id_hex(&self) -> &str {
        &self.id_hex
    }

    /// Number of distinct paths answered with 200.
    pub fn path_count(&self) -> usize {
        self.served().path_count() + self.evidence.len()
    }

    /// What is served where.
    fn served(&self) -> &ServedIndex {
        match &self.backend {
            Backend::Memory(_) => &self.index,
            #[cfg(unix)]
            Backend::Stored(store) => store.served(),
        }
    }

    /// Where a served blob's bytes are, or `None` if the backend does not
    /// have it: then its path is answered 404 rather than with anything
    /// unverified.
    fn source(&self, digest: &Sha256Digest) -> Option<Source> {
        match &self.backend {
            // The store holds only bytes that hash to their key, so a body
            // from it matches the entry's digest without hashing again.
            Backend::Memory(snapshot) => snapshot.blobs.get(digest).map(Source::Memory),
            // The index's blob table is the blobs MANIFEST lists, so every
            // digest it hands out is one (`StoredSnapshot::has_blob`).
            #[cfg(unix)]
            Backend::Stored(_) => Some(Source::Stored),
        }
    }

    /// The one place that decides which paths exist: the evidence
    /// documents (first, whatever the index says; `check` forbids served
    /// entries at their paths anyway), then the served index, looked up by
    /// the hash of the path. A path with an unexpected set of entries, or with an
    /// entry whose blob the backend does not have, does not exist.
    fn route(&self, path: &str) -> Option<Route<'_>> {
        if let Some(e) = self.evidence.iter().find(|e| e.path == path) {
            return Some(Route::One(Rep {
                content_type: TEXT_PLAIN,
                digest: e.digest,
                cache_control: EVIDENCE,
                source: e.source.clone(),
            }));
        }
        let at = self.served().at(path)?;
        let cache_control = cache_control(path);
        let mut reps: [Option<Rep>; 2] = [None, None];
        if at.len() > reps.len() {
            return None;
        }
        for (slot, (content_type, digest)) in reps.iter_mut().zip(at.iter()) {
            *slot = Some(Rep {
                content_type,
                digest,
                cache_control,
                source: self.source(&digest)?,
            });
        }
        match reps {
            [Some(one), None] => Some(Route::One(one)),
            [Some(a), Some(b)] => {
                let find = |ct: &str| {
                    [&a, &b]
                        .into_iter()
                        .find(|r| r.content_type.eq_ignore_ascii_case(ct))
                        .cloned()
                };
                match (
                    find(HTML_V1),
                    find(JSON_V1),
                    find(NPM_JSON),
                    find(NPM_ABBREVIATED),
                ) {
                    (Some(html), Some(json), _, _) => Some(Route::Negotiated { html, json }),
                    (_, _, Some(full), Some(abbreviated)) => {
                        Some(Route::Packument { full, abbreviated })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The body of `rep` when it is already verified and in memory, found
    /// without blocking beyond one `lstat`; `None` sends the request to
    /// [`Mirror::body`] on the blocking pool.
    fn body_in_memory(&self, rep: &Rep) -> Option<Body> {
        match (&rep.source, &self.backend) {
            (Source::Memory(bytes), _) => Some(Body::Shared(Arc::clone(bytes))),
            #[cfg(unix)]
            (Source::Stored, Backend::Stored(store)) => {
                store.cached_small_blob(&rep.digest).map(Body::Shared)
            }
            #[allow(unreachable_patterns)]
            (Source::Stored, _) => None,
        }
    }

    /// The body of `rep`, verified; `Err` is the 500 to send instead (the
    /// failure has been logged).
    fn body(&self, rep: &Rep) -> Result<Body, Response> {
        match (&rep.source, &self.backend) {
            (Source::Memory(bytes), _) => Ok(Body::Shared(Arc::clone(bytes))),
            #[cfg(unix)]
            (Source::Stored, Backend::Stored(store)) => {
                match store.small_blob(&rep.digest).and_then(|small| match small {
                    Some(bytes) => Ok(Body::Shared(bytes)),
                    None => self.large_body(store, &rep.digest),
                }) {
                    Ok(body) => Ok(body),
                    Err(problem) => {
                        (self.log)(&format!(
                            "egress-mirror: blob sha256:{} NOT served: {problem}",
                            rep.digest.to_hex()
                        ));
                        Err(Response::text(
                            500,
                            &format!(
                                "blob sha256:{} failed verification and was not served\n",
                                rep.digest.to_hex()
                            ),
                        ))
                    }
                }
            }
            // Routes of a memory backend are all `Source::Memory`.
            (Source::Stored, _) => Err(Response::text(500, "blob unavailable\n")),
        }
    }

    /// The body of a stored blob too large for memory: its sealed copy,
    /// sent zero-copy, when there is one; else a copy from its verified
    /// file, vouched for again before its last byte.
    #[cfg(unix)]
    fn large_body(
        &self,
        store: &StoredSnapshot,
        digest: &Sha256Digest,
    ) -> Result<Body, BlobProblem> {
        if self.zero_copy() {
            if let Some(blob) = store.sealed_blob(digest)? {
                // `sealed_blob` only returns sealed memfds, which `SealedFile`
                // accepts; should it not, the copy path below is still sound.
                if let Ok(sealed) = SealedFile::new(blob) {
                    return Ok(Body::Sealed(sealed));
                }
            }
        }
        store.open_blob(digest).map(|blob| {
            let (file, len) = blob.into_parts();
            Body::File(Arc::new(file), len)
        })
    }

    /// The response and, for the request log, the digest of the
    /// representation chosen (if any).
    /// The answer to `req` and the digest of the blob it names, if any.
    /// With `now` (from [`Handler::handle_now`], on a worker that must not
    /// block) it gives up, with `None`, wherever the answer needs a file
    /// read: a blob not already verified and in memory, the attestation
    /// route (which re-reads the certificate). Without `now` it is never
    /// `None`.
    fn respond(&self, req: &Request, now: bool) -> Option<(Response, Option<Sha256Digest>)> {
        // P6: a mirror has nothing to change, so nothing but reads exists.
        // CONNECT lands here too: this is not a proxy.
        if !req.method.is_read() {
            let resp = Response::text(
                405,
                "method not allowed: this mirror only answers GET and HEAD\n",
            )
            .with_header("Allow", "GET, HEAD");
            return Some((resp, None));
        }
        // P3: absolute-form (`GET http://host/...`), authority-form and `*`
        // are proxy or server-wide requests; a mirror serves only its own
        // paths. The connection is closed after the refusal: an absolute-form
        // authority that differs from Host is how two hops disagree about
        // which server a request is for, so nothing pipelined behind it is
        // served.
        if !req.target.starts_with('/') {
            let resp = Response::text(
                400,
                "only origin-form request targets (starting with '/') are served\n",
            )
            .with_header("Connection", "close");
            return Some((resp, None));
        }
        // Instance attestation: the nonce is the rest of the path (never
        // the query, which is never interpreted).
        if let (Some(attestor), Some(nonce)) =
            (&self.attestor, req.path().strip_prefix(well_known::ATTEST))
        {
            if now {
                return None;
            }
            let resp = match attestor.answer(self.id, nonce) {
                Ok(text) => Response::text(200, &text),
                Err(e) => Response::text(400, &format!("{e}\n")),
            };
            return Some((resp.with_header("Cache-Control", "no-store"), None));
        }
        // The query is dropped, never interpreted (`?url=` means nothing
        // here); the path is matched exactly as received.
        let Some(route) = self.route(req.path()) else {
            let resp = Response::text(404, &format!("not in snapshot {}\n", &self.id_hex[..12]));
            return Some((resp, None));
        };
        let (rep, content_type, negotiated) = match route {
            Route::One(rep) => {
                let ct = rep.content_type;
                (rep, ct, false)
            }
            Route::Negotiated { html, json } => match negotiate(joined(req, "Accept").as_deref()) {
                Some((Format::Json, ct)) => (json, ct, true),
                Some((Format::Html, ct)) => (html, ct, true),
                None => {
                    let resp = Response::text(406, &format!("not acceptable: this page is available as {JSON_V1}, {HTML_V1} or text/html\n"))
                        .with_header("Vary", "Accept");
                    return Some((resp, None));
                }
            },
            Route::Packument { full, abbreviated } => {
                if prefers_abbreviated(joined(req, "Accept").as_deref()) {
                    let ct = abbreviated.content_type;
                    (abbreviated, ct, true)
                } else {
                    let ct = full.content_type;
                    (full, ct, true)
                }
            }
        };
        // Verified before any 2xx or 3xx: a blob that fails verification is
        // never answered as if it were fine, not even with a 304.
        let body = if now {
            self.body_in_memory(&rep)?
        } else {
            match self.body(&rep) {
                Ok(body) => body,
                Err(resp) => return Some((resp, Some(rep.digest))),
            }
        };
        let mut resp = Response::new(200);
        if negotiated {
            resp = resp.with_header("Vary", "Accept");
        }
        let tag = etag(&rep.digest);
        if let Some(tags) = joined(req, "If-None-Match") {
            if etag_matches(&tags, &tag) {
                resp = resp
                    .with_header("ETag", tag)
                    .with_header("Cache-Control", rep.cache_control);
                // No body; the length is that of the representation.
                let resp = Response {
                    status: 304,
                    ..resp
                }
                .with_header("Content-Length", body.content_length().to_string());
                return Some((resp, Some(rep.digest)));
            }
        }
        // One `Range` of the bytes unit, honoured unless an `If-Range`
        // names another representation; anything else is the whole blob.
        let size = body.content_length();
        let asked = {
            let mut ranges = req.headers_named("Range");
            match (ranges.next(), ranges.next()) {
                (Some(v), None) => Some(v),
                _ => None,
            }
        };
        let same = joined(req, "If-Range").is_none_or(|t| t.trim() == tag);
        let ranged = match asked {
            Some(v) if same => range::parse(v, size),
            _ => range::Ranged::Whole,
        };
        let (status, body, content_range) = match ranged {
            range::Ranged::Whole => (200, body, None),
            range::Ranged::Unsatisfiable => (416, Body::Empty, Some(format!("bytes */{size}"))),
            range::Ranged::Part { start, len } => {
                let part = match self.part_of(&rep, body, start, len, now)? {
                    Ok(b) => b,
                    Err(resp) => return Some((resp, Some(rep.digest))),
                };
                let last = start + len - 1;
                (206, part, Some(format!("bytes {start}-{last}/{size}")))
            }
        };
        let mut resp = Response { status, ..resp }
            .with_header("ETag", tag)
            .with_header("Cache-Control", rep.cache_control)
            .with_header("Accept-Ranges", "bytes");
        if let Some(cr) = content_range {
            resp = resp.with_header("Content-Range", cr);
        }
        if status != 416 {
            resp = resp.with_header("Content-Type", content_type);
        }
        let mut resp = resp.with_body(body);
        if let Some(headers) = self.hf.get(req.path()) {
            for (name, value) in headers {
                resp = resp.with_header(*name, value.as_str());
            }
        }
        Some((resp, Some(rep.digest)))
    }

    /// Bytes `start..start + len` of `body`, the whole of `rep` (a range
    /// [`range::parse`] checked against its length). A file is read from
    /// `start`; a sealed copy, which is sent only whole, gives way to the
    /// blob's verified file. `None` with `now` where that needs a file.
    fn part_of(
        &self,
        rep: &Rep,
        body: Body,
        start: u64,
        len: u64,
        now: bool,
    ) -> Option<Result<Body, Response>> {
        use std::io::{Seek, SeekFrom};
        let slice = |b: &[u8]| {
            let (s, e) = (
                usize::try_from(start).ok()?,
                usize::try_from(start + len).ok()?,
            );
            b.get(s..e).map(|p| Body::Bytes(p.to_vec()))
        };
        let unavailable = || Response::text(500, "blob unavailable\n");
        Some(match body {
            Body::Shared(b) => slice(&b).ok_or_else(unavailable),
            Body::Bytes(b) => slice(&b).ok_or_else(unavailable),
            Body::Empty => Ok(Body::Empty),
            Body::File(file, _) => match (&*file).seek(SeekFrom::Current(start as i64)) {
                Ok(_) => Ok(Body::File(file, len)),
                Err(_) => Err(unavailable()),
            },
            Body::Sealed(_) => {
                if now {
                    return None;
                }
                match &self.backend {
                    #[cfg(unix)]
                    Backend::Stored(store) => match store.open_blob(&rep.digest) {
                        Ok(blob) => {
                            let (mut file, _) = blob.into_parts();
                            match file.seek(SeekFrom::Start(start)) {
                                Ok(_) => Ok(Body::File(Arc::new(file), len)),
                                Err(_) => Err(unavailable()),
                            }
                        }
                        Err(_) => Err(unavailable()),
                    },
                    #[allow(unreachable_patterns)]
                    _ => Err(unavailable()),
                }
            }
        })
    }

    /// The log line (with [`Mirror::log_requests`]) and the headers every
    /// answer carries.
    fn finish(&self, req: &Request, resp: Response, digest: Option<Sha256Digest>) -> Reply {
        if let Some(recorder) = &self.misses {
            self.note_ask(recorder, req, resp.status);
        }
        let sent = || match resp.status {
            _ if req.method == Method::Head => 0,
            204 | 304 => 0,
            _ => resp.body.content_length(),
        };
        if let Some(metrics) = &self.metrics {
            metrics.request(route_class(req.path(), resp.status), resp.status, sent());
            if resp.status == 404 {
                let served = |path: &str| self.served().at(path).is_some();
                if misses::classify(req.path())
                    .and_then(|a| a.miss(served))
                    .is_some()
                {
                    metrics.miss();
                }
            }
        }
        if self.log_requests {
            let sent = sent();
            // Method and target are visible ASCII without spaces (the
            // parser guarantees it), so the line cannot be split or forged.
            (self.log)(&format!(
                "egress-mirror: request method={} target={} status={} bytes={sent} digest={}",
                req.method,
                req.target,
                resp.status,
                digest.map_or_else(|| "-".to_string(), |d| format!("sha256:{}", d.to_hex())),
            ));
        }
        resp.with_header("X-Egress-Snapshot", self.id_hex.as_str())
            .with_header("X-Content-Type-Options", "nosniff")
            .into()
    }
}

impl Handler for Mirror {
    fn handle(&self, req: Request) -> Reply {
        let (resp, digest) = self
            .respond(&req, false)
            .unwrap_or_else(|| (Response::text(500, "no answer\n"), None));
        self.finish(&req, resp, digest)
    }

    /// Answers from memory on the worker: refusals, and pages and files
    /// already verified and held in memory. Not when every request is
    /// logged (a log line may block on a full pipe).
    fn handle_now(&self, req: &Request) -> Option<Reply> {
        if self.log_requests {
            return None;
        }
        let (resp, digest) = self.respond(req, true)?;
        Some(self.finish(req, resp, digest))
    }

    /// The last line of defence for a stored blob (see the residual window
    /// in [`StoredSnapshot`]'s documentation): before the last byte goes
    /// out, the file that was copied must still have the fingerprint it had
    /// when it was verified. The digest is the one in the response's ETag,
    /// which this handler wrote.
    fn vouch_for_file(&self, response: &Response, file: &File) -> bool {
        #[cfg(unix)]
        if let Backend::Stored(store) = &self.backend {
            let digest = response
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
                .and_then(|(_, v)| v.strip_prefix("\"sha256:")?.strip_suffix('"'))
                .and_then(|hex| Sha256Digest::from_hex(hex).ok());
            let unchanged = digest.is_some_and(|d| store.unchanged_since_verified(&d, file));
            if !unchanged {
                (self.log)(&format!(
                    "egress-mirror: blob {} changed on disk while being sent; response aborted before its last byte, connection closed",
                    digest.map_or_else(|| "(unknown)".to_string(), |d| format!("sha256:{}", d.to_hex())),
                ));
            }
            return unchanged;
        }
        // Memory bodies are never files; nothing else to vouch for.
        let _ = (response, file);
        true
    }
}

/// Makes a sealed memfd, checks that it refuses writes, and sends it with
/// `sendfile` through a socket pair: everything zero-copy serving needs,
/// none of which needs filesystem access (so Landlock does not stand in its
/// way), though a seccomp filter might.
/// Why zero-copy serving is unavailable, by the step that failed.
#[cfg(unix)]
#[derive(Debug, thiserror::Error)]
enum ZeroCopyError {
    #[error("sealed memfd: {0}")]
    Memfd(#[source] io::Error),
    #[error("seals: {0}")]
    Seals(#[source] io::Error),
    #[error("socketpair: {0}")]
    SocketPair(#[source] io::Error),
    #[error("sendfile: {0}")]
    SendFile(#[source] io::Error),
    #[error("sendfile delivered other bytes")]
    OtherBytes,
}

#[cfg(unix)]
fn probe_zero_copy() -> Result<(), ZeroCopyError> {
    use std::io::Read;
    let blob = egress_snapshot::probe_sealed_copies().map_err(ZeroCopyError::Memfd)?;
    let blob = Arc::new(blob);
    let sealed = SealedFile::new(Arc::clone(&blob) as _).map_err(ZeroCopyError::Seals)?;
    let (tx, mut rx) = std::os::unix::net::UnixStream::pair().map_err(ZeroCopyError::SocketPair)?;
    sealed.send_to(&tx).map_err(ZeroCopyError::SendFile)?;
    drop(tx);
    let mut got = Vec::new();
    rx.read_to_end(&mut got)
        .map_err(ZeroCopyError::SocketPair)?;
    if Sha256Digest::of(&got) != blob.digest() {
        return Err(ZeroCopyError::OtherBytes);
    }
    Ok(())
}

/// Checks the snapshot, then serves it from memory on `addr` (e.g.
/// `127.0.0.1:8080`). An inconsistent snapshot is an `InvalidData` error:
/// nothing is served.
pub fn serve(snapshot: Arc<Snapshot>, addr: &str) -> io::Result<ServerHandle> {
    snapshot
        .check()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    Server::bind_with(
        addr,
        Mirror::new(snapshot),
        server_config(Limits::default()),
    )
}

/// Serves an opened snapshot directory on `addr`, blobs verified per request
/// (see [`StoredSnapshot`]). `StoredSnapshot::open` already checked the
/// evidence documents.
#[cfg(unix)]
pub fn serve_dir(store: StoredSnapshot, addr: impl ToSocketAddrs) -> io::Result<ServerHandle> {
    serve_mirror(Mirror::from_store(Arc::new(store)), addr)
}

/// Serves a configured [`Mirror`] on `addr` with default limits.
pub fn serve_mirror(mirror: Mirror, addr: impl ToSocketAddrs) -> io::Result<ServerHandle> {
    serve_mirror_with(mirror, addr, Limits::default())
}

/// Serves a configured [`Mirror`] on `addr` with `limits`.
pub fn serve_mirror_with(
    mirror: Mirror,
    addr: impl ToSocketAddrs,
    limits: Limits,
) -> io::Result<ServerHandle> {
    Server::bind_with(addr, mirror, server_config(limits))
}

/// Serves a configured [`Mirror`] on `addr` with `limits`, over https
/// with `tls` when given: HTTP/2 or HTTP/1.1 as the client chooses by ALPN,
/// both answered by the same handler (see [`tls`] for the configuration).
pub fn serve_mirror_over(
    mirror: Mirror,
    addr: impl ToSocketAddrs,
    limits: Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<ServerHandle> {
    let mut config = server_config(limits);
    config.acceptor = tls.map(egress_http::tls_acceptor);
    Server::bind_with(addr, mirror, config)
}

/// Serves a configured [`Mirror`] over https on `addr` with default limits.
pub fn serve_mirror_tls(
    mirror: Mirror,
    addr: impl ToSocketAddrs,
    tls: Arc<rustls::ServerConfig>,
) -> io::Result<ServerHandle> {
    serve_mirror_over(mirror, addr, Limits::default(), Some(tls))
}

/// How the mirror is served: `limits`, the handler on the blocking pool
/// (it may hash a whole blob the first time it serves it, so it can take a
/// while; docs/architecture.md, "The serving core", has the measurement),
/// and log lines that name the mirror's own settings when a limit bites.
pub fn server_config(limits: Limits) -> Config {
    Config {
        limits,
        handler_never_blocks: false,
        per_client_hint: "--max-connections-per-client N (config key max_connections_per_client; 0 = no per-client limit)".to_string(),
        total_hint: "the open-file limit (ulimit -n; egress-mirror raises its soft limit to the hard one, up to 65536, and serves it minus a sixteenth kept for files)".to_string(),
        ..Config::default()
    }
}

fn etag(digest: &Sha256Digest) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut tag = String::with_capacity(73);
    tag.push_str("\"sha256:");
    for b in digest.as_bytes() {
        tag.push(char::from(HEX[usize::from(b >> 4)]));
        tag.push(char::from(HEX[usize::from(b & 15)]));
    }
    tag.push('"');
    tag
}

/// Whether `path` is a distribution file's (bytes a page names: a wheel
/// under `/files/`, an npm tarball under `/-/`, a `.deb` under `/pool/`).
pub(crate) fn is_distribution_file(path: &str) -> bool {
    !path.starts_with(well_known::DIR)
        && (path.starts_with(FILES_PREFIX) || path.contains("/-/") || path.contains("/pool/"))
}

/// The route class an answer is counted under.
fn route_class(path: &str, status: u16) -> admin::Route {
    if !(200..300).contains(&status) && status != 304 {
        admin::Route::Refused
    } else if path.starts_with(well_known::ATTEST) {
        admin::Route::Attest
    } else if path.starts_with(well_known::DIR) {
        admin::Route::Evidence
    } else if is_distribution_file(path) {
        admin::Route::File
    } else {
        admin::Route::Page
    }
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

/// Whether an `Accept` header asks for the abbreviated npm packument: it
/// names [`NPM_ABBREVIATED`] with a q above 0 and at least the q that
/// `application/json` gets (by name, else through `application/*` or
/// `*/*`). npm sends `application/vnd.npm.install-v1+json; q=1.0,
/// application/json; q=0.8, */*`. Anything else, including no header, gets
/// the full packument: a registry answers every client.
fn prefers_abbreviated(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    let accept = Accept::parse(accept);
    let corgi = accept.named(NPM_ABBREVIATED);
    let wildcard = accept.named("application/*").max(accept.named("*/*"));
    let json = accept.named(NPM_JSON).or(wildcard).unwrap_or(0);
    corgi.is_some_and(|c| c > 0 && c >= json)
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
    fn npm_negotiation() {
        for (accept, corgi) in [
            (None, false),
            (Some("*/*"), false),
            (Some("application/json"), false),
            (
                Some("application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"),
                true,
            ),
            (Some("application/vnd.npm.install-v1+json"), true),
            (Some("application/vnd.npm.install-v1+json;q=0"), false),
            (
                Some("application/vnd.npm.install-v1+json;q=0.5, application/json"),
                false,
            ),
            (
                Some("application/json;q=0.5, application/vnd.npm.install-v1+json"),
                true,
            ),
            (
                Some("Application/Vnd.Npm.Install-V1+Json; q=0.9, */*;q=0.1"),
                true,
            ),
        ] {
            assert_eq!(prefers_abbreviated(accept), corgi, "{accept:?}");
        }
    }

    #[test]
    fn cache_classes() {
        assert_eq!(cache_control("/files/ab/x.whl"), IMMUTABLE);
        assert_eq!(cache_control("/simple/x/"), PAGE);
        assert_eq!(cache_control(well_known::ALLOWED_SIGNERS), EVIDENCE);
    }
}
