//! HTTP/2 for the suite: a frame writer and reader of its own, because the
//! suite must send what well-behaved client libraries refuse to (CONNECT,
//! repeated pseudo-headers, CR and LF in values, uppercase names). Requests
//! are header blocks of literal fields without indexing and without Huffman
//! coding (RFC 7541 §6.2.2), so every byte of a field goes out as given;
//! responses are decoded with loona-hpack (static and dynamic table,
//! Huffman). Every frame sent and received is recorded
//! ([`egress_model::h2`]), bounded in time and size like every exchange.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

use crate::{describe_io, Listen, Stream};
use egress_model::h2::{flag, kind, Direction, H2Conversation, H2Frame, H2Request, H2Via, PREFACE};
use egress_model::{ListenEnd, WireBytes};
use std::io;
use std::time::Instant;

/// The largest frame payload read or sent (the SETTINGS_MAX_FRAME_SIZE
/// every endpoint must accept; the client never advertises more).
pub const MAX_FRAME: usize = 16_384;
/// DATA bytes kept per frame in the record (all are counted).
const DATA_RECORD: usize = 4096;
/// The flow-control window the client grants, per stream and for the
/// connection: large enough that no page stalls before the byte cap.
const WINDOW: u32 = 1 << 24;
/// The initial window of every HTTP/2 connection (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: u32 = 65_535;

/// One frame's bytes: the 9-byte header, then the payload (at most 2^24-1
/// bytes; longer payloads are cut there).
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let payload = payload
        .get(..payload.len().min(0xff_ffff))
        .unwrap_or_default();
    let len = payload.len() as u32;
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK integer (RFC 7541 §5.1): `first` holds the representation's
/// high bits, `prefix` the number of low bits the value starts in.
fn hpack_int(out: &mut Vec<u8>, first: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// A header block of literal fields without indexing, with literal names,
/// without Huffman coding: every byte of every name and value as given.
pub fn encode_block(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        hpack_int(&mut out, 0x00, 7, name.len());
        out.extend_from_slice(name);
        hpack_int(&mut out, 0x00, 7, value.len());
        out.extend_from_slice(value);
    }
    out
}

/// The frames of one request: HEADERS, CONTINUATION when the
/// block is larger than a frame, then DATA; the last frame ends the stream.
/// Each comes with the fields to record on it (on the one ending the block).
pub fn request_frames(req: &H2Request) -> Vec<(u8, u8, Vec<u8>)> {
    let block = encode_block(&req.fields);
    let mut chunks: Vec<&[u8]> = block.chunks(MAX_FRAME).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    let last = chunks.len() - 1;
    let mut out = Vec::new();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let mut flags = 0;
        if i == last {
            flags |= flag::END_HEADERS;
        }
        if i == 0 && req.data.is_none() {
            flags |= flag::END_STREAM;
        }
        let k = if i == 0 {
            kind::HEADERS
        } else {
            kind::CONTINUATION
        };
        out.push((k, flags, chunk.to_vec()));
    }
    if let Some(data) = &req.data {
        let mut chunks: Vec<&[u8]> = data.chunks(MAX_FRAME).collect();
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let flags = if i == last { flag::END_STREAM } else { 0 };
            out.push((kind::DATA, flags, chunk.to_vec()));
        }
    }
    out
}

/// A frame header: payload length, type, flags, stream.
pub fn parse_header(bytes: &[u8]) -> Option<(usize, u8, u8, u32)> {
    let h = bytes.get(..9)?;
    let len = u32::from_be_bytes([0, *h.first()?, *h.get(1)?, *h.get(2)?]) as usize;
    let stream = u32::from_be_bytes([*h.get(5)?, *h.get(6)?, *h.get(7)?, *h.get(8)?]) & 0x7fff_ffff;
    Some((len, *h.get(3)?, *h.get(4)?, stream))
}

/// The header block fragment of a HEADERS frame's payload: without its
/// padding and priority fields. `None` when they do not fit.
pub fn headers_fragment(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    let (pad, rest) = if flags & flag::PADDED != 0 {
        let (p, rest) = payload.split_first()?;
        (usize::from(*p), rest)
    } else {
        (0, payload)
    };
    let rest = if flags & flag::PRIORITY != 0 {
        rest.get(5..)?
    } else {
        rest
    };
    rest.get(..rest.len().checked_sub(pad)?)
}

/// One conversation in progress: the stream, what was sent, the record.
struct Conv<'s> {
    stream: &'s mut dyn Stream,
    sent: Vec<u8>,
    record: H2Conversation,
    error: Option<String>,
}

impl Conv<'_> {
    fn send(
        &mut self,
        k: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
        fields: &[(Vec<u8>, Vec<u8>)],
    ) {
        let bytes = frame(k, flags, stream, payload);
        self.sent.extend_from_slice(&bytes);
        self.record.frames.push(H2Frame {
            dir: Direction::Sent,
            kind: k,
            flags,
            stream,
            length: payload.len() as u32,
            payload: WireBytes(payload.to_vec()),
            fields: fields
                .iter()
                .map(|(n, v)| (WireBytes(n.clone()), WireBytes(v.clone())))
                .collect(),
        });
        self.write(&bytes);
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self
            .stream
            .write_all(bytes)
            .and_then(|()| self.stream.flush())
        {
            // The server may refuse and close before reading everything;
            // what it said is still read.
            self.error = Some(format!("write failed: {}", describe_io(&e)));
        }
    }

    fn send_request(&mut self, id: u32, req: &H2Request) {
        let frames = request_frames(req);
        for (k, flags, payload) in frames {
            let fields: &[(Vec<u8>, Vec<u8>)] = if flags & flag::END_HEADERS != 0 {
                &req.fields
            } else {
                &[]
            };
            self.send(k, flags, id, &payload, fields);
        }
    }
}

/// Speaks HTTP/2 on an open connection (TLS with `h2` chosen, or plain
/// TCP): the preface and SETTINGS, then each request on streams 1, 3, 5…,
/// each sent once the one before it has ended (END_STREAM or RST_STREAM).
/// Reading ends when the last stream has ended, a GOAWAY leaves no stream
/// to answer, the server closes, nothing arrives for `listen.quiet` after
/// the first stream ended (before it, the stream's own idle timeout),
/// `deadline` passes or `listen.max_bytes` arrived. Returns the record,
/// every byte sent, and the first failure (a write, HPACK).
pub(crate) fn converse(
    stream: &mut dyn Stream,
    via: H2Via,
    alpn: Option<String>,
    requests: &[H2Request],
    listen: &Listen,
    deadline: Instant,
) -> (H2Conversation, Vec<u8>, Option<String>) {
    let mut c = Conv {
        stream,
        sent: Vec::new(),
        record: H2Conversation {
            via,
            alpn,
            frames: Vec::new(),
            stray: WireBytes::default(),
            end: None,
        },
        error: None,
    };
    c.sent.extend_from_slice(PREFACE);
    c.write(PREFACE);
    // SETTINGS_ENABLE_PUSH 0, SETTINGS_INITIAL_WINDOW_SIZE WINDOW.
    let mut settings = vec![0, 2, 0, 0, 0, 0, 0, 4];
    settings.extend_from_slice(&WINDOW.to_be_bytes());
    c.send(kind::SETTINGS, 0, 0, &settings, &[]);
    c.send(
        kind::WINDOW_UPDATE,
        0,
        0,
        &(WINDOW - DEFAULT_WINDOW).to_be_bytes(),
        &[],
    );
    let mut next = requests.iter();
    let mut current: u32 = 1;
    if let Some(first) = next.next() {
        c.send_request(current, first);
    } else {
        return (c.record, c.sent, c.error);
    }
    let mut decoder = loona_hpack::Decoder::new();
    let mut block: Vec<u8> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut received = 0usize;
    let mut stray = false;
    let mut first_ended = false;
    let end = 'end: loop {
        // Take every whole frame already read.
        while !stray {
            let Some((len, k, flags, sid)) = parse_header(&buf) else {
                break;
            };
            let first = !c.record.frames.iter().any(|f| f.dir == Direction::Received);
            if len > MAX_FRAME || (first && (k != kind::SETTINGS || sid != 0)) {
                // Not HTTP/2 (an HTTP/1.1 answer to the preface), or a frame
                // larger than any the client allows: the rest is recorded as
                // it came.
                stray = true;
                break;
            }
            let Some(payload) = buf.get(9..9 + len).map(<[u8]>::to_vec) else {
                break;
            };
            buf.drain(..9 + len);
            let mut fields = Vec::new();
            match k {
                kind::HEADERS | kind::CONTINUATION | kind::PUSH_PROMISE => {
                    let fragment = match k {
                        kind::HEADERS => headers_fragment(flags, &payload),
                        kind::PUSH_PROMISE => payload.get(4..),
                        _ => Some(payload.as_slice()),
                    };
                    block.extend_from_slice(fragment.unwrap_or_default());
                    if flags & flag::END_HEADERS != 0 {
                        match decoder.decode(&block) {
                            Ok(list) => {
                                fields = list
                                    .into_iter()
                                    .map(|(n, v)| (WireBytes(n), WireBytes(v)))
                                    .collect();
                            }
                            Err(e) => {
                                c.error.get_or_insert(format!(
                                    "cannot decode the server's header block on stream {sid}: {e}"
                                ));
                            }
                        }
                        block.clear();
                    }
                }
                _ => {}
            }
            let kept = if k == kind::DATA {
                payload
                    .get(..payload.len().min(DATA_RECORD))
                    .unwrap_or_default()
            } else {
                &payload
            };
            c.record.frames.push(H2Frame {
                dir: Direction::Received,
                kind: k,
                flags,
                stream: sid,
                length: len as u32,
                payload: WireBytes(kept.to_vec()),
                fields,
            });
            if c.error
                .as_deref()
                .is_some_and(|e| e.starts_with("cannot decode"))
            {
                // The compression state is lost: nothing after can be read.
                c.send(kind::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 9], &[]);
                break 'end None;
            }
            match k {
                kind::SETTINGS if flags & flag::ACK == 0 => {
                    c.send(kind::SETTINGS, flag::ACK, 0, &[], &[]);
                }
                kind::PING if flags & flag::ACK == 0 => {
                    c.send(kind::PING, flag::ACK, 0, &payload, &[]);
                }
                _ => {}
            }
            let ended = sid == current
                && match k {
                    kind::HEADERS | kind::DATA => flags & flag::END_STREAM != 0,
                    kind::RST_STREAM => true,
                    _ => false,
                };
            let gone = k == kind::GOAWAY
                && payload
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(|b: [u8; 4]| u32::from_be_bytes(b) & 0x7fff_ffff)
                    .is_some_and(|last| last < current);
            if gone {
                // The server will not process the current stream.
                break 'end None;
            }
            if ended {
                if !first_ended {
                    first_ended = true;
                    c.stream.set_idle(listen.quiet);
                }
                match next.next() {
                    Some(req) => {
                        current += 2;
                        c.send_request(current, req);
                    }
                    None => break 'end None,
                }
            }
        }
        if stray {
            c.record.stray.0.extend_from_slice(&buf);
            buf.clear();
        }
        if received >= listen.max_bytes {
            break 'end Some(ListenEnd::CapReached);
        }
        let mut chunk = [0u8; 16 * 1024];
        match c.stream.read(&mut chunk) {
            Ok(0) => break 'end Some(ListenEnd::Closed),
            Ok(n) => {
                let room = listen.max_bytes.saturating_sub(received);
                let got = chunk.get(..n.min(room)).unwrap_or_default();
                received += got.len();
                buf.extend_from_slice(got);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break 'end Some(crate::read::listen_end(e.kind(), deadline)),
        }
    };
    // An answer shorter than a frame header, with no frame before it: no
    // HTTP/2, recorded as it came.
    if !c.record.frames.iter().any(|f| f.dir == Direction::Received) {
        c.record.stray.0.extend_from_slice(&buf);
    }
    c.record.end = end;
    (c.record, c.sent, c.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_literals_follow_rfc_7541() {
        // C.1.1 and C.1.2: 10 in a 5-bit prefix, 1337 in a 5-bit prefix.
        let mut out = Vec::new();
        hpack_int(&mut out, 0, 5, 10);
        assert_eq!(out, [10]);
        out.clear();
        hpack_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10]);
        out.clear();
        hpack_int(&mut out, 0, 7, 127);
        assert_eq!(out, [127, 0]);
        // C.2.2: a literal without indexing (here with a literal name).
        let block = encode_block(&[(b":path".to_vec(), b"/sample/path".to_vec())]);
        assert_eq!(block[0], 0x00);
        assert_eq!(block[1], 5);
        assert_eq!(&block[2..7], b":path");
        assert_eq!(block[7], 12);
        // What loona-hpack (the decoder) reads back, bytes as given.
        let fields = vec![
            (b":method".to_vec(), b"GET".to_vec()),
            (b"Foo".to_vec(), b"a\r\nb\0".to_vec()),
            (b"x".to_vec(), vec![b'v'; 300]),
        ];
        let back = loona_hpack::Decoder::new()
            .decode(&encode_block(&fields))
            .unwrap();
        assert_eq!(back, fields);
    }

    #[test]
    fn a_large_block_goes_out_in_continuation_frames() {
        let req = H2Request {
            fields: vec![(b"x".to_vec(), vec![b'v'; 40_000])],
            data: Some(b"body".to_vec()),
        };
        let frames = request_frames(&req);
        let kinds: Vec<(u8, u8)> = frames.iter().map(|(k, f, _)| (*k, *f)).collect();
        assert_eq!(
            kinds,
            [
                (kind::HEADERS, 0),
                (kind::CONTINUATION, 0),
                (kind::CONTINUATION, flag::END_HEADERS),
                (kind::DATA, flag::END_STREAM)
            ]
        );
        let block: Vec<u8> = frames[..3].iter().flat_map(|(_, _, p)| p.clone()).collect();
        assert_eq!(block, encode_block(&req.fields));
        let f = frame(kind::DATA, 1, 3, b"body");
        assert_eq!(parse_header(&f), Some((4, kind::DATA, 1, 3)));
        assert_eq!(&f[9..], b"body");
    }

    /// A server that says `script` whatever it is sent.
    struct Scripted {
        script: std::io::Cursor<Vec<u8>>,
        sent: Vec<u8>,
    }

    impl io::Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.script.read(buf)
        }
    }

    impl io::Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Stream for Scripted {
        fn set_idle(&mut self, _idle: std::time::Duration) {}
    }

    fn talk(script: Vec<u8>, requests: &[H2Request]) -> (H2Conversation, Vec<u8>, Option<String>) {
        let mut s = Scripted {
            script: std::io::Cursor::new(script),
            sent: Vec::new(),
        };
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let out = converse(
            &mut s,
            H2Via::PriorKnowledge,
            None,
            requests,
            &Listen::default(),
            deadline,
        );
        assert_eq!(s.sent, out.1, "everything written is recorded");
        out
    }

    #[test]
    fn a_conversation_is_recorded_frame_by_frame() {
        let get = H2Request::get("http", "h:1", "/p");
        // :status 200 and a literal with indexing (into the dynamic table);
        // then :status 404 (indexed, 0x8d) and RFC 7541 C.4.1's
        // Huffman-coded block, as real servers send them.
        let mut enc = loona_hpack::Encoder::new();
        let block1 = enc.encode([
            (&b":status"[..], &b"200"[..]),
            (&b"server"[..], &b"x-test"[..]),
        ]);
        let block3 = [
            0x8d, 0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0,
            0xab, 0x90, 0xf4, 0xff,
        ];
        let mut script = frame(kind::SETTINGS, 0, 0, &[]);
        script.extend(frame(kind::HEADERS, flag::END_HEADERS, 1, &block1));
        script.extend(frame(kind::DATA, flag::END_STREAM, 1, b"page"));
        script.extend(frame(kind::PING, 0, 0, &[1; 8]));
        script.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            3,
            &block3,
        ));
        let (conv, sent, err) = talk(script, &[get.clone(), get]);
        assert_eq!(err, None);
        assert!(sent.starts_with(PREFACE));
        assert_eq!(conv.spoken(), Ok(()));
        let streams = conv.streams();
        let got: Vec<_> = streams.iter().map(|s| (s.id, s.status, s.ended)).collect();
        assert_eq!(got, [(1, Some(200), true), (3, Some(404), true)]);
        assert_eq!(streams[0].body_prefix, b"page");
        assert_eq!(conv.end, None, "the client ended it: both streams ended");
        // SETTINGS and PING were acknowledged, in order.
        let acks: Vec<u8> = conv
            .frames
            .iter()
            .filter(|f| f.dir == Direction::Sent && f.has(flag::ACK))
            .filter(|f| f.kind == kind::SETTINGS || f.kind == kind::PING)
            .map(|f| f.kind)
            .collect();
        assert_eq!(acks, [kind::SETTINGS, kind::PING]);
        // The decoded fields are on the received HEADERS frames.
        let fields: Vec<(String, String)> = conv
            .frames
            .iter()
            .filter(|f| f.dir == Direction::Received && f.kind == kind::HEADERS)
            .flat_map(|f| f.fields.iter().map(|(n, v)| (n.lossy(), v.lossy())))
            .filter(|(n, _)| n == "server" || n == ":authority")
            .collect();
        assert_eq!(
            fields,
            [
                ("server".into(), "x-test".into()),
                (":authority".into(), "www.example.com".into())
            ]
        );
    }

    #[test]
    fn an_http11_answer_to_the_preface_is_stray_bytes() {
        let get = H2Request::get("http", "h:1", "/p");
        let (conv, _, _) = talk(
            b"HTTP/1.1 505 No\r\nConnection: close\r\n\r\n".to_vec(),
            std::slice::from_ref(&get),
        );
        assert!(conv.frames.iter().all(|f| f.dir == Direction::Sent));
        assert_eq!(conv.end, Some(ListenEnd::Closed));
        assert!(conv.spoken().unwrap_err().contains("HTTP/1.1 505 No"));
        let (conv, _, _) = talk(b"no".to_vec(), &[get]);
        assert_eq!(conv.stray.as_bytes(), b"no");
    }

    #[test]
    fn padding_and_priority_are_stripped() {
        let payload = [2, 0, 0, 0, 1, 16, 0x82, 0, 0];
        assert_eq!(
            headers_fragment(flag::PADDED | flag::PRIORITY, &payload),
            Some(&[0x82][..])
        );
        assert_eq!(headers_fragment(flag::PADDED, &[9, 1]), None);
        assert_eq!(headers_fragment(0, &[0x82]), Some(&[0x82][..]));
    }
}
