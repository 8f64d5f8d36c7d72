//! A server's resident memory, read from `/proc`: the process and its
//! children (nginx's master and workers), summed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a [`Sampler`] reads the memory.
const EVERY: Duration = Duration::from_millis(100);

/// `pid` and its children, from `/proc/<pid>/task/*/children`.
fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(children) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    out
}

/// One `VmRSS:` (or other `/proc/<pid>/status` field) in KiB; 0 if gone.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident memory of `pid` and its children now, in KiB.
pub(crate) fn tree_rss_kib(pid: u32) -> u64 {
    tree(pid).into_iter().map(|p| status_kib(p, "VmRSS:")).sum()
}

/// Samples [`tree_rss_kib`] every [`EVERY`] on a thread of its own until
/// stopped, keeping the largest sum seen.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

impl Sampler {
    pub(crate) fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut peak = tree_rss_kib(pid);
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(EVERY);
                peak = peak.max(tree_rss_kib(pid));
            }
            peak
        });
        Self { stop, thread }
    }

    /// The peak, in KiB.
    pub(crate) fn stop(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_resident_memory() {
        let me = std::process::id();
        assert!(tree(me).contains(&me));
        let kib = tree_rss_kib(me);
        assert!(kib > 100, "{kib}");
        assert!(Sampler::start(me).stop() >= kib / 2);
        assert_eq!(tree_rss_kib(u32::MAX), 0);
    }
}
