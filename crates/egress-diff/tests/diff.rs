//! `snapshot diff` on the canary pair (`egress_diff::fixtures`): every flag
//! raised on the package made for it and on nothing else, the output the
//! same on every run, and bad input refused by kind.

use egress_diff::{diff_dirs, fixtures, Diff, DiffErrorKind, Ecosystem, FlagKind, Options};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("egress-diff-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pair(tag: &str) -> TempDir {
    let t = TempDir::new(tag);
    fixtures::write_pair(&t.0).unwrap();
    t
}

fn run(dir: &Path) -> Diff {
    diff_dirs(
        &dir.join("old"),
        &dir.join("new"),
        None,
        &Options::default(),
    )
    .unwrap()
}

/// Every flag raised on `(ecosystem, name)`: on the name, its versions and
/// their files.
fn flags_of(d: &Diff, eco: Ecosystem, name: &str) -> BTreeSet<FlagKind> {
    let p = d
        .added
        .iter()
        .find(|p| p.ecosystem == eco && p.name == name)
        .unwrap_or_else(|| panic!("{name} is not among the additions"));
    p.flags
        .iter()
        .chain(p.versions.iter().flat_map(|v| {
            v.flags
                .iter()
                .chain(v.files.iter().flat_map(|f| f.flags.iter()))
        }))
        .map(|f| f.flag)
        .collect()
}

#[test]
fn each_canary_raises_its_flags_and_only_those() {
    let t = pair("flags");
    let d = run(&t.0);
    use FlagKind::*;
    let set = |f: &[FlagKind]| f.iter().copied().collect::<BTreeSet<_>>();
    assert_eq!(
        flags_of(&d, Ecosystem::Pypi, "reqeusts"),
        set(&[SimilarName, SdistOnly, RecentUpload])
    );
    assert_eq!(
        flags_of(&d, Ecosystem::Pypi, "mylib"),
        set(&[PthFile, NativeCode, MajorJump])
    );
    assert_eq!(
        flags_of(&d, Ecosystem::Npm, "ec-lib"),
        set(&[InstallScript, MaintainersChanged, MajorJump])
    );
    assert_eq!(
        flags_of(&d, Ecosystem::Npm, "ec-gyp"),
        set(&[BindingGyp, NativeCode])
    );
    assert_eq!(flags_of(&d, Ecosystem::Npm, "lodahs"), set(&[SimilarName]));
    // Nothing else was added; what both hold is not listed.
    let added: Vec<(Ecosystem, &str)> = d
        .added
        .iter()
        .map(|p| (p.ecosystem, p.name.as_str()))
        .collect();
    assert_eq!(
        added,
        [
            (Ecosystem::Pypi, "mylib"),
            (Ecosystem::Pypi, "reqeusts"),
            (Ecosystem::Npm, "ec-gyp"),
            (Ecosystem::Npm, "ec-lib"),
            (Ecosystem::Npm, "lodahs"),
        ]
    );
    let removed: Vec<(Ecosystem, &str, bool)> = d
        .removed
        .iter()
        .map(|p| (p.ecosystem, p.name.as_str(), p.whole))
        .collect();
    assert_eq!(
        removed,
        [
            (Ecosystem::Pypi, "oldproj", true),
            (Ecosystem::Npm, "ec-gone", true)
        ]
    );
    // The details name what a reviewer must look at.
    let md = d.to_markdown();
    for needle in [
        "postinstall: `node -e \"require('child_process')\"`",
        "`mylib-hook.pth`",
        "`mylib/_speedups.cpython-311-x86_64-linux-gnu.so`",
        "`requests` (held, distance 1)",
        "`lodash` (popular npm name, distance 1)",
        "added `mallory`; removed `alice`",
        "major 2 above every major OLD held (highest 1)",
        "uploaded 2026-05-30T12:00:00Z, 1 d 12 h before the cutoff 2026-06-01T00:00:00Z",
    ] {
        assert!(md.contains(needle), "{needle:?} not in:\n{md}");
    }
    let s = &d.summary;
    assert_eq!(
        (
            s.pypi.projects_added,
            s.pypi.versions_added,
            s.pypi.files_added
        ),
        (1, 2, 3)
    );
    assert_eq!(
        (
            s.npm.projects_added,
            s.npm.versions_added,
            s.npm.files_added
        ),
        (2, 3, 3)
    );
    assert_eq!((s.pypi.projects_removed, s.npm.versions_removed), (1, 1));
    assert_eq!(s.flags["similar-name"], 2);
    assert_eq!(s.flags["unreadable"], 0);
}

#[test]
fn the_output_is_deterministic_and_the_markdown_is_as_reviewed() {
    let (a, b) = (pair("det-a"), pair("det-b"));
    let (x, y, z) = (run(&a.0), run(&a.0), run(&b.0));
    assert_eq!(x, y);
    assert_eq!(x.to_json(), z.to_json());
    assert_eq!(x.to_markdown(), z.to_markdown());
    // The snapshot IDs change with the snapshot format (SNAPSHOT.json's
    // fields); everything else is the fixtures' own bytes.
    insta::with_settings!({filters => vec![(r"- (OLD|NEW): `[0-9a-f]{64}`", "- $1: `[id]`")]}, {
        insta::assert_snapshot!("canary-pair-md", x.to_markdown());
    });
    // The JSON's stable schema: its top-level and per-change keys.
    let doc: serde_json::Value = serde_json::from_str(&x.to_json()).unwrap();
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(doc["schema"], egress_diff::SCHEMA);
    assert_eq!(
        keys(&doc),
        ["added", "new", "old", "recent", "removed", "schema", "summary"]
    );
    assert_eq!(
        keys(&doc["added"][0]),
        ["ecosystem", "flags", "name", "versions", "whole"]
    );
    assert_eq!(
        keys(&doc["added"][0]["versions"][0]["files"][0]),
        ["flags", "name", "path", "sha256", "size", "uploaded"]
    );
    assert_eq!(doc["added"][0]["ecosystem"], "pypi");
}

#[test]
fn a_snapshot_against_itself_is_no_change() {
    let t = pair("same");
    let d = diff_dirs(
        &t.0.join("new"),
        &t.0.join("new"),
        None,
        &Options::default(),
    )
    .unwrap();
    assert!(d.added.is_empty() && d.removed.is_empty(), "{d:?}");
    assert!(d.summary.flags.values().all(|&n| n == 0));
    assert!(d.to_markdown().contains("## Added\n\nNothing."));
}

#[test]
fn bad_input_is_refused_by_kind() {
    let t = pair("bad");
    let opts = Options::default();
    // Not a snapshot.
    let empty = t.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = diff_dirs(&empty, &t.0.join("new"), None, &opts).unwrap_err();
    assert_eq!(e.kind(), DiffErrorKind::NotASnapshot, "{e}");
    assert!(e.to_string().starts_with("OLD "), "{e}");
    let e = diff_dirs(&t.0.join("old"), &t.0.join("absent"), None, &opts).unwrap_err();
    assert_eq!(e.kind(), DiffErrorKind::NotASnapshot, "{e}");
    assert!(!e.to_string().contains('\n'));

    // Signed by another key than the one trusted.
    let other = egress_signing::SigningKey::from_seed([9; 32], "other");
    let line = egress_signing::AllowedSigners::line_for_namespace(
        "other",
        &other.public(),
        egress_signing::SNAPSHOT_NAMESPACE,
    );
    let signers = egress_signing::AllowedSigners::parse(&line).unwrap();
    let e = diff_dirs(&t.0.join("old"), &t.0.join("new"), Some(&signers), &opts).unwrap_err();
    assert_eq!(e.kind(), DiffErrorKind::Unverified, "{e}");
    let mine =
        egress_signing::AllowedSigners::parse(&egress_signing::AllowedSigners::line_for_namespace(
            "egress-diff-fixtures",
            &fixtures::key().public(),
            egress_signing::SNAPSHOT_NAMESPACE,
        ))
        .unwrap();
    diff_dirs(&t.0.join("old"), &t.0.join("new"), Some(&mine), &opts).unwrap();

    // An added tarball whose bytes no longer match its digest.
    let d = run(&t.0);
    let gyp = d.added.iter().find(|p| p.name == "ec-gyp").unwrap();
    let sha = &gyp.versions[0].files[0].sha256;
    let blob = t.0.join("new/blobs/sha256").join(sha);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[20] ^= 1;
    std::fs::remove_file(&blob).unwrap();
    std::fs::write(&blob, bytes).unwrap();
    let e = diff_dirs(&t.0.join("old"), &t.0.join("new"), None, &opts).unwrap_err();
    assert_eq!(e.kind(), DiffErrorKind::Unverified, "{e}");
    assert!(e.to_string().contains("/ec-gyp/-/ec-gyp-1.0.0.tgz"), "{e}");
}

/// A layer built on OLD (its packuments carried verbatim, its pages
/// rendered again) diffs as any snapshot: only what it adds is listed.
#[test]
fn a_layer_diffs_against_its_parent() {
    let t = TempDir::new("layer");
    fixtures::old()
        .unwrap()
        .write_dir(&t.0.join("old"))
        .unwrap();
    let base = egress_snapshot::StoredSnapshot::open(&t.0.join("old")).unwrap();
    let mut b =
        egress_snapshot::SnapshotBuilder::on_disk("/simple/", &t.0.join("staging")).unwrap();
    b.base(&base).unwrap();
    let mut spec = egress_artifacts::NpmPackageSpec::new("ec-lib", "1.3.0", "d", "");
    spec.scripts.insert("preinstall".into(), "sh x".into());
    let tgz = egress_artifacts::build_npm_tarball(&spec);
    let meta = egress_snapshot::NpmVersionMeta {
        maintainers: vec![egress_snapshot::NpmMaintainer {
            name: "alice".into(),
            email: Some("alice@example.org".into()),
        }],
        ..Default::default()
    };
    b.add_npm_tarball_with(
        "ec-lib",
        "1.3.0",
        &tgz.filename,
        tgz.bytes,
        &tgz.integrity,
        meta,
    )
    .unwrap();
    let layer = b
        .build(
            "2026-05-03T00:00:00Z",
            Some(&fixtures::key()),
            "egress-diff-fixtures",
        )
        .unwrap();
    layer.write_dir(&t.0.join("layer")).unwrap();
    let d = diff_dirs(
        &t.0.join("old"),
        &t.0.join("layer"),
        None,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(d.new.parent.as_deref(), Some(d.old.id.as_str()));
    assert!(d.removed.is_empty(), "{:?}", d.removed);
    assert_eq!(d.added.len(), 1, "{:?}", d.added);
    // Same maintainers as 1.2.0, no new major: only the script.
    assert_eq!(
        flags_of(&d, Ecosystem::Npm, "ec-lib"),
        [FlagKind::InstallScript].into()
    );
    assert!(d.to_markdown().contains("- NEW is a layer on OLD\n"));
}

/// A ustar archive of regular files, written by hand (the builders refuse
/// what these tests need: unsafe paths, a second `package.json`).
fn raw_tar(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in entries {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[108..115].copy_from_slice(b"0000000");
        h[116..123].copy_from_slice(b"0000000");
        h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        h[136..147].copy_from_slice(b"00000000000");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    egress_artifacts::gzip(&out)
}

/// Hostile archives: a tarball that is not gzip, one with a path out of
/// the tree, and one with two `package.json`s are each flagged
/// `unreadable` (their scripts were not checked), and the diff completes.
#[test]
fn hostile_tarballs_are_flagged_not_fatal() {
    let t = TempDir::new("hostile");
    fixtures::old()
        .unwrap()
        .write_dir(&t.0.join("old"))
        .unwrap();
    let mut b = egress_snapshot::SnapshotBuilder::new("/simple/");
    b.npm_registry_url("http://127.0.0.1:8/").unwrap();
    let manifest: &[u8] = br#"{"name":"x","version":"1.0.0","scripts":{"postinstall":"evil"}}"#;
    let tarballs = [
        ("ec-junk", b"\x1f\x8b\x08\x00not really gzip".to_vec()),
        (
            "ec-traversal",
            raw_tar(&[
                ("package/package.json", manifest),
                ("package/../../x.node", b"x"),
            ]),
        ),
        (
            "ec-twice",
            raw_tar(&[
                ("package/package.json", manifest),
                ("other/package.json", b"{}"),
            ]),
        ),
    ];
    for (name, bytes) in tarballs {
        let integrity = egress_artifacts::sri_sha512(&bytes);
        let filename = format!("{name}-1.0.0.tgz");
        b.add_npm_tarball(name, "1.0.0", &filename, bytes, &integrity)
            .unwrap();
    }
    b.build(
        "2026-06-02T00:00:00Z",
        Some(&fixtures::key()),
        "egress-diff-fixtures",
    )
    .unwrap()
    .write_dir(&t.0.join("new"))
    .unwrap();
    let d = run(&t.0);
    for name in ["ec-junk", "ec-traversal", "ec-twice"] {
        assert_eq!(
            flags_of(&d, Ecosystem::Npm, name),
            [FlagKind::Unreadable].into(),
            "{name}"
        );
    }
    let md = d.to_markdown();
    for needle in [
        "**FLAG unreadable**: the tarball or its package.json cannot be read (archive entry has an unsafe path: \"package/../../x.node\")",
        "(archive has more than one top-level package.json)",
    ] {
        assert!(md.contains(needle), "{needle} not in {md}");
    }
    assert_eq!(d.summary.flags["unreadable"], 3);
    // The well-formed control: the same manifest in a sound tarball.
    let ok = egress_artifacts::read_npm_package(&raw_tar(&[("package/package.json", manifest)]))
        .unwrap();
    assert_eq!(ok.package_json, manifest);
}
