//! Non-blocking loopback connections from chosen source addresses, one
//! epoll set to watch them, and just enough HTTP/1.1 response reading to
//! tell a complete `200` from anything else.

use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::event::Timespec;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// The first generated source address; 127.0.0.1 is left to the one
/// legitimate client.
const FIRST_SOURCE: u32 = u32::from_be_bytes([127, 0, 0, 2]);

/// The loopback source address of generated connection number `i` when
/// each address carries at most `per_source` of them: 127.0.0.2 for the
/// first `per_source`, 127.0.0.3 for the next, and on into 127.0.1.x. A
/// server's per-client (peer address) limit then sees many clients, as it
/// would from a fleet of sandboxes.
pub(crate) fn source(i: usize, per_source: usize) -> Ipv4Addr {
    let n = u32::try_from(i / per_source.max(1)).unwrap_or(u32::MAX);
    Ipv4Addr::from(FIRST_SOURCE.saturating_add(n))
}

/// Starts a non-blocking connect from `from` (any port) to `to`. The
/// stream becomes writable when the connection is made or has failed
/// ([`finish_connect`] says which).
pub(crate) fn start_connect(from: Ipv4Addr, to: SocketAddr) -> io::Result<TcpStream> {
    let fd: OwnedFd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::bind(&fd, &SocketAddrV4::new(from, 0))?;
    match rustix::net::connect(&fd, &to) {
        Ok(()) | Err(Errno::INPROGRESS) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(TcpStream::from(fd))
}

/// Whether a connect started by [`start_connect`] succeeded.
pub(crate) fn finish_connect(stream: &TcpStream) -> io::Result<()> {
    rustix::net::sockopt::socket_error(stream)?.map_err(io::Error::from)?;
    let _ = stream.set_nodelay(true);
    Ok(())
}

/// An epoll set whose events carry a connection's index.
pub(crate) struct Poller {
    fd: OwnedFd,
    events: Vec<epoll::Event>,
}

/// Readable, the peer closed or reset, or an error: worth a read.
pub(crate) const READ: EventFlags = EventFlags::IN
    .union(EventFlags::RDHUP)
    .union(EventFlags::HUP)
    .union(EventFlags::ERR);
/// Connected (or failed to).
pub(crate) const CONNECT: EventFlags = EventFlags::OUT
    .union(EventFlags::HUP)
    .union(EventFlags::ERR);

impl Poller {
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            fd: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            events: Vec::with_capacity(1024),
        })
    }

    pub(crate) fn add(
        &self,
        stream: &TcpStream,
        id: usize,
        interest: EventFlags,
    ) -> io::Result<()> {
        Ok(epoll::add(
            &self.fd,
            stream,
            EventData::new_u64(id as u64),
            interest,
        )?)
    }

    pub(crate) fn modify(
        &self,
        stream: &TcpStream,
        id: usize,
        interest: EventFlags,
    ) -> io::Result<()> {
        Ok(epoll::modify(
            &self.fd,
            stream,
            EventData::new_u64(id as u64),
            interest,
        )?)
    }

    /// The indices (and events) ready within `timeout`.
    pub(crate) fn wait(&mut self, timeout: Duration) -> io::Result<Vec<(usize, EventFlags)>> {
        self.events.clear();
        let t = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        match epoll::wait(
            &self.fd,
            rustix::buffer::spare_capacity(&mut self.events),
            Some(&t),
        ) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(self
            .events
            .iter()
            .map(|e| {
                let data = e.data;
                let flags = e.flags;
                (usize::try_from(data.u64()).unwrap_or(usize::MAX), flags)
            })
            .collect())
    }
}

/// What reading a connection found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Drained {
    /// Nothing more to read now; the connection is open.
    Open,
    /// The peer closed the connection, or it failed.
    Closed,
}

/// Reads everything available into `buf` (without blocking).
pub(crate) fn read_available(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Drained {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Drained::Closed,
            Ok(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Drained::Open,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Drained::Closed,
        }
    }
}

/// Writes all of `bytes` now. The pieces written here are a request head
/// or a line of one, far smaller than an empty socket buffer, so a short
/// write means the connection is in trouble and counts as a failure.
pub(crate) fn write_now(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    matches!(stream.write(bytes), Ok(n) if n == bytes.len())
}

/// A complete response at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// Head and body: how much of the buffer it took.
    pub(crate) len: usize,
    /// The server said it will close the connection.
    pub(crate) close: bool,
}

/// Why a buffer cannot be read as the start of a response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unreadable;

/// The response at the start of `buf`: `Ok(None)` while incomplete. Only
/// `Content-Length` framing is read (both servers send it for files and
/// pages); anything else is [`Unreadable`].
pub(crate) fn parse_response(buf: &[u8]) -> Result<Option<Response>, Unreadable> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() > 64 * 1024 {
            Err(Unreadable)
        } else {
            Ok(None)
        };
    };
    let head = std::str::from_utf8(buf.get(..end).ok_or(Unreadable)?).map_err(|_| Unreadable)?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or(Unreadable)?;
    let mut parts = status_line.splitn(3, ' ');
    if !parts.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return Err(Unreadable);
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or(Unreadable)?;
    let mut length = None;
    let mut close = status_line.starts_with("HTTP/1.0");
    for line in lines {
        let (name, value) = line.split_once(':').ok_or(Unreadable)?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| Unreadable)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Unreadable);
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    let total = end + 4 + length.unwrap_or(0);
    if length.is_none() && !close {
        return Err(Unreadable);
    }
    Ok((buf.len() >= total).then_some(Response {
        status,
        len: total,
        close,
    }))
}

/// One GET on a fresh connection from 127.0.0.1, as a legitimate client
/// makes it: `Ok(true)` for a complete `200`, `Ok(false)` for any other
/// complete response, an error for a refused, reset, incomplete or late
/// one (`within` bounds the whole exchange).
pub(crate) fn one_get(to: SocketAddr, path: &str, within: Duration) -> io::Result<bool> {
    let start = std::time::Instant::now();
    let mut stream = TcpStream::connect_timeout(&to, within)?;
    let _ = stream.set_nodelay(true);
    stream.write_all(request(path, true).as_bytes())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = within
            .checked_sub(start.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::TimedOut, "no complete response in time")
            })?;
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut chunk)?;
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        match parse_response(&buf) {
            Ok(Some(r)) => return Ok(r.status == 200),
            Ok(None) if n == 0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed before a complete response",
                ))
            }
            Ok(None) => {}
            Err(Unreadable) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a response with Content-Length",
                ))
            }
        }
    }
}

/// A GET for `path` as both servers serve it (the HTML page variant).
pub(crate) fn request(path: &str, close: bool) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: text/html\r\n{}\r\n",
        if close { "Connection: close\r\n" } else { "" }
    )
}

/// Sets the calling thread's nice value (on Linux `setpriority` with no
/// process id applies to the calling thread only) and returns the value it
/// runs at, or why it could not be set (below 0 needs root).
pub(crate) fn set_thread_nice(nice: i32) -> Result<i32, String> {
    use rustix::process::{getpriority_process, setpriority_process};
    setpriority_process(None, nice).map_err(|e| format!("nice {nice}: {e}"))?;
    getpriority_process(None).map_err(|e| format!("reading the nice value: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nice_value_applies_to_the_calling_thread_only() {
        let here = rustix::process::getpriority_process(None).expect("nice value");
        let there = std::thread::spawn(|| set_thread_nice(19))
            .join()
            .expect("thread");
        assert_eq!(there, Ok(19));
        assert_eq!(rustix::process::getpriority_process(None), Ok(here));
    }

    #[test]
    fn sources_spread_over_loopback() {
        assert_eq!(source(0, 50), Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(source(49, 50), Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(source(50, 50), Ipv4Addr::new(127, 0, 0, 3));
        assert_eq!(source(9_999, 50), Ipv4Addr::new(127, 0, 0, 201));
        assert_eq!(source(300, 1), Ipv4Addr::new(127, 0, 1, 46));
        assert_eq!(source(5, 0), Ipv4Addr::new(127, 0, 0, 7));
    }

    #[test]
    fn responses_are_framed_by_content_length() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1";
        assert_eq!(
            parse_response(ok),
            Ok(Some(Response {
                status: 200,
                len: 41,
                close: false
            }))
        );
        assert_eq!(parse_response(&ok[..40]), Ok(None));
        assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\nContent-"), Ok(None));
        let closing = b"HTTP/1.1 503 Busy\r\nconnection: Close\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            parse_response(closing),
            Ok(Some(Response {
                status: 503,
                len: closing.len(),
                close: true
            }))
        );
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"SSH-2.0\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
        ] {
            assert_eq!(parse_response(bad), Err(Unreadable), "{bad:?}");
        }
    }

    #[test]
    fn a_connect_from_a_chosen_source_reaches_a_listener() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = listener.local_addr().unwrap();
        let mut poller = Poller::new().unwrap();
        let from = source(0, 1);
        let stream = start_connect(from, to).unwrap();
        poller.add(&stream, 7, CONNECT).unwrap();
        let ready = poller.wait(Duration::from_secs(5)).unwrap();
        assert_eq!(ready.first().map(|r| r.0), Some(7));
        finish_connect(&stream).unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip(), std::net::IpAddr::V4(from));
    }
}
