//! Download progress on stderr: one updating line on a terminal, otherwise
//! one line per finished file (logs stay readable and greppable).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct Progress {
    tty: bool,
    files: usize,
    /// Sum of the sizes the index announced; 0 when unknown.
    total: u64,
    started: Instant,
    state: Mutex<State>,
}

struct State {
    done: usize,
    bytes: u64,
    drawn: Option<Instant>,
    current: String,
}

pub(crate) use egress_snapshot::human_size as human;

/// Set by [`quiet`]: no progress lines or notes on standard error.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Silences the progress lines and notes a build writes on standard error,
/// for a program that builds a snapshot of its own in-process (the
/// built-in run's apt reference); the command line never calls it.
pub fn quiet(on: bool) {
    QUIET.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn is_quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

impl Progress {
    pub(crate) fn new(files: usize, total: u64) -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            files,
            total,
            started: Instant::now(),
            state: Mutex::new(State {
                done: 0,
                bytes: 0,
                drawn: None,
                current: String::new(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn draw(&self, s: &mut State, force: bool) {
        if !self.tty || is_quiet() {
            return;
        }
        let now = Instant::now();
        if !force
            && s.drawn
                .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        s.drawn = Some(now);
        let total = if self.total > 0 {
            format!(" / {}", human(self.total))
        } else {
            String::new()
        };
        let name: String = s.current.chars().take(60).collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[Kfetching [{}/{} files] {}{total} {name}",
            s.done,
            self.files,
            human(s.bytes)
        );
        let _ = err.flush();
    }

    /// A line that must not be overwritten (a retry, a note).
    pub(crate) fn say(&self, line: &str) {
        if is_quiet() {
            return;
        }
        let mut s = self.state();
        if self.tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("{line}");
        self.draw(&mut s, true);
    }

    pub(crate) fn start(&self, filename: &str) {
        let mut s = self.state();
        s.current = filename.to_string();
        self.draw(&mut s, false);
    }

    /// Body bytes arrived. A download that restarts from scratch takes its
    /// discarded bytes back with [`Progress::discard`].
    pub(crate) fn add(&self, n: u64) {
        let mut s = self.state();
        s.bytes += n;
        self.draw(&mut s, false);
    }

    pub(crate) fn discard(&self, n: u64) {
        let mut s = self.state();
        s.bytes = s.bytes.saturating_sub(n);
    }

    pub(crate) fn done(&self, filename: &str, size: u64, how: &str) {
        if is_quiet() {
            return;
        }
        let mut s = self.state();
        s.done += 1;
        if self.tty {
            self.draw(&mut s, true);
        } else {
            eprintln!(
                "fetched [{}/{}] {filename} ({}){how}",
                s.done,
                self.files,
                human(size)
            );
        }
    }

    pub(crate) fn finish(&self) {
        if is_quiet() {
            return;
        }
        let s = self.state();
        if self.tty {
            eprint!("\r\x1b[K");
        }
        let secs = self.started.elapsed().as_secs_f64();
        if self.files > 0 {
            eprintln!(
                "fetched {} files, {} in {secs:.1} s",
                s.done,
                human(s.bytes)
            );
        }
    }
}
