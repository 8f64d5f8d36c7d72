//! A fixed number of worker threads over a list: enough for hashing blobs
//! and for downloads, where each item is large and independent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;

/// Runs `f` on every item with at most `jobs` threads; results come back in
/// the items' order. A panic in `f` propagates (thread::scope re-raises it).
pub fn map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    let workers = jobs.clamp(1, items.len().max(1));
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    // Every slot is filled: each index was taken by exactly one worker, and
    // a worker that panicked has already re-raised in scope().
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(
            super::map(&items, 7, |x| x * 2),
            (0..100).map(|x| x * 2).collect::<Vec<_>>()
        );
        assert!(super::map(&Vec::<u32>::new(), 4, |x| *x).is_empty());
    }
}
