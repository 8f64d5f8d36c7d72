//! `MANIFEST` and `SNAPSHOT.json` read as streams: hashed as they are read
//! and never held whole, for [`StoredSnapshot::open`](crate::StoredSnapshot::open).
//! At a million entries the two files are hundreds of megabytes; what is
//! kept is the sorted table of listed digests and a
//! [`ServedIndex`](crate::ServedIndex). The rules are those of
//! [`Manifest::parse`](crate::Manifest::parse), [`SnapshotDoc::parse`](crate::SnapshotDoc::parse)
//! and `consistency.rs`, entry by entry.

use crate::error::SnapshotError;
use crate::index::IndexBuilder;
use crate::manifest::{
    is_safe_relative_path, Layer, ManifestError, Selection, SNAPSHOT_JSON, SNAPSHOT_SCHEMA,
};
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read};

/// Hashes every byte read through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256Hasher,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(read) = buf.get(..n) {
            self.hasher.update(read);
        }
        Ok(n)
    }
}

const BUFFER: usize = 256 * 1024;

/// 64 lower-case hex digits as a digest, by table; `None` for anything
/// else (upper case included: the caller decides what that means).
pub(crate) fn lower_hex(hex: &str) -> Option<Sha256Digest> {
    const fn table() -> [u8; 256] {
        let mut t = [0xff; 256];
        let mut i = 0;
        while i < 10 {
            t[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            t[b'a' as usize + i] = 10 + i as u8;
            i += 1;
        }
        t
    }
    static VALUE: [u8; 256] = table();
    let raw: &[u8; 64] = hex.as_bytes().try_into().ok()?;
    let mut out = [0u8; 32];
    let mut bad = 0u8;
    for (byte, pair) in out.iter_mut().zip(raw.chunks_exact(2)) {
        let hi = pair.first().map_or(0xff, |b| VALUE[*b as usize]);
        let lo = pair.get(1).map_or(0xff, |b| VALUE[*b as usize]);
        bad |= hi | lo;
        *byte = (hi << 4) | (lo & 15);
    }
    (bad & 0xf0 == 0).then_some(Sha256Digest::from_bytes(out))
}

/// What `MANIFEST` says, read line by line.
#[derive(Debug)]
pub(crate) struct ManifestScan {
    /// The snapshot ID: the SHA-256 of the bytes read.
    pub(crate) id: Sha256Digest,
    /// The digest it lists for `SNAPSHOT.json`.
    pub(crate) doc: Sha256Digest,
    /// Every listed blob, sorted (blob paths sort as their digests do).
    pub(crate) blobs: Vec<Sha256Digest>,
}

/// Reads `MANIFEST` strictly: LF-terminated `<64 lowercase hex>  <path>`
/// lines, sorted, unique, safe paths, each `SNAPSHOT.json` or
/// `blobs/sha256/<its own digest>`.
pub(crate) fn scan_manifest(file: impl Read) -> Result<ManifestScan, SnapshotError> {
    let mut reader = BufReader::with_capacity(
        BUFFER,
        Hashing {
            inner: file,
            hasher: Sha256Hasher::new(),
        },
    );
    let mut line = Vec::new();
    let mut prev = Vec::new();
    let mut doc = None;
    let mut blobs = Vec::new();
    let mut n = 0usize;
    let inconsistent = |why: &str| SnapshotError::Inconsistent(why.to_string());
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| SnapshotError::io("read", std::path::Path::new("MANIFEST"), e))?;
        if read == 0 {
            break;
        }
        n += 1;
        let Some(text) = line.strip_suffix(b"\n") else {
            return Err(ManifestError::Line(n, "missing final newline").into());
        };
        let text = std::str::from_utf8(text).map_err(|_| ManifestError::Line(0, "not UTF-8"))?;
        let (hex, path) = text
            .split_once("  ")
            .ok_or(ManifestError::Line(n, "expected '<sha256>  <path>'"))?;
        let digest = match lower_hex(hex) {
            Some(d) => d,
            None => {
                Sha256Digest::from_hex(hex).map_err(|_| ManifestError::Line(n, "invalid sha256"))?
            }
        };
        // `blobs/sha256/<the line's own lower-case hex>` is safe as it is.
        let is_blob = path.strip_prefix("blobs/sha256/") == Some(hex);
        if !is_blob && !is_safe_relative_path(path) {
            return Err(ManifestError::UnsafePath(n, path.to_string()).into());
        }
        if n > 1 {
            match prev.as_slice().cmp(path.as_bytes()) {
                std::cmp::Ordering::Equal => {
                    return Err(ManifestError::Duplicate(path.to_string()).into())
                }
                std::cmp::Ordering::Greater => return Err(ManifestError::Unsorted(n).into()),
                std::cmp::Ordering::Less => {}
            }
        }
        // Upper-case hex parses, but is not what MANIFEST's rendering writes.
        if hex.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(inconsistent(
                "MANIFEST bytes are not the rendering of the parsed MANIFEST",
            ));
        }
        if path == SNAPSHOT_JSON {
            doc = Some(digest);
        } else if !is_blob {
            return Err(SnapshotError::Inconsistent(format!(
                "MANIFEST entry {path:?} is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
            )));
        } else {
            blobs.push(digest);
        }
        prev.clear();
        prev.extend_from_slice(path.as_bytes());
    }
    let doc = doc.ok_or(SnapshotError::NoSnapshotJson)?;
    let id = reader.into_inner().hasher.finish();
    Ok(ManifestScan { id, doc, blobs })
}

/// The fields of `SNAPSHOT.json` other than `served` (which goes into the
/// index) and `upload_times` (checked, not kept: the mirror does not need
/// it).
#[derive(Debug, Clone)]
pub(crate) struct DocSummary {
    pub(crate) schema: String,
    pub(crate) builder: String,
    pub(crate) created: String,
    pub(crate) sources: BTreeMap<String, Sha256Digest>,
    pub(crate) selection: Option<Selection>,
    pub(crate) layer: Option<Layer>,
}

/// What reading `SNAPSHOT.json` gave: its digest, and the document or why
/// it is refused.
pub(crate) struct DocRead {
    pub(crate) digest: Sha256Digest,
    pub(crate) parsed: Result<DocSummary, SnapshotError>,
}

/// Reads `SNAPSHOT.json` into `index` entry by entry, hashing it as it
/// goes. A document that does not parse is a [`ManifestError::Snapshot`],
/// as from [`SnapshotDoc::parse`](crate::SnapshotDoc::parse); one that
/// parses but breaks a rule is [`SnapshotError::Inconsistent`] (the first
/// such entry); the caller compares the digest first.
///
/// The document's own structure (the top-level object, the `served` array,
/// the `upload_times` object) is walked here; every value inside it (each
/// served entry, each other field) is cut out whole and handed to
/// `serde_json::from_slice`, which checks its syntax and types exactly as
/// parsing the whole document would. (serde_json reading from an
/// `io::Read` goes byte by byte and took most of a second per hundred MB.)
pub(crate) fn read_doc(
    file: impl Read,
    index: &mut IndexBuilder,
) -> Result<DocRead, SnapshotError> {
    let mut inconsistent = None;
    let (digest, parsed) = scan_doc(file, &mut |path, content_type, sha256| {
        if inconsistent.is_none() {
            if let Err(why) = index.push(path, content_type, sha256) {
                inconsistent = Some(why);
            }
        }
    });
    let io_error = |e: io::Error| SnapshotError::io("read", std::path::Path::new(SNAPSHOT_JSON), e);
    let parsed = match parsed {
        Err(DocFail::Io(e)) => Err(io_error(e)),
        Err(DocFail::Parse(e)) => Err(e.into()),
        Ok(doc) => match inconsistent {
            Some(why) => Err(SnapshotError::Inconsistent(why)),
            None => Ok(doc),
        },
    };
    Ok(DocRead { digest, parsed })
}

/// Why [`scan_doc`] refused a document.
#[derive(Debug)]
pub(crate) enum DocFail {
    /// Reading failed.
    Io(io::Error),
    /// It does not parse, or its schema is unknown: as
    /// [`SnapshotDoc::parse`](crate::SnapshotDoc::parse) would say, though
    /// a syntax error may be worded differently.
    Parse(ManifestError),
}

/// Reads `SNAPSHOT.json`, handing each served entry to `entry` as it comes
/// (path, content type, digest), hashing every byte of the file; returns
/// the digest and the rest of the document or why it was refused.
pub(crate) fn scan_doc(
    file: impl Read,
    entry: &mut dyn FnMut(&str, &str, &Sha256Digest),
) -> (Sha256Digest, Result<DocSummary, DocFail>) {
    let mut scan = Scanner {
        file,
        hasher: Sha256Hasher::new(),
        buf: vec![0; BUFFER],
        pos: 0,
        len: 0,
        eof: false,
        value: Vec::new(),
    };
    let parsed = scan.doc(entry);
    // The rest of the file, so that the digest covers every byte.
    let rest = scan.drain();
    let digest = scan.hasher.finish();
    let parsed = match (parsed, rest) {
        (Err(Fail::Io(e)), _) | (_, Err(e)) => Err(DocFail::Io(e)),
        (Err(Fail::Syntax(why)), _) => Err(DocFail::Parse(ManifestError::Snapshot(why))),
        (Ok(doc), _) if doc.schema != SNAPSHOT_SCHEMA => Err(DocFail::Parse(
            ManifestError::Snapshot(format!("unknown schema {:?}", doc.schema)),
        )),
        (Ok(doc), _) => Ok(doc),
    };
    (digest, parsed)
}

enum Fail {
    Io(io::Error),
    Syntax(String),
}

impl From<serde_json::Error> for Fail {
    fn from(e: serde_json::Error) -> Self {
        Fail::Syntax(e.to_string())
    }
}

fn syntax<T>(why: &str) -> Result<T, Fail> {
    Err(Fail::Syntax(why.to_string()))
}

/// One served entry as serde's derive reads it, strings borrowed where
/// they need no unescaping.
#[derive(Deserialize)]
struct EntryRef<'a> {
    #[serde(borrow)]
    path: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    content_type: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    sha256: std::borrow::Cow<'a, str>,
}

/// A file read in large chunks, hashed as it is read.
struct Scanner<R> {
    file: R,
    hasher: Sha256Hasher,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// The bytes of the value being cut out.
    value: Vec<u8>,
}

impl<R: Read> Scanner<R> {
    fn peek(&mut self) -> Result<Option<u8>, Fail> {
        if self.pos == self.len && !self.eof {
            loop {
                match self.file.read(&mut self.buf) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => {
                        if let Some(read) = self.buf.get(..n) {
                            self.hasher.update(read);
                        }
                        self.pos = 0;
                        self.len = n;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Fail::Io(e)),
                }
            }
        }
        Ok(if self.pos < self.len {
            self.buf.get(self.pos).copied()
        } else {
            None
        })
    }

    fn next(&mut self) -> Result<Option<u8>, Fail> {
        let b = self.peek()?;
        if b.is_some() {
            self.pos += 1;
        }
        Ok(b)
    }

    /// JSON whitespace, then the next byte (not taken).
    fn skip_ws(&mut self) -> Result<Option<u8>, Fail> {
        loop {
            match self.peek()? {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                other => return Ok(other),
            }
        }
    }

    fn expect(&mut self, want: u8, what: &str) -> Result<(), Fail> {
        match self.skip_ws()? {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            _ => syntax(&format!("expected {what}")),
        }
    }

    /// After an element: `,` (true: another follows) or `close`.
    fn more(&mut self, close: u8) -> Result<bool, Fail> {
        match self.skip_ws()? {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => syntax(&format!("expected `,` or `{}`", close as char)),
        }
    }

    /// Cuts the next value out into `self.value`: a string (escapes kept),
    /// an object or array (to its matching close, strings skipped), or a
    /// scalar (to the next delimiter). Its syntax is left to serde_json.
    fn cut(&mut self) -> Result<(), Fail> {
        self.value.clear();
        let Some(first) = self.skip_ws()? else {
            return syntax("expected a value, found the end of the file");
        };
        match first {
            b'"' => {
                self.pos += 1;
                self.value.push(b'"');
                self.cut_string_rest()
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    // Everything up to the next byte that matters at once.
                    self.peek()?;
                    let rest = self.buf.get(self.pos..self.len).unwrap_or_default();
                    let plain = rest
                        .iter()
                        .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))
                        .unwrap_or(rest.len());
                    self.value
                        .extend_from_slice(rest.get(..plain).unwrap_or_default());
                    self.pos += plain;
                    let Some(b) = self.next()? else { break };
                    self.value.push(b);
                    match b {
                        b'"' => self.cut_string_rest()?,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(());
                            }
                        }
                        _ => {}
                    }
                }
                syntax("unterminated object or array")
            }
            _ => {
                while let Some(b) = self.peek()? {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.value.push(b);
                    self.pos += 1;
                }
                Ok(())
            }
        }
    }

    /// The rest of a string whose opening quote is in `self.value`.
    fn cut_string_rest(&mut self) -> Result<(), Fail> {
        loop {
            self.peek()?;
            let rest = self.buf.get(self.pos..self.len).unwrap_or_default();
            let plain = rest
                .iter()
                .position(|b| matches!(b, b'"' | b'\\'))
                .unwrap_or(rest.len());
            self.value
                .extend_from_slice(rest.get(..plain).unwrap_or_default());
            self.pos += plain;
            let Some(b) = self.next()? else { break };
            self.value.push(b);
            match b {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    Some(e) => self.value.push(e),
                    None => break,
                },
                _ => {}
            }
        }
        syntax("unterminated string")
    }

    /// The next value, parsed whole by serde_json.
    fn value<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, Fail> {
        self.cut()?;
        Ok(serde_json::from_slice(&self.value)?)
    }

    fn doc(
        &mut self,
        entry: &mut dyn FnMut(&str, &str, &Sha256Digest),
    ) -> Result<DocSummary, Fail> {
        let mut schema: Option<String> = None;
        let mut builder: Option<String> = None;
        let mut created: Option<String> = None;
        let mut sources: Option<BTreeMap<String, Sha256Digest>> = None;
        let mut served = false;
        let mut upload_times = false;
        let mut selection: Option<Option<Selection>> = None;
        let mut layer: Option<Option<Layer>> = None;
        fn once<T>(slot: &mut Option<T>, name: &str, v: T) -> Result<(), Fail> {
            if slot.is_some() {
                return syntax(&format!("duplicate field `{name}`"));
            }
            *slot = Some(v);
            Ok(())
        }
        self.expect(b'{', "a JSON object")?;
        let mut first = true;
        loop {
            if first {
                first = false;
                if self.skip_ws()? == Some(b'}') {
                    self.pos += 1;
                    break;
                }
            }
            let key: String = self.value()?;
            self.expect(b':', "`:`")?;
            match key.as_str() {
                "schema" => once(&mut schema, "schema", self.value()?)?,
                "builder" => once(&mut builder, "builder", self.value()?)?,
                "created" => once(&mut created, "created", self.value()?)?,
                "sources" => once(&mut sources, "sources", self.value()?)?,
                "selection" => once(&mut selection, "selection", self.value()?)?,
                "layer" => once(&mut layer, "layer", self.value()?)?,
                "served" => {
                    if served {
                        return syntax("duplicate field `served`");
                    }
                    served = true;
                    self.served(entry)?;
                }
                "upload_times" => {
                    if upload_times {
                        return syntax("duplicate field `upload_times`");
                    }
                    upload_times = true;
                    self.string_map()?;
                }
                _ => {
                    self.value::<IgnoredAny>()?;
                }
            }
            if !self.more(b'}')? {
                break;
            }
        }
        if self.skip_ws()?.is_some() {
            return syntax("trailing characters after the document");
        }
        let missing = |name: &str| Fail::Syntax(format!("missing field `{name}`"));
        if !served {
            return Err(missing("served"));
        }
        Ok(DocSummary {
            schema: schema.ok_or_else(|| missing("schema"))?,
            builder: builder.ok_or_else(|| missing("builder"))?,
            created: created.ok_or_else(|| missing("created"))?,
            sources: sources.unwrap_or_default(),
            selection: selection.flatten(),
            layer: layer.flatten(),
        })
    }

    /// The `served` array, entry by entry to `entry`.
    fn served(&mut self, entry: &mut dyn FnMut(&str, &str, &Sha256Digest)) -> Result<(), Fail> {
        self.expect(b'[', "an array of served entries")?;
        if self.skip_ws()? == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.cut()?;
            let e: EntryRef = serde_json::from_slice(&self.value)?;
            let sha256 = match lower_hex(&e.sha256) {
                Some(d) => d,
                None => Sha256Digest::from_hex(&e.sha256)
                    .map_err(|why| Fail::Syntax(why.to_string()))?,
            };
            entry(&e.path, &e.content_type, &sha256);
            if !self.more(b']')? {
                return Ok(());
            }
        }
    }

    /// An object of strings to strings, checked and dropped.
    fn string_map(&mut self) -> Result<(), Fail> {
        self.expect(b'{', "an object of strings")?;
        if self.skip_ws()? == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value::<String>()?;
            self.expect(b':', "`:`")?;
            self.value::<String>()?;
            if !self.more(b'}')? {
                return Ok(());
            }
        }
    }

    /// Reads (and so hashes) whatever is left.
    fn drain(&mut self) -> Result<(), io::Error> {
        self.pos = self.len;
        loop {
            match self.peek() {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => self.pos = self.len,
                Err(Fail::Io(e)) => return Err(e),
                Err(Fail::Syntax(_)) => return Ok(()),
            }
        }
    }
}
