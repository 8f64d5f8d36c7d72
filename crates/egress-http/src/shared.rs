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
