//! `.deb`s against dpkg itself: dpkg-deb reads what `build_deb` writes, and
//! `read_deb_control` reads what `dpkg-deb --build` writes. Odd and broken ar
//! archives are typed errors.

use egress_artifacts::{build_deb, deb_control_paragraph, read_deb_control, DebError, DebSpec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "egress-deb-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spec() -> DebSpec {
    DebSpec {
        package: "ec-tripwire".into(),
        version: "1.0-1".into(),
        architecture: "all".into(),
        maintainer: "egress conformance <nobody@example.invalid>".into(),
        description: "runs only if installed\n Its maintainer scripts call the canary.".into(),
        depends: Some("libc6 (>= 2.34)".into()),
        scripts: vec![
            (
                "postinst".into(),
                "#!/bin/sh\nwget -q -O- http://canary.invalid/postinst\n".into(),
            ),
            ("preinst".into(), "#!/bin/sh\nexit 0\n".into()),
        ],
        files: vec![
            (
                "usr/share/doc/ec-tripwire/README".into(),
                b"a tripwire\n".to_vec(),
            ),
            ("usr/bin/ec-tripwire".into(), vec![b'x'; 3000]),
        ],
    }
}

fn dpkg_deb(args: &[&str], file: &Path) -> String {
    let out = Command::new("dpkg-deb")
        .args(args)
        .arg(file)
        .output()
        .expect("dpkg-deb is installed (apt-get install dpkg)");
    assert!(
        out.status.success(),
        "dpkg-deb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn dpkg_deb_reads_what_we_build() {
    let dir = TempDir::new("ours");
    let deb = dir.0.join(spec().file_name());
    std::fs::write(&deb, build_deb(&spec())).unwrap();
    let info = dpkg_deb(&["--info"], &deb);
    for want in [
        "Package: ec-tripwire",
        "Version: 1.0-1",
        "Architecture: all",
        "Maintainer: egress conformance <nobody@example.invalid>",
        "Installed-Size: 4",
        "Depends: libc6 (>= 2.34)",
        "Description: runs only if installed",
    ] {
        assert!(info.contains(want), "{want}\n{info}");
    }
    // dpkg-deb marks executable control members with `*`.
    for script in ["postinst", "preinst"] {
        let line = info
            .lines()
            .find(|l| l.contains(&format!(" {script} ")))
            .unwrap_or_else(|| panic!("{script} not listed:\n{info}"));
        assert!(line.contains('*'), "{script} is not executable: {line}");
    }
    let contents = dpkg_deb(&["--contents"], &deb);
    for want in [
        "-rw-r--r-- 0/0              11 1980-01-02 00:00 ./usr/share/doc/ec-tripwire/README",
        "-rw-r--r-- 0/0            3000 1980-01-02 00:00 ./usr/bin/ec-tripwire",
        "drwxr-xr-x 0/0               0 1980-01-02 00:00 ./usr/share/doc/",
    ] {
        assert!(contents.contains(want), "{want}\n{contents}");
    }
    assert_eq!(
        dpkg_deb(&["--field"], &deb).trim_end(),
        spec().control().trim_end()
    );
    // Extracted by dpkg: the control file and the scripts byte for byte.
    let control = dir.0.join("control");
    let out = Command::new("dpkg-deb")
        .arg("--control")
        .arg(&deb)
        .arg(&control)
        .status()
        .unwrap();
    assert!(out.success());
    assert_eq!(
        std::fs::read_to_string(control.join("control")).unwrap(),
        spec().control()
    );
    let postinst = std::fs::read_to_string(control.join("postinst")).unwrap();
    assert!(postinst.contains("canary.invalid/postinst"));
    let data = dir.0.join("data");
    let out = Command::new("dpkg-deb")
        .arg("--extract")
        .arg(&deb)
        .arg(&data)
        .status()
        .unwrap();
    assert!(out.success());
    assert_eq!(
        std::fs::read(data.join("usr/share/doc/ec-tripwire/README")).unwrap(),
        b"a tripwire\n"
    );
}

/// A package tree for `dpkg-deb --build`.
fn tree(dir: &Path) -> PathBuf {
    let root = dir.join("pkg");
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(root.join("usr/share/doc/built")).unwrap();
    std::fs::write(
        root.join("usr/share/doc/built/README"),
        "built by dpkg-deb\n",
    )
    .unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        "Package: built\nVersion: 2:3.4-5\nArchitecture: amd64\nMaintainer: x <x@example.invalid>\nDescription: built by dpkg-deb\n multi-line.\n",
    )
    .unwrap();
    root
}

fn dpkg_build(dir: &Path, compression: &str) -> Vec<u8> {
    let root = tree(dir);
    let out = dir.join(format!("built-{compression}.deb"));
    let status = Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Z", compression, "--build"])
        .arg(&root)
        .arg(&out)
        .output()
        .expect("dpkg-deb is installed");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::read(out).unwrap()
}

#[test]
fn we_read_what_dpkg_deb_builds() {
    let dir = TempDir::new("theirs");
    let deb = dpkg_build(&dir.0, "gzip");
    let control = read_deb_control(&deb).unwrap();
    assert!(
        control.starts_with("Package: built\nVersion: 2:3.4-5\n"),
        "{control}"
    );
    let p = deb_control_paragraph(&deb).unwrap();
    assert_eq!(p.get("architecture"), Some("amd64"));
    assert_eq!(
        p.get("Description"),
        Some("built by dpkg-deb\n multi-line.")
    );
    // dpkg-deb's defaults (xz) and the other compressions are named, not guessed.
    for (compression, name) in [("xz", "xz"), ("zstd", "zstd"), ("none", "none")] {
        let deb = dpkg_build(&dir.0, compression);
        assert!(
            matches!(
                read_deb_control(&deb),
                Err(DebError::Unsupported { compression: c, .. }) if c == name
            ),
            "{compression}: {:?}",
            read_deb_control(&deb)
        );
    }
}

/// An ar member as dpkg writes it.
fn member(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        0,
        0,
        0,
        100644,
        data.len()
    )
    .into_bytes();
    out.extend_from_slice(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
    out
}

/// The three members of our built `.deb`, by name and data.
fn members() -> Vec<(String, Vec<u8>)> {
    let deb = build_deb(&spec());
    let mut rest = &deb[8..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let name = String::from_utf8(rest[..16].to_vec()).unwrap();
        let size: usize = std::str::from_utf8(&rest[48..58])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        out.push((name.trim().to_string(), rest[60..60 + size].to_vec()));
        rest = &rest[(60 + size).next_multiple_of(2).min(rest.len())..];
    }
    out
}

fn ar(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in parts {
        out.extend(member(name, data));
    }
    out
}

/// What a case's error must match.
type Expect = fn(&DebError) -> bool;

#[test]
fn odd_archives_are_typed_errors() {
    let m = members();
    let (control, data) = (&m[1].1[..], &m[2].1[..]);
    let good = ar(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar.gz", control),
        ("data.tar.gz", data),
    ]);
    assert_eq!(read_deb_control(&good).unwrap(), spec().control());

    // GNU ar's `name/` form, `_` members between, anything after data.tar.
    let gnu = ar(&[
        ("debian-binary/", b"2.0\n"),
        ("_gpgorigin", b"sig"),
        ("control.tar.gz/", control),
        ("data.tar.gz", data),
        ("extra", b"x"),
    ]);
    assert_eq!(read_deb_control(&gnu).unwrap(), spec().control());

    let cases: Vec<(Vec<u8>, Expect)> = vec![
        (b"".to_vec(), |e| matches!(e, DebError::NotAnArchive)),
        (b"!<thin>\n".to_vec(), |e| {
            matches!(e, DebError::NotAnArchive)
        }),
        (b"PK\x03\x04".to_vec(), |e| {
            matches!(e, DebError::NotAnArchive)
        }),
        (b"!<arch>\n".to_vec(), |e| {
            matches!(e, DebError::Missing("debian-binary"))
        }),
        (
            ar(&[
                ("debian-binary", b"3.0\n"),
                ("control.tar.gz", control),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::BadFormatVersion(_)),
        ),
        (
            ar(&[
                ("debian-binary", b"2.0"),
                ("control.tar.gz", control),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::BadFormatVersion(_)),
        ),
        (
            ar(&[
                ("control.tar.gz", control),
                ("debian-binary", b"2.0\n"),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::UnexpectedMember { index: 0, .. }),
        ),
        (
            ar(&[
                ("debian-binary", b"2.0\n"),
                ("data.tar.gz", data),
                ("control.tar.gz", control),
            ]),
            |e| matches!(e, DebError::UnexpectedMember { index: 1, .. }),
        ),
        (
            ar(&[("debian-binary", b"2.0\n"), ("control.tar.gz", control)]),
            |e| matches!(e, DebError::Missing("data.tar")),
        ),
        (
            ar(&[
                ("debian-binary", b"2.0\n"),
                ("control.tar.gz", data),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::Control(_)),
        ),
        (
            ar(&[
                ("debian-binary", b"2.0\n"),
                ("control.tar.gz", b"not gzip"),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::Control(_)),
        ),
        (
            ar(&[
                ("debian-binary", b"2.0\n"),
                ("control.tar.xz", control),
                ("data.tar.gz", data),
            ]),
            |e| {
                matches!(
                    e,
                    DebError::Unsupported {
                        compression: "xz",
                        ..
                    }
                )
            },
        ),
        (
            ar(&[
                ("debian-binary", b"2.0\n"),
                ("control.tar.bz9", control),
                ("data.tar.gz", data),
            ]),
            |e| matches!(e, DebError::UnexpectedMember { index: 1, .. }),
        ),
        (ar(&[("/0", b"2.0\n")]), |e| {
            matches!(e, DebError::BadHeader { offset: 8, .. })
        }),
        (ar(&[("a b", b"2.0\n")]), |e| {
            matches!(e, DebError::BadHeader { offset: 8, .. })
        }),
        (ar(&[("../../x", b"2.0\n")]), |e| {
            matches!(e, DebError::BadHeader { offset: 8, .. })
        }),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let err = read_deb_control(bytes).unwrap_err();
        assert!(want(&err), "case {i}: {err:?}");
        assert!(!err.to_string().contains('\n'), "{err}");
    }

    // Header fields: each broken in turn.
    let header_of = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = good.clone();
        f(&mut bytes);
        read_deb_control(&bytes).unwrap_err()
    };
    let at = 8; // the first member's header
    for (what, edit) in [
        ("terminator", (at + 58, b'x')),
        ("size not decimal", (at + 48, b'a')),
        ("mode not octal", (at + 40, b'9')),
        ("mtime not decimal", (at + 16, b'-')),
        ("uid not decimal", (at + 28, b'x')),
    ] {
        let err = header_of(&|b: &mut Vec<u8>| b[edit.0] = edit.1);
        assert!(
            matches!(err, DebError::BadHeader { offset: 8, .. }),
            "{what}: {err:?}"
        );
    }
    // A size larger than the archive, and one that does not fit a usize.
    let mut big = good.clone();
    big[8 + 48..8 + 58].copy_from_slice(b"9999999999");
    assert!(matches!(
        read_deb_control(&big),
        Err(DebError::Truncated {
            what: "ar member data",
            offset: 8
        })
    ));
    // Odd-sized member whose padding byte is not a newline.
    let odd = ar(&[
        ("debian-binary", b"2.0\n"),
        ("_x", b"abc"),
        ("control.tar.gz", control),
        ("data.tar.gz", data),
    ]);
    let pad = 8 + 60 + 4 + 60 + 3;
    assert_eq!(odd[pad], b'\n');
    let mut bad = odd.clone();
    bad[pad] = b'X';
    assert!(matches!(
        read_deb_control(&bad),
        Err(DebError::BadPadding { offset: 72 })
    ));
    assert_eq!(read_deb_control(&odd).unwrap(), spec().control());
    // Truncated anywhere: an error, never a panic.
    for cut in 0..good.len() {
        assert!(read_deb_control(&good[..cut]).is_err(), "cut {cut}");
    }
}
