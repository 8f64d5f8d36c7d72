//! Real apt-get, offline, from the reference mirror: the lab's own flow.
//!
//! The apt canary (a signed Debian repository on loopback) is the upstream.
//! A private, isolated apt (`AptClient`: its own configuration, sources,
//! keyrings, state and cache; signature checking on) runs `update` against
//! it and writes the `--print-uris` file of the packages an image needs;
//! `egress-conformance snapshot build --apt-uris` verifies the canary's
//! signed chain and builds the snapshot; the real `egress-mirror` binary
//! serves it; a fresh apt that trusts only the lab's keyring (written by
//! `snapshot apt-keyring`) runs `update` and `install --download-only`
//! from the mirror. The `.deb`s it downloads must be the pinned bytes, and
//! the canary must see no request while apt talks to the mirror. A
//! tampered snapshot and a wrong key are each refused by apt itself.
//!
//! Then every bad input of the apt build, each with its exit code, one
//! line, and nothing written.
//!
//! The real-apt tests are skipped, with a printed reason, only when
//! `apt-get` is not installed.

use egress_apt::PackageEntry;
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_references::apt::client::AptClient;
use egress_snapshot::manifest::{blob_path, SNAPSHOT_JSON};
use egress_snapshot::{BlobStore, Manifest, ServedEntry, Snapshot, SnapshotDoc};
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};

fn apt_available() -> bool {
    if AptClient::available() {
        return true;
    }
    eprintln!("skipped: apt-get is not installed (Debian: it is part of the base system)");
    false
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn key(dir: &Path) -> PathBuf {
    let key = dir.join("signing-key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    key
}

/// The canary's keyring, as the lab has Debian's.
fn canary_keyring(dir: &Path, canary: &AptCanary) -> PathBuf {
    let path = dir.join("canary-keyring.gpg");
    std::fs::write(&path, canary.keyring()).expect("write keyring");
    path
}

/// What a lab does for an image: apt, pointed at the upstream, writes the
/// print-uris file of `packages`.
fn print_uris(dir: &Path, canary: &AptCanary, packages: &[&str]) -> PathBuf {
    let apt = AptClient::new(&dir.join("lab-apt")).expect("apt tree");
    let keyring = apt
        .add_keyring("canary", &canary.keyring())
        .expect("keyring");
    apt.add_source(&canary.source_line(&keyring, canary.dist()))
        .expect("source");
    ok(
        &apt.update().expect("apt-get update"),
        "apt-get update (canary)",
    );
    let o = apt.print_uris(packages).expect("apt-get --print-uris");
    ok(&o, "apt-get install --print-uris");
    let path = dir.join("uris.txt");
    std::fs::write(&path, &o.stdout).expect("write uris");
    path
}

fn apt_source(canary: &AptCanary) -> String {
    format!(
        "{} {} {}",
        canary.archive_url(),
        canary.dist(),
        canary.component()
    )
}

fn build(dir: &Path, uris: &Path, sources: &[String], keyring: &Path, out: &Path) -> Output {
    let key = key(dir);
    let mut args = vec!["snapshot", "build", "--apt-uris", s(uris)];
    for source in sources {
        args.extend(["--apt-source", source.as_str()]);
    }
    args.extend([
        "--apt-keyring",
        s(keyring),
        "--sign-key",
        s(&key),
        "--out",
        s(out),
    ]);
    run(&args)
}

/// The lab's keyring, written by `snapshot apt-keyring` from the signing key.
fn lab_keyring(dir: &Path) -> Vec<u8> {
    let out = dir.join("lab-keyring.gpg");
    let o = run(&[
        "snapshot",
        "apt-keyring",
        "--key",
        s(&key(dir)),
        "--out",
        s(&out),
    ]);
    ok(&o, "snapshot apt-keyring");
    std::fs::read(out).expect("read lab keyring")
}

/// A sandbox's apt: trusts only `keyring`, its one source the mirror.
fn sandbox_apt(root: &Path, keyring: &[u8], mirror: &MirrorProcess) -> AptClient {
    let apt = AptClient::new(root).expect("apt tree");
    let keyring = apt.add_keyring("egress-lab", keyring).expect("keyring");
    apt.add_source(&format!(
        "deb [signed-by={}] {}/apt/debian {} {}",
        keyring.display(),
        mirror.base,
        apt_canary::DIST,
        apt_canary::COMPONENT
    ))
    .expect("source");
    apt
}

/// The `.deb`s in apt's package cache, by file name, with their sha256.
fn downloaded(apt: &AptClient) -> Vec<(String, egress_model::Sha256Digest)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(apt.archives_dir()).expect("archives") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "deb") {
            let bytes = std::fs::read(&path).expect("read deb");
            out.push((
                path.file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
                egress_model::Sha256Digest::of(&bytes),
            ));
        }
    }
    out.sort();
    out
}

/// Builds the snapshot the lab's way; returns the canary (still running),
/// the directory and the snapshot.
fn lab_snapshot(name: &str) -> (AptCanary, PathBuf, PathBuf) {
    let dir = tmpdir(name);
    let canary = AptCanary::start().expect("apt canary");
    let uris = print_uris(
        &dir,
        &canary,
        &[
            apt_canary::PRESENT,
            apt_canary::TRIPWIRE,
            apt_canary::TEMPLATE,
        ],
    );
    let snap = dir.join("snap");
    let o = build(
        &dir,
        &uris,
        &[apt_source(&canary)],
        &canary_keyring(&dir, &canary),
        &snap,
    );
    ok(&o, "snapshot build --apt-uris");
    // Signed and checkable as any snapshot is.
    let signers = dir.join("signing-key.allowed_signers");
    let o = run(&[
        "snapshot",
        "verify",
        s(&snap),
        "--allowed-signers",
        s(&signers),
    ]);
    ok(&o, "snapshot verify");
    (canary, dir, snap)
}

#[test]
fn apt_installs_from_the_mirror_offline() {
    if !apt_available() {
        return;
    }
    let (canary, dir, snap) = lab_snapshot("egress-apt-clients-offline");
    let doc = SnapshotDoc::parse(&std::fs::read(snap.join("SNAPSHOT.json")).expect("read"))
        .expect("SNAPSHOT.json");
    // The upstream signed state the snapshot was cut from.
    let upstream = doc
        .sources
        .iter()
        .find(|(k, _)| k.starts_with("apt:") && k.contains(" InRelease signed by "))
        .expect("the upstream InRelease in sources");
    assert!(
        upstream.0.ends_with(&canary.fingerprint()),
        "{}",
        upstream.0
    );
    let inrelease = canary.file("dists/canary/InRelease").expect("InRelease");
    assert_eq!(*upstream.1, egress_model::Sha256Digest::of(&inrelease));

    let upstream_requests = canary.requests().len();
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let keyring = lab_keyring(&dir);
    // The served keyring is the one `snapshot apt-keyring` writes (a
    // convenience: the sandbox below is given it out-of-band).
    let loaded = Snapshot::load_dir(&snap).expect("load snapshot");
    let served = loaded
        .doc
        .lookup("/apt/keyring.gpg", "application/pgp-keys")
        .and_then(|e| loaded.blobs.get(&e.sha256))
        .expect("/apt/keyring.gpg served");
    assert_eq!(&served[..], &keyring[..]);

    let apt = sandbox_apt(&dir.join("sandbox-apt"), &keyring, &mirror);
    let o = apt.update().expect("apt-get update");
    ok(&o, "apt-get update (mirror)");
    assert!(!text(&o).contains("W: "), "{}", text(&o));
    // Again, with apt's conditional requests for what it already holds.
    ok(
        &apt.update().expect("apt-get update"),
        "apt-get update (again)",
    );
    let o = apt
        .download(&[apt_canary::PRESENT])
        .expect("apt-get install --download-only");
    ok(&o, "apt-get install --download-only ec-present");
    let got = downloaded(&apt);
    let want: Vec<(String, egress_model::Sha256Digest)> = [apt_canary::PRESENT, apt_canary::DEP]
        .iter()
        .map(|name| {
            let (path, _, sha256) = canary
                .deb(name, apt_canary::FIRST_VERSION)
                .expect("pinned deb");
            (path.file_name().to_string(), sha256)
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(got, want, "apt downloaded the pinned bytes");

    // A package the upstream has and the snapshot does not: apt cannot
    // even resolve it (the lab-signed index lists only the snapshot).
    let o = apt
        .download(&[apt_canary::UPSTREAM_ONLY])
        .expect("apt-get install");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("Unable to locate package ec-upstream-only"),
        "{}",
        text(&o)
    );

    let lines = mirror.lines();
    let requests: Vec<&String> = lines.iter().filter(|l| l.contains(" request ")).collect();
    for want in [
        "target=/apt/debian/dists/canary/InRelease status=200",
        "/by-hash/SHA256/",
        "target=/apt/debian/pool/main/e/ec-present/ec-present_1.0_amd64.deb status=200",
    ] {
        assert!(
            requests.iter().any(|l| l.contains(want)),
            "{want}: {lines:#?}"
        );
    }
    assert_eq!(
        canary.requests().len(),
        upstream_requests,
        "the canary was asked something during the mirror phase: {:#?}",
        canary.requests().get(upstream_requests..)
    );
    canary.stop();
}

/// A copy of `snap` at `out` whose served bytes at each path `change`
/// returns new bytes for are replaced, its SNAPSHOT.json and MANIFEST
/// re-written to match (unsigned): what someone who can write the
/// snapshot's files, but not sign with the lab key, can make the mirror
/// serve.
fn tampered(snap: &Path, out: &Path, change: impl Fn(&str, &[u8]) -> Option<Vec<u8>>) {
    let old = Snapshot::load_dir(snap).expect("load snapshot");
    let mut blobs = BlobStore::new();
    let mut served = Vec::new();
    let mut changed = 0;
    for e in &old.doc.served {
        let bytes = old.blobs.get(&e.sha256).expect("blob");
        let bytes = match change(&e.path, &bytes) {
            Some(new) => {
                changed += 1;
                new
            }
            None => bytes.to_vec(),
        };
        served.push(ServedEntry {
            sha256: blobs.insert(bytes),
            ..e.clone()
        });
    }
    assert!(changed > 0, "nothing to tamper with");
    let doc = SnapshotDoc {
        served,
        ..old.doc.clone()
    };
    let doc_bytes = doc.to_canonical_json();
    let mut manifest = Manifest::new();
    for e in &doc.served {
        manifest
            .insert(&blob_path(&e.sha256), e.sha256)
            .expect("entry");
    }
    manifest
        .insert(SNAPSHOT_JSON, egress_model::Sha256Digest::of(&doc_bytes))
        .expect("entry");
    let snapshot = Snapshot {
        manifest_bytes: manifest.render().into_bytes(),
        manifest,
        doc,
        doc_bytes,
        signature: None,
        allowed_signers: old.allowed_signers.clone(),
        blobs,
    };
    snapshot.write_dir(out).expect("write tampered snapshot");
}

#[test]
fn apt_refuses_a_tampered_snapshot_and_a_wrong_key() {
    if !apt_available() {
        return;
    }
    let (canary, dir, snap) = lab_snapshot("egress-apt-clients-tamper");
    let keyring = lab_keyring(&dir);

    // A Release changed after it was signed: the signed text of InRelease
    // (and Release) says another Date.
    let release_changed = dir.join("snap-release");
    tampered(&snap, &release_changed, |path, bytes| {
        let name = path.rsplit('/').next().unwrap_or_default();
        (name == "InRelease" || name == "Release").then(|| {
            String::from_utf8_lossy(bytes)
                .replacen(
                    "Date: ",
                    "Date: Sat, 01 Jan 2000 00:00:00 UTC\nX-Old-Date: ",
                    1,
                )
                .into_bytes()
        })
    });
    let mirror = MirrorProcess::start(&release_changed, "127.0.0.1:0");
    let apt = sandbox_apt(&dir.join("apt-release"), &keyring, &mirror);
    let o = apt.update().expect("apt-get update");
    let out = text(&o);
    assert!(
        apt_said(&out, "BADSIG") || apt_said(&out, "The following signatures were invalid"),
        "{out}"
    );
    assert!(apt_said(&out, "is not signed"), "{out}");
    let o = apt
        .download(&[apt_canary::PRESENT])
        .expect("apt-get install");
    assert!(!o.status.success(), "{}", text(&o));
    drop(mirror);

    // A .deb changed in the snapshot: apt checks it against the signed
    // Packages and refuses it.
    let deb_changed = dir.join("snap-deb");
    tampered(&snap, &deb_changed, |path, bytes| {
        path.ends_with("/ec-present_1.0_amd64.deb").then(|| {
            // Same size, one byte changed: only the digest can tell.
            let mut b = bytes.to_vec();
            if let Some(last) = b.last_mut() {
                *last ^= 0x01;
            }
            b
        })
    });
    let mirror = MirrorProcess::start(&deb_changed, "127.0.0.1:0");
    let apt = sandbox_apt(&dir.join("apt-deb"), &keyring, &mirror);
    ok(&apt.update().expect("apt-get update"), "apt-get update");
    let o = apt
        .download(&[apt_canary::PRESENT])
        .expect("apt-get install");
    assert!(!o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(apt_said(&out, "Hash Sum mismatch"), "{out}");
    assert!(
        !downloaded(&apt)
            .iter()
            .any(|(name, _)| name.starts_with("ec-present_")),
        "apt kept the changed .deb"
    );
    drop(mirror);

    // The untouched snapshot, but apt trusts another key (the canary's).
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let apt = sandbox_apt(&dir.join("apt-wrong-key"), &canary.keyring(), &mirror);
    let o = apt.update().expect("apt-get update");
    let out = text(&o);
    assert!(apt_said(&out, "NO_PUBKEY"), "{out}");
    assert!(apt_said(&out, "is not signed"), "{out}");
    let o = apt
        .download(&[apt_canary::PRESENT])
        .expect("apt-get install");
    assert!(!o.status.success(), "{}", text(&o));
    canary.stop();
}

/// Whether apt said `needle` (any of its lines); the line is printed, so a
/// run shows what apt refused with.
fn apt_said(out: &str, needle: &str) -> bool {
    let found = out.lines().find(|l| l.contains(needle));
    if let Some(line) = found {
        eprintln!("apt: {line}");
    }
    found.is_some()
}

// ---------------------------------------------------------------- bad input

/// The error line: the last line on stderr, which must stand alone.
fn error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let last = err
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(last.starts_with("egress-conformance: "), "{err}");
    last
}

fn assert_nothing_at(out: &Path) {
    assert!(!out.exists(), "{} was written", out.display());
    let parent = out.parent().expect("parent");
    for e in std::fs::read_dir(parent).expect("dir") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(".snap"), "left over: {name}");
    }
}

/// The canary's signed stanza of `name` 1.0.
fn stanza(canary: &AptCanary, name: &str) -> PackageEntry {
    let text = canary
        .file("dists/canary/main/binary-amd64/Packages")
        .expect("Packages");
    egress_apt::parse_packages(&String::from_utf8(text).expect("utf-8"))
        .expect("parse")
        .into_iter()
        .find(|e| e.package == name)
        .expect("stanza")
}

/// A print-uris line for `name` as Debian 12's apt writes it, with its
/// stanza's size and MD5Sum unless told otherwise.
fn line(canary: &AptCanary, name: &str, size: Option<u64>, md5: Option<&str>) -> String {
    let e = stanza(canary, name);
    format!(
        "'{}/{}' {} {} MD5Sum:{}\n",
        canary.archive_url(),
        e.filename,
        e.filename.file_name(),
        size.unwrap_or(e.size),
        md5.map(str::to_string)
            .or(e.md5.clone())
            .unwrap_or_default()
    )
}

/// Runs a build of `uris` (the canary as its one source, its keyring
/// unless `keyring` is given) and checks: exit code, one line containing
/// each of `says`, nothing written.
fn refused(
    dir: &Path,
    canary: &AptCanary,
    uris: &str,
    sources: Option<&[String]>,
    keyring: Option<&Path>,
    code: i32,
    says: &[&str],
) {
    let file = dir.join("bad-uris.txt");
    std::fs::write(&file, uris).expect("write");
    let out = dir.join("snap");
    let sources = sources.map_or_else(|| vec![apt_source(canary)], <[String]>::to_vec);
    let canary_keys = canary_keyring(dir, canary);
    let o = build(dir, &file, &sources, keyring.unwrap_or(&canary_keys), &out);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    let line = error_line(&o);
    eprintln!("exit {code}: {line}");
    for want in says {
        assert!(line.contains(want), "{want:?} not in {line}");
    }
    assert_nothing_at(&out);
}

#[test]
fn bad_apt_inputs_each_get_one_line_and_their_exit_code() {
    let dir = tmpdir("egress-apt-clients-bad");
    let canary = AptCanary::start().expect("apt canary");
    let good = line(&canary, apt_canary::PRESENT, None, None);

    // The control: the good line builds, here from Release and Release.gpg
    // (the canary serves no InRelease), and the snapshot records which.
    canary.serve_inrelease(false);
    let file = dir.join("good-uris.txt");
    std::fs::write(&file, &good).expect("write");
    let snap = dir.join("good-snap");
    let o = build(
        &dir,
        &file,
        &[apt_source(&canary)],
        &canary_keyring(&dir, &canary),
        &snap,
    );
    ok(&o, "snapshot build from Release and Release.gpg");
    let doc = SnapshotDoc::parse(&std::fs::read(snap.join("SNAPSHOT.json")).expect("read"))
        .expect("SNAPSHOT.json");
    let release = canary.file("dists/canary/Release").expect("Release");
    assert!(
        doc.sources
            .iter()
            .any(|(k, v)| k.contains(" Release+Release.gpg signed by ")
                && *v == egress_model::Sha256Digest::of(&release)),
        "{:?}",
        doc.sources
    );
    assert!(doc
        .lookup(
            "/apt/debian/pool/main/e/ec-present/ec-present_1.0_amd64.deb",
            "application/vnd.debian.binary-package"
        )
        .is_some());
    canary.serve_inrelease(true);

    // No SHA256 in any signed index: the stanza has only MD5sum.
    refused(
        &dir,
        &canary,
        &line(&canary, apt_canary::NO_DIGEST, None, None),
        None,
        None,
        6,
        &[
            "line 1",
            "ec-no-digest_1.0_amd64.deb",
            "no SHA256 in any signed index",
        ],
    );
    // Not in the signed index at all: the unsigned dist's package.
    let unsigned = format!(
        "'{}/pool/main/e/ec-unsigned/ec-unsigned_1.0_amd64.deb' ec-unsigned_1.0_amd64.deb 100 \n",
        canary.archive_url()
    );
    refused(
        &dir,
        &canary,
        &format!("{good}{unsigned}"),
        None,
        None,
        6,
        &["line 2", "no SHA256 in any signed index"],
    );
    // The line's size is not the signed one.
    let size = stanza(&canary, apt_canary::PRESENT).size + 1;
    refused(
        &dir,
        &canary,
        &line(&canary, apt_canary::PRESENT, Some(size), None),
        None,
        None,
        6,
        &["line 1", &format!("{size} bytes on the line")],
    );
    // The line's MD5Sum is not the signed one.
    refused(
        &dir,
        &canary,
        &format!(
            "{good}{}",
            line(
                &canary,
                apt_canary::TRIPWIRE,
                None,
                Some("00000000000000000000000000000000")
            )
        ),
        None,
        None,
        6,
        &[
            "line 2",
            "MD5Sum 00000000000000000000000000000000 on the line",
        ],
    );
    // The bytes downloaded do not hash to the signed SHA256.
    refused(
        &dir,
        &canary,
        &format!(
            "{good}{}",
            line(&canary, apt_canary::BAD_DIGEST, None, None)
        ),
        None,
        None,
        6,
        &["ec-bad-digest_1.0_amd64.deb", "expected sha256"],
    );
    // The InRelease does not verify: another key than the archive's.
    let other = dir.join("other-keyring.gpg");
    std::fs::write(&other, lab_keyring(&dir)).expect("write");
    refused(
        &dir,
        &canary,
        &good,
        None,
        Some(&other),
        8,
        &["InRelease does not verify against --apt-keyring"],
    );
    // An unsigned distribution: neither InRelease nor Release.gpg.
    refused(
        &dir,
        &canary,
        &good,
        Some(&[format!(
            "{} {} main",
            canary.archive_url(),
            apt_canary::UNSIGNED_DIST
        )]),
        None,
        8,
        &["Release does not verify", "Release.gpg is not served"],
    );
    // A URL under no --apt-source.
    refused(
        &dir,
        &canary,
        &format!(
            "{good}'http://127.0.0.1:9/ubuntu/pool/main/h/hello/hello_1_amd64.deb' hello_1_amd64.deb 10 \n"
        ),
        None,
        None,
        4,
        &["line 2", "is under no --apt-source"],
    );
    // Two archives that would be served under one name.
    refused(
        &dir,
        &canary,
        &good,
        Some(&[
            apt_source(&canary),
            "http://127.0.0.1:9/other/debian x main".to_string(),
        ]),
        None,
        2,
        &["would both be served at /apt/debian/"],
    );
    canary.stop();
}

/// Debian's own signed chain, served on loopback as the archive served it:
/// bookworm-updates' real `InRelease` (RSA signatures by the Debian archive
/// keys) and its real `main/binary-amd64/Packages`, with the archive's
/// keyring. The build verifies both and binds a print-uris line (Debian
/// 12's apt prints no hash for this suite) to the SHA256 Debian signed;
/// the `.deb` served here is not Debian's, so the build refuses it naming
/// that SHA256. The same chain against another keyring does not verify.
#[test]
fn debians_signed_chain_binds_the_line_to_its_sha256() {
    use egress_http::{Limits, Response, Server};
    let dir = tmpdir("egress-apt-clients-debian");
    let data =
        |rel: &str| std::fs::read(common::workspace().join("crates").join(rel)).expect("test data");
    let inrelease = data("egress-signing/tests/data/bookworm-updates_InRelease");
    let packages = data("egress-apt/tests/data/bookworm-updates-main-amd64-Packages");
    let keyring = dir.join("debian-archive-keyring.gpg");
    std::fs::write(
        &keyring,
        data("egress-signing/tests/data/debian-archive-keyring.gpg"),
    )
    .expect("write");
    let pool = "pool/main/c/ca-certificates/ca-certificates_20230311%2bdeb12u1_all.deb";
    let files: Vec<(String, Vec<u8>)> = vec![
        ("/debian/dists/bookworm-updates/InRelease".into(), inrelease),
        (
            "/debian/dists/bookworm-updates/main/binary-amd64/Packages".into(),
            packages,
        ),
        (format!("/debian/{pool}"), vec![0u8; 155_260]),
    ];
    let server = Server::bind(
        std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
        move |req: egress_http::Request| match files.iter().find(|(p, _)| p == req.path()) {
            Some((_, body)) => Response::new(200).with_body(body.clone()).into(),
            None => Response::text(404, "no\n").into(),
        },
        Limits::default(),
    )
    .expect("bind");
    let archive = format!("{}/debian", server.base_url());
    let uris = dir.join("uris.txt");
    std::fs::write(
        &uris,
        format!("'{archive}/{pool}' ca-certificates_20230311+deb12u1_all.deb 155260 \n"),
    )
    .expect("write");
    let source = [format!("{archive} bookworm-updates main")];
    let out = dir.join("snap");
    let o = build(&dir, &uris, &source, &keyring, &out);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let line = error_line(&o);
    assert!(
        line.contains(
            "expected sha256 0d5f444f594e48c1e16a41d8fc628a09b24c658916a1274025c2330f2a802bed (the signed index)"
        ),
        "{line}"
    );
    assert_nothing_at(&out);

    let other = dir.join("other.gpg");
    std::fs::write(&other, lab_keyring(&dir)).expect("write");
    let o = build(&dir, &uris, &source, &other, &out);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    assert!(error_line(&o).contains("InRelease does not verify"));
    assert_nothing_at(&out);
    server.stop();
}
