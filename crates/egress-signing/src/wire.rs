//! SSH wire encoding (RFC 4251 section 5): big-endian uint32 and
//! length-prefixed strings.

use crate::SigningError;

pub(crate) fn put_string(out: &mut Vec<u8>, data: &[u8]) {
    // Every string we write is far below 4 GiB (keys, names, hashes); the
    // saturating conversion only documents that bound.
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// A cursor over untrusted bytes. Every read is checked against the bytes
/// that remain, and every string additionally against a caller-supplied
/// maximum, so no length field from the input can cause a panic or a large
/// allocation.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8], what: &'static str) -> Self {
        Self { data, what }
    }

    pub(crate) fn malformed(&self, detail: &str) -> SigningError {
        SigningError::Malformed {
            what: self.what,
            detail: detail.to_owned(),
        }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], SigningError> {
        if n > self.data.len() {
            return Err(self.malformed("truncated"));
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, SigningError> {
        let b: [u8; 4] = self
            .bytes(4)?
            .try_into()
            .map_err(|_| self.malformed("truncated"))?;
        Ok(u32::from_be_bytes(b))
    }

    /// A length-prefixed string of at most `max` bytes.
    pub(crate) fn string(&mut self, max: usize) -> Result<&'a [u8], SigningError> {
        let len = usize::try_from(self.u32()?).unwrap_or(usize::MAX);
        if len > max {
            return Err(self.malformed(&format!("field of {len} bytes exceeds the limit of {max}")));
        }
        self.bytes(len)
    }

    /// Whatever has not been read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    /// Fails if any bytes are left over.
    pub(crate) fn finish(&self) -> Result<(), SigningError> {
        if self.data.is_empty() {
            Ok(())
        } else {
            Err(self.malformed("unexpected trailing data"))
        }
    }
}
