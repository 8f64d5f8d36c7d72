//! Sdists: a hand-written ustar + gzip writer and a streaming reader that
//! looks at every entry but keeps only PKG-INFO.

use crate::{
    assert_member_path, dist_stem, is_unsafe_path, metadata_text, unsafe_path_error, ArtifactError,
    BuiltDist, SdistSpec, MAX_METADATA,
};
use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
use std::collections::BTreeMap;

/// Most bytes the reader will inflate from one sdist. The whole stream must
/// be inflated to check the gzip crc and every entry path, so this bounds
/// the CPU time a decompression bomb can cost; nothing of this size is kept.
pub const MAX_SDIST_UNPACKED: u64 = 1 << 30;

/// 1980-01-02 UTC. Not 0: setuptools copies these mtimes into the wheel it
/// builds, and zip cannot record instants before 1980 in any time zone.
pub(crate) const TAR_MTIME: u64 = 315_619_200;
const BLOCK: usize = 512;
/// Tar's traditional record size; GNU tar and Python pad archives to it.
const RECORD: usize = 20 * BLOCK;
/// Cap for pax headers and GNU long names, which hold only paths.
const MAX_META_ENTRY: u64 = 1 << 20;

pub(crate) enum TarEntry {
    Dir,
    File(Vec<u8>),
    /// A file with mode 0755 (a `.deb`'s maintainer scripts).
    Exec(Vec<u8>),
}

/// Builds `{name}-{version}.tar.gz` (PEP 625 name) with a setuptools
/// `pyproject.toml`. Identical specs give identical bytes.
///
/// # Panics
/// If a file path is invalid (see [`crate::build_wheel`]), duplicated, or
/// names a generated file (PKG-INFO, setup.py, pyproject.toml), or if a path
/// does not fit a ustar header (name 100 bytes, prefix 155 bytes).
pub fn build_sdist(spec: &SdistSpec) -> BuiltDist {
    let top = dist_stem(&spec.name, &spec.version);
    let pkg_info = metadata_text(
        &spec.name,
        &spec.version,
        &spec.summary,
        None,
        (&[], &[]),
        "",
    );
    let pyproject =
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n";
    let mut files: BTreeMap<String, TarEntry> = BTreeMap::new();
    files.insert(format!("{top}/"), TarEntry::Dir);
    for (path, data) in [
        ("PKG-INFO", pkg_info),
        ("setup.py", spec.setup_py.clone().into_bytes()),
        ("pyproject.toml", pyproject.as_bytes().to_vec()),
    ] {
        files.insert(format!("{top}/{path}"), TarEntry::File(data));
    }
    for (path, data) in &spec.files {
        assert_member_path(path);
        let full = format!("{top}/{path}");
        let previous = files.insert(full, TarEntry::File(data.clone()));
        assert!(previous.is_none(), "duplicate sdist member {path:?}");
        // Explicit parent directories, so extractors never invent their modes.
        for (i, _) in path.match_indices('/') {
            let dir = path.get(..i).unwrap_or_default();
            files.insert(format!("{top}/{dir}/"), TarEntry::Dir);
        }
    }
    let entries: Vec<(String, TarEntry)> = files.into_iter().collect();
    let filename = format!("{top}.tar.gz");
    BuiltDist::new(filename, gzip(&write_tar(&entries)))
}

/// Ustar archive with fixed owner and mtime. Directory paths end with `/`.
// Our own builder: split_ustar_path has checked that name and prefix fit
// their fields, so every range is inside the 512-byte header.
#[allow(clippy::indexing_slicing)]
pub(crate) fn write_tar(entries: &[(String, TarEntry)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, entry) in entries {
        let (data, mode, kind): (&[u8], u64, u8) = match entry {
            TarEntry::Dir => (&[], 0o755, b'5'),
            TarEntry::File(d) => (d, 0o644, b'0'),
            TarEntry::Exec(d) => (d, 0o755, b'0'),
        };
        let mut h = [0u8; BLOCK];
        let (prefix, name) = split_ustar_path(path);
        h[..name.len()].copy_from_slice(name.as_bytes());
        octal(&mut h[100..108], mode);
        octal(&mut h[108..116], 0);
        octal(&mut h[116..124], 0);
        octal(&mut h[124..136], data.len() as u64);
        octal(&mut h[136..148], TAR_MTIME);
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        octal(&mut h[329..337], 0);
        octal(&mut h[337..345], 0);
        h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        h[148..156].fill(b' ');
        let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
        octal(&mut h[148..155], sum);
        out.extend_from_slice(&h);
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(BLOCK), 0);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    out.resize(out.len().next_multiple_of(RECORD), 0);
    out
}

/// Zero-padded octal filling all but the last byte of the field, then NUL.
// The fields are constant ranges of the header, and the assert makes the
// text exactly `digits` long.
#[allow(clippy::indexing_slicing)]
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    assert!(text.len() == digits, "{value} does not fit a tar field");
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

fn split_ustar_path(path: &str) -> (&str, &str) {
    if path.len() <= 100 {
        return ("", path);
    }
    // Longest prefix first, as Python's tarfile splits, so both write the
    // same header for the same path.
    let trimmed = path.trim_end_matches('/');
    path.match_indices('/')
        .map(|(i, _)| i)
        .rev()
        .find(|&i| i <= 155 && i < trimmed.len() && path.len() - i - 1 <= 100)
        .and_then(|i| Some((path.get(..i)?, path.get(i + 1..)?)))
        .unwrap_or_else(|| panic!("{path:?} does not fit a ustar header"))
}

/// RFC 1952 member: no name, mtime 0 ("unknown"), OS 255 ("unknown"), so the
/// bytes depend on the content alone.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(data, 6));
    out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    // ISIZE is the length modulo 2^32 by definition.
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// Returns `{top}/PKG-INFO` of a `.tar.gz` sdist. Nothing is written to disk
/// or executed. The whole archive is inflated (up to [`MAX_SDIST_UNPACKED`])
/// so that the gzip checksum is verified and any entry with an absolute or
/// `..` path, or link target, rejects the sdist.
pub fn read_sdist_pkg_info(sdist_tar_gz: &[u8]) -> Result<Vec<u8>, ArtifactError> {
    read_top_level_file(sdist_tar_gz, TopLevelFile::PkgInfo)
}

/// A file that [`read_top_level_file`] can take out of a `.tar.gz`: one that
/// sits directly in the archive's top directory (`name-version/` of an
/// sdist, `package/` of an npm tarball).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopLevelFile {
    /// An sdist's core metadata.
    PkgInfo,
    /// An npm package's manifest.
    PackageJson,
    /// An sdist's build script (read, never run).
    SetupPy,
    /// A `.deb`'s `control` file, at the root of its `control.tar.gz`
    /// (`./control`), not below a top directory as the others are.
    DebControl,
}

impl TopLevelFile {
    fn name(self) -> &'static [u8] {
        match self {
            Self::PkgInfo => b"PKG-INFO",
            Self::PackageJson => b"package.json",
            Self::SetupPy => b"setup.py",
            Self::DebControl => b"control",
        }
    }

    /// How errors name the file: short, and as the top-level one.
    fn what(self) -> (&'static str, &'static str) {
        match self {
            Self::PkgInfo => ("PKG-INFO", "top-level PKG-INFO"),
            Self::PackageJson => ("package.json", "top-level package.json"),
            Self::SetupPy => ("setup.py", "top-level setup.py"),
            Self::DebControl => ("control", "control file"),
        }
    }

    fn not_regular(self) -> &'static str {
        match self {
            Self::PkgInfo => "PKG-INFO is not a regular file",
            Self::PackageJson => "package.json is not a regular file",
            Self::SetupPy => "setup.py is not a regular file",
            Self::DebControl => "control is not a regular file",
        }
    }
}

/// Returns the top-level `file` of a `.tar.gz` ([`TopLevelFile`]), at most
/// [`MAX_METADATA`] bytes. Nothing is written to disk or executed. As for
/// [`read_sdist_pkg_info`], the whole archive is inflated (up to
/// [`MAX_SDIST_UNPACKED`]) and checked: gzip checksum, every entry path and
/// link target, exactly one such file.
pub fn read_top_level_file(tar_gz: &[u8], file: TopLevelFile) -> Result<Vec<u8>, ArtifactError> {
    let mut tar = TarScan::new(file);
    gunzip_with(tar_gz, MAX_SDIST_UNPACKED, "unpacked sdist", |chunk| {
        tar.feed(chunk)
    })?;
    tar.finish()
}

/// The most member paths [`read_npm_package`] lists; past it they are
/// counted only ([`NpmPackageContents::unlisted`]).
pub const MAX_LISTED_MEMBERS: usize = 100_000;
/// The longest member path [`read_npm_package`] keeps in full; a longer one
/// is listed cut to this many bytes.
const MAX_LISTED_PATH: usize = 4096;

/// What [`read_npm_package`] found in an npm tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmPackageContents {
    /// The top-level `package.json`, at most [`MAX_METADATA`] bytes.
    pub package_json: Vec<u8>,
    /// Every member with data (files and links; not directories), as its
    /// path below the top directory (`binding.gyp`, `build/Release/x.node`),
    /// in archive order, UTF-8 lossily, at most [`MAX_LISTED_MEMBERS`].
    pub members: Vec<String>,
    /// Members past [`MAX_LISTED_MEMBERS`], counted and not listed.
    pub unlisted: u64,
}

/// Reads an npm tarball's top-level `package.json` and lists its members,
/// with the same checks and bounds as [`read_top_level_file`] (the whole
/// archive inflated up to [`MAX_SDIST_UNPACKED`], gzip checksum, every entry
/// path and link target, exactly one `package.json`). Nothing is written
/// to disk or executed.
pub fn read_npm_package(tgz: &[u8]) -> Result<NpmPackageContents, ArtifactError> {
    let mut tar = TarScan::new(TopLevelFile::PackageJson);
    tar.listing = Some(Vec::new());
    gunzip_with(tgz, MAX_SDIST_UNPACKED, "unpacked npm package", |chunk| {
        tar.feed(chunk)
    })?;
    let members = tar.listing.take().unwrap_or_default();
    let unlisted = tar.unlisted;
    Ok(NpmPackageContents {
        package_json: tar.finish()?,
        members,
        unlisted,
    })
}

/// Inflates a whole gzip file of one member (RFC 1952, as `Packages.gz`):
/// the CRC and length trailer are checked, data after the member is refused,
/// and more than `limit` inflated bytes is [`ArtifactError::TooLarge`].
pub fn gunzip(input: &[u8], limit: u64) -> Result<Vec<u8>, ArtifactError> {
    let mut out = Vec::new();
    gunzip_with(input, limit, "inflated gzip data", |chunk| {
        out.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(out)
}

/// Inflates one gzip member in fixed-size pieces, handing each to `sink`.
fn gunzip_with(
    input: &[u8],
    limit: u64,
    what: &'static str,
    mut sink: impl FnMut(&[u8]) -> Result<(), ArtifactError>,
) -> Result<(), ArtifactError> {
    let mut pos = gzip_header_len(input)?;
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let mut buf = vec![0u8; 64 * 1024];
    let mut crc = crc32fast::Hasher::new();
    let mut total: u64 = 0;
    loop {
        let rest = input.get(pos..).unwrap_or_default();
        let r = inflate(&mut state, rest, &mut buf, MZFlush::None);
        pos = pos.saturating_add(r.bytes_consumed);
        let out = buf.get(..r.bytes_written).unwrap_or_default();
        total += out.len() as u64;
        if total > limit {
            return Err(ArtifactError::TooLarge { what, limit });
        }
        crc.update(out);
        sink(out)?;
        match r.status {
            Ok(MZStatus::StreamEnd) => break,
            Ok(_) if r.bytes_consumed > 0 || r.bytes_written > 0 => {}
            Ok(_) | Err(MZError::Buf) => return Err(ArtifactError::Truncated("gzip stream")),
            Err(_) => return Err(ArtifactError::Malformed("corrupt deflate data in gzip")),
        }
    }
    let trailer = pos
        .checked_add(8)
        .and_then(|end| input.get(pos..end))
        .ok_or(ArtifactError::Truncated("gzip trailer"))?;
    let (crc_bytes, len_bytes) = trailer.split_at(4);
    if crc_bytes != crc.finalize().to_le_bytes() {
        return Err(ArtifactError::ChecksumMismatch("gzip crc32"));
    }
    if len_bytes != (total as u32).to_le_bytes() {
        return Err(ArtifactError::Malformed(
            "gzip length trailer differs from the data",
        ));
    }
    // A second member or trailing bytes could be read differently by other
    // tools, so what we checked might not be what pip unpacks.
    if input.len() != pos + 8 {
        return Err(ArtifactError::Unsupported("data after the gzip member"));
    }
    Ok(())
}

fn gzip_header_len(input: &[u8]) -> Result<usize, ArtifactError> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let truncated = ArtifactError::Truncated("gzip header");
    if !input.starts_with(&[0x1f, 0x8b]) {
        return Err(ArtifactError::NotAnArchive("gzip stream"));
    }
    let &[_, _, method, flags, ..] = input.get(..10).ok_or(truncated.clone())? else {
        return Err(truncated);
    };
    if method != 8 {
        return Err(ArtifactError::Unsupported("gzip method other than deflate"));
    }
    if flags & 0xe0 != 0 {
        return Err(ArtifactError::Malformed("reserved gzip flags set"));
    }
    let mut pos = 10usize;
    if flags & FEXTRA != 0 {
        let &[lo, hi] = input.get(pos..pos + 2).ok_or(truncated.clone())? else {
            return Err(truncated);
        };
        pos += 2 + usize::from(u16::from_le_bytes([lo, hi]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let text = input.get(pos..).ok_or(truncated.clone())?;
            let nul = text.iter().position(|&b| b == 0).ok_or(truncated.clone())?;
            pos += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        pos += 2;
    }
    if pos > input.len() {
        return Err(truncated);
    }
    Ok(pos)
}

/// What the bytes after the current header are for.
enum Body {
    Skip,
    NoData,
    Wanted,
    Pax,
    GnuLongName,
    GnuLongLink,
}

/// Tar parser fed in arbitrary pieces. It keeps one header block, the
/// current capture (bounded before it starts) and the wanted file if found.
struct TarScan {
    wanted: TopLevelFile,
    header: Vec<u8>,
    /// Bytes of the current entry's data still to come, then its padding.
    remaining: u64,
    padding: u64,
    body: Option<Body>,
    capture: Vec<u8>,
    /// Overrides from pax or GNU headers for the next real entry.
    next_path: Option<Vec<u8>>,
    next_link: Option<Vec<u8>>,
    next_size: Option<u64>,
    found: Option<Vec<u8>>,
    ended: bool,
    /// When listing: each member with data, below the top directory.
    listing: Option<Vec<String>>,
    /// Members past [`MAX_LISTED_MEMBERS`].
    unlisted: u64,
}

impl TarScan {
    fn new(wanted: TopLevelFile) -> Self {
        Self {
            wanted,
            header: Vec::new(),
            remaining: 0,
            padding: 0,
            body: None,
            capture: Vec::new(),
            next_path: None,
            next_link: None,
            next_size: None,
            found: None,
            ended: false,
            listing: None,
            unlisted: 0,
        }
    }

    fn feed(&mut self, mut data: &[u8]) -> Result<(), ArtifactError> {
        while !data.is_empty() && !self.ended {
            if self.body.is_none() {
                let take = (BLOCK - self.header.len()).min(data.len());
                let (head, rest) = data.split_at(take);
                self.header.extend_from_slice(head);
                data = rest;
                if let Ok(header) = <[u8; BLOCK]>::try_from(self.header.as_slice()) {
                    self.header.clear();
                    self.start_entry(&header)?;
                }
            } else if self.remaining > 0 {
                let take = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let (head, rest) = data.split_at(take);
                if !matches!(self.body, Some(Body::Skip)) {
                    self.capture.extend_from_slice(head);
                }
                self.remaining -= take as u64;
                data = rest;
            } else {
                let take = usize::try_from(self.padding)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.padding -= take as u64;
                data = data.get(take..).unwrap_or_default();
            }
            if self.body.is_some() && self.remaining == 0 && self.padding == 0 {
                self.end_entry()?;
            }
        }
        Ok(())
    }

    fn start_entry(&mut self, h: &[u8; BLOCK]) -> Result<(), ArtifactError> {
        if h.iter().all(|&b| b == 0) {
            // End of archive; what follows is padding to tar and to pip.
            self.ended = true;
            return Ok(());
        }
        verify_checksum(h)?;
        let mut size = parse_number(&h[124..136])?;
        let kind = h[156];
        let body = match kind {
            b'x' => Body::Pax,
            b'L' => Body::GnuLongName,
            b'K' => Body::GnuLongLink,
            // Global pax headers are not applied: a global path would rename
            // every entry, which no sdist does.
            b'g' => Body::Skip,
            _ => {
                // A pax size exists for files too large for the header field.
                size = self.next_size.take().unwrap_or(size);
                self.check_member(h, kind, size)?
            }
        };
        // As in Python's tarfile, which pip uses: links, devices and
        // directories have no data blocks whatever their size field says.
        let size = if matches!(body, Body::NoData) {
            0
        } else {
            size
        };
        if matches!(body, Body::Pax | Body::GnuLongName | Body::GnuLongLink)
            && size > MAX_META_ENTRY
        {
            return Err(ArtifactError::TooLarge {
                what: "tar extended header",
                limit: MAX_META_ENTRY,
            });
        }
        self.capture.clear();
        self.remaining = size;
        self.padding = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
        self.body = Some(body);
        if size == 0 {
            self.end_entry()?;
        }
        Ok(())
    }

    /// Applies pending overrides to a real entry, checks its paths, and
    /// decides whether it is the file we want.
    fn check_member(
        &mut self,
        h: &[u8; BLOCK],
        kind: u8,
        size: u64,
    ) -> Result<Body, ArtifactError> {
        let path = match self.next_path.take() {
            Some(p) => p,
            None => header_path(h),
        };
        let link = self
            .next_link
            .take()
            .unwrap_or_else(|| field(&h[157..257]).to_vec());
        if is_unsafe_path(&path) {
            return Err(unsafe_path_error(&path));
        }
        if matches!(kind, b'1' | b'2') && is_unsafe_path(&link) {
            return Err(unsafe_path_error(&link));
        }
        let regular = matches!(kind, b'0' | b'7') || (kind == 0 && !path.ends_with(b"/"));
        let has_data = regular || !matches!(kind, 0 | b'1'..=b'6');
        let parts: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty() && *p != b".")
            .collect();
        let listed = regular || matches!(kind, b'1' | b'2');
        if let (Some(list), true) = (self.listing.as_mut(), listed) {
            if list.len() < MAX_LISTED_MEMBERS {
                let below_top = parts.get(1..).unwrap_or_default().join(&b'/');
                let cut = below_top.get(..MAX_LISTED_PATH).unwrap_or(&below_top);
                list.push(String::from_utf8_lossy(cut).into_owned());
            } else {
                self.unlisted = self.unlisted.saturating_add(1);
            }
        }
        let wanted = self.wanted.name();
        let at_root = matches!(self.wanted, TopLevelFile::DebControl);
        let found = match parts.as_slice() {
            [name] => at_root && *name == wanted,
            [_, name] => !at_root && *name == wanted,
            _ => false,
        };
        if !found {
            return Ok(if has_data { Body::Skip } else { Body::NoData });
        }
        let (short, top_level) = self.wanted.what();
        if self.found.is_some() {
            return Err(ArtifactError::Ambiguous(top_level));
        }
        if !regular {
            return Err(ArtifactError::Malformed(self.wanted.not_regular()));
        }
        if size > MAX_METADATA {
            return Err(ArtifactError::TooLarge {
                what: short,
                limit: MAX_METADATA,
            });
        }
        Ok(Body::Wanted)
    }

    fn end_entry(&mut self) -> Result<(), ArtifactError> {
        let data = std::mem::take(&mut self.capture);
        match self.body.take() {
            Some(Body::Wanted) => self.found = Some(data),
            Some(Body::Pax) => self.apply_pax(&data)?,
            Some(Body::GnuLongName) => self.next_path = Some(field(&data).to_vec()),
            Some(Body::GnuLongLink) => self.next_link = Some(field(&data).to_vec()),
            Some(Body::Skip | Body::NoData) | None => {}
        }
        Ok(())
    }

    /// Pax records are `<len> <key>=<value>\n`, where len counts the record.
    fn apply_pax(&mut self, mut data: &[u8]) -> Result<(), ArtifactError> {
        let bad = ArtifactError::Malformed("pax extended header");
        while !data.is_empty() {
            let space = data.iter().position(|&b| b == b' ').ok_or(bad.clone())?;
            let len: usize = std::str::from_utf8(data.get(..space).unwrap_or_default())
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or(bad.clone())?;
            let record = data.get(space + 1..len).ok_or(bad.clone())?;
            let record = record.strip_suffix(b"\n").ok_or(bad.clone())?;
            let eq = record.iter().position(|&b| b == b'=').ok_or(bad.clone())?;
            let (key, value) = record.split_at(eq);
            let value = value.get(1..).unwrap_or_default();
            match key {
                b"path" => self.next_path = Some(value.to_vec()),
                b"linkpath" => self.next_link = Some(value.to_vec()),
                b"size" => {
                    let size = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                    self.next_size = Some(size.ok_or(bad.clone())?);
                }
                _ => {}
            }
            data = data.get(len..).unwrap_or_default();
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<u8>, ArtifactError> {
        if !self.ended && (self.body.is_some() || !self.header.is_empty()) {
            return Err(ArtifactError::Truncated("tar archive"));
        }
        self.found
            .ok_or(ArtifactError::Missing(self.wanted.what().1))
    }
}

/// Accepts the unsigned sum and, as Python's tarfile does, the signed one
/// that some old tars wrote.
fn verify_checksum(h: &[u8; BLOCK]) -> Result<(), ArtifactError> {
    let stored = parse_number(&h[148..156])
        .map_err(|_| ArtifactError::NotAnArchive("tar archive (bad header checksum)"))?;
    let in_field = |i: usize| (148..156).contains(&i);
    let unsigned: u64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| if in_field(i) { 32 } else { u64::from(b) })
        .sum();
    let signed: i64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| if in_field(i) { 32 } else { i64::from(b as i8) })
        .sum();
    if stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed) {
        Ok(())
    } else {
        Err(ArtifactError::NotAnArchive(
            "tar archive (bad header checksum)",
        ))
    }
}

/// Octal text up to NUL, or GNU base-256 when the top bit is set.
fn parse_number(f: &[u8]) -> Result<u64, ArtifactError> {
    let bad = ArtifactError::Malformed("tar numeric field");
    if let Some((&first, rest)) = f.split_first().filter(|(&b, _)| b & 0x80 != 0) {
        if first == 0xff {
            return Err(bad);
        }
        return rest.iter().try_fold(u64::from(first & 0x7f), |acc, &b| {
            acc.checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(b)))
                .ok_or(bad.clone())
        });
    }
    let text = field(f);
    let text = text.trim_ascii();
    text.iter().try_fold(0u64, |acc, &b| match b {
        b'0'..=b'7' => acc
            .checked_mul(8)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(bad.clone()),
        _ => Err(bad.clone()),
    })
}

/// A header field up to its first NUL.
fn field(f: &[u8]) -> &[u8] {
    f.split(|&b| b == 0).next().unwrap_or_default()
}

/// The entry path, joining the ustar prefix when the magic says there is one.
fn header_path(h: &[u8; BLOCK]) -> Vec<u8> {
    let name = field(&h[..100]);
    let prefix = field(&h[345..500]);
    if &h[257..263] == b"ustar\0" && !prefix.is_empty() {
        [prefix, b"/", name].concat()
    } else {
        name.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::{ProjectName, Version};

    fn spec() -> SdistSpec {
        SdistSpec {
            name: ProjectName::new("ec-tripwire").unwrap(),
            version: Version::new("0.1.0").unwrap(),
            summary: "builds only if executed".into(),
            setup_py: "from setuptools import setup\nsetup(name='ec-tripwire', version='0.1.0')\n"
                .into(),
            files: vec![("src/ec_tripwire/__init__.py".into(), b"X = 1\n".to_vec())],
        }
    }

    fn targz(entries: Vec<(&str, TarEntry)>) -> Vec<u8> {
        let entries: Vec<(String, TarEntry)> = entries
            .into_iter()
            .map(|(p, e)| (p.to_string(), e))
            .collect();
        gzip(&write_tar(&entries))
    }

    fn file(data: &[u8]) -> TarEntry {
        TarEntry::File(data.to_vec())
    }

    #[test]
    fn deterministic_and_round_trips() {
        let a = build_sdist(&spec());
        assert_eq!(a, build_sdist(&spec()));
        assert_eq!(a.filename, "ec_tripwire-0.1.0.tar.gz");
        let pkg_info = read_sdist_pkg_info(&a.bytes).unwrap();
        assert_eq!(
            String::from_utf8(pkg_info).unwrap(),
            "Metadata-Version: 2.1\nName: ec-tripwire\nVersion: 0.1.0\nSummary: builds only if executed\nDescription-Content-Type: text/plain\n\n"
        );
    }

    #[test]
    fn long_paths_use_the_ustar_prefix() {
        let long = format!("{}/{}.py", "d".repeat(90), "f".repeat(60));
        let mut s = spec();
        s.files.push((long.clone(), b"# long\n".to_vec()));
        let built = build_sdist(&s);
        assert!(read_sdist_pkg_info(&built.bytes).is_ok());
        let (prefix, name) = split_ustar_path(&long);
        assert_eq!(format!("{prefix}/{name}"), long);
    }

    #[test]
    fn nested_pkg_info_is_not_the_sdist_metadata() {
        let t = targz(vec![
            ("x-1/x.egg-info/PKG-INFO", file(b"nested")),
            ("./x-1/PKG-INFO", file(b"top")),
        ]);
        assert_eq!(read_sdist_pkg_info(&t).unwrap(), b"top");
    }

    #[test]
    fn traversal_is_refused_anywhere_in_the_archive() {
        for evil in ["../evil.py", "/etc/cron.d/x", "x-1/../../y", "x-1\\..\\y"] {
            // After PKG-INFO too: the reader keeps going to see every entry.
            let t = targz(vec![("x-1/PKG-INFO", file(b"M")), (evil, file(b"boom"))]);
            assert!(
                matches!(read_sdist_pkg_info(&t), Err(ArtifactError::UnsafePath(_))),
                "{evil}"
            );
        }
    }

    #[test]
    fn link_targets_and_long_names_are_checked() {
        let mut tar = write_tar(&[("x-1/PKG-INFO".into(), file(b"M"))]);
        tar.truncate(2 * BLOCK);
        // A symlink pointing out of the tree.
        let mut link = [0u8; BLOCK];
        link[..6].copy_from_slice(b"x-1/up");
        link[156] = b'2';
        link[157..169].copy_from_slice(b"../../../etc");
        link[257..263].copy_from_slice(b"ustar\0");
        octal(&mut link[124..136], 0);
        link[148..156].fill(b' ');
        let sum: u64 = link.iter().map(|&b| u64::from(b)).sum();
        octal(&mut link[148..155], sum);
        let mut with_link = tar.clone();
        with_link.extend_from_slice(&link);
        with_link.resize(with_link.len() + 2 * BLOCK, 0);
        assert!(matches!(
            read_sdist_pkg_info(&gzip(&with_link)),
            Err(ArtifactError::UnsafePath(p)) if p == "../../../etc"
        ));

        // A pax header renaming a harmless-looking entry to an absolute path.
        let pax_record = b"18 path=/etc/evil\n";
        let pax = write_tar(&[("x-1/PaxHeader".into(), file(pax_record))]);
        let mut pax = pax[..2 * BLOCK].to_vec();
        pax[156] = b'x';
        pax[148..156].fill(b' ');
        let sum: u64 = pax[..BLOCK].iter().map(|&b| u64::from(b)).sum();
        octal(&mut pax[148..155], sum);
        let mut with_pax = tar.clone();
        with_pax.extend_from_slice(&pax);
        with_pax.extend_from_slice(&write_tar(&[("x-1/ok".into(), file(b""))]));
        assert!(matches!(
            read_sdist_pkg_info(&gzip(&with_pax)),
            Err(ArtifactError::UnsafePath(p)) if p == "/etc/evil"
        ));
    }

    #[test]
    fn bad_gzip_crc_and_length_are_refused() {
        let good = build_sdist(&spec()).bytes;
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 8] ^= 1;
        assert_eq!(
            read_sdist_pkg_info(&bad),
            Err(ArtifactError::ChecksumMismatch("gzip crc32"))
        );
        let mut bad = good.clone();
        bad[n - 1] ^= 1;
        assert!(read_sdist_pkg_info(&bad).is_err());
        let mut extra = good.clone();
        extra.extend_from_slice(&good);
        assert!(read_sdist_pkg_info(&extra).is_err());
    }

    #[test]
    fn truncated_and_garbage_input_is_refused() {
        let good = build_sdist(&spec()).bytes;
        for cut in [
            0,
            1,
            2,
            9,
            10,
            11,
            good.len() / 2,
            good.len() - 9,
            good.len() - 1,
        ] {
            assert!(read_sdist_pkg_info(&good[..cut]).is_err(), "cut {cut}");
        }
        assert!(matches!(
            read_sdist_pkg_info(b"PK\x03\x04 not gzip"),
            Err(ArtifactError::NotAnArchive(_))
        ));
        // Valid gzip around something that is not a tar.
        assert!(read_sdist_pkg_info(&gzip(&[7u8; 2048])).is_err());
        assert!(read_sdist_pkg_info(&gzip(b"")).is_err());
        // A tar that stops in the middle of an entry.
        let tar = write_tar(&[("x-1/PKG-INFO".into(), file(&[b'a'; 1000]))]);
        assert_eq!(
            read_sdist_pkg_info(&gzip(&tar[..BLOCK + 100])),
            Err(ArtifactError::Truncated("tar archive"))
        );
        // Every byte flipped in turn: an error or the real PKG-INFO.
        let expected = read_sdist_pkg_info(&good).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x5a;
            if let Ok(p) = read_sdist_pkg_info(&bad) {
                assert_eq!(p, expected, "byte {i}");
            }
        }
    }

    #[test]
    fn oversized_entries_are_refused() {
        let big = vec![b'a'; MAX_METADATA as usize + 1];
        let t = targz(vec![("x-1/PKG-INFO", TarEntry::File(big))]);
        assert!(matches!(
            read_sdist_pkg_info(&t),
            Err(ArtifactError::TooLarge {
                what: "PKG-INFO",
                ..
            })
        ));
        // A header declaring an enormous size, with no data behind it.
        let mut tar = write_tar(&[("x-1/PKG-INFO".into(), file(b""))]);
        tar[124..136].copy_from_slice(b"77777777777\0");
        tar[148..156].fill(b' ');
        let sum: u64 = tar[..BLOCK].iter().map(|&b| u64::from(b)).sum();
        octal(&mut tar[148..155], sum);
        assert!(read_sdist_pkg_info(&gzip(&tar)).is_err());
        let mut tar = write_tar(&[("x-1/a".into(), file(b""))]);
        tar[124] = 0x80;
        tar[125..136].fill(0xff);
        tar[148..156].fill(b' ');
        let sum: u64 = tar[..BLOCK].iter().map(|&b| u64::from(b)).sum();
        octal(&mut tar[148..155], sum);
        assert!(read_sdist_pkg_info(&gzip(&tar)).is_err());
    }

    #[test]
    fn inflation_stops_at_the_limit() {
        let bomb = gzip(&vec![0u8; 1 << 20]);
        let mut seen = 0usize;
        let result = gunzip_with(&bomb, 300_000, "test", |c| {
            seen += c.len();
            Ok(())
        });
        assert!(matches!(result, Err(ArtifactError::TooLarge { .. })));
        assert!(seen <= 300_000);
    }

    #[test]
    fn whole_gzip_files() {
        let data = b"Package: a\n".repeat(1000);
        let gz = gzip(&data);
        assert_eq!(gunzip(&gz, 1 << 20).unwrap(), data);
        assert!(matches!(
            gunzip(&gz, 100),
            Err(ArtifactError::TooLarge { limit: 100, .. })
        ));
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 6] ^= 1;
        assert!(gunzip(&bad, 1 << 20).is_err());
        for cut in 0..gz.len() {
            assert!(gunzip(&gz[..cut], 1 << 20).is_err(), "cut {cut}");
        }
        // gzip(1) reads what we write.
        let dir = std::env::temp_dir().join(format!("egress-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("Packages.gz");
        std::fs::write(&file, &gz).unwrap();
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&file)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, data);
    }

    #[test]
    fn duplicate_pkg_info_is_ambiguous() {
        let t = targz(vec![
            ("x-1/PKG-INFO", file(b"a")),
            ("y-1/PKG-INFO", file(b"b")),
        ]);
        assert_eq!(
            read_sdist_pkg_info(&t),
            Err(ArtifactError::Ambiguous("top-level PKG-INFO"))
        );
        let t = targz(vec![("x-1/setup.py", file(b""))]);
        assert!(matches!(
            read_sdist_pkg_info(&t),
            Err(ArtifactError::Missing(_))
        ));
    }
}
