//! The three load scenarios, run against one server at a time: keep-alive
//! connections asking for a page as fast as the server answers, held
//! connections (slow or silent) while a legitimate client asks for the page
//! at a steady rate, and idle connections for the memory each costs.

use super::net::{self, parse_response, Unreadable};
use super::pool::{Ev, Pool, Slot};
use super::rss;
use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// A server under test: where it listens and the process whose memory
/// (with its children's) is measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    pub(crate) pid: u32,
}

/// What every scenario shares.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The page asked for (served with `Accept: text/html`).
    pub(crate) page: String,
    /// Generated connections per loopback source address.
    pub(crate) per_source: usize,
    /// Length of a keep-alive run and of each legitimate client's run.
    pub(crate) duration: Duration,
    /// How often the legitimate client sends its GET.
    pub(crate) legit_every: Duration,
    /// How often a slow connection sends its next line.
    pub(crate) drip_every: Duration,
    /// The nice value the legitimate client's thread asks for (below 0
    /// needs root): the generator stands in for other machines, so the
    /// client that measures should not wait behind it for a core.
    pub(crate) legit_nice: i32,
}

/// How long opening all connections of a scenario may take.
const RAMP_WITHIN: Duration = Duration::from_secs(30);
/// How long one legitimate request may take before it counts as failed.
const LEGIT_WITHIN: Duration = Duration::from_secs(5);
/// How long idle connections are left before memory is read.
const SETTLE: Duration = Duration::from_secs(2);

/// Latencies in microseconds, and their percentiles.
#[derive(Debug, Default, Clone)]
pub(crate) struct Latencies(Vec<u64>);

impl Latencies {
    pub(crate) fn push(&mut self, d: Duration) {
        self.0
            .push(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// The `p`-th percentile (nearest rank), in microseconds.
    pub(crate) fn percentile(&self, p: f64) -> Option<u64> {
        let mut v = self.0.clone();
        v.sort_unstable();
        let n = v.len();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        v.get(rank.clamp(1, n) - 1).copied()
    }
}

/// A keep-alive run's figures.
#[derive(Debug, Default)]
pub(crate) struct KeepAlive {
    pub(crate) connections: usize,
    /// Connections open when measuring began.
    pub(crate) connected: usize,
    pub(crate) ok: u64,
    /// Non-200 responses, unreadable responses, and connections closed or
    /// reset with a request in flight.
    pub(crate) errors: u64,
    pub(crate) latencies: Latencies,
    pub(crate) elapsed: Duration,
    pub(crate) peak_rss_kib: u64,
}

/// Threads generating keep-alive load, each with its own share of the
/// connections and its own epoll set (as `wrk -t2`).
const THREADS: usize = 2;

/// `n` connections, opened first, then each sending a GET and the next one
/// as soon as the previous response is complete; a closed connection is
/// opened again. Measured for `duration` from the first GET, with the
/// server's memory sampled meanwhile.
pub(crate) fn keep_alive(t: &Target, s: &Settings, n: usize) -> io::Result<KeepAlive> {
    let ready = Arc::new(Barrier::new(THREADS + 1));
    let go = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|k| {
            let (from, to) = (n * k / THREADS, n * (k + 1) / THREADS);
            let (t, s) = (t.clone(), s.clone());
            let (ready, go) = (Arc::clone(&ready), Arc::clone(&go));
            std::thread::spawn(move || keep_alive_share(&t, &s, from, to - from, &ready, &go))
        })
        .collect();
    ready.wait();
    let sampler = rss::Sampler::start(t.pid);
    go.wait();
    let start = Instant::now();
    let mut out = KeepAlive {
        connections: n,
        ..KeepAlive::default()
    };
    let mut failed = None;
    for w in workers {
        match w.join() {
            Ok(Ok(part)) => {
                out.connected += part.connected;
                out.ok += part.ok;
                out.errors += part.errors;
                out.latencies.0.extend(part.latencies.0);
            }
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some(io::Error::other("a load thread panicked")),
        }
    }
    out.elapsed = start.elapsed();
    out.peak_rss_kib = sampler.stop();
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// One thread's share of [`keep_alive`]: connections `first..first + n`.
/// Waits at `ready` once they are open and starts measuring at `go`.
fn keep_alive_share(
    t: &Target,
    s: &Settings,
    first: usize,
    n: usize,
    ready: &Barrier,
    go: &Barrier,
) -> io::Result<KeepAlive> {
    let req = net::request(&s.page, false).into_bytes();
    let pool = Pool::new(t.addr, s.per_source, first);
    let mut out = KeepAlive::default();
    let mut pool = match pool {
        Ok(p) => p,
        Err(e) => {
            ready.wait();
            go.wait();
            return Err(e);
        }
    };
    // When measuring began: responses to requests sent before it are not
    // counted.
    let since: Cell<Option<Instant>> = Cell::new(None);
    let closed = RefCell::new(Vec::new());
    let mut on = |i: usize, slot: &mut Slot, ev: Ev| {
        let counted = matches!((since.get(), slot.sent), (Some(a), Some(b)) if b >= a);
        match ev {
            // While opening, connections stay silent, so that every one is
            // open before the load starts; later a reopened one starts at once.
            Ev::Connected if since.get().is_some() => send(slot, &req),
            Ev::Connected => {}
            Ev::ConnectFailed => {}
            Ev::Data => match take_response(slot) {
                None => {}
                Some(Ok((status, close))) => {
                    if counted && status == 200 {
                        out.ok += 1;
                        if let Some(sent) = slot.sent {
                            out.latencies.push(sent.elapsed());
                        }
                    } else if counted {
                        out.errors += 1;
                    }
                    if close {
                        slot.stream = None;
                        closed.borrow_mut().push(i);
                    } else {
                        send(slot, &req);
                    }
                }
                Some(Err(Unreadable)) => {
                    out.errors += u64::from(counted);
                    slot.stream = None;
                    closed.borrow_mut().push(i);
                }
            },
            Ev::Closed => {
                out.errors += u64::from(counted);
                closed.borrow_mut().push(i);
            }
        }
    };
    let ramped = pool.ramp(n, RAMP_WITHIN, &mut on);
    let connected = pool.open_count();
    ready.wait();
    go.wait();
    ramped?;
    let start = Instant::now();
    since.set(Some(start));
    for slot in pool.slots.iter_mut().filter(|s| s.connected) {
        send(slot, &req);
    }
    while start.elapsed() < s.duration {
        pool.poll(Duration::from_millis(10), &mut on)?;
        let again: Vec<usize> = closed.borrow_mut().drain(..).collect();
        for i in again {
            pool.open(i);
        }
    }
    out.connected = connected;
    Ok(out)
}

/// Sends the next request on a connected slot.
fn send(slot: &mut Slot, req: &[u8]) {
    if let Some(stream) = slot.stream.as_mut() {
        if net::write_now(stream, req) {
            slot.sent = Some(Instant::now());
        } else {
            slot.stream = None;
        }
    }
}

/// The complete response at the start of the slot's buffer, consumed:
/// its status and whether the server closes; `None` while incomplete.
fn take_response(slot: &mut Slot) -> Option<Result<(u16, bool), Unreadable>> {
    match parse_response(&slot.buf) {
        Ok(None) => None,
        Ok(Some(r)) => {
            slot.buf.drain(..r.len.min(slot.buf.len()));
            Some(Ok((r.status, r.close)))
        }
        Err(e) => Some(Err(e)),
    }
}

/// What the legitimate client saw.
#[derive(Debug)]
pub(crate) struct Legit {
    pub(crate) sent: usize,
    pub(crate) ok: usize,
    /// Of the successful requests.
    pub(crate) latencies: Latencies,
    /// Why the first few failed ones failed.
    pub(crate) failures: Vec<String>,
    /// The nice value its thread ran at, or why the one asked for could
    /// not be set.
    pub(crate) nice: Result<i32, String>,
}

impl Default for Legit {
    fn default() -> Self {
        Legit {
            sent: 0,
            ok: 0,
            latencies: Latencies::default(),
            failures: Vec::new(),
            nice: Ok(0),
        }
    }
}

/// Starts the legitimate client on a thread of its own, at
/// `Settings::legit_nice`: one GET every `legit_every` for `duration`,
/// each on a new connection from 127.0.0.1, each bounded by
/// [`LEGIT_WITHIN`]. `done` is set when it finishes.
pub(crate) fn legit(
    addr: SocketAddr,
    s: &Settings,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Legit> {
    let (page, duration, every, nice) = (s.page.clone(), s.duration, s.legit_every, s.legit_nice);
    std::thread::spawn(move || {
        let mut out = Legit {
            nice: net::set_thread_nice(nice),
            ..Legit::default()
        };
        let start = Instant::now();
        let mut next = start;
        while start.elapsed() < duration {
            let t0 = Instant::now();
            out.sent += 1;
            match net::one_get(addr, &page, LEGIT_WITHIN) {
                Ok(true) => {
                    out.ok += 1;
                    out.latencies.push(t0.elapsed());
                }
                Ok(false) => note(&mut out.failures, "a response other than 200".into()),
                Err(e) => note(&mut out.failures, e.to_string()),
            }
            next += every;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        done.store(true, Ordering::SeqCst);
        out
    })
}

/// Waits for the legitimate client's thread.
pub(crate) fn joined(client: std::thread::JoinHandle<Legit>) -> io::Result<Legit> {
    client
        .join()
        .map_err(|_| io::Error::other("the legitimate client's thread panicked"))
}

fn note(failures: &mut Vec<String>, why: String) {
    if failures.len() < 5 && !failures.contains(&why) {
        failures.push(why);
    }
}

/// A held-connections run's figures.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// Held connections open when the legitimate client started.
    pub(crate) connected: usize,
    /// Held connections open when it finished.
    pub(crate) open_at_end: usize,
    /// Held connections the server closed during the run (each opened
    /// again at once).
    pub(crate) closed_by_server: u64,
    pub(crate) legit: Legit,
    pub(crate) peak_rss_kib: u64,
}

/// `n` held connections from the generated sources: the even ones send
/// half a request line at once and then one more line every `drip_every`
/// (the rest of the request line, then one header line at a time, never
/// the blank line that ends the head); the odd ones send nothing. A held
/// connection the server closes is opened again at once (as an attacker's
/// loop would), so that `n` stay held. Meanwhile the legitimate client runs.
pub(crate) fn held(t: &Target, s: &Settings, n: usize) -> io::Result<Held> {
    let line = format!("GET {} HTTP/1.1\r\n", s.page);
    let (first, rest) = line.split_at(line.len() / 2);
    let first = first.as_bytes().to_vec();
    let rest = rest.as_bytes().to_vec();
    let mut pool = Pool::new(t.addr, s.per_source, 0)?;
    let mut out = Held::default();
    let closed = RefCell::new(Vec::new());
    let mut on = |i: usize, slot: &mut Slot, ev: Ev| match ev {
        Ev::Connected => {
            if i.is_multiple_of(2) {
                drip(slot, &first);
            }
        }
        Ev::ConnectFailed | Ev::Data => slot.buf.clear(),
        Ev::Closed => {
            out.closed_by_server += 1;
            closed.borrow_mut().push(i);
        }
    };
    pool.ramp(n, RAMP_WITHIN, &mut on)?;
    let connected = pool.open_count();
    let sampler = rss::Sampler::start(t.pid);
    let stop = Arc::new(AtomicBool::new(false));
    let client = legit(t.addr, s, Arc::clone(&stop));
    let mut last_drip = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        pool.poll(Duration::from_millis(50), &mut on)?;
        // The pressure stays: one the server closed is opened again at once.
        for i in closed.take() {
            pool.open(i);
        }
        if last_drip.elapsed() >= s.drip_every {
            last_drip = Instant::now();
            for i in 0..n {
                let open = pool.slots.get(i).is_some_and(|s| s.stream.is_some());
                if !open {
                    pool.open(i);
                    continue;
                }
                if i.is_multiple_of(2) {
                    if let Some(slot) = pool.slots.get_mut(i).filter(|s| s.connected) {
                        let k = slot.pieces;
                        let mut piece = if k == 1 { rest.clone() } else { Vec::new() };
                        piece.extend_from_slice(format!("X-Drip-{k}: {k}\r\n").as_bytes());
                        drip(slot, &piece);
                    }
                }
            }
        }
    }

    pool.recheck();
    out.connected = connected;
    out.open_at_end = pool.open_count();
    out.peak_rss_kib = sampler.stop();
    out.legit = joined(client)?;
    Ok(out)
}

/// Sends one more piece of a slow request.
fn drip(slot: &mut Slot, piece: &[u8]) {
    if let Some(stream) = slot.stream.as_mut() {
        if net::write_now(stream, piece) {
            slot.pieces += 1;
        } else {
            slot.stream = None;
            slot.connected = false;
        }
    }
}

/// An idle-connections run's figures.
#[derive(Debug, Default)]
pub(crate) struct Idle {
    pub(crate) rss_before_kib: u64,
    pub(crate) rss_after_kib: u64,
    /// Connections still open when memory was read.
    pub(crate) open: usize,
}

impl Idle {
    /// KiB per 1,000 idle connections still open.
    pub(crate) fn per_thousand_kib(&self) -> Option<f64> {
        (self.open > 0).then(|| {
            (self.rss_after_kib as f64 - self.rss_before_kib as f64) * 1000.0 / self.open as f64
        })
    }
}

/// The server's memory with no connection of ours, then with `n` that
/// connect and send nothing, [`SETTLE`] after the last one connected.
pub(crate) fn idle(t: &Target, s: &Settings, n: usize) -> io::Result<Idle> {
    std::thread::sleep(SETTLE);
    let mut out = Idle {
        rss_before_kib: rss::tree_rss_kib(t.pid),
        ..Idle::default()
    };
    let mut pool = Pool::new(t.addr, s.per_source, 0)?;
    let mut on = |_: usize, slot: &mut Slot, _: Ev| slot.buf.clear();
    pool.ramp(n, RAMP_WITHIN, &mut on)?;
    let settled = Instant::now() + SETTLE;
    while let Some(left) = settled.checked_duration_since(Instant::now()) {
        pool.poll(left.min(Duration::from_millis(100)), &mut on)?;
    }
    out.rss_after_kib = rss::tree_rss_kib(t.pid);
    pool.recheck();
    out.open = pool.open_count();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut l = Latencies::default();
        assert_eq!(l.percentile(99.0), None);
        for us in (1..=100).rev() {
            l.push(Duration::from_micros(us));
        }
        assert_eq!(l.percentile(50.0), Some(50));
        assert_eq!(l.percentile(99.0), Some(99));
        assert_eq!(l.percentile(100.0), Some(100));
        assert_eq!(l.percentile(0.0), Some(1));
    }
}
