//! [`SealedFile`]: a response body the kernel itself keeps immutable, sent
//! with `sendfile(2)`.
//!
//! `sendfile` is zero-copy: the socket is handed references to the file's
//! pages instead of copies of their bytes, and it may still hold them after
//! the call returns, until the peer has acknowledged them (on loopback the
//! receiver's queue holds them until the client reads). A write to the file
//! in that time changes bytes that were already "sent". That is why
//! [`Body::File`](crate::Body::File) is copied, never sent with `sendfile`.
//!
//! A [`SealedFile`] is only ever made from a file that carries the seals
//! `F_SEAL_WRITE`, `F_SEAL_SHRINK` and `F_SEAL_GROW` (Linux memfds created
//! with `MFD_ALLOW_SEALING`). With them the kernel refuses every `write`,
//! truncation, `fallocate` and writable shared mapping of the file, for
//! every file descriptor and every process, and a seal can never be removed.
//! So the pages a socket references can never hold other bytes than the
//! ones the file had when it was sealed: whatever the caller vouched for
//! then is what every client receives, however late the kernel transmits
//! it. [`SealedFile::new`] checks the seals itself, so this module never
//! sends from a file that could change.

use std::fmt;
use std::io;
#[cfg(unix)]
use std::os::fd::AsFd;
use std::sync::Arc;

/// The seals that make a file's bytes and length fixed for good.
#[cfg(target_os = "linux")]
const REQUIRED: rustix::fs::SealFlags = rustix::fs::SealFlags::WRITE
    .union(rustix::fs::SealFlags::SHRINK)
    .union(rustix::fs::SealFlags::GROW);

/// One `sendfile` call moves at most this much, so that a huge body is sent
/// in steps (each bounded by the socket's write timeout).
#[cfg(target_os = "linux")]
const STEP: usize = 16 * 1024 * 1024;

/// An open file whose bytes cannot change (see the module documentation),
/// shared between responses; its body is the whole file. Cloning shares the
/// file; each send reads it from offset 0 without moving a shared position,
/// so one `SealedFile` may be sent to any number of clients at once.
///
/// The owner (anything that holds the file descriptor) is kept alive until
/// the last clone is dropped, i.e. until every response sending it ended.
#[derive(Clone)]
pub struct SealedFile {
    #[cfg(unix)]
    owner: Arc<dyn AsFd + Send + Sync>,
    #[cfg(not(unix))]
    owner: Arc<()>,
    len: u64,
}

impl fmt::Debug for SealedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedFile")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl SealedFile {
    /// Wraps the file `owner` refers to, after checking that it is sealed
    /// against writing, shrinking and growing; its length is its size.
    /// An unsealed file is refused (`InvalidInput`), and so is everything
    /// on systems other than Linux (`Unsupported`).
    #[cfg(unix)]
    pub fn new(owner: Arc<dyn AsFd + Send + Sync>) -> io::Result<SealedFile> {
        let len = sealed_len(owner.as_fd())?;
        Ok(SealedFile { owner, len })
    }

    /// The body's length: the file's size, fixed by the seals.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sends the whole file to `out` with `sendfile(2)`, looping over
    /// partial sends until every byte is handed to the kernel. `out` is a
    /// blocking socket (or pipe, or file): for a socket with a write timeout
    /// (`SO_SNDTIMEO`), a send that makes no progress within it fails with
    /// `WouldBlock`, like a timed-out `write`. An error means the body may be
    /// incomplete; the caller must close the connection.
    #[cfg(unix)]
    pub fn send_to(&self, out: impl AsFd) -> io::Result<()> {
        send_all(out.as_fd(), self.owner.as_fd(), self.len)
    }

    /// One `sendfile(2)` call from `*offset` to the non-blocking socket
    /// `out`: returns the bytes the kernel took (and advances `*offset`), or
    /// `WouldBlock` when the socket is full. The server's event loop calls
    /// it when the socket is writable.
    #[cfg(target_os = "linux")]
    pub(crate) fn send_step(
        &self,
        out: std::os::fd::BorrowedFd<'_>,
        offset: &mut u64,
    ) -> io::Result<usize> {
        let left = self.len.saturating_sub(*offset);
        let step = usize::try_from(left).map_or(STEP, |left| left.min(STEP));
        loop {
            match rustix::fs::sendfile(out, self.owner.as_fd(), Some(&mut *offset), step) {
                // Cannot happen to a file whose size is sealed; never spin.
                Ok(0) if step > 0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "sealed file ended before its length",
                    ))
                }
                Ok(n) => return Ok(n),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads bytes of the file at `offset` into `buf` without moving a
    /// shared position (for transports that cannot take `sendfile`).
    #[cfg(target_os = "linux")]
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match rustix::io::pread(self.owner.as_fd(), &mut *buf, offset) {
                Ok(n) => return Ok(n),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn sealed_len(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<u64> {
    let seals = rustix::fs::fcntl_get_seals(fd)?;
    if !seals.contains(REQUIRED) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not sealed against writing, shrinking and growing",
        ));
    }
    let size = rustix::fs::fstat(fd)?.st_size;
    u64::try_from(size).map_err(|_| io::Error::other("negative file size"))
}

#[cfg(all(unix, not(target_os = "linux")))]
fn sealed_len(_fd: std::os::fd::BorrowedFd<'_>) -> io::Result<u64> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "sealed files are only sent on Linux",
    ))
}

#[cfg(target_os = "linux")]
fn send_all(
    out: std::os::fd::BorrowedFd<'_>,
    file: std::os::fd::BorrowedFd<'_>,
    len: u64,
) -> io::Result<()> {
    use rustix::io::Errno;
    // The kernel advances `offset`; the file's own position is untouched.
    let mut offset = 0u64;
    while offset < len {
        let step = usize::try_from(len - offset).map_or(STEP, |left| left.min(STEP));
        match rustix::fs::sendfile(out, file, Some(&mut offset), step) {
            // Cannot happen to a file whose size is sealed; never spin on it.
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "sealed file ended before its length",
                ))
            }
            Ok(_) => {}
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(all(unix, not(target_os = "linux")))]
fn send_all(
    _out: std::os::fd::BorrowedFd<'_>,
    _file: std::os::fd::BorrowedFd<'_>,
    _len: u64,
) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}
