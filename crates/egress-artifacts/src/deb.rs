//! Debian binary packages (`.deb`, deb(5)): a writer for the canary's and the
//! tests' packages, and a reader of the `control` file of a served one.
//!
//! A `.deb` is an ar archive of three members in this order:
//! `debian-binary` (`2.0\n`), `control.tar.<comp>` (`./control` and the
//! maintainer scripts) and `data.tar.<comp>` (the files to install). The
//! writer uses gzip for both tarballs, the project's own ustar and gzip
//! writers, mtime 1980-01-02 and owner 0:0, so identical specs give identical
//! bytes. The reader walks and checks every ar member header (sizes, padding,
//! names, order) and inflates only the control tarball; it reads gzip only:
//! `xz` and `zstd` (what `dpkg-deb --build` uses by default) are an
//! [`DebError::Unsupported`] error, never a guess.

use crate::sdist::{gzip, write_tar, TarEntry, TAR_MTIME};
use crate::{assert_member_path, read_top_level_file, ArtifactError, TopLevelFile};
use egress_apt::{parse_paragraphs, AptFormatError, Paragraph};
use std::collections::BTreeMap;

const AR_MAGIC: &[u8] = b"!<arch>\n";
const AR_HEADER: usize = 60;

/// The maintainer scripts dpkg runs; [`DebSpec::scripts`] takes only these.
pub const MAINTAINER_SCRIPTS: [&str; 4] = ["preinst", "postinst", "prerm", "postrm"];

/// What goes into a `.deb`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebSpec {
    pub package: String,
    pub version: String,
    pub architecture: String,
    pub maintainer: String,
    /// One line, or a synopsis and continuation lines each starting with a
    /// space (deb822).
    pub description: String,
    pub depends: Option<String>,
    /// `(preinst|postinst|prerm|postrm, script text)`, written mode 0755.
    pub scripts: Vec<(String, String)>,
    /// Paths to install, relative to `/` (`usr/share/doc/x/README`), and
    /// contents.
    pub files: Vec<(String, Vec<u8>)>,
}

impl DebSpec {
    /// The `control` file [`build_deb`] writes: Package, Version,
    /// Architecture, Maintainer, Installed-Size, Depends (if set),
    /// Description.
    ///
    /// # Panics
    /// If a value is not a valid deb822 value (a line break not followed by
    /// a space, a control character): the spec is fixture code's, never a
    /// server's.
    pub fn control(&self) -> String {
        let installed_kib = self
            .files
            .iter()
            .map(|(_, data)| (data.len() as u64).div_ceil(1024))
            .sum::<u64>();
        let mut p = Paragraph::new();
        let mut push = |name: &str, value: &str| {
            p.push(name, value)
                .unwrap_or_else(|e| panic!("invalid control field {name}: {e}"));
        };
        push("Package", &self.package);
        push("Version", &self.version);
        push("Architecture", &self.architecture);
        push("Maintainer", &self.maintainer);
        push("Installed-Size", &installed_kib.to_string());
        if let Some(depends) = &self.depends {
            push("Depends", depends);
        }
        push("Description", &self.description);
        p.render()
    }

    /// `<package>_<version without epoch>_<architecture>.deb`, the name
    /// Debian's pool gives it.
    pub fn file_name(&self) -> String {
        let version = self
            .version
            .split_once(':')
            .map_or(self.version.as_str(), |(_, v)| v);
        format!("{}_{}_{}.deb", self.package, version, self.architecture)
    }
}

/// Builds the `.deb`. Identical specs give identical bytes.
///
/// # Panics
/// On fixture mistakes: an invalid control value (see [`DebSpec::control`]),
/// a script name other than the four maintainer scripts or given twice, a
/// file path that is absolute, has `.`/`..`/empty segments or is given
/// twice.
pub fn build_deb(spec: &DebSpec) -> Vec<u8> {
    let mut control = vec![
        ("./".to_string(), TarEntry::Dir),
        (
            "./control".to_string(),
            TarEntry::File(spec.control().into_bytes()),
        ),
    ];
    let mut seen = Vec::new();
    for (name, text) in &spec.scripts {
        assert!(
            MAINTAINER_SCRIPTS.contains(&name.as_str()) && !seen.contains(name),
            "invalid or repeated maintainer script {name:?}"
        );
        seen.push(name.clone());
        control.push((
            format!("./{name}"),
            TarEntry::Exec(text.clone().into_bytes()),
        ));
    }
    let mut data: BTreeMap<String, TarEntry> = BTreeMap::new();
    data.insert("./".into(), TarEntry::Dir);
    for (path, bytes) in &spec.files {
        assert_member_path(path);
        for (i, _) in path.match_indices('/') {
            let dir = path.get(..i).unwrap_or_default();
            data.insert(format!("./{dir}/"), TarEntry::Dir);
        }
        let previous = data.insert(format!("./{path}"), TarEntry::File(bytes.clone()));
        assert!(previous.is_none(), "duplicate .deb member {path:?}");
    }
    let data: Vec<(String, TarEntry)> = data.into_iter().collect();
    let mut out = AR_MAGIC.to_vec();
    ar_member(&mut out, "debian-binary", b"2.0\n");
    ar_member(&mut out, "control.tar.gz", &gzip(&write_tar(&control)));
    ar_member(&mut out, "data.tar.gz", &gzip(&write_tar(&data)));
    out
}

/// One ar member as dpkg writes it: name without a trailing `/`, decimal
/// fields, mode 100644, data padded with `\n` to an even length.
fn ar_member(out: &mut Vec<u8>, name: &str, data: &[u8]) {
    let header = format!(
        "{name:<16}{TAR_MTIME:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        0,
        0,
        100_644,
        data.len()
    );
    assert_eq!(header.len(), AR_HEADER, "ar header for {name:?}");
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
}

/// Why a served `.deb` could not be read. Offsets are byte offsets into the
/// `.deb`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DebError {
    #[error("not a .deb: it does not start with the ar archive magic `!<arch>\\n`")]
    NotAnArchive,
    #[error("the .deb ends inside the {what} at offset {offset}")]
    Truncated { what: &'static str, offset: usize },
    #[error("ar member header at offset {offset}: {why}")]
    BadHeader { offset: usize, why: &'static str },
    #[error("ar member at offset {offset} has an odd size and its padding byte is not a newline")]
    BadPadding { offset: usize },
    #[error("ar member {index} is {name:?}, expected {expected}")]
    UnexpectedMember {
        index: usize,
        name: String,
        expected: &'static str,
    },
    #[error("debian-binary says {0:?}, not a 2.x format version")]
    BadFormatVersion(String),
    #[error("the .deb has no {0} member")]
    Missing(&'static str),
    #[error(
        "{member} is compressed with {compression}, which this reader does not read (gzip only)"
    )]
    Unsupported {
        member: String,
        compression: &'static str,
    },
    #[error("control.tar.gz: {0}")]
    Control(ArtifactError),
    #[error("the control file is not UTF-8")]
    NotUtf8,
    #[error("the control file: {0}")]
    ControlFormat(AptFormatError),
    #[error("the control file holds {0} paragraphs, not one")]
    ControlParagraphs(usize),
}

/// One ar member: name (without GNU ar's trailing `/`) and data.
struct Member<'a> {
    name: &'a str,
    data: &'a [u8],
}

fn ar_members(deb: &[u8]) -> Result<Vec<Member<'_>>, DebError> {
    let mut rest = deb.strip_prefix(AR_MAGIC).ok_or(DebError::NotAnArchive)?;
    let mut offset = AR_MAGIC.len();
    let mut out = Vec::new();
    while !rest.is_empty() {
        let truncated = |what| DebError::Truncated { what, offset };
        let (header, after) = rest
            .split_at_checked(AR_HEADER)
            .ok_or(truncated("ar member header"))?;
        let (name, size) = parse_header(header, offset)?;
        let (data, after) = usize::try_from(size)
            .ok()
            .and_then(|size| after.split_at_checked(size))
            .ok_or(truncated("ar member data"))?;
        rest = after;
        let mut next = offset + AR_HEADER + data.len();
        if data.len() % 2 == 1 {
            match rest.split_first() {
                Some((b'\n', after)) => rest = after,
                Some(_) => return Err(DebError::BadPadding { offset }),
                None => return Err(truncated("ar member padding")),
            }
            next += 1;
        }
        out.push(Member { name, data });
        offset = next;
    }
    Ok(out)
}

/// Checks every field of a 60-byte ar header; returns the name and size.
fn parse_header(h: &[u8], offset: usize) -> Result<(&str, u64), DebError> {
    let bad = |why| DebError::BadHeader { offset, why };
    let field = |from: usize, to: usize| h.get(from..to).unwrap_or_default();
    if field(58, 60) != b"`\n" {
        return Err(bad("it does not end with the ar terminator \"`\\n\""));
    }
    let name = std::str::from_utf8(field(0, 16))
        .map_err(|_| bad("the member name is not ASCII"))?
        .trim_end_matches(' ');
    let name = name.strip_suffix('/').unwrap_or(name);
    if name.is_empty()
        || name.starts_with('/')
        || !name.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
    {
        return Err(bad(
            "the member name is empty, has a space, slash or control character, or refers to a long-name table",
        ));
    }
    let number = |f: &[u8], radix: u32| -> Option<u64> {
        let text = std::str::from_utf8(f).ok()?.trim_end_matches(' ');
        let digits_ok = !text.is_empty() && text.chars().all(|c| c.is_digit(radix));
        digits_ok.then(|| u64::from_str_radix(text, radix).ok())?
    };
    for (from, to, radix) in [(16, 28, 10), (28, 34, 10), (34, 40, 10), (40, 48, 8)] {
        if number(field(from, to), radix).is_none() {
            return Err(bad("a date, owner, group or mode field is not a number"));
        }
    }
    let size = number(field(48, 58), 10).ok_or(bad("the size field is not a decimal number"))?;
    Ok((name, size))
}

/// The `control` file of a `.deb`, as text. The ar archive must be a
/// well-formed deb(5) package: `debian-binary` (2.x) first, then
/// `control.tar.*` and `data.tar.*` (members whose names start with `_`
/// may come between them; anything may follow). Only gzip-compressed
/// control tarballs are read; every entry of it is checked as the sdist
/// reader checks (paths, links, gzip checksum).
pub fn read_deb_control(deb: &[u8]) -> Result<String, DebError> {
    let members = ar_members(deb)?;
    let mut required = members
        .iter()
        .enumerate()
        .filter(|(i, m)| *i == 0 || !m.name.starts_with('_'));
    let Some((_, first)) = required.next() else {
        return Err(DebError::Missing("debian-binary"));
    };
    if first.name != "debian-binary" {
        return Err(DebError::UnexpectedMember {
            index: 0,
            name: first.name.into(),
            expected: "debian-binary",
        });
    }
    let version = String::from_utf8_lossy(first.data);
    let version_ok = version
        .strip_prefix("2.")
        .and_then(|v| v.strip_suffix('\n'))
        .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()));
    if !version_ok {
        return Err(DebError::BadFormatVersion(
            version.chars().take(40).collect(),
        ));
    }
    let (control_index, control) = required.next().ok_or(DebError::Missing("control.tar"))?;
    let compression = compression_of(control, control_index, "control.tar")?;
    let (data_index, data) = required.next().ok_or(DebError::Missing("data.tar"))?;
    compression_of(data, data_index, "data.tar")?;
    if compression != "gzip" {
        return Err(DebError::Unsupported {
            member: control.name.into(),
            compression,
        });
    }
    let text =
        read_top_level_file(control.data, TopLevelFile::DebControl).map_err(DebError::Control)?;
    String::from_utf8(text).map_err(|_| DebError::NotUtf8)
}

/// Which compression a `control.tar*` or `data.tar*` member uses.
fn compression_of(
    member: &Member<'_>,
    index: usize,
    stem: &'static str,
) -> Result<&'static str, DebError> {
    let suffix = member.name.strip_prefix(stem);
    Ok(match suffix {
        Some(".gz") => "gzip",
        Some(".xz") => "xz",
        Some(".zst") => "zstd",
        Some(".bz2") => "bzip2",
        Some(".lzma") => "lzma",
        Some("") => "none",
        _ => {
            return Err(DebError::UnexpectedMember {
                index,
                name: member.name.into(),
                expected: stem,
            })
        }
    })
}

/// The `control` file of a `.deb` as one deb822 paragraph.
pub fn deb_control_paragraph(deb: &[u8]) -> Result<Paragraph, DebError> {
    let text = read_deb_control(deb)?;
    let mut paragraphs = parse_paragraphs(&text).map_err(DebError::ControlFormat)?;
    match paragraphs.len() {
        1 => paragraphs.pop().ok_or(DebError::ControlParagraphs(0)),
        n => Err(DebError::ControlParagraphs(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> DebSpec {
        DebSpec {
            package: "ec-tripwire".into(),
            version: "1:1.0-1".into(),
            architecture: "all".into(),
            maintainer: "egress conformance <nobody@example.invalid>".into(),
            description: "runs only if installed\n It calls the canary.".into(),
            depends: None,
            scripts: vec![("postinst".into(), "#!/bin/sh\nexit 0\n".into())],
            files: vec![("usr/share/doc/ec-tripwire/README".into(), b"hi\n".to_vec())],
        }
    }

    #[test]
    fn round_trip_and_determinism() {
        let deb = build_deb(&spec());
        assert_eq!(deb, build_deb(&spec()));
        assert_eq!(read_deb_control(&deb).unwrap(), spec().control());
        let p = deb_control_paragraph(&deb).unwrap();
        assert_eq!(p.get("package"), Some("ec-tripwire"));
        assert_eq!(p.get("Installed-Size"), Some("1"));
        assert_eq!(spec().file_name(), "ec-tripwire_1.0-1_all.deb");
        let members = ar_members(&deb).unwrap();
        let names: Vec<&str> = members.iter().map(|m| m.name).collect();
        assert_eq!(names, ["debian-binary", "control.tar.gz", "data.tar.gz"]);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let deb = build_deb(&spec());
        for cut in 0..deb.len() {
            assert!(read_deb_control(&deb[..cut]).is_err(), "cut {cut}");
        }
    }

    /// A `.deb` whose control tarball holds `entries`.
    fn with_control(entries: &[(&str, TarEntry)]) -> Vec<u8> {
        let entries: Vec<(String, TarEntry)> = entries
            .iter()
            .map(|(p, e)| {
                let e = match e {
                    TarEntry::Dir => TarEntry::Dir,
                    TarEntry::File(d) => TarEntry::File(d.clone()),
                    TarEntry::Exec(d) => TarEntry::Exec(d.clone()),
                };
                (p.to_string(), e)
            })
            .collect();
        let mut out = AR_MAGIC.to_vec();
        ar_member(&mut out, "debian-binary", b"2.0\n");
        ar_member(&mut out, "control.tar.gz", &gzip(&write_tar(&entries)));
        ar_member(&mut out, "data.tar.gz", &gzip(&write_tar(&[])));
        out
    }

    #[test]
    fn the_control_tarball_is_checked() {
        let file = |d: &[u8]| TarEntry::File(d.to_vec());
        // Without `./`, as some builders write it.
        let deb = with_control(&[("control", file(b"Package: a\n"))]);
        assert_eq!(read_deb_control(&deb).unwrap(), "Package: a\n");
        // In a subdirectory it is not the control file.
        let deb = with_control(&[("./sub/control", file(b"Package: a\n"))]);
        assert!(matches!(
            read_deb_control(&deb),
            Err(DebError::Control(ArtifactError::Missing(_)))
        ));
        let deb = with_control(&[
            ("./control", file(b"Package: a\n")),
            ("control", file(b"Package: b\n")),
        ]);
        assert!(matches!(
            read_deb_control(&deb),
            Err(DebError::Control(ArtifactError::Ambiguous(_)))
        ));
        for evil in ["../control", "/control", "./../../etc/x", "a\\..\\b"] {
            let deb = with_control(&[("./control", file(b"Package: a\n")), (evil, file(b""))]);
            assert!(
                matches!(
                    read_deb_control(&deb),
                    Err(DebError::Control(ArtifactError::UnsafePath(_)))
                ),
                "{evil}"
            );
        }
        let deb = with_control(&[("./control", TarEntry::Dir)]);
        assert!(read_deb_control(&deb).is_err());
        let deb = with_control(&[("./control", file(&[0xff, 0xfe]))]);
        assert_eq!(read_deb_control(&deb), Err(DebError::NotUtf8));
        let deb = with_control(&[("./control", file(b"Package: a\n\nPackage: b\n"))]);
        assert_eq!(
            deb_control_paragraph(&deb),
            Err(DebError::ControlParagraphs(2))
        );
        let deb = with_control(&[("./control", file(b"Package: a\n#x\n"))]);
        assert!(matches!(
            deb_control_paragraph(&deb),
            Err(DebError::ControlFormat(AptFormatError::Comment { line: 2 }))
        ));
    }

    #[test]
    #[should_panic(expected = "invalid or repeated maintainer script")]
    fn only_maintainer_scripts() {
        let mut s = spec();
        s.scripts.push(("config".into(), String::new()));
        build_deb(&s);
    }

    #[test]
    #[should_panic(expected = "invalid control field")]
    fn control_values_cannot_add_fields() {
        let mut s = spec();
        s.description = "x\nDepends: evil".into();
        build_deb(&s);
    }

    #[test]
    fn every_flipped_byte_is_an_error_or_the_same_control() {
        let deb = build_deb(&spec());
        let want = read_deb_control(&deb).unwrap();
        for i in 0..deb.len() {
            let mut bad = deb.clone();
            bad[i] ^= 0x41;
            if let Ok(text) = read_deb_control(&bad) {
                assert_eq!(text, want, "byte {i}");
            }
        }
    }
}
