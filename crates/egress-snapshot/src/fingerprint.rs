//! [`Fingerprint`]: what `fstat` says about a blob's file, shared by the
//! verified-blob store and its sealed copies. See the `store` module
//! documentation for why a settled fingerprint means an unchanged file.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

/// A verification is trusted for later requests only once the file's ctime
/// is at least this many seconds older than the moment of verification (see
/// the `store` module documentation). Two seconds cover filesystems whose
/// timestamps have a granularity of up to one second.
pub const RACY_SECS: i64 = 2;

/// What `fstat` says about an open blob, as far as identity and content
/// changes go. Two equal fingerprints of one path mean the same, unmodified
/// file (see the `store` module documentation for why ctime makes this
/// hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    dev: u64,
    ino: u64,
    /// The file's length in bytes, which the store serves and charges.
    pub(crate) size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    pub(crate) fn of(m: &Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// Whether a verification made at `now` (seconds since the epoch) may be
    /// trusted later: the file's ctime must lie at least [`RACY_SECS`] in
    /// the past. A ctime in the future (clock skew) is never trusted.
    pub(crate) fn settled_at(&self, now: i64) -> bool {
        self.ctime.0 <= now.saturating_sub(RACY_SECS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(ctime: i64) -> Fingerprint {
        Fingerprint {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (ctime, 0),
            ctime: (ctime, 5),
        }
    }

    #[test]
    fn racy_fingerprints_are_not_trusted() {
        let now = 1_000_000;
        assert!(fp(now - RACY_SECS).settled_at(now));
        assert!(fp(now - 100).settled_at(now));
        assert!(!fp(now - RACY_SECS + 1).settled_at(now));
        assert!(!fp(now).settled_at(now));
        assert!(
            !fp(now + 10).settled_at(now),
            "a future ctime is never trusted"
        );
    }
}
