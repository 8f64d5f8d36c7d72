//! HTTP/2 as evidence: every frame of one conversation as it was sent and
//! received, and what the frames say (which streams were answered, with
//! which status, which were reset, whether the server spoke HTTP/2 at all).
//!
//! The frame codec that writes and reads the bytes is egress-transcript's
//! (`h2`); judges read only these records, so `report verify` re-derives
//! every verdict from them. An [`Exchange`](crate::Exchange) that spoke
//! HTTP/2 holds one [`H2Conversation`] in its `h2` field.

use crate::wire::{truncate, ListenEnd, WireBytes};
use serde::{Deserialize, Serialize};

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (RFC 9113 §6).
pub mod flag {
    /// DATA, HEADERS: the last frame of the stream from this side.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends here.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: padded.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: carries priority fields.
    pub const PRIORITY: u8 = 0x20;
}

/// A frame type's name, as RFC 9113 writes it.
pub fn kind_name(kind: u8) -> String {
    match kind {
        kind::DATA => "DATA".into(),
        kind::HEADERS => "HEADERS".into(),
        kind::PRIORITY => "PRIORITY".into(),
        kind::RST_STREAM => "RST_STREAM".into(),
        kind::SETTINGS => "SETTINGS".into(),
        kind::PUSH_PROMISE => "PUSH_PROMISE".into(),
        kind::PING => "PING".into(),
        kind::GOAWAY => "GOAWAY".into(),
        kind::WINDOW_UPDATE => "WINDOW_UPDATE".into(),
        kind::CONTINUATION => "CONTINUATION".into(),
        k => format!("type 0x{k:02x}"),
    }
}

/// An error code's name (RFC 9113 §7).
pub fn error_name(code: u32) -> String {
    let name = match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        c => return format!("error 0x{c:x}"),
    };
    name.into()
}

/// An HTTP/2 request as the client sends it: header fields in order,
/// exactly as they go into the header block (nothing checked, nothing
/// lowercased), and the DATA sent after them (`None`: the HEADERS frame
/// ends the stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Request {
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    pub data: Option<Vec<u8>>,
}

impl H2Request {
    /// A GET of `path` (origin-form) at `authority`.
    pub fn get(scheme: &str, authority: &str, path: &str) -> Self {
        let f = |n: &str, v: &str| (n.as_bytes().to_vec(), v.as_bytes().to_vec());
        Self {
            fields: vec![
                f(":method", "GET"),
                f(":scheme", scheme),
                f(":authority", authority),
                f(":path", path),
            ],
            data: None,
        }
    }

    /// The same request with one more field at the end.
    pub fn field(mut self, name: &str, value: &str) -> Self {
        self.fields
            .push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
        self
    }
}

/// How the client meant to reach HTTP/2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum H2Via {
    /// Over TLS, offering `h2` and `http/1.1` by ALPN.
    Alpn,
    /// On plain TCP, with the preface straight away (h2c prior knowledge).
    PriorKnowledge,
}

/// Which way a frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    Sent,
    Received,
}

/// One frame, as it went over the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Frame {
    pub dir: Direction,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    /// The payload's length as framed.
    pub length: u32,
    /// The payload: whole, except DATA, of which only a prefix is kept.
    pub payload: WireBytes,
    /// On the frame that ends a header block (END_HEADERS): its fields, as
    /// encoded (sent) or decoded (received), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<(WireBytes, WireBytes)>,
}

impl H2Frame {
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// The error code of a RST_STREAM (its first four bytes) or a GOAWAY
    /// (bytes 4 to 8).
    pub fn error_code(&self) -> Option<u32> {
        let at = match self.kind {
            kind::RST_STREAM => 0,
            kind::GOAWAY => 4,
            _ => return None,
        };
        be32(self.payload.as_bytes(), at)
    }

    /// A GOAWAY's last stream identifier.
    pub fn last_stream(&self) -> Option<u32> {
        (self.kind == kind::GOAWAY)
            .then(|| be32(self.payload.as_bytes(), 0).map(|v| v & 0x7fff_ffff))
            .flatten()
    }

    fn field(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(n, _)| n.as_bytes() == name.as_bytes())
            .map(|(_, v)| v.lossy())
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([
        *b.first()?,
        *b.get(1)?,
        *b.get(2)?,
        *b.get(3)?,
    ]))
}

/// One HTTP/2 connection: how it was reached and every frame of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Conversation {
    pub via: H2Via,
    /// The protocol the server chose by ALPN (TLS only), as it named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
    /// Every frame sent and received, in the order it was sent or read.
    pub frames: Vec<H2Frame>,
    /// Bytes received that are no HTTP/2 frame (an HTTP/1.1 answer to the
    /// preface, say), up to the cap; reading stopped where they began.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub stray: WireBytes,
    /// How reading ended; `None` when the client ended it itself (every
    /// stream it opened had ended, or HTTP/2 was not negotiated).
    pub end: Option<ListenEnd>,
}

fn is_empty(w: &WireBytes) -> bool {
    w.as_bytes().is_empty()
}

/// What became of one stream the client opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Stream {
    pub id: u32,
    /// The request's fields, as sent.
    pub request: Vec<(WireBytes, WireBytes)>,
    /// Where in [`H2Conversation::frames`] the request's HEADERS went out.
    pub sent_at: usize,
    /// The final status (the first `:status` of 200 or more, or 101).
    pub status: Option<u16>,
    /// Body bytes received in DATA frames.
    pub body_len: u64,
    /// The body as far as it was recorded.
    pub body_prefix: Vec<u8>,
    /// The server ended the stream (END_STREAM).
    pub ended: bool,
    /// The server reset the stream: its error code.
    pub reset: Option<u32>,
}

impl H2Stream {
    /// The first value of a request field (`:method`, `:path`, ...), lossy.
    pub fn request_field(&self, name: &str) -> Option<String> {
        self.request
            .iter()
            .find(|(n, _)| n.as_bytes() == name.as_bytes())
            .map(|(_, v)| v.lossy())
    }

    /// `METHOD target` of the request (`:path`, else `:authority`).
    pub fn request_line(&self) -> String {
        let method = self.request_field(":method").unwrap_or_else(|| "?".into());
        let target = self
            .request_field(":path")
            .or_else(|| self.request_field(":authority"))
            .unwrap_or_default();
        let line = format!("{method} {target}");
        // CR, LF and NUL in a case's fields stay out of one-line summaries.
        line.chars()
            .flat_map(|c| {
                let escaped: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                escaped
            })
            .collect()
    }

    /// How the stream ended, in a few words: `200`, `reset PROTOCOL_ERROR`,
    /// `no answer`.
    pub fn outcome(&self) -> String {
        match (self.status, self.reset) {
            (Some(s), Some(c)) => format!("{s}, then reset {}", error_name(c)),
            (Some(s), None) => s.to_string(),
            (None, Some(c)) => format!("reset {}", error_name(c)),
            (None, None) => "no answer".into(),
        }
    }
}

impl H2Conversation {
    /// Whether the server spoke HTTP/2: over TLS it chose `h2` by ALPN,
    /// and its first bytes were a SETTINGS frame (RFC 9113 §3.4). If not,
    /// what it did instead, as evidence.
    pub fn spoken(&self) -> Result<(), String> {
        if self.via == H2Via::Alpn && self.alpn.as_deref() != Some("h2") {
            return Err(match &self.alpn {
                Some(p) => format!("offered h2 and http/1.1 by ALPN, the server chose {p:?}"),
                None => "offered h2 and http/1.1 by ALPN, the server chose no protocol".into(),
            });
        }
        let first = self.frames.iter().find(|f| f.dir == Direction::Received);
        match first {
            Some(f) if f.kind == kind::SETTINGS && f.stream == 0 && !f.has(flag::ACK) => Ok(()),
            Some(f) => Err(format!(
                "the server's first frame was {} on stream {}, not SETTINGS",
                kind_name(f.kind),
                f.stream
            )),
            None if !self.stray.as_bytes().is_empty() => {
                let text = self.stray.lossy();
                let line = text.lines().next().unwrap_or_default();
                Err(format!(
                    "the server answered the HTTP/2 preface with {:?}, not a SETTINGS frame",
                    truncate(line, 80)
                ))
            }
            None => Err(match self.end {
                Some(e) if e.closed() => {
                    "the server closed the connection without a SETTINGS frame".into()
                }
                Some(_) => "the server sent nothing after the HTTP/2 preface".into(),
                None => "nothing was received".into(),
            }),
        }
    }

    /// Every stream the client opened, in order.
    pub fn streams(&self) -> Vec<H2Stream> {
        let mut out: Vec<H2Stream> = Vec::new();
        for (i, f) in self.frames.iter().enumerate() {
            let opens = f.dir == Direction::Sent && f.kind == kind::HEADERS && f.stream != 0;
            if opens && !out.iter().any(|s| s.id == f.stream) {
                out.push(H2Stream {
                    id: f.stream,
                    request: Vec::new(),
                    sent_at: i,
                    status: None,
                    body_len: 0,
                    body_prefix: Vec::new(),
                    ended: false,
                    reset: None,
                });
            }
            let Some(s) = out.iter_mut().find(|s| s.id == f.stream) else {
                continue;
            };
            match (f.dir, f.kind) {
                (Direction::Sent, kind::HEADERS | kind::CONTINUATION) if s.request.is_empty() => {
                    s.request.clone_from(&f.fields);
                }
                (Direction::Received, kind::HEADERS | kind::CONTINUATION) => {
                    s.status = s.status.or_else(|| {
                        f.field(":status")
                            .and_then(|v| v.parse::<u16>().ok())
                            .filter(|&c| c >= 200 || c == 101)
                    });
                    s.ended |= f.has(flag::END_STREAM) && f.kind == kind::HEADERS;
                }
                (Direction::Received, kind::DATA) => {
                    s.body_len += u64::from(f.length);
                    if s.body_prefix.len() < 64 * 1024 {
                        s.body_prefix.extend_from_slice(f.payload.as_bytes());
                    }
                    s.ended |= f.has(flag::END_STREAM);
                }
                (Direction::Received, kind::RST_STREAM) => {
                    s.reset = s.reset.or(f.error_code());
                }
                _ => {}
            }
        }
        out
    }

    /// The first GOAWAY received, and where it was in [`Self::frames`].
    pub fn goaway(&self) -> Option<(usize, &H2Frame)> {
        self.frames
            .iter()
            .enumerate()
            .find(|(_, f)| f.dir == Direction::Received && f.kind == kind::GOAWAY)
    }

    /// One line: how HTTP/2 was reached and each stream's outcome.
    pub fn summary(&self) -> String {
        let how = match self.via {
            H2Via::Alpn => "HTTP/2 by ALPN",
            H2Via::PriorKnowledge => "h2c prior knowledge",
        };
        if let Err(why) = self.spoken() {
            return format!("{how}: not spoken ({why})");
        }
        let mut parts: Vec<String> = self
            .streams()
            .iter()
            .map(|s| {
                format!(
                    "stream {} {} -> {}",
                    s.id,
                    truncate(&s.request_line(), 90),
                    s.outcome()
                )
            })
            .collect();
        if let Some((_, g)) = self.goaway() {
            parts.push(format!(
                "GOAWAY {} (last stream {})",
                error_name(g.error_code().unwrap_or_default()),
                g.last_stream().unwrap_or_default()
            ));
        }
        format!("{how}: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dir: Direction, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> H2Frame {
        H2Frame {
            dir,
            kind,
            flags,
            stream,
            length: payload.len() as u32,
            payload: WireBytes(payload.to_vec()),
            fields: Vec::new(),
        }
    }

    fn fields(f: &[(&str, &str)]) -> Vec<(WireBytes, WireBytes)> {
        f.iter()
            .map(|(n, v)| {
                (
                    WireBytes(n.as_bytes().to_vec()),
                    WireBytes(v.as_bytes().to_vec()),
                )
            })
            .collect()
    }

    #[test]
    fn streams_and_outcomes_are_read_from_the_frames() {
        use Direction::{Received as R, Sent as S};
        let mut h1 = frame(S, kind::HEADERS, 0x5, 1, b"x");
        h1.fields = fields(&[(":method", "GET"), (":path", "/a")]);
        let mut r1 = frame(R, kind::HEADERS, 0x4, 1, b"y");
        r1.fields = fields(&[(":status", "200")]);
        let mut h3 = frame(S, kind::HEADERS, 0x5, 3, b"x");
        h3.fields = fields(&[(":method", "CONNECT"), (":authority", "h:1")]);
        let conv = H2Conversation {
            via: H2Via::PriorKnowledge,
            alpn: None,
            frames: vec![
                frame(R, kind::SETTINGS, 0, 0, b""),
                h1,
                r1,
                frame(R, kind::DATA, 0x1, 1, b"page"),
                h3,
                frame(R, kind::RST_STREAM, 0, 3, &[0, 0, 0, 1]),
                frame(R, kind::GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0]),
            ],
            stray: WireBytes::default(),
            end: Some(ListenEnd::Closed),
        };
        assert_eq!(conv.spoken(), Ok(()));
        let s = conv.streams();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].status, s[0].ended, s[0].body_len),
            (Some(200), true, 4)
        );
        assert_eq!(s[1].reset, Some(1));
        assert_eq!(s[1].request_line(), "CONNECT h:1");
        assert_eq!(s[1].outcome(), "reset PROTOCOL_ERROR");
        let (at, g) = conv.goaway().unwrap();
        assert_eq!((at, g.last_stream(), g.error_code()), (6, Some(3), Some(0)));
        assert_eq!(
            conv.summary(),
            "h2c prior knowledge: stream 1 GET /a -> 200; stream 3 CONNECT h:1 -> reset PROTOCOL_ERROR; GOAWAY NO_ERROR (last stream 3)"
        );
    }

    #[test]
    fn a_server_that_does_not_speak_h2_is_named() {
        let mut conv = H2Conversation {
            via: H2Via::PriorKnowledge,
            alpn: None,
            frames: vec![],
            stray: WireBytes(b"HTTP/1.1 505 HTTP Version Not Supported\r\n\r\n".to_vec()),
            end: Some(ListenEnd::Closed),
        };
        assert!(conv.spoken().unwrap_err().contains("HTTP/1.1 505"));
        conv.stray = WireBytes::default();
        assert!(conv.spoken().unwrap_err().contains("closed"));
        conv.via = H2Via::Alpn;
        conv.alpn = Some("http/1.1".into());
        assert!(conv.spoken().unwrap_err().contains("chose \"http/1.1\""));
        let json = serde_json::to_string(&conv).unwrap();
        assert_eq!(serde_json::from_str::<H2Conversation>(&json).unwrap(), conv);
    }
}
