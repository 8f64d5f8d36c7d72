//! The serving runtimes: one single-threaded tokio runtime per core, each
//! driven by a thread of its own, as nginx runs one event loop per worker.
//!
//! A connection is handed to one runtime when it is accepted (round robin)
//! and stays there: its socket is registered with that runtime's reactor,
//! and every request on it is read, answered and written on that one
//! thread. Nothing on the request path wakes another thread. With one
//! work-stealing runtime instead, idle workers were woken whenever another
//! had tasks: 0.21 context switches and 0.26 `futex` calls per page, where
//! nginx has 0.012 and none (docs/benchmarks.md, "Pages").
//!
//! What may block (a handler that is not [`crate::Handler::handle_now`],
//! a file read) goes to the runtime's blocking pool, as before.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::runtime::Handle;
use tokio::sync::watch;

/// Where new connections are spawned: the runtimes' handles, in turn.
pub(crate) struct Spread {
    first: Handle,
    handles: Vec<Handle>,
    next: AtomicUsize,
}

impl Spread {
    /// The runtime the next connection is served on.
    pub(crate) fn pick(&self) -> &Handle {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let len = self.handles.len().max(1);
        // `handles` is never empty (`Runtimes::start` makes at least one).
        self.handles.get(n % len).unwrap_or(&self.first)
    }
}

/// The runtimes and their threads; [`Runtimes::stop`] ends them, dropping
/// every task still there.
pub(crate) struct Runtimes {
    spread: Arc<Spread>,
    exit: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
}

impl Runtimes {
    /// Starts `n` runtimes (at least one), each on a thread named `name`.
    pub(crate) fn start(n: usize, name: &str) -> io::Result<Self> {
        let (exit, exit_rx) = watch::channel(false);
        let mut handles = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..n.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .thread_name(name)
                .enable_io()
                .enable_time()
                .build()?;
            handles.push(runtime.handle().clone());
            let mut exit_wait = exit_rx.clone();
            let thread = std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    runtime.block_on(async move {
                        let _ = exit_wait.wait_for(|e| *e).await;
                    });
                    // Blocking tasks still running (a handler that sleeps)
                    // finish on their own.
                    runtime.shutdown_background();
                });
            match thread {
                Ok(t) => threads.push(t),
                Err(e) => {
                    let _ = exit.send(true);
                    return Err(e);
                }
            }
        }
        Ok(Self {
            spread: Arc::new(Spread {
                first: handles
                    .first()
                    .cloned()
                    .ok_or_else(|| io::Error::other("no runtime"))?,
                handles,
                next: AtomicUsize::new(0),
            }),
            exit,
            threads,
        })
    }

    pub(crate) fn spread(&self) -> Arc<Spread> {
        Arc::clone(&self.spread)
    }

    /// Ends every runtime: tasks still there are dropped (their sockets
    /// closed); safe to call from any thread, a runtime's own included.
    pub(crate) fn stop(&mut self) {
        let _ = self.exit.send(true);
        let me = std::thread::current().id();
        for t in self.threads.drain(..) {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Runtimes {
    fn drop(&mut self) {
        self.stop();
    }
}
