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

/// Runs `f` on every item with at most `jobs` threads and keeps only what
/// it returns `Some` for, in no particular order: for a million items of
/// which few have anything to say (the blobs that fail a check), without a
/// slot per item.
pub fn filter_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> Option<R> + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let found: Mutex<Vec<R>> = Mutex::new(Vec::new());
    let workers = jobs.clamp(1, items.len().max(1));
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if let Some(r) = f(item) {
                    found.lock().unwrap_or_else(|e| e.into_inner()).push(r);
                }
            });
        }
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
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

    #[test]
    fn filter_map_keeps_what_it_is_given() {
        let items: Vec<u32> = (0..1000).collect();
        let mut odd = super::filter_map(&items, 3, |x| (x % 2 == 1).then_some(*x));
        odd.sort_unstable();
        assert_eq!(odd, (0..1000).filter(|x| x % 2 == 1).collect::<Vec<_>>());
        assert!(super::filter_map(&items, 2, |_| None::<u32>).is_empty());
    }
}
