//! Sending many cases at once, keeping their order.

/// How many cases are in flight at once.
pub const WORKERS: usize = 4;

/// `send` applied to every item, by [`WORKERS`] threads at once (item `i`
/// on thread `i % WORKERS`), the results in the items' order. A thread
/// that panics loses its results, never the others'.
pub fn in_order<T: Sync, R: Send>(items: &[T], send: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let send = &send;
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                s.spawn(move || {
                    items
                        .iter()
                        .enumerate()
                        .skip(w)
                        .step_by(WORKERS)
                        .map(|(i, item)| (i, send(item)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_the_order() {
        let items: Vec<u32> = (0..23).collect();
        assert_eq!(
            super::in_order(&items, |i| i * 2),
            (0..23).map(|i| i * 2).collect::<Vec<_>>()
        );
    }
}
