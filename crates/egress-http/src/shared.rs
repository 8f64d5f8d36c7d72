//! What the listener and every connection of one server share.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::{Handler, Limits};

/// A limit's log line is printed at most once per this interval.
const LOG_EVERY: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) total: usize,
    pub(crate) per_client: HashMap<IpAddr, usize>,
}

/// What a server counts for its operators, from the first connection on.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) accepted: AtomicU64,
    pub(crate) refused_connection_limit: AtomicU64,
    pub(crate) refused_per_client_limit: AtomicU64,
    pub(crate) refused_unreadable: AtomicU64,
    pub(crate) refused_proxy_header: AtomicU64,
}

pub(crate) struct Shared {
    pub(crate) handler: Box<dyn Handler>,
    pub(crate) limits: Limits,
    pub(crate) inline: bool,
    pub(crate) addr: SocketAddr,
    pub(crate) stop: watch::Receiver<bool>,
    pub(crate) counts: Mutex<Counts>,
    /// Taken-over streams by id, as clones so `stop` can shut them down.
    pub(crate) taken: Mutex<HashMap<u64, TcpStream>>,
    pub(crate) next_taken: AtomicU64,
    pub(crate) refusing: AtomicUsize,
    pub(crate) per_client_log: RateLog,
    pub(crate) total_log: RateLog,
    pub(crate) accept_log: RateLog,
    pub(crate) per_client_hint: String,
    pub(crate) total_hint: String,
    pub(crate) tally: Tally,
    pub(crate) proxy: crate::proxy::ProxyConfig,
    pub(crate) proxy_log: RateLog,
}

impl Shared {
    /// Registers a taken-over stream until the returned value is dropped.
    pub(crate) fn register_taken(self: &Arc<Self>, stream: &TcpStream) -> Option<Taken> {
        let clone = stream.try_clone().ok()?;
        let id = self.next_taken.fetch_add(1, Ordering::Relaxed);
        lock(&self.taken).insert(id, clone);
        Some(Taken {
            id,
            shared: Arc::clone(self),
        })
    }
}

pub(crate) struct Taken {
    id: u64,
    shared: Arc<Shared>,
}

impl Drop for Taken {
    fn drop(&mut self) {
        lock(&self.shared.taken).remove(&self.id);
    }
}

/// Nothing panics while holding a lock, but a poisoned map is still
/// consistent (single insert/remove operations), so poisoning is ignored.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A log line printed at most once per [`LOG_EVERY`], with a count of the
/// events in between, so a flood of refusals cannot flood stderr.
#[derive(Default)]
pub(crate) struct RateLog {
    last: Mutex<Option<Instant>>,
    skipped: AtomicU64,
}

impl RateLog {
    pub(crate) fn log(&self, line: impl FnOnce() -> String) {
        let mut last = lock(&self.last);
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < LOG_EVERY) {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(now);
        let skipped = self.skipped.swap(0, Ordering::Relaxed);
        let more = if skipped > 0 {
            format!(" ({skipped} more since the last such line)")
        } else {
            String::new()
        };
        eprintln!("{}{more}", line());
    }
}

/// A running server's counts, as [`Stats::read`] gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections being served now.
    pub open_connections: usize,
    /// Connections admitted since start.
    pub accepted: u64,
    /// Connections answered 503 at the server's connection limit.
    pub refused_connection_limit: u64,
    /// Connections answered 503 at the per-client connection limit.
    pub refused_per_client_limit: u64,
    /// Requests that could not be read (malformed, too large, too slow)
    /// and were answered with a 4xx status before the connection closed.
    pub refused_unreadable: u64,
    /// Connections from a trusted proxy closed for a malformed, truncated,
    /// oversized or (when required) missing PROXY header.
    pub refused_proxy_header: u64,
}

/// Reads a server's counts without keeping it alive ([`crate::ServerHandle::stats`]).
#[derive(Clone)]
pub struct Stats(pub(crate) std::sync::Weak<Shared>);

impl Stats {
    /// The counts now; `None` once the server has stopped.
    pub fn read(&self) -> Option<ServerStats> {
        let shared = self.0.upgrade()?;
        if *shared.stop.borrow() {
            return None;
        }
        let t = &shared.tally;
        let open_connections = lock(&shared.counts).total;
        Some(ServerStats {
            open_connections,
            accepted: t.accepted.load(Ordering::Relaxed),
            refused_connection_limit: t.refused_connection_limit.load(Ordering::Relaxed),
            refused_per_client_limit: t.refused_per_client_limit.load(Ordering::Relaxed),
            refused_unreadable: t.refused_unreadable.load(Ordering::Relaxed),
            refused_proxy_header: t.refused_proxy_header.load(Ordering::Relaxed),
        })
    }
}
