//! The mirror's side of the misses log: a [`Recorder`] the request path
//! calls, which only ever tries to put a small message on a bounded queue
//! (never a lock, never I/O, never a wait), and one writer thread that
//! applies the bounds and appends the lines.
//!
//! Order of start-up (see `run.rs`): [`MissesLog::open`] before the process
//! confines itself (Landlock then allows no write anywhere; the open
//! descriptor keeps working), [`MissesLog::start`] after it (the writer is a
//! thread, and no thread may exist before confinement).
//!
//! Bounds ([`Limits`]): at most `entries` distinct miss lines and `entries`
//! distinct served names per run, at most `per_client` miss lines per client
//! address, no line over `line` bytes. An ask over a bound, or one that
//! finds the queue full, is dropped and counted; the counts go in a summary
//! line (at the first drop, then at most once per `summary_every` while
//! anything changes, and when the log closes) and, when something was
//! dropped, in one stderr line at the same moments.

use super::{Ask, Counts, Protocol, Record, RunId};
use crate::LogSink;
use egress_model::Sha256Digest;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default distinct entries per run (misses; served names have as many).
pub const DEFAULT_ENTRIES: usize = 10_000;
/// Default miss lines per client address per run.
pub const DEFAULT_PER_CLIENT: usize = 1_000;
/// Default longest line, in bytes.
pub const DEFAULT_LINE: usize = 1024;
/// The shortest `line` bound allowed: every ask's line fits in it when its
/// names are short, and a summary line always does.
pub const MIN_LINE: usize = 256;

/// The bounds of one run's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Distinct miss lines, and distinct served names, per run.
    pub entries: usize,
    /// Miss lines per client address (IPv4-mapped IPv6 folded to IPv4).
    pub per_client: usize,
    /// The longest line written, in bytes, at least [`MIN_LINE`] and at
    /// most [`super::MAX_LINE`].
    pub line: usize,
    /// Messages waiting for the writer; more are dropped and counted.
    pub queue: usize,
    /// At most one summary line per this long while counts change.
    pub summary_every: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            entries: DEFAULT_ENTRIES,
            per_client: DEFAULT_PER_CLIENT,
            line: DEFAULT_LINE,
            queue: 1024,
            summary_every: Duration::from_secs(60),
        }
    }
}

/// Why the misses log cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open {} for appending: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("cannot write to {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the misses-log writer thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("line bound {0} is outside {MIN_LINE}..={max}", max = super::MAX_LINE)]
    LineBound(usize),
}

/// The log file, opened and not yet written to.
#[derive(Debug)]
pub struct MissesLog {
    file: File,
    path: PathBuf,
}

impl MissesLog {
    /// Opens (creating, mode 0640) `path` for appending. Call it before the
    /// process confines itself.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        // Refused before opening: opening a FIFO for writing would wait for
        // a reader.
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                return Err(OpenError::NotAFile {
                    path: path.to_path_buf(),
                });
            }
        }
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o640);
        let file = options.open(path).map_err(|source| OpenError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        match file.metadata() {
            Ok(meta) if meta.is_file() => Ok(Self {
                file,
                path: path.to_path_buf(),
            }),
            Ok(_) => Err(OpenError::NotAFile {
                path: path.to_path_buf(),
            }),
            Err(source) => Err(OpenError::Open {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the run's start line and starts the writer thread; `log`
    /// gets the stderr lines about drops. The writer ends, after a last
    /// summary line, when every [`Recorder`] is gone.
    pub fn start(
        mut self,
        snapshot: Sha256Digest,
        limits: Limits,
        log: LogSink,
    ) -> Result<(Recorder, Writer), OpenError> {
        if !(super::writer::MIN_LINE..=super::MAX_LINE).contains(&limits.line) {
            return Err(OpenError::LineBound(limits.line));
        }
        let run = RunId::new(&snapshot);
        let start = Record::Start {
            time: now_secs(),
            run,
            snapshot,
            limits,
        };
        write_line(&mut self.file, &start.to_line()).map_err(|source| OpenError::Write {
            path: self.path.clone(),
            source,
        })?;
        let (tx, rx) = sync_channel(limits.queue.max(1));
        let queue_dropped = Arc::new(AtomicU64::new(0));
        let state = State {
            file: self.file,
            path: self.path,
            run,
            limits,
            counts: Counts::default(),
            summarized: Counts::default(),
            last_summary: Instant::now(),
            seen: HashSet::new(),
            per_client: HashMap::new(),
            served: HashSet::new(),
            queue_dropped: Arc::clone(&queue_dropped),
            log,
        };
        let handle = std::thread::Builder::new()
            .name("misses-log".into())
            .spawn(move || state.run(rx))
            .map_err(OpenError::Thread)?;
        Ok((Recorder { tx, queue_dropped }, Writer { handle }))
    }
}

/// The writer thread, to wait for once every [`Recorder`] is dropped.
#[derive(Debug)]
pub struct Writer {
    handle: JoinHandle<Counts>,
}

impl Writer {
    /// Waits for the writer to finish (after its last summary line) and
    /// returns the run's counts.
    pub fn join(self) -> Counts {
        self.handle.join().unwrap_or_default()
    }
}

enum Msg {
    Miss {
        time: i64,
        client: IpAddr,
        ask: Ask,
    },
    Served {
        time: i64,
        protocol: Protocol,
        name: String,
    },
}

/// What the request path holds: a bounded queue's sending end.
#[derive(Debug, Clone)]
pub struct Recorder {
    tx: SyncSender<Msg>,
    queue_dropped: Arc<AtomicU64>,
}

impl Recorder {
    /// Notes an ask the snapshot lacks; never waits.
    pub fn miss(&self, ask: Ask, client: IpAddr) {
        self.send(Msg::Miss {
            time: now_secs(),
            client: client.to_canonical(),
            ask,
        });
    }

    /// Notes a name the snapshot served; never waits.
    pub fn served(&self, protocol: Protocol, name: String) {
        self.send(Msg::Served {
            time: now_secs(),
            protocol,
            name,
        });
    }

    fn send(&self, msg: Msg) {
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.queue_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn now_secs() -> i64 {
    egress_model::Timestamp::now().unix_secs()
}

/// One line in one `write` (an `O_APPEND` file takes it whole).
fn write_line(file: &mut File, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes)
}

struct State {
    file: File,
    path: PathBuf,
    run: RunId,
    limits: Limits,
    counts: Counts,
    /// The counts in the last summary line.
    summarized: Counts,
    last_summary: Instant,
    seen: HashSet<(IpAddr, Ask)>,
    per_client: HashMap<IpAddr, usize>,
    served: HashSet<(Protocol, String)>,
    queue_dropped: Arc<AtomicU64>,
    log: LogSink,
}

impl State {
    fn run(mut self, rx: Receiver<Msg>) -> Counts {
        let tick = self.limits.summary_every.min(Duration::from_secs(1));
        loop {
            match rx.recv_timeout(tick) {
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.maybe_summarize(false);
        }
        self.maybe_summarize(true);
        self.counts
    }

    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Miss { time, client, ask } => {
                let key = (client, ask);
                if self.seen.contains(&key) {
                    return;
                }
                let mine = self.per_client.get(&client).copied().unwrap_or(0);
                if mine >= self.limits.per_client {
                    self.counts.dropped_per_client += 1;
                    return;
                }
                if self.seen.len() >= self.limits.entries {
                    self.counts.dropped_full += 1;
                    return;
                }
                let (client, ask) = key;
                let record = Record::Miss {
                    time,
                    run: self.run,
                    ask,
                    client,
                };
                if self.append(&record) {
                    self.counts.misses += 1;
                    self.per_client.insert(client, mine + 1);
                    if let Record::Miss { ask, .. } = record {
                        self.seen.insert((client, ask));
                    }
                }
            }
            Msg::Served {
                time,
                protocol,
                name,
            } => {
                let key = (protocol, name);
                if self.served.contains(&key) {
                    return;
                }
                if self.served.len() >= self.limits.entries {
                    self.counts.dropped_full += 1;
                    return;
                }
                let (protocol, name) = key;
                let record = Record::Served {
                    time,
                    run: self.run,
                    protocol,
                    name,
                };
                if self.append(&record) {
                    self.counts.served += 1;
                    if let Record::Served { protocol, name, .. } = record {
                        self.served.insert((protocol, name));
                    }
                }
            }
        }
    }

    /// Writes an entry line within the line bound; whether it was written.
    fn append(&mut self, record: &Record) -> bool {
        let line = record.to_line();
        if line.len() > self.limits.line {
            self.counts.dropped_long += 1;
            return false;
        }
        match write_line(&mut self.file, &line) {
            Ok(()) => true,
            Err(_) => {
                self.counts.write_errors += 1;
                false
            }
        }
    }

    /// A summary line when the counts changed and it is time (the first
    /// drop, `summary_every` since the last, or the end); a stderr line
    /// with it when more was dropped.
    fn maybe_summarize(&mut self, end: bool) {
        self.counts.dropped_queue = self.queue_dropped.load(Ordering::Relaxed);
        if self.counts == self.summarized {
            return;
        }
        let first_drop = self.summarized.dropped() == 0 && self.counts.dropped() > 0;
        let due = self.last_summary.elapsed() >= self.limits.summary_every;
        if !(end || first_drop || due) {
            return;
        }
        let summary = Record::Summary {
            time: now_secs(),
            run: self.run,
            counts: self.counts,
        };
        if write_line(&mut self.file, &summary.to_line()).is_err() {
            self.counts.write_errors += 1;
        }
        if self.counts.dropped() > self.summarized.dropped() {
            let c = self.counts;
            (self.log)(&format!(
                "egress-mirror: misses log {}: {} asks not logged so far in run {} (queue full {}, client over its bound {}, log full {}, line too long {}, write errors {}); the bounds are --misses-max-entries {}, --misses-max-per-client {}, --misses-max-line {}",
                self.path.display(),
                c.dropped(),
                self.run,
                c.dropped_queue,
                c.dropped_per_client,
                c.dropped_full,
                c.dropped_long,
                c.write_errors,
                self.limits.entries,
                self.limits.per_client,
                self.limits.line,
            ));
        }
        self.summarized = self.counts;
        self.last_summary = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::super::classify;
    use super::*;
    use std::sync::Mutex;

    struct Tmp(PathBuf);
    impl Tmp {
        fn new(name: &str) -> Self {
            let p = std::env::temp_dir().join(format!(
                "misses-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_file(&p);
            Self(p)
        }
        fn records(&self) -> Vec<Record> {
            std::fs::read_to_string(&self.0)
                .unwrap()
                .lines()
                .map(|l| Record::parse(l).unwrap())
                .collect()
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn ask(path: &str) -> Ask {
        classify(path).unwrap().miss(|_| false).unwrap()
    }

    fn sink() -> (LogSink, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = Arc::clone(&lines);
        let sink: LogSink = Arc::new(move |s: &str| l.lock().unwrap().push(s.to_string()));
        (sink, lines)
    }

    #[test]
    fn bounds_drop_and_count() {
        let tmp = Tmp::new("bounds");
        let (sink, stderr) = sink();
        let limits = Limits {
            entries: 5,
            per_client: 3,
            line: 300,
            queue: 10_000,
            summary_every: Duration::from_secs(3600),
        };
        let (rec, writer) = MissesLog::open(&tmp.0)
            .unwrap()
            .start(Sha256Digest::of(b"s"), limits, sink)
            .unwrap();
        // A line over 300 bytes, first (before the log is full).
        let long = format!("/{}", "x".repeat(190));
        rec.miss(ask(&long), "10.0.0.3".parse().unwrap());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "::ffff:10.0.0.2".parse().unwrap();
        // Client a: 3 distinct asks written, the 4th and 5th over its bound;
        // repeats are not distinct and cost nothing.
        for name in ["a1", "a2", "a3", "a1", "a1", "a4", "a5"] {
            rec.miss(ask(&format!("/{name}")), a);
        }
        // Client b: 2 written (the log then holds 5), 3 over the total.
        for name in ["b1", "b2", "b3", "b4", "b5"] {
            rec.miss(ask(&format!("/{name}")), b);
        }
        rec.served(Protocol::Npm, "a0".into());
        rec.served(Protocol::Npm, "a0".into());
        drop(rec);
        let counts = writer.join();
        assert_eq!(
            counts,
            Counts {
                misses: 5,
                served: 1,
                dropped_queue: 0,
                dropped_per_client: 2,
                dropped_full: 3,
                dropped_long: 1,
                write_errors: 0,
            }
        );
        let records = tmp.records();
        assert!(matches!(records.first(), Some(Record::Start { .. })));
        assert!(matches!(records.last(), Some(Record::Summary { counts: c, .. }) if *c == counts));
        let misses: Vec<(String, IpAddr)> = records
            .iter()
            .filter_map(|r| match r {
                Record::Miss { ask, client, .. } => Some((ask.name.clone(), *client)),
                _ => None,
            })
            .collect();
        let b4: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(
            misses,
            vec![
                ("a1".into(), a),
                ("a2".into(), a),
                ("a3".into(), a),
                ("b1".into(), b4),
                ("b2".into(), b4)
            ]
        );
        for line in std::fs::read_to_string(&tmp.0).unwrap().lines() {
            assert!(line.len() <= 300, "{line}");
        }
        // The first drop and the end: two summaries, each with a stderr line.
        let summaries = records
            .iter()
            .filter(|r| matches!(r, Record::Summary { .. }))
            .count();
        assert!(summaries >= 2, "{records:?}");
        let stderr = stderr.lock().unwrap();
        assert!(
            stderr
                .last()
                .is_some_and(|l| l.contains("6 asks not logged") && l.contains("log full 3")),
            "{stderr:?}"
        );
    }

    #[test]
    fn a_full_queue_drops_without_waiting() {
        let tmp = Tmp::new("queue");
        let (sink, _) = sink();
        let limits = Limits {
            queue: 1,
            ..Limits::default()
        };
        let (rec, writer) = MissesLog::open(&tmp.0)
            .unwrap()
            .start(Sha256Digest::of(b"s"), limits, sink)
            .unwrap();
        let t = Instant::now();
        for i in 0..20_000 {
            rec.miss(ask(&format!("/n{i}")), "10.0.0.1".parse().unwrap());
        }
        // Never waits for the writer: 20,000 sends in well under the time
        // the writer needs to write a thousand lines one by one.
        let sent = t.elapsed();
        drop(rec);
        let c = writer.join();
        assert_eq!(c.misses + c.dropped_queue + c.dropped_per_client, 20_000);
        assert!(c.dropped_queue > 0 && c.misses <= 1000, "{c:?}");
        assert!(sent < Duration::from_secs(5), "{sent:?}");
    }

    #[test]
    fn refuses_what_is_not_a_file_and_bad_line_bounds() {
        assert!(matches!(
            MissesLog::open(&std::env::temp_dir()),
            Err(OpenError::NotAFile { .. })
        ));
        assert!(matches!(
            MissesLog::open(Path::new("/nonexistent-dir/x/misses.log")),
            Err(OpenError::Open { .. })
        ));
        let tmp = Tmp::new("line");
        let (sink, _) = sink();
        let e = MissesLog::open(&tmp.0).unwrap().start(
            Sha256Digest::of(b"s"),
            Limits {
                line: 10,
                ..Limits::default()
            },
            sink,
        );
        assert!(matches!(e, Err(OpenError::LineBound(10))));
    }
}
