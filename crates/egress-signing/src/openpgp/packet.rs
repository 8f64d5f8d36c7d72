//! Packet framing (RFC 4880 section 4): old and new packet headers, partial
//! body lengths, and a bounds-checked cursor over packet bodies.

use super::error::OpenPgpError;

pub(crate) const TAG_SIGNATURE: u8 = 2;
pub(crate) const TAG_SECRET_KEY: u8 = 5;
pub(crate) const TAG_PUBLIC_KEY: u8 = 6;
pub(crate) const TAG_SECRET_SUBKEY: u8 = 7;
pub(crate) const TAG_MARKER: u8 = 10;
pub(crate) const TAG_TRUST: u8 = 12;
pub(crate) const TAG_USER_ID: u8 = 13;
pub(crate) const TAG_PUBLIC_SUBKEY: u8 = 14;
pub(crate) const TAG_USER_ATTRIBUTE: u8 = 17;

/// Packets that may be framed with partial body lengths or an indeterminate
/// length (RFC 4880 4.2.2.4: data packets only).
fn is_data_packet(tag: u8) -> bool {
    matches!(tag, 8 | 9 | 11 | 18 | 20)
}

/// A packet's name in error messages.
pub(crate) fn tag_name(tag: u8) -> &'static str {
    match tag {
        TAG_SIGNATURE => "signature",
        TAG_SECRET_KEY => "secret key",
        TAG_PUBLIC_KEY => "public key",
        TAG_SECRET_SUBKEY => "secret subkey",
        TAG_MARKER => "marker",
        TAG_TRUST => "trust",
        TAG_USER_ID => "user ID",
        TAG_PUBLIC_SUBKEY => "public subkey",
        TAG_USER_ATTRIBUTE => "user attribute",
        8 => "compressed data",
        11 => "literal data",
        _ => "unknown",
    }
}

/// One framed packet: its tag, its body and where its header started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packet {
    pub(crate) tag: u8,
    pub(crate) body: Vec<u8>,
    pub(crate) offset: usize,
}

/// Splits a byte stream into packets. Any framing error is returned with the
/// offset of the packet header it concerns.
pub(crate) fn split(data: &[u8]) -> Result<Vec<Packet>, OpenPgpError> {
    let mut out = Vec::new();
    let mut r = Reader::new(data, "packet header", 0);
    while !r.is_empty() {
        out.push(next_packet(&mut r)?);
    }
    Ok(out)
}

fn next_packet(r: &mut Reader<'_>) -> Result<Packet, OpenPgpError> {
    let offset = r.offset();
    let first = r.u8()?;
    if first & 0x80 == 0 {
        return Err(r.error_at(
            offset,
            format!("byte 0x{first:02X} is not a packet tag (bit 7 clear)"),
        ));
    }
    if first & 0x40 != 0 {
        let tag = first & 0x3f;
        let mut body = Vec::new();
        loop {
            match new_length(r)? {
                NewLength::Full(len) => {
                    body.extend_from_slice(r.bytes(len)?);
                    break;
                }
                NewLength::Partial(len) => {
                    if !is_data_packet(tag) {
                        return Err(r.error_at(
                            offset,
                            format!(
                                "{} packet uses a partial body length, allowed only for data packets",
                                tag_name(tag)
                            ),
                        ));
                    }
                    body.extend_from_slice(r.bytes(len)?);
                }
            }
        }
        Ok(Packet { tag, body, offset })
    } else {
        let tag = (first >> 2) & 0x0f;
        let len = match first & 0x03 {
            0 => usize::from(r.u8()?),
            1 => usize::from(r.u16()?),
            2 => usize::try_from(r.u32()?).unwrap_or(usize::MAX),
            _ => {
                if !is_data_packet(tag) {
                    return Err(r.error_at(
                        offset,
                        format!(
                            "{} packet has an indeterminate length, allowed only for data packets",
                            tag_name(tag)
                        ),
                    ));
                }
                r.remaining()
            }
        };
        let body = r.bytes(len)?.to_vec();
        Ok(Packet { tag, body, offset })
    }
}

enum NewLength {
    Full(usize),
    Partial(usize),
}

fn new_length(r: &mut Reader<'_>) -> Result<NewLength, OpenPgpError> {
    let o1 = r.u8()?;
    Ok(match o1 {
        0..=191 => NewLength::Full(usize::from(o1)),
        192..=223 => {
            let o2 = r.u8()?;
            NewLength::Full(((usize::from(o1) - 192) << 8) + usize::from(o2) + 192)
        }
        255 => NewLength::Full(usize::try_from(r.u32()?).unwrap_or(usize::MAX)),
        _ => NewLength::Partial(1usize << (o1 & 0x1f)),
    })
}

/// Writes a multiprecision integer: a 16-bit bit count, then the big-endian
/// bytes without leading zeros.
pub(crate) fn write_mpi(out: &mut Vec<u8>, value: &[u8]) {
    let trimmed = strip_leading_zeros(value);
    let bits = match trimmed.first() {
        Some(&top) => trimmed.len() * 8 - top.leading_zeros() as usize,
        None => 0,
    };
    out.extend_from_slice(&u16::try_from(bits).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(trimmed);
}

pub(crate) fn strip_leading_zeros(value: &[u8]) -> &[u8] {
    let start = value.iter().position(|&b| b != 0).unwrap_or(value.len());
    value.get(start..).unwrap_or_default()
}

/// A cursor over untrusted bytes that knows its absolute offset, so every
/// error says where in the input it happened.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    what: &'static str,
    base: usize,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8], what: &'static str, base: usize) -> Self {
        Self {
            data,
            what,
            base,
            pos: 0,
        }
    }

    pub(crate) fn offset(&self) -> usize {
        self.base.saturating_add(self.pos)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub(crate) fn error(&self, detail: impl Into<String>) -> OpenPgpError {
        self.error_at(self.offset(), detail)
    }

    pub(crate) fn error_at(&self, offset: usize, detail: impl Into<String>) -> OpenPgpError {
        OpenPgpError::Packet {
            packet: self.what,
            offset,
            detail: detail.into(),
        }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], OpenPgpError> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.data.get(self.pos..end)) {
            Some(out) => {
                self.pos = self.pos.saturating_add(n);
                Ok(out)
            }
            None => Err(self.error(format!(
                "truncated: {n} bytes needed, {} left",
                self.remaining()
            ))),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, OpenPgpError> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, OpenPgpError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, OpenPgpError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], OpenPgpError> {
        let b = self.bytes(N)?;
        b.try_into().map_err(|_| self.error("truncated"))
    }

    /// A multiprecision integer, checked against `max_bits`; returns its
    /// bytes with leading zeros removed.
    pub(crate) fn mpi(&mut self, max_bits: u16) -> Result<&'a [u8], OpenPgpError> {
        let bits = self.u16()?;
        if bits > max_bits {
            return Err(self.error(format!(
                "integer of {bits} bits exceeds the limit of {max_bits}"
            )));
        }
        let len = usize::from(bits).div_ceil(8);
        Ok(strip_leading_zeros(self.bytes(len)?))
    }

    /// Whatever has not been read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = self.data.get(self.pos..).unwrap_or_default();
        self.pos = self.data.len();
        out
    }
}

/// Writes a packet with an old-format header (as gpg does for keys and
/// signatures): one, two or four length octets.
pub(crate) fn write_old(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    let tag_bits = 0x80 | ((tag & 0x0f) << 2);
    let len = body.len();
    if let Ok(l) = u8::try_from(len) {
        out.push(tag_bits);
        out.push(l);
    } else if let Ok(l) = u16::try_from(len) {
        out.push(tag_bits | 1);
        out.extend_from_slice(&l.to_be_bytes());
    } else {
        out.push(tag_bits | 2);
        out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    }
    out.extend_from_slice(body);
}
