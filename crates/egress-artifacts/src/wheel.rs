//! Wheels: a hand-written zip writer and a bounds-checked zip reader.

use crate::{
    assert_member_path, core_metadata_with, dist_stem, is_unsafe_path, unsafe_path_error,
    urlsafe_b64_nopad, ArtifactError, BuiltDist, Sha256Digest, WheelExtras, WheelSpec,
    MAX_METADATA,
};

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD_LEN: usize = 22;
/// 1980-01-01 00:00:00, the earliest instant a zip can record.
const DOS_DATE: u16 = (1 << 5) | 1;
const DOS_TIME: u16 = 0;
/// Bit 11: names are UTF-8, so non-ASCII paths mean the same to every reader.
const FLAG_UTF8: u16 = 1 << 11;

/// Builds a `py3-none-any` wheel. Identical specs give identical bytes.
///
/// # Panics
/// If a file path is empty, absolute, contains `..`, `.`, `\` or an empty
/// segment, appears twice, or collides with the generated METADATA, WHEEL or
/// RECORD; or if the archive would need zip64 (over 4 GiB or 65535 entries).
pub fn build_wheel(spec: &WheelSpec) -> BuiltDist {
    build_wheel_with(spec, &WheelExtras::default())
}

/// Builds a wheel with the tag and dependencies `extras` give (see
/// [`WheelExtras`]); with the default extras, the bytes of [`build_wheel`].
/// Its METADATA is [`core_metadata_with`]. Identical input gives identical
/// bytes.
///
/// # Panics
/// As [`build_wheel`]; and if the tag is not three `-`-separated parts of
/// `.`-separated tags made of ASCII letters, digits and `_`.
pub fn build_wheel_with(spec: &WheelSpec, extras: &WheelExtras) -> BuiltDist {
    let tag = extras.tag.as_deref().unwrap_or("py3-none-any");
    let expanded = expand_tag(tag);
    let purelib = tag.rsplit('-').next() == Some("any");
    let stem = dist_stem(&spec.name, &spec.version);
    let dist_info = format!("{stem}.dist-info");
    let generated = ["METADATA", "WHEEL", "RECORD"].map(|f| format!("{dist_info}/{f}"));

    let mut files: Vec<(String, Vec<u8>)> = spec.files.clone();
    for (path, _) in &files {
        assert_member_path(path);
        assert!(!generated.contains(path), "{path:?} is generated");
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some((a, _)) = files
        .iter()
        .zip(files.iter().skip(1))
        .find_map(|(a, b)| (a.0 == b.0).then_some(a))
    {
        panic!("duplicate wheel member {a:?}");
    }
    let [metadata_path, wheel_path, record_path] = generated;
    files.push((metadata_path, core_metadata_with(spec, extras)));
    let mut wheel =
        format!("Wheel-Version: 1.0\nGenerator: egress-artifacts\nRoot-Is-Purelib: {purelib}\n");
    for t in &expanded {
        wheel.push_str(&format!("Tag: {t}\n"));
    }
    files.push((wheel_path, wheel.into_bytes()));

    let mut record = String::new();
    for (path, data) in &files {
        let hash = urlsafe_b64_nopad(Sha256Digest::of(data).as_bytes());
        record.push_str(&format!(
            "{},sha256={hash},{}\n",
            csv_field(path),
            data.len()
        ));
    }
    record.push_str(&format!("{},,\n", csv_field(&record_path)));
    files.push((record_path, record.into_bytes()));

    BuiltDist::new(format!("{stem}-{tag}.whl"), write_zip(&files))
}

/// Every tag of a (possibly compressed) tag set, `python-abi-platform`, in
/// the order the set names them.
///
/// # Panics
/// If `tag` is not three parts of `.`-separated tags made of ASCII letters,
/// digits and `_` (fixture code's mistake).
fn expand_tag(tag: &str) -> Vec<String> {
    let parts: Vec<Vec<&str>> = tag.split('-').map(|p| p.split('.').collect()).collect();
    let ok = parts.len() == 3
        && parts
            .iter()
            .flatten()
            .all(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    assert!(ok, "invalid wheel tag {tag:?}");
    let mut out = Vec::new();
    if let [python, abi, platform] = parts.as_slice() {
        for p in python {
            for a in abi {
                for pl in platform {
                    out.push(format!("{p}-{a}-{pl}"));
                }
            }
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Deflated zip with fixed timestamps and no extra fields, in the given order.
fn write_zip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let small = |n: usize| u32::try_from(n).expect("zip64 is not supported");
    let count = u16::try_from(entries.len()).expect("zip64 is not supported");
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let compressed = miniz_oxide::deflate::compress_to_vec(data, 6);
        let crc = crc32fast::hash(data);
        let flags = if name.is_ascii() { 0 } else { FLAG_UTF8 };
        let offset = small(out.len());
        // Fields shared by the local and central headers, from "version needed".
        let mut common = Vec::with_capacity(26);
        put16(&mut common, 20);
        put16(&mut common, flags);
        put16(&mut common, 8);
        put16(&mut common, DOS_TIME);
        put16(&mut common, DOS_DATE);
        put32(&mut common, crc);
        put32(&mut common, small(compressed.len()));
        put32(&mut common, small(data.len()));
        put16(
            &mut common,
            u16::try_from(name.len()).expect("name too long"),
        );
        put16(&mut common, 0);

        put32(&mut out, LOCAL_SIG);
        out.extend_from_slice(&common);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&compressed);

        put32(&mut central, CENTRAL_SIG);
        // Made by Unix, so the external attributes below are read as a mode.
        put16(&mut central, (3 << 8) | 20);
        central.extend_from_slice(&common);
        put16(&mut central, 0); // comment length
        put16(&mut central, 0); // disk
        put16(&mut central, 0); // internal attributes
        put32(&mut central, 0o100_644 << 16);
        put32(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
    }
    let central_offset = small(out.len());
    out.extend_from_slice(&central);
    put32(&mut out, EOCD_SIG);
    put16(&mut out, 0);
    put16(&mut out, 0);
    put16(&mut out, count);
    put16(&mut out, count);
    put32(&mut out, small(central.len()));
    put32(&mut out, central_offset);
    put16(&mut out, 0);
    out
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Bounds-checked little-endian reads: every offset in a zip is hostile.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&self, at: usize, len: usize, what: &'static str) -> Result<&'a [u8], ArtifactError> {
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or(ArtifactError::Truncated(what))
    }
    fn u16(&self, at: usize, what: &'static str) -> Result<u16, ArtifactError> {
        let b = self.bytes(at, 2, what)?;
        let b = b.try_into().map_err(|_| ArtifactError::Truncated(what))?;
        Ok(u16::from_le_bytes(b))
    }
    fn u32(&self, at: usize, what: &'static str) -> Result<u32, ArtifactError> {
        let b = self.bytes(at, 4, what)?;
        let b = b.try_into().map_err(|_| ArtifactError::Truncated(what))?;
        Ok(u32::from_le_bytes(b))
    }
}

struct CentralEntry<'a> {
    name: &'a [u8],
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u32,
    uncompressed: u32,
    local_offset: u32,
}

/// Returns the `{name}-{version}.dist-info/METADATA` of a wheel. The whole
/// central directory is checked first: one unsafe path rejects the wheel.
pub fn read_wheel_metadata(wheel: &[u8]) -> Result<Vec<u8>, ArtifactError> {
    let zip = Reader(wheel);
    let mut found: Option<CentralEntry> = None;
    for entry in central_directory(wheel)? {
        if is_metadata_path(entry.name) {
            if found.is_some() {
                return Err(ArtifactError::Ambiguous(".dist-info/METADATA"));
            }
            found = Some(entry);
        }
    }
    let entry = found.ok_or(ArtifactError::Missing(".dist-info/METADATA"))?;
    extract(&zip, &entry)
}

/// Every member path a wheel's central directory lists, in its order,
/// UTF-8 lossily (what an installer would unpack: `x/_native.so`,
/// `x.pth`). Nothing is inflated; the central directory is checked as
/// [`read_wheel_metadata`] checks it (one unsafe path rejects the wheel).
/// At most 65,535 names: a zip without zip64 holds no more.
pub fn read_wheel_members(wheel: &[u8]) -> Result<Vec<String>, ArtifactError> {
    Ok(central_directory(wheel)?
        .into_iter()
        .map(|e| String::from_utf8_lossy(e.name).into_owned())
        .collect())
}

/// The central directory's entries, each bounds-checked, every path safe.
fn central_directory(wheel: &[u8]) -> Result<Vec<CentralEntry<'_>>, ArtifactError> {
    let zip = Reader(wheel);
    let eocd = find_eocd(wheel)?;
    let disk = zip.u16(eocd + 4, "end of central directory")?;
    let cd_disk = zip.u16(eocd + 6, "end of central directory")?;
    let here = zip.u16(eocd + 8, "end of central directory")?;
    let total = zip.u16(eocd + 10, "end of central directory")?;
    let cd_size = zip.u32(eocd + 12, "end of central directory")?;
    let cd_offset = zip.u32(eocd + 16, "end of central directory")?;
    if total == u16::MAX || cd_size == u32::MAX || cd_offset == u32::MAX {
        return Err(ArtifactError::Unsupported("zip64"));
    }
    if disk != 0 || cd_disk != 0 || here != total {
        return Err(ArtifactError::Unsupported("multi-disk zip"));
    }
    let (cd_start, cd_len) = (cd_offset as usize, cd_size as usize);
    if cd_start
        .checked_add(cd_len)
        .filter(|&end| end <= eocd)
        .is_none()
    {
        return Err(ArtifactError::Malformed(
            "central directory overlaps its end record",
        ));
    }
    let cd = Reader(zip.bytes(cd_start, cd_len, "central directory")?);

    let mut entries = Vec::with_capacity(usize::from(total).min(cd_len / 46));
    let mut at = 0usize;
    for _ in 0..total {
        if cd.u32(at, "central directory")? != CENTRAL_SIG {
            return Err(ArtifactError::Malformed("bad central directory signature"));
        }
        let name_len = usize::from(cd.u16(at + 28, "central directory")?);
        let extra_len = usize::from(cd.u16(at + 30, "central directory")?);
        let comment_len = usize::from(cd.u16(at + 32, "central directory")?);
        let name = cd.bytes(at + 46, name_len, "central directory")?;
        if is_unsafe_path(name) {
            return Err(unsafe_path_error(name));
        }
        entries.push(CentralEntry {
            name,
            flags: cd.u16(at + 8, "central directory")?,
            method: cd.u16(at + 10, "central directory")?,
            crc: cd.u32(at + 16, "central directory")?,
            compressed: cd.u32(at + 20, "central directory")?,
            uncompressed: cd.u32(at + 24, "central directory")?,
            local_offset: cd.u32(at + 42, "central directory")?,
        });
        // Each length is at most 65535, so this cannot overflow.
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(entries)
}

/// Scans back over a possible archive comment for the end record whose
/// comment length reaches exactly to the end of the input.
fn find_eocd(data: &[u8]) -> Result<usize, ArtifactError> {
    let not_zip = ArtifactError::NotAnArchive("zip archive (no end of central directory)");
    let last = data.len().checked_sub(EOCD_LEN).ok_or(not_zip.clone())?;
    let first = last.saturating_sub(usize::from(u16::MAX));
    let zip = Reader(data);
    for pos in (first..=last).rev() {
        if zip.u32(pos, "end of central directory")? == EOCD_SIG {
            let comment = usize::from(zip.u16(pos + 20, "end of central directory")?);
            if pos + EOCD_LEN + comment == data.len() {
                return Ok(pos);
            }
        }
    }
    Err(not_zip)
}

/// `X.dist-info/METADATA` directly below the root, as pip looks for it.
fn is_metadata_path(name: &[u8]) -> bool {
    let mut parts = name.split(|&b| b == b'/');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(dir), Some(b"METADATA"), None) if dir.len() > ".dist-info".len() && dir.ends_with(b".dist-info")
    )
}

fn extract(zip: &Reader, entry: &CentralEntry) -> Result<Vec<u8>, ArtifactError> {
    if entry.flags & 1 != 0 {
        return Err(ArtifactError::Unsupported("encrypted entry"));
    }
    if entry.compressed == u32::MAX
        || entry.uncompressed == u32::MAX
        || entry.local_offset == u32::MAX
    {
        return Err(ArtifactError::Unsupported("zip64"));
    }
    if u64::from(entry.uncompressed) > MAX_METADATA {
        return Err(ArtifactError::TooLarge {
            what: "METADATA",
            limit: MAX_METADATA,
        });
    }
    let local = entry.local_offset as usize;
    if zip.u32(local, "local header")? != LOCAL_SIG {
        return Err(ArtifactError::Malformed("bad local header signature"));
    }
    let name_len = usize::from(zip.u16(local + 26, "local header")?);
    let extra_len = usize::from(zip.u16(local + 28, "local header")?);
    // A local name that differs from the central one means two readers
    // could disagree about which file this is.
    if zip.bytes(local + 30, name_len, "local header")? != entry.name {
        return Err(ArtifactError::Malformed(
            "local and central names of METADATA differ",
        ));
    }
    let data = zip.bytes(
        local + 30 + name_len + extra_len,
        entry.compressed as usize,
        "METADATA data",
    )?;
    let size = entry.uncompressed as usize;
    let content = match entry.method {
        0 if data.len() == size => data.to_vec(),
        0 => return Err(ArtifactError::Malformed("stored entry sizes differ")),
        // The limit is the declared size (already capped), so a lying
        // declaration fails here instead of growing the buffer.
        8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, size).map_err(|_| {
            ArtifactError::Malformed("METADATA deflate data is corrupt or larger than declared")
        })?,
        _ => {
            return Err(ArtifactError::Unsupported(
                "compression method other than stored or deflate",
            ))
        }
    };
    if content.len() != size {
        return Err(ArtifactError::Malformed(
            "METADATA size differs from its declaration",
        ));
    }
    if crc32fast::hash(&content) != entry.crc {
        return Err(ArtifactError::ChecksumMismatch("METADATA crc32"));
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_metadata;
    use egress_model::{ProjectName, Version};

    fn spec() -> WheelSpec {
        WheelSpec {
            name: ProjectName::new("EC.Present").unwrap(),
            version: Version::new("1.0.0").unwrap(),
            summary: "a present package".into(),
            description: "Long text.\n\nWith paragraphs.\n".into(),
            requires_python: Some(">=3.8".into()),
            files: vec![
                ("ec_present/__init__.py".into(), b"VALUE = 1\n".to_vec()),
                ("ec_present/data,x.txt".into(), vec![7u8; 5000]),
            ],
        }
    }

    #[test]
    fn deterministic_and_named_per_pep427() {
        let a = build_wheel(&spec());
        let b = build_wheel(&spec());
        assert_eq!(a, b);
        assert_eq!(a.filename, "ec_present-1.0.0-py3-none-any.whl");
        assert_eq!(a.sha256, Sha256Digest::of(&a.bytes));
    }

    #[test]
    fn metadata_round_trips() {
        let s = spec();
        let built = build_wheel(&s);
        assert_eq!(
            read_wheel_metadata(&built.bytes).unwrap(),
            core_metadata(&s)
        );
        let text = String::from_utf8(core_metadata(&s)).unwrap();
        assert!(text.starts_with("Metadata-Version: 2.1\nName: ec-present\nVersion: 1.0.0\n"));
        assert!(text.contains("Requires-Python: >=3.8\n"));
        assert!(text.ends_with("\n\nLong text.\n\nWith paragraphs.\n"));
    }

    /// Every member through the same reader path as METADATA, for tests.
    fn members(zip: &[u8]) -> Vec<(String, Vec<u8>)> {
        let r = Reader(zip);
        let eocd = find_eocd(zip).unwrap();
        let total = r.u16(eocd + 10, "").unwrap();
        let mut at = r.u32(eocd + 16, "").unwrap() as usize;
        let mut out = Vec::new();
        for _ in 0..total {
            let name_len = usize::from(r.u16(at + 28, "").unwrap());
            let name = r.bytes(at + 46, name_len, "").unwrap();
            let entry = CentralEntry {
                name,
                flags: r.u16(at + 8, "").unwrap(),
                method: r.u16(at + 10, "").unwrap(),
                crc: r.u32(at + 16, "").unwrap(),
                compressed: r.u32(at + 20, "").unwrap(),
                uncompressed: r.u32(at + 24, "").unwrap(),
                local_offset: r.u32(at + 42, "").unwrap(),
            };
            out.push((
                String::from_utf8(name.to_vec()).unwrap(),
                extract(&r, &entry).unwrap(),
            ));
            at += 46 + name_len;
        }
        out
    }

    #[test]
    fn record_hashes_verify() {
        let built = build_wheel(&spec());
        let files = members(&built.bytes);
        let (record_path, record) = files.last().unwrap();
        assert_eq!(record_path, "ec_present-1.0.0.dist-info/RECORD");
        let record = String::from_utf8(record.clone()).unwrap();
        let lines: Vec<&str> = record.lines().collect();
        assert_eq!(lines.len(), files.len());
        assert_eq!(
            lines.last().unwrap(),
            &"ec_present-1.0.0.dist-info/RECORD,,"
        );
        assert!(record.contains("\n\"ec_present/data,x.txt\",sha256="));
        for ((path, data), line) in files.iter().zip(&lines).take(files.len() - 1) {
            let (quoted, rest) = line.rsplit_once(",sha256=").unwrap();
            assert_eq!(quoted.trim_matches('"'), path);
            let (hash, size) = rest.split_once(',').unwrap();
            assert_eq!(hash, urlsafe_b64_nopad(Sha256Digest::of(data).as_bytes()));
            assert_eq!(size, data.len().to_string());
        }
    }

    #[test]
    fn reads_stored_entries_and_comments() {
        // A stored METADATA behind a zip comment, as other zip writers make.
        let meta = b"Metadata-Version: 2.1\nName: x\n";
        let name = b"x-1.dist-info/METADATA";
        let mut z = Vec::new();
        put32(&mut z, LOCAL_SIG);
        let mut common = Vec::new();
        for v in [20u16, 0, 0, 0, 0] {
            put16(&mut common, v);
        }
        put32(&mut common, crc32fast::hash(meta));
        put32(&mut common, meta.len() as u32);
        put32(&mut common, meta.len() as u32);
        put16(&mut common, name.len() as u16);
        put16(&mut common, 0);
        z.extend_from_slice(&common);
        z.extend_from_slice(name);
        z.extend_from_slice(meta);
        let cd_offset = z.len() as u32;
        put32(&mut z, CENTRAL_SIG);
        put16(&mut z, 20);
        z.extend_from_slice(&common);
        z.extend_from_slice(&[0; 10]);
        put32(&mut z, 0);
        z.extend_from_slice(name);
        let cd_size = z.len() as u32 - cd_offset;
        put32(&mut z, EOCD_SIG);
        for v in [0u16, 0, 1, 1] {
            put16(&mut z, v);
        }
        put32(&mut z, cd_size);
        put32(&mut z, cd_offset);
        let comment = b"PK\x05\x06 decoy";
        put16(&mut z, comment.len() as u16);
        z.extend_from_slice(comment);
        assert_eq!(read_wheel_metadata(&z).unwrap(), meta);
    }

    #[test]
    fn hostile_zips_are_errors() {
        let good = build_wheel(&spec()).bytes;
        for cut in [0, 1, 21, good.len() / 2, good.len() - 1] {
            assert!(read_wheel_metadata(&good[..cut]).is_err(), "cut {cut}");
        }
        // Dropping the front moves every offset: a truncated download.
        assert!(read_wheel_metadata(&good[100..]).is_err());
        assert!(matches!(
            read_wheel_metadata(b"<html>not found</html>"),
            Err(ArtifactError::NotAnArchive(_))
        ));
        let mut noise = vec![0u8; 70_000];
        noise
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i * 31 % 251) as u8);
        assert!(read_wheel_metadata(&noise).is_err());

        // Every byte flipped in turn: errors or the real METADATA, never a panic.
        let meta = core_metadata(&spec());
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xa5;
            if let Ok(m) = read_wheel_metadata(&bad) {
                assert_eq!(m, meta, "byte {i}");
            }
        }
    }

    fn metadata_central_offset(zip: &[u8]) -> usize {
        let needle = b"ec_present-1.0.0.dist-info/METADATA";
        let cd = u32::from_le_bytes(zip[zip.len() - 6..zip.len() - 2].try_into().unwrap()) as usize;
        cd + zip[cd..]
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap()
            - 46
    }

    #[test]
    fn bomb_declared_sizes_are_refused() {
        let good = build_wheel(&spec()).bytes;
        let at = metadata_central_offset(&good);
        let mut huge = good.clone();
        huge[at + 24..at + 28].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        assert!(matches!(
            read_wheel_metadata(&huge),
            Err(ArtifactError::TooLarge { .. })
        ));
        // Declared small, actually larger: inflate stops at the declaration.
        let mut small = good.clone();
        small[at + 24..at + 28].copy_from_slice(&10u32.to_le_bytes());
        assert!(read_wheel_metadata(&small).is_err());

        // A real bomb: 16 MiB of zeros deflates to ~16 KiB.
        let zeros = vec![0u8; 16 << 20];
        let z = write_zip(&[("b-1.dist-info/METADATA".into(), zeros)]);
        assert!(matches!(
            read_wheel_metadata(&z),
            Err(ArtifactError::TooLarge { .. })
        ));
    }

    #[test]
    fn traversal_and_ambiguity_are_refused() {
        let meta = ("x-1.dist-info/METADATA".to_string(), b"M".to_vec());
        for evil in ["../evil.py", "/etc/x", "a/../../b", "C:\\x"] {
            let z = write_zip(&[(evil.into(), vec![]), meta.clone()]);
            assert!(
                matches!(read_wheel_metadata(&z), Err(ArtifactError::UnsafePath(_))),
                "{evil}"
            );
        }
        let z = write_zip(&[meta.clone(), ("y-1.dist-info/METADATA".into(), vec![])]);
        assert_eq!(
            read_wheel_metadata(&z),
            Err(ArtifactError::Ambiguous(".dist-info/METADATA"))
        );
        let z = write_zip(&[("x-1.dist-info/WHEEL".into(), vec![])]);
        assert!(matches!(
            read_wheel_metadata(&z),
            Err(ArtifactError::Missing(_))
        ));
        let z = write_zip(&[("a/x-1.dist-info/METADATA".into(), vec![])]);
        assert!(matches!(
            read_wheel_metadata(&z),
            Err(ArtifactError::Missing(_))
        ));
    }

    #[test]
    fn bad_crc_is_refused() {
        let good = build_wheel(&spec()).bytes;
        let at = metadata_central_offset(&good);
        let mut bad = good.clone();
        bad[at + 16] ^= 1;
        assert_eq!(
            read_wheel_metadata(&bad),
            Err(ArtifactError::ChecksumMismatch("METADATA crc32"))
        );
    }

    #[test]
    fn tagged_wheels_with_dependencies() {
        let s = spec();
        assert_eq!(
            build_wheel_with(&s, &WheelExtras::default()),
            build_wheel(&s),
            "the default extras are the pure wheel"
        );
        let extras = WheelExtras {
            tag: Some("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64".into()),
            requires_dist: vec!["dep>=1.0".into(), "fast-dep; extra == \"fast\"".into()],
            provides_extra: vec!["fast".into()],
        };
        let built = build_wheel_with(&s, &extras);
        assert_eq!(
            built.filename,
            "ec_present-1.0.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        );
        let meta = read_wheel_metadata(&built.bytes).unwrap();
        assert_eq!(meta, core_metadata_with(&s, &extras));
        let text = String::from_utf8(meta).unwrap();
        assert!(text.contains(
            "Requires-Python: >=3.8\nRequires-Dist: dep>=1.0\nRequires-Dist: fast-dep; extra == \"fast\"\nProvides-Extra: fast\n"
        ), "{text}");
        let files = members(&built.bytes);
        let (_, wheel) = files
            .iter()
            .find(|(p, _)| p.ends_with(".dist-info/WHEEL"))
            .unwrap();
        assert_eq!(
            String::from_utf8(wheel.clone()).unwrap(),
            "Wheel-Version: 1.0\nGenerator: egress-artifacts\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_17_x86_64\nTag: cp311-cp311-manylinux2014_x86_64\n"
        );
        assert_eq!(expand_tag("py2.py3-none-any").len(), 2);
        let pure = members(&build_wheel(&s).bytes);
        let (_, wheel) = pure
            .iter()
            .find(|(p, _)| p.ends_with(".dist-info/WHEEL"))
            .unwrap();
        assert_eq!(
            wheel.as_slice(),
            b"Wheel-Version: 1.0\nGenerator: egress-artifacts\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        );
        assert_ne!(built.sha256, build_wheel(&s).sha256);
    }

    #[test]
    #[should_panic(expected = "invalid wheel tag")]
    fn builder_refuses_bad_tags() {
        build_wheel_with(
            &spec(),
            &WheelExtras {
                tag: Some("cp311-linux".into()),
                ..WheelExtras::default()
            },
        );
    }

    #[test]
    #[should_panic(expected = "invalid path")]
    fn builder_refuses_traversal() {
        let mut s = spec();
        s.files.push(("../x.py".into(), vec![]));
        build_wheel(&s);
    }

    #[test]
    fn members_are_listed_from_the_central_directory() {
        let mut s = spec();
        s.files.push(("evil.pth".into(), b"import os\n".to_vec()));
        let built = build_wheel(&s);
        let names = read_wheel_members(&built.bytes).unwrap();
        assert!(names.contains(&"evil.pth".to_string()), "{names:?}");
        assert!(names.contains(&"ec_present-1.0.0.dist-info/RECORD".to_string()));
        assert_eq!(names.len(), 6);
        // Every truncation is an error, never a panic.
        for cut in 0..built.bytes.len() {
            assert!(
                read_wheel_members(&built.bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
        // A central directory offset past the end.
        let mut bad = built.bytes.clone();
        let n = bad.len();
        bad[n - 6..n - 2].copy_from_slice(&u32::MAX.wrapping_sub(1).to_le_bytes());
        assert!(read_wheel_members(&bad).is_err());
    }
}
