//! The PROXY protocol (HAProxy's, versions 1 and 2): the header a load
//! balancer sends before the client's bytes, naming the client's address.
//! Read only from peers the server trusts (`Config::proxy`); anyone else's
//! would be a forged address.
//!
//! [`parse`] takes the bytes received so far and says whether they hold a
//! whole header (and how long it is), need more, or are not one. Nothing
//! here panics on input: every read goes through [`Reader`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Which peers may begin a connection with a PROXY protocol header (v1 or
/// v2), and whether they must. From a trusted peer, the header's client
/// address is the connection's: the per-client limit, [`crate::Request::peer`]
/// and so every log key on it. A header from any other peer is never read
/// as one (the HTTP parser refuses it as a request).
#[derive(Clone, Debug, Default)]
pub struct ProxyConfig {
    pub trusted: Vec<crate::Cidr>,
    /// A trusted peer's connection without a header is refused (closed).
    pub require_header: bool,
}

impl ProxyConfig {
    pub(crate) fn trusts(&self, ip: std::net::IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }
}

/// Version 2's signature, the first 12 bytes of its header.
pub const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// Version 1's first bytes.
const V1_PREFIX: &[u8] = b"PROXY ";
/// Version 1's longest header, CRLF included (the specification's 107).
pub const V1_MAX: usize = 107;
/// The longest version 2 header read (its TLVs included): HAProxy's own
/// TLVs stay far below; a longer one is refused rather than buffered.
pub const V2_MAX: usize = 16 + 1024;

/// A whole header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Its length in bytes: what to consume before the client's bytes.
    pub len: usize,
    /// The client's address; `None` for a `LOCAL` connection (the
    /// balancer's own, such as a health check) or an `UNKNOWN` or non-IP
    /// one, which is then keyed on the balancer's address.
    pub source: Option<SocketAddr>,
}

/// What the bytes received so far are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A whole header.
    Header(Header),
    /// The start of a header (or too few bytes to tell): read more.
    Incomplete,
    /// Not a PROXY header at all: the connection starts with something else.
    Absent,
}

/// Why bytes that begin like a header are not a valid one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    #[error("a PROXY v1 header longer than {V1_MAX} bytes")]
    V1TooLong,
    #[error("a malformed PROXY v1 header")]
    V1Malformed,
    #[error("a PROXY v2 header of version {0}")]
    V2Version(u8),
    #[error("a PROXY v2 header with command {0}")]
    V2Command(u8),
    #[error("a PROXY v2 header of {0} bytes, more than {V2_MAX}")]
    V2TooLong(usize),
    #[error("a PROXY v2 header too short for its address family")]
    V2Short,
}

/// A cursor over bytes that never reads past their end.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.rest.split_at_checked(n)?;
        self.rest = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}

/// What `bytes`, the first bytes of a connection, begin with.
pub fn parse(bytes: &[u8]) -> Result<Parsed, ProxyError> {
    let prefix_of = |sig: &[u8]| {
        let n = bytes.len().min(sig.len());
        bytes.get(..n) == sig.get(..n)
    };
    if prefix_of(&V2_SIGNATURE) {
        return if bytes.len() < V2_SIGNATURE.len() {
            Ok(Parsed::Incomplete)
        } else {
            v2(bytes)
        };
    }
    if prefix_of(V1_PREFIX) {
        return if bytes.len() < V1_PREFIX.len() {
            Ok(Parsed::Incomplete)
        } else {
            v1(bytes)
        };
    }
    Ok(Parsed::Absent)
}

fn v1(bytes: &[u8]) -> Result<Parsed, ProxyError> {
    let Some(end) = bytes.windows(2).position(|w| w == b"\r\n") else {
        return if bytes.len() >= V1_MAX {
            Err(ProxyError::V1TooLong)
        } else {
            Ok(Parsed::Incomplete)
        };
    };
    let len = end + 2;
    if len > V1_MAX {
        return Err(ProxyError::V1TooLong);
    }
    let line = bytes
        .get(..end)
        .and_then(|l| std::str::from_utf8(l).ok())
        .ok_or(ProxyError::V1Malformed)?;
    let fields: Vec<&str> = line.split(' ').collect();
    let source = match fields.as_slice() {
        ["PROXY", "UNKNOWN", ..] => None,
        ["PROXY", family @ ("TCP4" | "TCP6"), src, dst, sport, dport] => {
            let (src, dst): (IpAddr, IpAddr) = match (src.parse(), dst.parse()) {
                (Ok(s), Ok(d)) => (s, d),
                _ => return Err(ProxyError::V1Malformed),
            };
            let v4 = *family == "TCP4";
            if src.is_ipv4() != v4 || dst.is_ipv4() != v4 {
                return Err(ProxyError::V1Malformed);
            }
            let port = |p: &str| {
                let canonical = !p.is_empty()
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && (p == "0" || !p.starts_with('0'));
                canonical.then(|| p.parse::<u16>().ok()).flatten()
            };
            let (Some(sport), Some(_)) = (port(sport), port(dport)) else {
                return Err(ProxyError::V1Malformed);
            };
            Some(SocketAddr::new(src, sport))
        }
        _ => return Err(ProxyError::V1Malformed),
    };
    Ok(Parsed::Header(Header { len, source }))
}

fn v2(bytes: &[u8]) -> Result<Parsed, ProxyError> {
    let mut r = Reader { rest: bytes };
    let _signature = r.take(V2_SIGNATURE.len());
    let (Some(ver_cmd), Some(family), Some(body)) = (r.u8(), r.u8(), r.u16()) else {
        return Ok(Parsed::Incomplete);
    };
    if ver_cmd >> 4 != 2 {
        return Err(ProxyError::V2Version(ver_cmd >> 4));
    }
    let len = 16 + usize::from(body);
    if len > V2_MAX {
        return Err(ProxyError::V2TooLong(len));
    }
    let Some(body) = r.take(usize::from(body)) else {
        return Ok(Parsed::Incomplete);
    };
    let local = match ver_cmd & 0x0f {
        0 => true,
        1 => false,
        c => return Err(ProxyError::V2Command(c)),
    };
    let mut b = Reader { rest: body };
    // The high nibble is the address family, the low one the transport;
    // only TCP (1) over IPv4 (1) or IPv6 (2) names an address we key on.
    let source = match family {
        0x11 => {
            let (src, _dst, sport) = (b.array::<4>(), b.array::<4>(), {
                let s = b.u16();
                let _dport = b.u16();
                s
            });
            match (src, sport) {
                (Some(ip), Some(port)) => Some(SocketAddr::new(Ipv4Addr::from(ip).into(), port)),
                _ => return Err(ProxyError::V2Short),
            }
        }
        0x21 => {
            let (src, _dst, sport) = (b.array::<16>(), b.array::<16>(), {
                let s = b.u16();
                let _dport = b.u16();
                s
            });
            match (src, sport) {
                (Some(ip), Some(port)) => Some(SocketAddr::new(Ipv6Addr::from(ip).into(), port)),
                _ => return Err(ProxyError::V2Short),
            }
        }
        _ => None,
    };
    Ok(Parsed::Header(Header {
        len,
        source: if local { None } else { source },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_header(cmd: u8, family: u8, body: &[u8]) -> Vec<u8> {
        let mut h = V2_SIGNATURE.to_vec();
        h.push(0x20 | cmd);
        h.push(family);
        h.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
        h.extend_from_slice(body);
        h
    }

    fn v4_body(src: [u8; 4], sport: u16) -> Vec<u8> {
        let mut b = src.to_vec();
        b.extend_from_slice(&[192, 0, 2, 1]);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&8080u16.to_be_bytes());
        b
    }

    #[test]
    fn v1_headers_name_the_client() {
        let h = b"PROXY TCP4 198.51.100.7 192.0.2.1 40000 8080\r\nGET / HTTP/1.1\r\n";
        let Ok(Parsed::Header(got)) = parse(h) else {
            panic!("{:?}", parse(h))
        };
        assert_eq!(got.len, 46);
        assert_eq!(got.source, Some("198.51.100.7:40000".parse().unwrap()));
        let h = b"PROXY TCP6 2001:db8::7 2001:db8::1 1 2\r\n";
        assert!(
            matches!(parse(h), Ok(Parsed::Header(Header { source: Some(a), .. })) if a.port() == 1)
        );
        assert!(matches!(
            parse(b"PROXY UNKNOWN\r\n"),
            Ok(Parsed::Header(Header {
                len: 15,
                source: None
            }))
        ));
    }

    #[test]
    fn v2_headers_name_the_client_unless_local() {
        let h = v2_header(1, 0x11, &v4_body([203, 0, 113, 9], 5555));
        assert_eq!(
            parse(&h),
            Ok(Parsed::Header(Header {
                len: 28,
                source: Some("203.0.113.9:5555".parse().unwrap())
            }))
        );
        // TLVs after the addresses are skipped, counted in the length.
        let mut body = v4_body([203, 0, 113, 9], 1);
        body.extend_from_slice(&[0x04, 0, 2, 0xab, 0xcd]);
        let h = v2_header(1, 0x11, &body);
        assert!(matches!(
            parse(&h),
            Ok(Parsed::Header(Header { len: 33, .. }))
        ));
        let local = v2_header(0, 0x00, &[]);
        assert_eq!(
            parse(&local),
            Ok(Parsed::Header(Header {
                len: 16,
                source: None
            }))
        );
        let mut six = [0u8; 36];
        six[15] = 1;
        let h = v2_header(1, 0x21, &six);
        assert!(matches!(
            parse(&h),
            Ok(Parsed::Header(Header {
                source: Some(SocketAddr::V6(_)),
                ..
            }))
        ));
    }

    #[test]
    fn anything_else_is_absent_and_prefixes_are_incomplete() {
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Ok(Parsed::Absent));
        assert_eq!(
            parse(b"\x16\x03\x01"),
            Ok(Parsed::Absent),
            "a TLS ClientHello"
        );
        assert_eq!(parse(b"PRO"), Ok(Parsed::Incomplete));
        assert_eq!(parse(b"\r\n\r\n\0"), Ok(Parsed::Incomplete));
        assert_eq!(parse(b"PROXY TCP4 1.2.3.4"), Ok(Parsed::Incomplete));
        let h = v2_header(1, 0x11, &v4_body([1, 2, 3, 4], 1));
        for cut in 0..h.len() {
            assert_eq!(parse(&h[..cut]), Ok(Parsed::Incomplete), "{cut}");
        }
        assert_eq!(parse(b""), Ok(Parsed::Incomplete));
    }

    #[test]
    fn malformed_truncated_and_oversized_headers_are_refused() {
        for bad in [
            &b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n"[..],
            b"PROXY TCP4 ::1 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",
            b"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 \xff\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = [&b"PROXY UNKNOWN "[..], &[b'x'; 120]].concat();
        assert_eq!(parse(&long), Err(ProxyError::V1TooLong));
        let mut h = v2_header(1, 0x11, &[0; 4]);
        assert_eq!(parse(&h), Err(ProxyError::V2Short));
        h = v2_header(2, 0x11, &v4_body([1, 2, 3, 4], 1));
        assert_eq!(parse(&h), Err(ProxyError::V2Command(2)));
        h = v2_header(1, 0x11, &v4_body([1, 2, 3, 4], 1));
        h[12] = 0x11;
        assert_eq!(parse(&h), Err(ProxyError::V2Version(1)));
        let mut huge = V2_SIGNATURE.to_vec();
        huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
        assert_eq!(parse(&huge), Err(ProxyError::V2TooLong(16 + 0xffff)));
    }
}
