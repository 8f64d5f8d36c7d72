//! [`ServedIndex`]: what a snapshot serves where, held compactly enough for a
//! million entries, and looked up per request in a hash table.
//!
//! [`SnapshotDoc`](crate::SnapshotDoc)'s `served` list holds three `String`s
//! per entry, and a route table built from it as many again; at a million
//! entries that was gigabytes and seconds before the first answer. Here
//! every distinct path is stored once in one sorted arena of bytes, each
//! entry is a content type (interned: a snapshot has a handful) and the
//! index of its blob in the sorted table of digests that `MANIFEST` lists,
//! and a path is found through a table of path numbers by hash (open
//! addressing, [`PathTable`]): one or two cache misses where a binary
//! search over the arena missed the cache at most of its twenty steps.
//! [`StoredSnapshot::open`](crate::StoredSnapshot::open) fills it straight
//! from `SNAPSHOT.json` as it is read, never holding the served list.

use crate::npm::{NPM_ABBREVIATED, NPM_JSON};
use crate::{is_servable_path, well_known, ServedEntry};
use egress_model::Sha256Digest;
use egress_simple::{HTML_V1, JSON_V1};

/// One served entry: its content type and its blob, as indexes into the
/// index's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    blob: u32,
    content_type: u16,
}

/// Every path a snapshot serves, with the content type and blob of each of
/// its entries; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct ServedIndex {
    /// Every distinct path, sorted by bytes, concatenated.
    arena: Vec<u8>,
    /// Path `i` is `arena[path_starts[i]..path_starts[i + 1]]`.
    path_starts: Vec<usize>,
    /// Path `i`'s entries are `entries[entry_starts[i]..entry_starts[i + 1]]`,
    /// ordered by content type.
    entry_starts: Vec<usize>,
    entries: Vec<Entry>,
    content_types: Vec<Box<str>>,
    /// The blob digests, sorted and unique.
    blobs: Vec<Sha256Digest>,
    /// Where the digests starting with each 16-bit prefix start in `blobs`
    /// (digests are uniform, so a lookup is a short binary search).
    buckets: Buckets,
    /// Every path's number, by the hash of its bytes.
    table: PathTable,
}

/// The hash table of a [`ServedIndex`]'s paths: open addressing with
/// linear probing over slots of one `u64` each, the upper half the upper
/// half of the path's hash (so that most probes of other paths are turned
/// away without touching the arena) and the lower half the path's number
/// plus one (0: an empty slot). At most two slots in three are used, so at
/// 750,000 paths (a million entries) it is 16 MB.
///
/// The hash is a small multiply-rotate function over eight bytes at a
/// time (as rustc's FxHash), with a final mix, keyed per table from the
/// standard library's random hasher keys: the table's contents come from a
/// signed snapshot, the lookups from clients, and a client cannot know
/// which of its paths share a probe sequence.
#[derive(Debug, Clone, Default)]
struct PathTable {
    slots: Vec<u64>,
    seed: u64,
}

/// The multiplier of rustc-hash 2.
const K: u64 = 0xf135_7aea_2e62_a9c5;

fn path_hash(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or_default());
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    for (t, b) in tail.iter_mut().zip(words.remainder()) {
        *t = *b;
    }
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // Fold the well-mixed high bits into the low ones (the slot number).
    h ^= h >> 32;
    h = h.wrapping_mul(K);
    h ^ (h >> 29)
}

impl PathTable {
    /// A table of `count` paths, `path(i)` the bytes of path `i`.
    fn of<'a>(count: usize, path: impl Fn(usize) -> &'a [u8]) -> Self {
        // Numbers are stored as u32 plus one.
        if count == 0 || count >= u32::MAX as usize {
            return Self::default();
        }
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(count);
            h.finish()
        };
        let len = (count + count / 2).next_power_of_two().max(16);
        let mask = len - 1;
        let mut slots = vec![0u64; len];
        for i in 0..count {
            let h = path_hash(seed, path(i));
            let mut s = h as usize & mask;
            // Fewer paths than slots: an empty one is always found.
            while let Some(slot) = slots.get_mut(s) {
                if *slot == 0 {
                    *slot = (h & 0xffff_ffff_0000_0000) | (i as u64 + 1);
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        Self { slots, seed }
    }

    /// The number of the path whose bytes are `want`.
    fn find<'a>(&self, want: &[u8], path: impl Fn(usize) -> &'a [u8]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let h = path_hash(self.seed, want);
        let tag = h & 0xffff_ffff_0000_0000;
        let mut s = h as usize & mask;
        // At most every slot once (the table is never full, so an empty
        // slot ends the probe first).
        for _ in 0..self.slots.len() {
            let slot = *self.slots.get(s)?;
            if slot == 0 {
                return None;
            }
            if slot & 0xffff_ffff_0000_0000 == tag {
                let i = ((slot & 0xffff_ffff) as usize).saturating_sub(1);
                if path(i) == want {
                    return Some(i);
                }
            }
            s = (s + 1) & mask;
        }
        None
    }
}

/// `starts[p]..starts[p + 1]` holds the digests whose first `bits` bits
/// are `p`: about one digest per bucket, so a lookup touches one or two
/// cache lines of the table instead of a dozen (a binary search over a
/// million digests missed the cache at every step). Empty until built.
#[derive(Debug, Clone, Default)]
struct Buckets {
    starts: Vec<u32>,
    bits: u32,
}

/// The first `bits` (at most 32) bits of `digest`.
fn prefix(digest: &Sha256Digest, bits: u32) -> usize {
    let [a, b, c, d, ..] = *digest.as_bytes();
    let top = u32::from_be_bytes([a, b, c, d]);
    (top.checked_shr(32 - bits.clamp(1, 32)).unwrap_or(0)) as usize
}

impl Buckets {
    fn of(blobs: &[Sha256Digest]) -> Self {
        let Ok(len) = u32::try_from(blobs.len()) else {
            return Self::default();
        };
        let bits = (usize::BITS - blobs.len().leading_zeros()).clamp(8, 24);
        let count = 1usize << bits;
        let mut starts = vec![len; count + 1];
        for (i, d) in blobs.iter().enumerate().rev() {
            if let Some(slot) = starts.get_mut(prefix(d, bits)) {
                *slot = i as u32;
            }
        }
        // Empty prefixes start where the next one does.
        for p in (0..count).rev() {
            let next = starts.get(p + 1).copied().unwrap_or(len);
            if let Some(slot) = starts.get_mut(p) {
                if *slot > next {
                    *slot = next;
                }
            }
        }
        Self { starts, bits }
    }

    /// The position of `digest` in `blobs` (which these buckets were made of).
    fn find(&self, blobs: &[Sha256Digest], digest: &Sha256Digest) -> Option<usize> {
        let p = prefix(digest, self.bits);
        let range = match (self.starts.get(p), self.starts.get(p + 1)) {
            (Some(&lo), Some(&hi)) => lo as usize..hi as usize,
            _ => 0..blobs.len(),
        };
        let lo = range.start;
        let slice = blobs.get(range)?;
        // The first eight bytes decide almost every comparison.
        let key = |d: &Sha256Digest| {
            let [a, b, c, e, f, g, h, i, ..] = *d.as_bytes();
            u64::from_be_bytes([a, b, c, e, f, g, h, i])
        };
        let want = key(digest);
        slice
            .binary_search_by(|d| key(d).cmp(&want).then_with(|| d.cmp(digest)))
            .ok()
            .map(|i| lo + i)
    }
}

/// A sorted, unique table of digests with its prefix table: membership
/// in one or two cache lines (see [`Buckets`]).
#[derive(Debug)]
pub(crate) struct DigestSet<'a> {
    blobs: &'a [Sha256Digest],
    buckets: Buckets,
}

impl<'a> DigestSet<'a> {
    /// `blobs`: sorted, unique.
    pub(crate) fn new(blobs: &'a [Sha256Digest]) -> Self {
        Self {
            blobs,
            buckets: Buckets::of(blobs),
        }
    }

    pub(crate) fn contains(&self, digest: &Sha256Digest) -> bool {
        self.buckets.find(self.blobs, digest).is_some()
    }
}

/// The entries served at one path.
#[derive(Debug, Clone, Copy)]
pub struct ServedAt<'a> {
    index: &'a ServedIndex,
    entries: &'a [Entry],
}

impl<'a> ServedAt<'a> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(content type, blob)` of each entry, ordered by content type.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Sha256Digest)> + 'a {
        let index = self.index;
        self.entries.iter().map(move |e| index.resolve(*e))
    }

    /// The blob served as `content_type` (compared case-insensitively).
    pub fn get(&self, content_type: &str) -> Option<Sha256Digest> {
        self.iter()
            .find(|(ct, _)| ct.eq_ignore_ascii_case(content_type))
            .map(|(_, d)| d)
    }
}

impl ServedIndex {
    /// An index of `entries` as they are, without the consistency rules of
    /// [`Snapshot::check`](crate::Snapshot::check) (its blob table is the
    /// digests the entries name): for a snapshot already checked.
    pub fn from_entries(entries: &[ServedEntry]) -> Self {
        let mut blobs: Vec<Sha256Digest> = entries.iter().map(|e| e.sha256).collect();
        blobs.sort_unstable();
        blobs.dedup();
        let mut builder = IndexBuilder::new(blobs);
        for e in entries {
            // Every digest is in the table, so only an absurd number of
            // content types (over 65,536) can fail; such an index is
            // left empty, so nothing is served.
            if builder
                .push_unchecked(&e.path, &e.content_type, &e.sha256)
                .is_err()
            {
                return Self::default();
            }
        }
        builder.finish_unchecked()
    }

    fn resolve(&self, e: Entry) -> (&str, Sha256Digest) {
        let ct = self
            .content_types
            .get(e.content_type as usize)
            .map_or("", |t| t);
        let digest = self
            .blobs
            .get(e.blob as usize)
            .copied()
            .unwrap_or(Sha256Digest::from_bytes([0; 32]));
        (ct, digest)
    }

    fn path(&self, i: usize) -> &[u8] {
        match (self.path_starts.get(i), self.path_starts.get(i + 1)) {
            (Some(&a), Some(&b)) => self.arena.get(a..b).unwrap_or_default(),
            _ => &[],
        }
    }

    fn at_index(&self, i: usize) -> ServedAt<'_> {
        let entries = match (self.entry_starts.get(i), self.entry_starts.get(i + 1)) {
            (Some(&a), Some(&b)) => self.entries.get(a..b).unwrap_or_default(),
            _ => &[],
        };
        ServedAt {
            index: self,
            entries,
        }
    }

    /// The entries served at `path` (matched byte for byte), if any.
    pub fn at(&self, path: &str) -> Option<ServedAt<'_>> {
        let i = self.table.find(path.as_bytes(), |i| self.path(i))?;
        Some(self.at_index(i))
    }

    /// The blob served at `path` as `content_type`, as
    /// [`SnapshotDoc::lookup`](crate::SnapshotDoc::lookup) finds it.
    pub fn lookup(&self, path: &str, content_type: &str) -> Option<Sha256Digest> {
        self.at(path)?.get(content_type)
    }

    /// Number of distinct paths.
    pub fn path_count(&self) -> usize {
        self.path_starts.len().saturating_sub(1)
    }

    /// Number of entries (a negotiated path has two).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The blob table: every digest, sorted.
    pub(crate) fn into_blobs(self) -> Vec<Sha256Digest> {
        self.blobs
    }

    /// Number of distinct blobs in the table.
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }

    /// Whether `digest` is in the blob table (for an index that a
    /// [`StoredSnapshot`](crate::StoredSnapshot) made: listed in `MANIFEST`).
    pub fn has_blob(&self, digest: &Sha256Digest) -> bool {
        self.buckets.find(&self.blobs, digest).is_some()
    }

    /// Every `(path, content type, blob)`, sorted by path, then type.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, Sha256Digest)> + '_ {
        (0..self.path_count()).flat_map(move |i| {
            let path = std::str::from_utf8(self.path(i)).unwrap_or_default();
            self.at_index(i).iter().map(move |(ct, d)| (path, ct, d))
        })
    }
}

/// One entry as read, before sorting: its path's index in the arena.
#[derive(Debug, Clone, Copy)]
struct Raw {
    path: u32,
    entry: Entry,
}

/// The rule every served entry keeps on its own: an origin-form path
/// without query or fragment, not shadowing the snapshot's evidence, with
/// a bare media type.
pub(crate) fn entry_rule(path: &str, content_type: &str) -> Result<(), String> {
    if !is_servable_path(path) {
        return Err(format!(
            "served path {path:?} is not an origin-form path without query or fragment"
        ));
    }
    if [
        well_known::MANIFEST,
        well_known::SIGNATURE,
        well_known::SNAPSHOT_JSON,
    ]
    .contains(&path)
    {
        return Err(format!(
            "served path {path:?} would shadow the snapshot's own evidence"
        ));
    }
    let ct_ok =
        content_type.contains('/') && content_type.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if !ct_ok {
        return Err(format!(
            "content type {content_type:?} of {path:?} is not a bare media type"
        ));
    }
    Ok(())
}

/// The rule over one path's entries (their content types): one entry, or
/// exactly an HTML and a JSON one (PEP 691), or exactly a full and an
/// abbreviated npm packument.
pub(crate) fn path_rule(path: &str, types: &[&str]) -> Result<(), String> {
    let pair = |a: &str, b: &str| {
        types.len() == 2
            && types.iter().any(|t| t.eq_ignore_ascii_case(a))
            && types.iter().any(|t| t.eq_ignore_ascii_case(b))
    };
    let negotiated = pair(HTML_V1, JSON_V1) || pair(NPM_JSON, NPM_ABBREVIATED);
    if types.len() != 1 && !negotiated {
        return Err(format!("served path {path:?} has entries {types:?}; a path has one entry, one {HTML_V1} and one {JSON_V1}, or one {NPM_JSON} and one {NPM_ABBREVIATED}"));
    }
    Ok(())
}

/// Fills a [`ServedIndex`] entry by entry, checking each against the rules
/// of [`Snapshot::check`](crate::Snapshot::check) as it comes (see
/// `consistency.rs`, whose messages these are).
#[derive(Debug)]
pub(crate) struct IndexBuilder {
    blobs: Vec<Sha256Digest>,
    buckets: Buckets,
    arena: Vec<u8>,
    path_starts: Vec<usize>,
    raw: Vec<Raw>,
    content_types: Vec<Box<str>>,
    /// Entries came sorted by path (as canonical `SNAPSHOT.json` has them).
    sorted: bool,
}

impl IndexBuilder {
    /// `blobs`: sorted, unique.
    pub(crate) fn new(blobs: Vec<Sha256Digest>) -> Self {
        Self {
            buckets: Buckets::of(&blobs),
            blobs,
            arena: Vec::new(),
            path_starts: Vec::new(),
            raw: Vec::new(),
            content_types: Vec::new(),
            sorted: true,
        }
    }

    /// Adds one served entry, refusing what `check_structure` refuses for a
    /// single entry.
    pub(crate) fn push(
        &mut self,
        path: &str,
        content_type: &str,
        sha256: &Sha256Digest,
    ) -> Result<(), String> {
        entry_rule(path, content_type)?;
        let Some(blob) = self.buckets.find(&self.blobs, sha256) else {
            return Err(format!(
                "{path:?} is served from blob {sha256} which MANIFEST does not list"
            ));
        };
        self.push_found(path, content_type, blob)
    }

    fn push_unchecked(
        &mut self,
        path: &str,
        content_type: &str,
        sha256: &Sha256Digest,
    ) -> Result<(), String> {
        let blob = self
            .buckets
            .find(&self.blobs, sha256)
            .ok_or_else(|| format!("blob {sha256} is not in the index's table"))?;
        self.push_found(path, content_type, blob)
    }

    /// `blob`: the position of the entry's digest in the table.
    fn push_found(&mut self, path: &str, content_type: &str, blob: usize) -> Result<(), String> {
        let too_many = || "too many served entries for one index".to_string();
        let blob = u32::try_from(blob).map_err(|_| too_many())?;
        let ct = match self.content_types.iter().position(|t| **t == *content_type) {
            Some(i) => i,
            None => {
                self.content_types.push(content_type.into());
                self.content_types.len() - 1
            }
        };
        let content_type = u16::try_from(ct).map_err(|_| "more than 65,536 content types")?;
        let last = self.path_starts.last().copied();
        let same = last.is_some_and(|start| self.arena.get(start..) == Some(path.as_bytes()));
        if !same {
            if let Some(start) = last {
                if self.arena.get(start..).unwrap_or_default() > path.as_bytes() {
                    self.sorted = false;
                }
            }
            self.path_starts.push(self.arena.len());
            self.arena.extend_from_slice(path.as_bytes());
        }
        let path = u32::try_from(self.path_starts.len() - 1).map_err(|_| too_many())?;
        self.raw.push(Raw {
            path,
            entry: Entry { blob, content_type },
        });
        Ok(())
    }

    /// The index, after the rules that need every entry: a path has one
    /// entry, or exactly an HTML and a JSON one (PEP 691), or exactly a
    /// full and an abbreviated npm packument; every listed blob is served
    /// somewhere.
    pub(crate) fn finish(self) -> Result<ServedIndex, String> {
        let index = self.finish_unchecked();
        let mut served = vec![false; index.blobs.len()];
        for i in 0..index.path_count() {
            let at = index.at_index(i);
            for e in at.entries {
                if let Some(s) = served.get_mut(e.blob as usize) {
                    *s = true;
                }
            }
            let types: Vec<&str> = at.iter().map(|(ct, _)| ct).collect();
            path_rule(&String::from_utf8_lossy(index.path(i)), &types)?;
        }
        if let Some(i) = served.iter().position(|s| !s) {
            if let Some(d) = index.blobs.get(i) {
                return Err(format!(
                    "blob {d} is listed in MANIFEST but served at no path"
                ));
            }
        }
        Ok(index)
    }

    fn finish_unchecked(self) -> ServedIndex {
        let Self {
            blobs,
            buckets,
            mut arena,
            mut path_starts,
            mut raw,
            content_types,
            sorted,
        } = self;
        path_starts.push(arena.len());
        if !sorted {
            // Sort the paths, merging repeats, and renumber the entries.
            let old_path = |i: usize| match (path_starts.get(i), path_starts.get(i + 1)) {
                (Some(&a), Some(&b)) => arena.get(a..b).unwrap_or_default(),
                _ => &[],
            };
            let mut order: Vec<usize> = (0..path_starts.len() - 1).collect();
            order.sort_by(|a, b| old_path(*a).cmp(old_path(*b)));
            let mut renumber = vec![0u32; order.len()];
            let mut new_arena = Vec::with_capacity(arena.len());
            let mut new_starts = Vec::with_capacity(path_starts.len());
            let mut prev: Option<&[u8]> = None;
            for &old in &order {
                let p = old_path(old);
                if prev != Some(p) {
                    new_starts.push(new_arena.len());
                    new_arena.extend_from_slice(p);
                    prev = Some(p);
                }
                if let Some(slot) = renumber.get_mut(old) {
                    *slot = u32::try_from(new_starts.len() - 1).unwrap_or(u32::MAX);
                }
            }
            new_starts.push(new_arena.len());
            for r in &mut raw {
                r.path = renumber.get(r.path as usize).copied().unwrap_or(u32::MAX);
            }
            arena = new_arena;
            path_starts = new_starts;
        }
        // By path, then by content type (as the served list sorts them).
        let type_name = |e: &Entry| content_types.get(e.content_type as usize).map_or("", |t| t);
        raw.sort_by(|a, b| {
            (a.path, type_name(&a.entry), a.entry.blob).cmp(&(
                b.path,
                type_name(&b.entry),
                b.entry.blob,
            ))
        });
        let paths = path_starts.len() - 1;
        let mut entry_starts = Vec::with_capacity(paths + 1);
        let mut entries = Vec::with_capacity(raw.len());
        let mut next = 0usize;
        for r in &raw {
            while entry_starts.len() <= r.path as usize && entry_starts.len() < paths {
                entry_starts.push(next);
            }
            entries.push(r.entry);
            next += 1;
        }
        while entry_starts.len() <= paths {
            entry_starts.push(next);
        }
        arena.shrink_to_fit();
        let table = PathTable::of(paths, |i| {
            match (path_starts.get(i), path_starts.get(i + 1)) {
                (Some(&a), Some(&b)) => arena.get(a..b).unwrap_or_default(),
                _ => &[],
            }
        });
        ServedIndex {
            arena,
            path_starts,
            entry_starts,
            entries,
            content_types,
            blobs,
            buckets,
            table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, ct: &str, bytes: &[u8]) -> ServedEntry {
        ServedEntry {
            path: path.into(),
            content_type: ct.into(),
            sha256: Sha256Digest::of(bytes),
        }
    }

    #[test]
    fn finds_what_the_served_list_finds_in_any_order() {
        let mut served = vec![
            entry("/simple/b/", JSON_V1, b"bj"),
            entry("/files/x/a.whl", "application/octet-stream", b"a"),
            entry("/simple/b/", HTML_V1, b"bh"),
            entry("/simple/", HTML_V1, b"ih"),
            entry("/a", NPM_JSON, b"full"),
            entry("/simple/", JSON_V1, b"ij"),
            entry("/a", NPM_ABBREVIATED, b"corgi"),
        ];
        for _ in 0..2 {
            let index = ServedIndex::from_entries(&served);
            assert_eq!(index.path_count(), 4);
            assert_eq!(index.len(), 7);
            for e in &served {
                assert_eq!(index.lookup(&e.path, &e.content_type), Some(e.sha256));
                assert_eq!(
                    index.lookup(&e.path, &e.content_type.to_uppercase()),
                    Some(e.sha256)
                );
            }
            assert!(index.at("/simple/c/").is_none());
            assert!(index.at("/simple").is_none());
            assert!(index.at("").is_none());
            assert_eq!(index.at("/simple/b/").map(|a| a.len()), Some(2));
            let mut all: Vec<_> = served.clone();
            all.sort();
            let listed: Vec<_> = index
                .iter()
                .map(|(p, ct, _)| entry(p, ct, b""))
                .map(|e| (e.path, e.content_type))
                .collect();
            let want: Vec<_> = all
                .iter()
                .map(|e| (e.path.clone(), e.content_type.clone()))
                .collect();
            assert_eq!(listed, want);
            served.sort();
        }
    }

    #[test]
    fn refuses_what_check_refuses() {
        let listed = |bytes: &[&[u8]]| {
            let mut v: Vec<_> = bytes.iter().map(|b| Sha256Digest::of(b)).collect();
            v.sort();
            IndexBuilder::new(v)
        };
        let d = Sha256Digest::of(b"a");
        let mut b = listed(&[b"a"]);
        assert!(b.push("simple/", HTML_V1, &d).is_err());
        assert!(b.push("/a?b", HTML_V1, &d).is_err());
        assert!(b.push(well_known::MANIFEST, HTML_V1, &d).is_err());
        assert!(b.push("/a", "text html", &d).is_err());
        assert!(b.push("/a", HTML_V1, &Sha256Digest::of(b"b")).is_err());
        b.push("/a", HTML_V1, &d).unwrap();
        b.push("/a", HTML_V1, &d).unwrap();
        assert!(b.finish().unwrap_err().contains("has entries"));
        let mut b = listed(&[b"a", b"b"]);
        b.push("/a", HTML_V1, &d).unwrap();
        assert!(b.finish().unwrap_err().contains("served at no path"));
    }
}
