//! The DNS wire format (RFC 1035), as much as a scan and a canary need: a
//! query writer, a message reader and a reply writer.
//!
//! The reader is bounded: every read is checked against the bytes that
//! remain, section counts and name lengths against fixed limits, and
//! compression pointers must point strictly backwards (so a name cannot
//! loop), at most [`MAX_POINTERS`] of them per name. Nothing a reply holds
//! can make it panic or allocate much.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_TXT: u16 = 16;
pub const TYPE_AAAA: u16 = 28;
pub const CLASS_IN: u16 = 1;

/// Most questions, and most records of any one section, a message may hold.
pub const MAX_RECORDS: u16 = 64;
/// Most compression pointers one name may follow.
pub const MAX_POINTERS: usize = 16;
/// Longest name in wire form (RFC 1035 2.3.4).
pub const MAX_NAME_BYTES: usize = 255;

/// Why bytes are not a DNS message we can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    #[error("truncated at byte {0}")]
    Truncated(usize),
    #[error("{what}: {count} records is more than the limit of {MAX_RECORDS}")]
    TooMany { what: &'static str, count: u16 },
    #[error("a name at byte {0} is longer than 255 bytes")]
    NameTooLong(usize),
    #[error("a compression pointer at byte {0} does not point backwards")]
    BadPointer(usize),
    #[error("a name at byte {0} follows more than {MAX_POINTERS} compression pointers")]
    TooManyPointers(usize),
    #[error("a label at byte {0} has a reserved type")]
    BadLabel(usize),
    #[error("an {0} record has {1} bytes of data")]
    BadRdata(&'static str, u16),
    #[error("{0:?} is not a host name (labels of 1 to 63 letters, digits, '-' or '_', 253 bytes at most)")]
    BadName(String),
}

/// A host name we send in a query: checked, lower case, no trailing dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(String);

impl Name {
    pub fn new(text: &str) -> Result<Self, DnsError> {
        let t = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let ok = !t.is_empty()
            && t.len() <= 253
            && t.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if ok {
            Ok(Self(t))
        } else {
            Err(DnsError::BadName(text.to_string()))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of a record type, for people.
pub fn type_name(t: u16) -> String {
    match t {
        TYPE_A => "A".into(),
        TYPE_AAAA => "AAAA".into(),
        TYPE_CNAME => "CNAME".into(),
        TYPE_TXT => "TXT".into(),
        n => format!("TYPE{n}"),
    }
}

/// The name of a response code, for people.
pub fn rcode_name(r: u8) -> String {
    match r {
        0 => "NOERROR".into(),
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        3 => "NXDOMAIN".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        n => format!("RCODE{n}"),
    }
}

/// Writes `name` in wire form: a checked [`Name`], or a name as read, whose
/// `\DDD` escapes (see [`escape_label`]) are turned back into their bytes.
/// A label is never written longer than 63 bytes: a longer length byte
/// would read as a compression pointer or a reserved label type.
fn put_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        let bytes = unescape_label(label);
        let bytes = bytes.get(..63).unwrap_or(&bytes);
        out.push(u8::try_from(bytes.len()).unwrap_or(63));
        out.extend_from_slice(bytes);
    }
    out.push(0);
}

/// The bytes of a label as [`escape_label`] wrote it.
fn unescape_label(label: &str) -> Vec<u8> {
    let text = label.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        let escaped = text
            .get(i + 1..i + 4)
            .filter(|d| b == b'\\' && d.iter().all(u8::is_ascii_digit))
            .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u8>().ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// A standard query for `name` and `qtype`, recursion desired.
pub fn encode_query(id: u16, name: &Name, qtype: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(18 + name.0.len());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    put_name(&mut out, &name.0);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out
}

/// A question as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Lower case, no trailing dot; bytes outside ASCII letters, digits,
    /// `-` and `_` are written `\DDD`.
    pub name: String,
    pub qtype: u16,
    pub qclass: u16,
}

/// What a record holds, for the types a scan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    Other { len: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub name: String,
    pub rtype: u16,
    pub class: u16,
    pub ttl: u32,
    pub data: RecordData,
}

/// A message as read: header fields, questions and answers (authority and
/// additional sections are not read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: u16,
    pub flags: u16,
    pub questions: Vec<Question>,
    pub answers: Vec<Record>,
}

impl Message {
    pub fn is_response(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0x0f) as u8
    }
    pub fn rcode(&self) -> u8 {
        (self.flags & 0x000f) as u8
    }
    /// The addresses the answers give (A and AAAA records).
    pub fn addresses(&self) -> Vec<IpAddr> {
        self.answers
            .iter()
            .filter_map(|r| match r.data {
                RecordData::A(a) => Some(IpAddr::V4(a)),
                RecordData::Aaaa(a) => Some(IpAddr::V6(a)),
                _ => None,
            })
            .collect()
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DnsError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(DnsError::Truncated(self.pos))?;
        let out = self
            .data
            .get(self.pos..end)
            .ok_or(DnsError::Truncated(self.pos))?;
        self.pos = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, DnsError> {
        self.bytes(1)?
            .first()
            .copied()
            .ok_or(DnsError::Truncated(self.pos))
    }
    fn u16(&mut self) -> Result<u16, DnsError> {
        let b: [u8; 2] = self
            .bytes(2)?
            .try_into()
            .map_err(|_| DnsError::Truncated(self.pos))?;
        Ok(u16::from_be_bytes(b))
    }
    fn u32(&mut self) -> Result<u32, DnsError> {
        let b: [u8; 4] = self
            .bytes(4)?
            .try_into()
            .map_err(|_| DnsError::Truncated(self.pos))?;
        Ok(u32::from_be_bytes(b))
    }

    /// A possibly compressed name; leaves the reader after the name's
    /// bytes at its first position.
    fn name(&mut self) -> Result<String, DnsError> {
        let start = self.pos;
        let mut labels: Vec<String> = Vec::new();
        let mut wire_len = 0usize;
        let mut pointers = 0usize;
        // Where reading goes on after the name, once a pointer was followed.
        let mut resume: Option<usize> = None;
        loop {
            let at = self.pos;
            let len = self.u8()?;
            match len & 0xc0 {
                0x00 if len == 0 => break,
                0x00 => {
                    let label = self.bytes(usize::from(len))?;
                    wire_len += 1 + label.len();
                    if wire_len + 1 > MAX_NAME_BYTES {
                        return Err(DnsError::NameTooLong(start));
                    }
                    labels.push(escape_label(label));
                }
                0xc0 => {
                    let low = self.u8()?;
                    let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                    // Strictly backwards: a pointer can never loop.
                    if target >= at {
                        return Err(DnsError::BadPointer(at));
                    }
                    pointers += 1;
                    if pointers > MAX_POINTERS {
                        return Err(DnsError::TooManyPointers(start));
                    }
                    resume.get_or_insert(self.pos);
                    self.pos = target;
                }
                _ => return Err(DnsError::BadLabel(at)),
            }
        }
        if let Some(r) = resume {
            self.pos = r;
        }
        Ok(labels.join(".").to_ascii_lowercase())
    }
}

fn escape_label(label: &[u8]) -> String {
    let mut s = String::with_capacity(label.len());
    for &b in label {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("\\{b:03}"));
        }
    }
    s
}

/// Reads a DNS message (a query or a reply).
pub fn parse(bytes: &[u8]) -> Result<Message, DnsError> {
    let mut r = Reader {
        data: bytes,
        pos: 0,
    };
    let id = r.u16()?;
    let flags = r.u16()?;
    let qd = r.u16()?;
    let an = r.u16()?;
    let _ns = r.u16()?;
    let _ar = r.u16()?;
    for (what, count) in [("questions", qd), ("answers", an)] {
        if count > MAX_RECORDS {
            return Err(DnsError::TooMany { what, count });
        }
    }
    let mut questions = Vec::with_capacity(usize::from(qd));
    for _ in 0..qd {
        let name = r.name()?;
        let qtype = r.u16()?;
        let qclass = r.u16()?;
        questions.push(Question {
            name,
            qtype,
            qclass,
        });
    }
    let mut answers = Vec::with_capacity(usize::from(an));
    for _ in 0..an {
        let name = r.name()?;
        let rtype = r.u16()?;
        let class = r.u16()?;
        let ttl = r.u32()?;
        let len = r.u16()?;
        let data_start = r.pos;
        let data = match rtype {
            TYPE_A => {
                let b: [u8; 4] = r
                    .bytes(usize::from(len))?
                    .try_into()
                    .map_err(|_| DnsError::BadRdata("A", len))?;
                RecordData::A(Ipv4Addr::from(b))
            }
            TYPE_AAAA => {
                let b: [u8; 16] = r
                    .bytes(usize::from(len))?
                    .try_into()
                    .map_err(|_| DnsError::BadRdata("AAAA", len))?;
                RecordData::Aaaa(Ipv6Addr::from(b))
            }
            TYPE_CNAME => {
                let target = r.name()?;
                if r.pos != data_start + usize::from(len) {
                    return Err(DnsError::BadRdata("CNAME", len));
                }
                RecordData::Cname(target)
            }
            _ => {
                r.bytes(usize::from(len))?;
                RecordData::Other { len }
            }
        };
        answers.push(Record {
            name,
            rtype,
            class,
            ttl,
            data,
        });
    }
    Ok(Message {
        id,
        flags,
        questions,
        answers,
    })
}

/// A reply to `query` (its id, its first question, recursion desired
/// copied), authoritative, with `addresses` as answers: those of the family
/// the question asks for (A: IPv4, AAAA: IPv6), `ttl` seconds each. With no
/// question the reply is FORMERR.
pub fn encode_reply(query: &Message, addresses: &[IpAddr], ttl: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&query.id.to_be_bytes());
    let rd = query.flags & 0x0100;
    let Some(q) = query.questions.first() else {
        out.extend_from_slice(&(0x8400u16 | rd | 1).to_be_bytes());
        out.extend_from_slice(&[0; 8]);
        return out;
    };
    let answers: Vec<&IpAddr> = addresses
        .iter()
        .filter(|a| match a {
            IpAddr::V4(_) => q.qtype == TYPE_A,
            IpAddr::V6(_) => q.qtype == TYPE_AAAA,
        })
        .take(usize::from(MAX_RECORDS))
        .collect();
    out.extend_from_slice(&(0x8400u16 | rd).to_be_bytes()); // QR, AA
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&u16::try_from(answers.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    put_name(&mut out, &q.name);
    out.extend_from_slice(&q.qtype.to_be_bytes());
    out.extend_from_slice(&q.qclass.to_be_bytes());
    for a in answers {
        out.extend_from_slice(&0xc00cu16.to_be_bytes()); // the question's name
        let (t, data): (u16, Vec<u8>) = match a {
            IpAddr::V4(v4) => (TYPE_A, v4.octets().to_vec()),
            IpAddr::V6(v6) => (TYPE_AAAA, v6.octets().to_vec()),
        };
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&ttl.to_be_bytes());
        out.extend_from_slice(&u16::try_from(data.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_and_its_reply_round_trip() {
        let name = Name::new("Abc.Canary.Example.").unwrap();
        assert_eq!(name.as_str(), "abc.canary.example");
        let q = encode_query(0x1234, &name, TYPE_A);
        let m = parse(&q).unwrap();
        assert_eq!(m.id, 0x1234);
        assert!(!m.is_response());
        assert_eq!(m.questions[0].name, "abc.canary.example");
        let addrs: Vec<IpAddr> = vec![
            "203.0.113.1".parse().unwrap(),
            "2001:db8::1".parse().unwrap(),
        ];
        let reply = parse(&encode_reply(&m, &addrs, 60)).unwrap();
        assert!(reply.is_response());
        assert_eq!(reply.rcode(), 0);
        assert_eq!(reply.id, 0x1234);
        assert_eq!(reply.addresses(), vec![addrs[0]]);
        assert_eq!(reply.answers[0].name, "abc.canary.example");
        let q6 = parse(&encode_query(1, &name, TYPE_AAAA)).unwrap();
        assert_eq!(
            parse(&encode_reply(&q6, &addrs, 60)).unwrap().addresses(),
            vec![addrs[1]]
        );
    }

    /// A query may name any bytes; the reply carries the same name back,
    /// each label at most 63 bytes on the wire, and reads as the query did.
    #[test]
    fn a_reply_repeats_any_question_name() {
        let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in [&b"a.b"[..], b"sp ace\\", &[0xff; 63], b"Up"] {
            query.push(u8::try_from(label.len()).unwrap());
            query.extend_from_slice(label);
        }
        query.extend_from_slice(&[0, 0, 1, 0, 1]);
        let q = parse(&query).unwrap();
        assert!(q.questions[0]
            .name
            .starts_with("a\\046b.sp\\032ace\\092.\\255"));
        let addrs: Vec<IpAddr> = vec!["203.0.113.1".parse().unwrap()];
        let reply = parse(&encode_reply(&q, &addrs, 60)).unwrap();
        assert_eq!(reply.questions, q.questions);
        assert_eq!(reply.answers[0].name, q.questions[0].name);
        assert_eq!(reply.addresses(), addrs);
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", ".", "a..b", "a b", &"a".repeat(64), &"a.".repeat(130)] {
            assert!(Name::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostile_bytes_are_errors_never_panics() {
        // A pointer to itself, a forward pointer, a reserved label type.
        let mut m = vec![0, 1, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
        let mut selfptr = m.clone();
        selfptr.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(parse(&selfptr), Err(DnsError::BadPointer(12)));
        let mut fwd = m.clone();
        fwd.extend_from_slice(&[0xc0, 40, 0, 1, 0, 1]);
        assert!(matches!(parse(&fwd), Err(DnsError::BadPointer(_))));
        let mut reserved = m.clone();
        reserved.extend_from_slice(&[0x40, 0, 0, 1, 0, 1]);
        assert_eq!(parse(&reserved), Err(DnsError::BadLabel(12)));
        // Too many answers claimed.
        let many = [0, 1, 0x81, 0x80, 0, 0, 0xff, 0xff, 0, 0, 0, 0];
        assert!(matches!(parse(&many), Err(DnsError::TooMany { .. })));
        // An A record with 5 bytes.
        m.extend_from_slice(&[1, b'a', 0, 0, 1, 0, 1]);
        m[7] = 1; // one answer
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 5, 1, 2, 3, 4, 5]);
        assert!(matches!(parse(&m), Err(DnsError::BadRdata("A", 5))));
        // Every prefix of a good reply is an error, never a panic.
        let q = parse(&encode_query(7, &Name::new("x.example").unwrap(), TYPE_A)).unwrap();
        let good = encode_reply(&q, &["192.0.2.1".parse().unwrap()], 1);
        assert!(parse(&good).is_ok());
        for n in 0..good.len() {
            assert!(parse(&good[..n]).is_err(), "{n}");
        }
        // A long chain of backward pointers is cut at the limit: question
        // k's name points at question k-1's, which points further back.
        let mut chain = vec![
            0, 1, 0x01, 0x00, 0, 20, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1,
        ];
        let mut prev = 12u8;
        for _ in 1..20 {
            let here = u8::try_from(chain.len()).unwrap();
            chain.extend_from_slice(&[0xc0, prev, 0, 1, 0, 1]);
            prev = here;
        }
        assert!(matches!(parse(&chain), Err(DnsError::TooManyPointers(_))));
        chain[5] = 10;
        let m = parse(&chain[..12 + 7 + 9 * 6]).unwrap();
        assert_eq!(m.questions[9].name, "a");
    }

    proptest::proptest! {
        /// Whatever arrives, the reader answers Ok or Err, never panics;
        /// so does every corruption of a good reply.
        #[test]
        fn no_input_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn no_corruption_of_a_reply_panics(at in 0usize..64, byte in proptest::num::u8::ANY, cut in 0usize..80) {
            let q = parse(&encode_query(7, &Name::new("pypi.org").unwrap(), TYPE_A)).unwrap();
            let mut reply = encode_reply(&q, &["192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap()], 1);
            if let Some(b) = reply.get_mut(at) {
                *b = byte;
            }
            reply.truncate(cut);
            let _ = parse(&reply);
        }
    }
}
