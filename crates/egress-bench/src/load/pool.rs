//! Many generated connections to one server, spread over loopback source
//! addresses, opened at a bounded rate and watched with one epoll set.

use super::net::{self, finish_connect, start_connect, Drained, Poller, CONNECT, READ};
use rustix::event::epoll::EventFlags;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// At most this many connects in flight at once, so that a server's accept
/// queue (nginx's default backlog is 511) is not flooded by the generator
/// itself.
const MAX_PENDING: usize = 256;

/// One generated connection.
#[derive(Default)]
pub(crate) struct Slot {
    /// `None` once closed (by either side) or never opened.
    pub(crate) stream: Option<TcpStream>,
    pub(crate) connected: bool,
    /// Bytes read and not yet consumed.
    pub(crate) buf: Vec<u8>,
    /// When the request in flight was sent.
    pub(crate) sent: Option<Instant>,
    /// Pieces of a slow request sent so far.
    pub(crate) pieces: u32,
}

/// What happened to a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// The connect succeeded; the slot now watches for reads.
    Connected,
    /// The connect failed; the slot is closed.
    ConnectFailed,
    /// Bytes arrived (in `Slot::buf`); the connection is still open.
    Data,
    /// The peer closed or reset the connection (anything it sent first is
    /// in `Slot::buf`); the slot is closed.
    Closed,
}

pub(crate) struct Pool {
    to: SocketAddr,
    per_source: usize,
    /// Slot `i` is generated connection number `offset + i` (which decides
    /// its source address).
    offset: usize,
    poller: Poller,
    pub(crate) slots: Vec<Slot>,
    pending: usize,
    /// Connects that could not even be started (e.g. out of descriptors).
    pub(crate) start_failures: u64,
}

impl Pool {
    pub(crate) fn new(to: SocketAddr, per_source: usize, offset: usize) -> io::Result<Self> {
        Ok(Self {
            to,
            per_source,
            offset,
            poller: Poller::new()?,
            slots: Vec::new(),
            pending: 0,
            start_failures: 0,
        })
    }

    /// (Re)opens slot `i` from its source address; a slot that cannot be
    /// started stays closed and is counted.
    pub(crate) fn open(&mut self, i: usize) {
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, Slot::default);
        }
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        *slot = Slot::default();
        match start_connect(net::source(self.offset + i, self.per_source), self.to) {
            Ok(stream) => {
                if self.poller.add(&stream, i, CONNECT).is_ok() {
                    slot.stream = Some(stream);
                    self.pending += 1;
                } else {
                    self.start_failures += 1;
                }
            }
            Err(_) => self.start_failures += 1,
        }
    }

    /// Opens slots `0..n`, at most [`MAX_PENDING`] connects at a time, and
    /// waits until every connect has finished or `within` has passed;
    /// `on` sees every event meanwhile.
    pub(crate) fn ramp(
        &mut self,
        n: usize,
        within: Duration,
        on: &mut impl FnMut(usize, &mut Slot, Ev),
    ) -> io::Result<()> {
        let deadline = Instant::now() + within;
        let mut next = self.slots.len();
        while (next < n || self.pending > 0) && Instant::now() < deadline {
            while next < n && self.pending < MAX_PENDING {
                self.open(next);
                next += 1;
            }
            self.poll(Duration::from_millis(20), on)?;
        }
        Ok(())
    }

    /// Waits up to `timeout` for events and hands each to `on`.
    pub(crate) fn poll(
        &mut self,
        timeout: Duration,
        on: &mut impl FnMut(usize, &mut Slot, Ev),
    ) -> io::Result<()> {
        for (i, flags) in self.poller.wait(timeout)? {
            let Some(slot) = self.slots.get_mut(i) else {
                continue;
            };
            let Some(stream) = slot.stream.as_mut() else {
                continue;
            };
            if !slot.connected {
                if !flags.intersects(CONNECT) {
                    continue;
                }
                self.pending = self.pending.saturating_sub(1);
                let ok =
                    finish_connect(stream).is_ok() && self.poller.modify(stream, i, READ).is_ok();
                if ok {
                    slot.connected = true;
                    on(i, slot, Ev::Connected);
                } else {
                    slot.stream = None;
                    on(i, slot, Ev::ConnectFailed);
                }
                continue;
            }
            if !flags.intersects(READ | EventFlags::IN) {
                continue;
            }
            match net::read_available(stream, &mut slot.buf) {
                Drained::Open => on(i, slot, Ev::Data),
                Drained::Closed => {
                    slot.stream = None;
                    slot.connected = false;
                    on(i, slot, Ev::Closed);
                }
            }
        }
        Ok(())
    }

    /// How many slots hold an open, connected connection.
    pub(crate) fn open_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.connected && s.stream.is_some())
            .count()
    }

    /// Reads every connected slot once more without waiting, so that a
    /// connection the server closed since the last event counts as closed.
    pub(crate) fn recheck(&mut self) {
        for slot in &mut self.slots {
            if let (true, Some(stream)) = (slot.connected, slot.stream.as_mut()) {
                if net::read_available(stream, &mut slot.buf) == Drained::Closed {
                    slot.stream = None;
                    slot.connected = false;
                }
            }
        }
    }
}
