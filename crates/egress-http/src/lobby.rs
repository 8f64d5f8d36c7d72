//! The lobby: accepted connections that have not sent a byte yet wait here,
//! outside the runtime, until they become readable or their idle deadline
//! passes.
//!
//! An idle connection in the lobby costs its socket and one slot of about
//! a hundred bytes (the socket, its payload, a key and a deadline), instead
//! of a task holding a whole connection's future: thousands of silent
//! connections (a fleet's idle pool, or a slowloris that connects and never
//! sends) stay cheap. One thread per server waits on an epoll set of the
//! parked sockets; when one is readable (data, EOF or an error) it leaves
//! the epoll set and goes to `on_ready`, which serves it on the runtime.
//! One that stays silent until its deadline is closed. Every connection is
//! parked with the same timeout, so the deadlines come in order and a queue
//! keeps them.

use std::collections::VecDeque;
use std::io;
use std::net::TcpStream;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::buffer::spare_capacity;
use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::event::{eventfd, EventfdFlags, Timespec};

use crate::shared::lock;

/// The key of the eventfd that wakes the thread (slot keys never reach it:
/// their generation is below `u32::MAX` for a very long time, and wraps to
/// a value whose low half differs).
const WAKE: u64 = u64::MAX;
/// Events taken per wait.
const EVENTS: usize = 256;
/// Expired connections closed per turn of the loop. Thousands parked at
/// once (a fleet, or a slowloris ramp) expire at once; closing them in
/// small batches, with the readable ones served between batches, keeps a
/// client that arrives meanwhile from waiting behind all of them.
const CLOSE_BATCH: usize = 64;

/// A parked connection: the socket, what the caller attached to it, and the
/// key its epoll entry and deadline carry.
struct Parked<T> {
    stream: TcpStream,
    payload: T,
    key: u64,
}

struct State<T> {
    slots: Vec<Option<Parked<T>>>,
    /// Free slot indices.
    free: Vec<u32>,
    /// Bumped for every parking, so that a stale key (an event or deadline
    /// for a connection that already left) never matches a new one.
    generation: u32,
    deadlines: VecDeque<(Instant, u64)>,
    stopped: bool,
}

impl<T> State<T> {
    fn take(&mut self, key: u64) -> Option<Parked<T>> {
        let index = (key & u64::from(u32::MAX)) as u32;
        let slot = self.slots.get_mut(index as usize)?;
        if slot.as_ref().is_some_and(|p| p.key == key) {
            self.free.push(index);
            slot.take()
        } else {
            None
        }
    }
}

type OnReady<T> = Box<dyn Fn(TcpStream, T) + Send + Sync>;

pub(crate) struct Lobby<T> {
    epoll: OwnedFd,
    wake: OwnedFd,
    timeout: Duration,
    state: Mutex<State<T>>,
    on_ready: OnReady<T>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Send + 'static> Lobby<T> {
    /// Starts the lobby's thread. Connections parked wait at most `timeout`
    /// for their first byte; a readable one is handed to `on_ready` (on the
    /// lobby's thread, so it should only spawn).
    pub(crate) fn start(
        timeout: Duration,
        on_ready: impl Fn(TcpStream, T) + Send + Sync + 'static,
    ) -> io::Result<Arc<Self>> {
        let epoll = epoll::create(CreateFlags::CLOEXEC)?;
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        epoll::add(&epoll, &wake, EventData::new_u64(WAKE), EventFlags::IN)?;
        let lobby = Arc::new(Lobby {
            epoll,
            wake,
            timeout,
            state: Mutex::new(State {
                slots: Vec::new(),
                free: Vec::new(),
                generation: 0,
                deadlines: VecDeque::new(),
                stopped: false,
            }),
            on_ready: Box::new(on_ready),
            thread: Mutex::new(None),
        });
        let running = Arc::clone(&lobby);
        let thread = std::thread::Builder::new()
            .name("egress-http-lobby".into())
            .spawn(move || running.run())?;
        *lock(&lobby.thread) = Some(thread);
        Ok(lobby)
    }

    /// Parks `stream` (non-blocking) until it is readable or the timeout
    /// passes. If the lobby has stopped or the socket cannot be watched, the
    /// connection is dropped (closed).
    pub(crate) fn park(&self, stream: TcpStream, payload: T) {
        let mut st = lock(&self.state);
        if st.stopped {
            return;
        }
        st.generation = st.generation.wrapping_add(1);
        let index = match st.free.pop() {
            Some(index) => index,
            None => {
                let Ok(index) = u32::try_from(st.slots.len()) else {
                    return;
                };
                st.slots.push(None);
                index
            }
        };
        let key = (u64::from(st.generation) << 32) | u64::from(index);
        let watched = epoll::add(
            &self.epoll,
            &stream,
            EventData::new_u64(key),
            EventFlags::IN | EventFlags::RDHUP | EventFlags::ONESHOT,
        );
        if watched.is_err() {
            st.free.push(index);
            return;
        }
        if let Some(slot) = st.slots.get_mut(index as usize) {
            *slot = Some(Parked {
                stream,
                payload,
                key,
            });
        }
        let was_empty = st.deadlines.is_empty();
        st.deadlines.push_back((Instant::now() + self.timeout, key));
        drop(st);
        if was_empty {
            // The thread may be waiting with no deadline at all.
            self.wake();
        }
    }

    /// Closes every parked connection and ends the thread.
    pub(crate) fn stop(&self) {
        let parked = {
            let mut st = lock(&self.state);
            st.stopped = true;
            st.deadlines.clear();
            std::mem::take(&mut st.slots)
        };
        drop(parked);
        self.wake();
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }

    fn wake(&self) {
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }

    fn run(&self) {
        let mut events = Vec::with_capacity(EVENTS);
        let mut ready = Vec::new();
        let mut expired = Vec::new();
        loop {
            let next = {
                let st = lock(&self.state);
                if st.stopped {
                    return;
                }
                st.deadlines.front().map(|(deadline, _)| *deadline)
            };
            // Rounded up to the next millisecond, so a deadline less than a
            // millisecond away is not a busy loop; one that has passed (a
            // batch left to close) does not wait at all.
            let wait = next.map(|deadline| {
                let d = deadline.saturating_duration_since(Instant::now());
                let d = if d.is_zero() {
                    d
                } else {
                    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                        + Duration::from_millis(1)
                };
                Timespec {
                    tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(d.subsec_nanos()),
                }
            });
            events.clear();
            match epoll::wait(&self.epoll, spare_capacity(&mut events), wait.as_ref()) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            }
            {
                let mut st = lock(&self.state);
                if st.stopped {
                    return;
                }
                for event in &events {
                    let key = event.data.u64();
                    if key == WAKE {
                        let mut count = [0u8; 8];
                        let _ = rustix::io::read(&self.wake, &mut count);
                    } else if let Some(parked) = st.take(key) {
                        ready.push(parked);
                    }
                }
                let now = Instant::now();
                while let Some(&(deadline, key)) = st.deadlines.front() {
                    if deadline > now || expired.len() >= CLOSE_BATCH {
                        break;
                    }
                    st.deadlines.pop_front();
                    if let Some(parked) = st.take(key) {
                        expired.push(parked);
                    }
                }
                // Slots of a burst that has left are given back.
                if st.free.len() == st.slots.len() && st.slots.capacity() > 1024 {
                    st.slots = Vec::new();
                    st.free = Vec::new();
                }
            }
            // The readable ones first: a client waits for them, nobody
            // for the expired ones.
            for parked in ready.drain(..) {
                let _ = epoll::delete(&self.epoll, &parked.stream);
                (self.on_ready)(parked.stream, parked.payload);
            }
            // Closing a socket removes it from the epoll set.
            expired.clear();
        }
    }
}
