//! Moving a running mirror to another snapshot without dropping a request.
//!
//! A [`SwappableMirror`] serves the *current generation*: one [`Mirror`]
//! over one [`StoredSnapshot`]. [`SwappableMirror::swap_to`] opens a new
//! snapshot directory, verifies it, and only then replaces the current
//! generation; nothing on the serving path can call it (the `egress-mirror`
//! binary calls it on SIGHUP and when the `current` symlink it was started
//! on is re-pointed, never for a request).
//!
//! - **Verified first.** The new directory is opened with
//!   [`StoredSnapshot::open`] (the checks made at start) and its
//!   `MANIFEST.sig` must verify against the signer keys fixed when the
//!   mirror started ([`SwappableMirror::signers`]). Any failure leaves the
//!   current generation serving; the error is one line.
//! - **Atomic.** Each request takes one `Arc` of the generations at once
//!   and is answered, to its last byte, by the generation it took: requests
//!   in flight finish on the snapshot they started on, the first request
//!   after a swap sees the new one (its `X-Egress-Snapshot`, its attestation
//!   statement).
//! - **Files of the previous pages stay fetchable.** The last
//!   [`PREVIOUS_GENERATIONS`] generations are kept as a fallback for
//!   distribution-file paths only (`/files/<sha256>/<name>` and npm's
//!   `/<name>/-/<file>`): a client that read a page of snapshot N can fetch
//!   that page's files after N was replaced. Pages and evidence documents
//!   are only ever answered by the current generation. A file answered by a
//!   previous generation names that generation's snapshot in
//!   `X-Egress-Snapshot`: those are the bytes it vouches for.
//! - **Caches are per generation.** Each generation's store has its own
//!   verified-blob records, small-blob cache and sealed copies. Only the
//!   current generation gets the zero-copy budget: a retired generation's
//!   budget is set to 0, which drops its sealed copies (and their
//!   descriptors) at once, so the budget and the descriptor reserve the
//!   connection limit was computed with still hold; its fallback files are
//!   copied in chunks from their verified files.
//! - **Swapping back** to a snapshot still held (same ID, same directory),
//!   as when alternating between two, reuses that generation with its
//!   verified records and caches (after the same verification).

use crate::{Backend, LogSink, Mirror};
use egress_http::{Handler, Reply, Request, Response};
use egress_model::Sha256Digest;
use egress_signing::AllowedSigners;
use egress_snapshot::{SnapshotError, StoredSnapshot};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// How many replaced generations are kept as a fallback for distribution
/// files (and to vouch for file bodies still being sent from them).
pub const PREVIOUS_GENERATIONS: usize = 2;

/// Makes the [`Mirror`] of a new generation (the request log, the
/// attestor: whatever the first one had).
pub type MakeMirror = dyn Fn(Arc<StoredSnapshot>) -> Mirror + Send + Sync;

/// The generations at one moment; replaced whole on a swap, never changed.
struct Generations {
    current: Arc<Mirror>,
    /// Newest first, at most [`PREVIOUS_GENERATIONS`].
    previous: Vec<Arc<Mirror>>,
}

struct Inner {
    generations: RwLock<Arc<Generations>>,
    /// One swap at a time.
    swapping: Mutex<()>,
    make: Box<MakeMirror>,
    zero_copy_budget: u64,
    signers: Option<AllowedSigners>,
    log: LogSink,
    /// The first generation's counters, which every later one counts into.
    metrics: Option<Arc<crate::admin::Metrics>>,
}

/// A [`Handler`] serving the current generation of a swappable mirror;
/// clones share it. See the module documentation.
#[derive(Clone)]
pub struct SwappableMirror(Arc<Inner>);

impl std::fmt::Debug for SwappableMirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.generations();
        f.debug_struct("SwappableMirror")
            .field("current", &g.current.id_hex)
            .field(
                "previous",
                &g.previous.iter().map(|m| &m.id_hex).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// What a successful [`SwappableMirror::swap_to`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// The snapshot at the path is the one being served: nothing changed.
    Unchanged { id: Sha256Digest },
    /// Now serving `to`; `reused` when it was a previous generation still
    /// held (same ID and directory).
    To {
        from: Sha256Digest,
        to: Sha256Digest,
        root: PathBuf,
        reused: bool,
    },
}

impl std::fmt::Display for Swapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Swapped::Unchanged { id } => {
                write!(f, "snapshot {} is already being served", id.to_hex())
            }
            Swapped::To {
                from,
                to,
                root,
                reused,
            } => write!(
                f,
                "swapped from snapshot {} to snapshot {} ({}{}); the old one's files stay fetchable for the next {PREVIOUS_GENERATIONS} swaps",
                from.to_hex(),
                to.to_hex(),
                root.display(),
                if *reused { ", a generation still held" } else { "" },
            ),
        }
    }
}

/// Why a swap was refused; the current generation keeps serving.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    #[error("snapshot {} is invalid: {source}", dir.display())]
    Open {
        dir: PathBuf,
        #[source]
        source: Box<SnapshotError>,
    },
    #[error("no signer keys to verify it against: the snapshot served at start ships no allowed_signers (give --allowed-signers FILE)")]
    NoSigners,
    #[error("snapshot {} ({}) is not signed by the keys of the snapshot being served: {source}", id.to_hex(), root.display())]
    Signature {
        id: Sha256Digest,
        root: PathBuf,
        #[source]
        source: Box<SnapshotError>,
    },
    /// A layer whose chain does not hold: an ancestor's evidence missing
    /// or not the one it signed, a layer that does not extend its parent,
    /// or an ancestor signed by another key.
    #[error("snapshot {} ({}) is a layer whose chain does not hold: {source}", id.to_hex(), root.display())]
    Chain {
        id: Sha256Digest,
        root: PathBuf,
        #[source]
        source: Box<egress_snapshot::chain::ChainProblem>,
    },
}

impl SwappableMirror {
    /// Serves `first` (a mirror over a stored snapshot); new generations
    /// are made with `make`, given the zero-copy `budget` while current,
    /// and must be signed by a key in `signers` (`None`: every swap is
    /// refused).
    pub fn new(
        first: Mirror,
        make: Box<MakeMirror>,
        zero_copy_budget: u64,
        signers: Option<AllowedSigners>,
    ) -> Self {
        let log = Arc::clone(&first.log);
        let metrics = first.metrics.clone();
        Self(Arc::new(Inner {
            generations: RwLock::new(Arc::new(Generations {
                current: Arc::new(first),
                previous: Vec::new(),
            })),
            swapping: Mutex::new(()),
            make,
            zero_copy_budget,
            signers,
            log,
            metrics,
        }))
    }

    fn generations(&self) -> Arc<Generations> {
        // Replaced whole under the lock, so never half-written: poisoning
        // is ignored.
        Arc::clone(&self.0.generations.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The snapshot ID being served now.
    pub fn id(&self) -> Sha256Digest {
        self.generations().current.id
    }

    /// The IDs of the previous generations held, newest first.
    pub fn previous(&self) -> Vec<Sha256Digest> {
        self.generations().previous.iter().map(|m| m.id).collect()
    }

    /// The signer keys every new snapshot must verify against.
    pub fn signers(&self) -> Option<&AllowedSigners> {
        self.0.signers.as_ref()
    }

    /// Opens `dir`, verifies it (see the module documentation) and makes
    /// it the current generation. On error nothing changed.
    pub fn swap_to(&self, dir: &Path) -> Result<Swapped, SwapError> {
        let result = self.swap(dir);
        if let Some(m) = &self.0.metrics {
            m.swap(match &result {
                Ok(Swapped::To { .. }) => crate::admin::SwapResult::Swapped,
                Ok(Swapped::Unchanged { .. }) => crate::admin::SwapResult::Unchanged,
                Err(_) => crate::admin::SwapResult::Refused,
            });
        }
        result
    }

    fn swap(&self, dir: &Path) -> Result<Swapped, SwapError> {
        let store = StoredSnapshot::open(dir).map_err(|source| SwapError::Open {
            // Where the link pointed when it was opened, for the log line.
            dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            source: Box::new(source),
        })?;
        let signers = self.0.signers.as_ref().ok_or(SwapError::NoSigners)?;
        store
            .verify_signature(signers)
            .map_err(|source| SwapError::Signature {
                id: store.id(),
                root: store.root().to_path_buf(),
                source: Box::new(source),
            })?;
        // A layer: every ancestor it carries, signed by the same keys.
        egress_snapshot::verify::verify_chain(&store, Some(signers)).map_err(|source| {
            SwapError::Chain {
                id: store.id(),
                root: store.root().to_path_buf(),
                source: Box::new(source),
            }
        })?;
        let _one = self.0.swapping.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.generations();
        let (id, root) = (store.id(), store.root().to_path_buf());
        let same = |m: &Arc<Mirror>| m.id == id && stored_root(m) == Some(root.as_path());
        if same(&old.current) {
            return Ok(Swapped::Unchanged { id });
        }
        let held = old.previous.iter().find(|m| same(m)).cloned();
        let reused = held.is_some();
        let next = held.unwrap_or_else(|| {
            let made = (self.0.make)(Arc::new(store));
            Arc::new(match &self.0.metrics {
                Some(m) => made.count_into(Arc::clone(m)),
                None => made,
            })
        });
        set_budget(&next, self.0.zero_copy_budget);
        set_budget(&old.current, 0);
        let mut previous = vec![Arc::clone(&old.current)];
        previous.extend(
            old.previous
                .iter()
                .filter(|m| !Arc::ptr_eq(m, &next))
                .cloned(),
        );
        previous.truncate(PREVIOUS_GENERATIONS);
        let from = old.current.id;
        *self
            .0
            .generations
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Arc::new(Generations {
            current: next,
            previous,
        });
        Ok(Swapped::To {
            from,
            to: id,
            root,
            reused,
        })
    }
}

fn stored_root(m: &Mirror) -> Option<&Path> {
    match &m.backend {
        Backend::Stored(store) => Some(store.root()),
        Backend::Memory(_) => None,
    }
}

fn set_budget(m: &Mirror, bytes: u64) {
    if let Backend::Stored(store) = &m.backend {
        store.set_zero_copy_budget(bytes);
    }
}

impl Generations {
    /// The answer from the current generation, or, for a distribution file
    /// it does not have, from the newest previous generation that has it;
    /// with the generation that answered.
    fn answer(
        &self,
        req: &Request,
        now: bool,
    ) -> Option<(&Mirror, Response, Option<Sha256Digest>)> {
        let (resp, digest) = self.current.respond(req, now)?;
        // Only distribution files (bytes a page names) may come from a previous
        // generation.
        if resp.status == 404 && crate::is_distribution_file(req.path()) {
            if let Some(prev) = self.previous.iter().find(|m| m.route(req.path()).is_some()) {
                let (resp, digest) = prev.respond(req, now)?;
                return Some((prev, resp, digest));
            }
        }
        Some((&self.current, resp, digest))
    }
}

impl Handler for SwappableMirror {
    fn handle(&self, req: Request) -> Reply {
        let g = self.generations();
        match g.answer(&req, false) {
            Some((mirror, resp, digest)) => mirror.finish(&req, resp, digest),
            None => g
                .current
                .finish(&req, Response::text(500, "no answer\n"), None),
        }
    }

    fn handle_now(&self, req: &Request) -> Option<Reply> {
        let g = self.generations();
        if g.current.log_requests {
            return None;
        }
        let (mirror, resp, digest) = g.answer(req, true)?;
        Some(mirror.finish(req, resp, digest))
    }

    /// Vouched for by the generation that answered (named by the
    /// response's `X-Egress-Snapshot`); a body from a generation no longer
    /// held is not vouched for (the connection is closed before its last
    /// byte), since nothing can check it any more.
    fn vouch_for_file(&self, response: &Response, file: &File) -> bool {
        let g = self.generations();
        let id = response
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("x-egress-snapshot"))
            .map(|(_, v)| v.as_str());
        let by = std::iter::once(&g.current)
            .chain(g.previous.iter())
            .find(|m| Some(m.id_hex.as_str()) == id);
        match by {
            Some(m) => m.vouch_for_file(response, file),
            None => {
                (self.0.log)(&format!(
                    "egress-mirror: a file body from snapshot {} outlived {PREVIOUS_GENERATIONS} swaps; response aborted before its last byte, connection closed",
                    id.unwrap_or("(unknown)")
                ));
                false
            }
        }
    }
}

/// Serves `mirror` on `addr` with `limits`, over https with `tls` when
/// given, behind the load balancers `proxy` trusts, as [`crate::serve_mirror_over`] does for a single [`Mirror`].
pub fn serve_swappable_over(
    mirror: SwappableMirror,
    addr: impl std::net::ToSocketAddrs,
    limits: egress_http::Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
    proxy: egress_http::ProxyConfig,
) -> std::io::Result<egress_http::ServerHandle> {
    let mut config = crate::server_config(limits);
    config.acceptor = tls.map(egress_http::tls_acceptor);
    config.proxy = proxy;
    egress_http::Server::bind_with(addr, mirror, config)
}
