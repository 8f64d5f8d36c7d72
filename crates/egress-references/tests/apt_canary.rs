//! The apt canary serves a signed Debian repository that real apt-get
//! accepts, refuses what apt must refuse (an unsigned dist, a hash
//! mismatch), logs every request, refuses every write, and changes what apt
//! sees when the suite asks.
//!
//! apt-get runs isolated (`egress_references::apt::client::AptClient`): its
//! own configuration, state and cache, loopback only. Each test skips with
//! a printed reason only when apt-get is absent.

use egress_model::{Method, Observation, ProjectName, Sha256Digest, Upstream};
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_references::apt::client::AptClient;
use egress_transcript::Request;
use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{body, client, TempDir};

fn apt_available(test: &str) -> bool {
    let ok = AptClient::available();
    if !ok {
        eprintln!("skipping {test}: apt-get is not installed");
    }
    ok
}

fn text(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// An isolated apt in `dir` with the canary's keyring and a source for
/// `dist`.
fn apt_for(canary: &AptCanary, dir: &Path, dist: &str) -> AptClient {
    let apt = AptClient::new(dir).unwrap();
    let keyring = apt.add_keyring("canary", &canary.keyring()).unwrap();
    apt.add_source(&canary.source_line(&keyring, dist)).unwrap();
    apt
}

fn update_ok(apt: &AptClient) {
    let out = apt.update().unwrap();
    assert!(out.status.success(), "apt-get update: {}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("W:") && !stderr.contains("E:"),
        "apt-get update warned: {}",
        text(&out)
    );
}

fn sha256_file(path: &Path) -> Sha256Digest {
    Sha256Digest::of(&std::fs::read(path).unwrap())
}

fn debs_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".deb"))
        .collect();
    names.sort();
    names
}

/// The `'URL' FILE SIZE HASH` lines of `--print-uris` output.
fn uri_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('\''))
        .map(str::to_string)
        .collect()
}

#[test]
fn apt_updates_and_downloads_with_the_dependency_and_bytes_match() {
    if !apt_available("apt_updates_and_downloads") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    let dir = TempDir::new("apt-download");
    let apt = apt_for(&canary, &dir.0, apt_canary::DIST);
    update_ok(&apt);
    // apt fetched the signed InRelease and, as announced, the index by hash.
    let log = canary.requests();
    let targets: Vec<&str> = log.iter().map(|r| r.target.as_str()).collect();
    assert!(
        targets.contains(&"/debian/dists/canary/InRelease"),
        "{targets:?}"
    );
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with("/debian/dists/canary/main/binary-amd64/by-hash/SHA256/")),
        "{targets:?}"
    );
    assert!(log.iter().all(|r| !r.tripwire));

    let out = apt.download(&[apt_canary::PRESENT]).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        debs_in(&apt.archives_dir()),
        ["ec-dep_1.0_amd64.deb", "ec-present_1.0_amd64.deb"]
    );
    for name in [apt_canary::PRESENT, apt_canary::DEP] {
        let (pool, bytes, sha) = canary.deb(name, "1.0").unwrap();
        let got = apt.archives_dir().join(pool.file_name());
        assert_eq!(sha256_file(&got), sha, "{name}");
        assert_eq!(Sha256Digest::of(&bytes), sha);
    }

    // Every package a snapshot holds installs (download-only) from it.
    apt.clean_archives().unwrap();
    let names = canary.snapshot_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let out = apt.download(&names).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(debs_in(&apt.archives_dir()).len(), names.len());
}

#[test]
fn print_uris_lists_the_pool_urls() {
    if !apt_available("print_uris_lists_the_pool_urls") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    let dir = TempDir::new("apt-print-uris");
    let apt = apt_for(&canary, &dir.0, apt_canary::DIST);
    update_ok(&apt);
    let mark = canary.mark();
    let out = apt.print_uris(&[apt_canary::PRESENT]).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lines = uri_lines(&out);
    assert_eq!(lines.len(), 2, "{}", text(&out));
    for (line, name) in lines.iter().zip([apt_canary::DEP, apt_canary::PRESENT]) {
        let (pool, bytes, _) = canary.deb(name, "1.0").unwrap();
        let md5 = md5_hex(&bytes);
        assert_eq!(
            line,
            &format!(
                "'{}/{}' {} {} MD5Sum:{md5}",
                canary.archive_url(),
                pool,
                pool.file_name(),
                bytes.len()
            )
        );
    }
    // What `snapshot build --apt-uris` reads (a saved sample of the whole
    // snapshot's: tests/data/apt-print-uris-canary.txt).
    let uris = egress_lock::parse_print_uris(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(uris.len(), 2);
    for (uri, name) in uris.iter().zip([apt_canary::DEP, apt_canary::PRESENT]) {
        let (pool, bytes, _) = canary.deb(name, "1.0").unwrap();
        assert_eq!(uri.url, format!("{}/{pool}", canary.archive_url()));
        assert_eq!(uri.file_name, pool.file_name());
        assert_eq!(uri.size, bytes.len() as u64);
        assert_eq!(uri.hash, egress_lock::AptHash::Md5(md5_hex(&bytes)));
    }
    // Nothing was fetched.
    assert!(canary.requests_since(mark).is_empty());
    assert!(debs_in(&apt.archives_dir()).is_empty());
}

fn md5_hex(data: &[u8]) -> String {
    use md5::Digest;
    md5::Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn apt_refuses_the_unsigned_dist() {
    if !apt_available("apt_refuses_the_unsigned_dist") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    // It is served, without InRelease and Release.gpg.
    let c = client(&canary.base_url());
    let ex = c.get("release", "/debian/dists/canary-unsigned/Release", None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    for missing in ["InRelease", "Release.gpg"] {
        let ex = c.get(
            "sig",
            &format!("/debian/dists/canary-unsigned/{missing}"),
            None,
        );
        assert_eq!(ex.status(), Some(404), "{}", ex.summary());
    }

    let dir = TempDir::new("apt-unsigned");
    let apt = apt_for(&canary, &dir.0, apt_canary::UNSIGNED_DIST);
    let out = apt.update().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not signed"),
        "{}",
        text(&out)
    );
    let out = apt.download(&[apt_canary::UNSIGNED]).unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(debs_in(&apt.archives_dir()).is_empty());
    // apt never asked for the unsigned dist's Packages.
    assert!(canary
        .requests()
        .iter()
        .all(|r| !r.target.contains("canary-unsigned/main/")));
}

#[test]
fn apt_refuses_a_wrong_key() {
    if !apt_available("apt_refuses_a_wrong_key") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    let other = AptCanary::start().unwrap();
    let dir = TempDir::new("apt-wrong-key");
    let apt = AptClient::new(&dir.0).unwrap();
    let keyring = apt.add_keyring("other", &other.keyring()).unwrap();
    apt.add_source(&canary.source_line(&keyring, apt_canary::DIST))
        .unwrap();
    let out = apt.update().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NO_PUBKEY"),
        "{}",
        text(&out)
    );
}

#[test]
fn apt_refuses_digest_mismatches() {
    if !apt_available("apt_refuses_digest_mismatches") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    let dir = TempDir::new("apt-bad-digest");
    let apt = apt_for(&canary, &dir.0, apt_canary::DIST);
    update_ok(&apt);
    let mark = canary.mark();
    let out = apt.download(&[apt_canary::BAD_DIGEST]).unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mismatch") || stderr.contains("unexpected size"),
        "{}",
        text(&out)
    );
    // apt did fetch it, then threw it away.
    let pool = apt_canary::pool_path(apt_canary::BAD_DIGEST, "1.0");
    assert!(canary
        .requests_since(mark)
        .iter()
        .any(|r| r.target == format!("/debian/{pool}")));
    assert!(debs_in(&apt.archives_dir()).is_empty());

    // A stanza with MD5sum alone: apt will not even fetch it.
    let mark = canary.mark();
    let out = apt.download(&[apt_canary::NO_DIGEST]).unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Insufficient information available to perform this download securely"),
        "{}",
        text(&out)
    );
    assert!(canary.requests_since(mark).is_empty());
    assert!(debs_in(&apt.archives_dir()).is_empty());
}

#[test]
fn the_no_digest_stanza_has_md5_only() {
    let canary = AptCanary::start().unwrap();
    let packages = String::from_utf8(
        canary
            .file("dists/canary/main/binary-amd64/Packages")
            .unwrap(),
    )
    .unwrap();
    let stanza = packages
        .split("\n\n")
        .find(|s| s.starts_with(&format!("Package: {}\n", apt_canary::NO_DIGEST)))
        .unwrap();
    assert!(stanza.contains("\nMD5sum: "), "{stanza}");
    assert!(!stanza.contains("\nSHA256:"), "{stanza}");
    let bad = packages
        .split("\n\n")
        .find(|s| s.starts_with(&format!("Package: {}\n", apt_canary::BAD_DIGEST)))
        .unwrap();
    let (_, bytes, sha) = canary.deb(apt_canary::BAD_DIGEST, "1.0").unwrap();
    assert!(bad.contains("\nSHA256: "), "{bad}");
    assert!(!bad.contains(&sha.to_hex()), "{bad}");
    assert!(
        !bad.contains(&format!("\nSize: {}\n", bytes.len())),
        "{bad}"
    );
    // Every marker, raw, in the template package's Description.
    let template = packages
        .split("\n\n")
        .find(|s| s.starts_with(&format!("Package: {}\n", apt_canary::TEMPLATE)))
        .unwrap();
    for (raw, _) in egress_model::TEMPLATE_MARKERS {
        assert!(template.contains(raw), "{raw}: {template}");
    }
    // Packages.gz holds the same text.
    let gz = canary
        .file("dists/canary/main/binary-amd64/Packages.gz")
        .unwrap();
    let out = Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&gz)?;
            child.wait_with_output()
        });
    if let Ok(out) = out {
        assert_eq!(String::from_utf8_lossy(&out.stdout), packages);
    }
}

#[test]
fn the_tripwire_postinst_calls_the_canary() {
    let canary = AptCanary::start().unwrap();
    let (pool, bytes, _) = canary.deb(apt_canary::TRIPWIRE, "1.0").unwrap();
    let url = apt_canary::tripwire_url(&canary.base_url());
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        eprintln!("skipping the dpkg-deb half: dpkg-deb is not installed");
        return;
    }
    let dir = TempDir::new("apt-tripwire");
    let deb = dir.0.join(pool.file_name());
    std::fs::write(&deb, &bytes).unwrap();
    let info = Command::new("dpkg-deb")
        .arg("--info")
        .arg(&deb)
        .output()
        .unwrap();
    assert!(info.status.success(), "{}", text(&info));
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("postinst"), "{info}");
    let postinst = Command::new("dpkg-deb")
        .arg("--info")
        .arg(&deb)
        .arg("postinst")
        .output()
        .unwrap();
    assert!(postinst.status.success(), "{}", text(&postinst));
    let postinst = String::from_utf8_lossy(&postinst.stdout);
    assert!(postinst.starts_with("#!/bin/sh\n"), "{postinst}");
    assert!(postinst.contains(&url), "{postinst}");
    // Nothing ran it.
    assert!(canary.requests().iter().all(|r| !r.tripwire));

    // Run as dpkg would (extracted by dpkg-deb), it reaches the canary's
    // tripwire, flagged in the log.
    let control = dir.0.join("control");
    let out = Command::new("dpkg-deb")
        .arg("--control")
        .arg(&deb)
        .arg(&control)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let has = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ["curl", "wget", "python3"].iter().any(|t| has(t)) {
        let out = Command::new("sh")
            .arg(control.join("postinst"))
            .arg("configure")
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let hits: Vec<_> = canary
            .requests()
            .into_iter()
            .filter(|r| r.tripwire)
            .collect();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(
            hits[0].target,
            url.strip_prefix(&canary.base_url()).unwrap()
        );
    } else {
        eprintln!("not running the postinst: no curl, wget or python3 here");
    }
}

#[test]
fn only_get_and_head_are_served_and_everything_is_logged() {
    let canary = AptCanary::start().unwrap();
    let c = client(&canary.base_url());
    let release = "/debian/dists/canary/Release";
    assert_eq!(c.get("get", release, None).status(), Some(200));
    let head = c.send("head", &Request::new(Method::Head, release));
    assert_eq!(head.status(), Some(200), "{}", head.summary());
    for method in [Method::Post, Method::Put, Method::Delete] {
        let ex = c.send(
            "write",
            &Request::new(method.clone(), release).body(b"x".to_vec()),
        );
        assert_eq!(ex.status(), Some(405), "{}", ex.summary());
    }
    for missing in [
        "/debian/dists/canary/InRelease/",
        "/debian/dists/canary/../canary/InRelease",
        "/debian/dists/canary/%49nRelease",
        "/dists/canary/InRelease",
        "/debian/pool/main/e/ec-present/",
    ] {
        assert_eq!(
            c.get("missing", missing, None).status(),
            Some(404),
            "{missing}"
        );
    }
    let log = canary.requests();
    assert_eq!(log.len(), 10);
    assert_eq!(log[2].method, Method::Post);
}

fn observation_filename(o: &Observation) -> &str {
    match o {
        Observation::UpstreamMutation { filename, .. } => filename,
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_mutation_changes_what_apt_sees_after_update() {
    if !apt_available("every_mutation_changes_what_apt_sees") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    let dir = TempDir::new("apt-mutations");
    let apt = apt_for(&canary, &dir.0, apt_canary::DIST);
    update_ok(&apt);

    // A new version: apt now picks ec-present 1.1.
    let o = canary
        .publish_new_version(&ProjectName::new(apt_canary::PRESENT).unwrap())
        .unwrap();
    assert_eq!(observation_filename(&o), "ec-present_1.1_amd64.deb");
    let before = uri_lines(&apt.print_uris(&[apt_canary::PRESENT]).unwrap());
    assert!(before
        .iter()
        .any(|l| l.contains("ec-present_1.0_amd64.deb")));
    update_ok(&apt);
    let after = uri_lines(&apt.print_uris(&[apt_canary::PRESENT]).unwrap());
    assert!(
        after.iter().any(|l| l.contains("ec-present_1.1_amd64.deb")),
        "{after:?}"
    );
    let out = apt.download(&[apt_canary::PRESENT]).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (_, _, sha) = canary.deb(apt_canary::PRESENT, "1.1").unwrap();
    assert_eq!(
        sha256_file(&apt.archives_dir().join("ec-present_1.1_amd64.deb")),
        sha
    );

    // Replaced bytes: the same pool path, new bytes apt accepts after an update.
    let (_, _, old) = canary.deb(apt_canary::DEP, "1.0").unwrap();
    let o = canary.replace_file_bytes("ec-dep_1.0_amd64.deb").unwrap();
    let Observation::UpstreamMutation { before, after, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(before.as_ref(), Some(&old));
    assert_ne!(after, &old);
    update_ok(&apt);
    apt.clean_archives().unwrap();
    let out = apt.download(&[apt_canary::DEP]).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        &sha256_file(&apt.archives_dir().join("ec-dep_1.0_amd64.deb")),
        after
    );

    // A re-signed Release: a new InRelease, the same indexes.
    let inrelease = "dists/canary/InRelease";
    let old_inrelease = canary.file(inrelease).unwrap();
    let old_packages = canary
        .file("dists/canary/main/binary-amd64/Packages")
        .unwrap();
    let o = canary.resign_release();
    let Observation::UpstreamMutation { before, after, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(before.as_ref(), Some(&Sha256Digest::of(&old_inrelease)));
    let new_inrelease = canary.file(inrelease).unwrap();
    assert_eq!(after, &Sha256Digest::of(&new_inrelease));
    assert_ne!(old_inrelease, new_inrelease);
    assert_eq!(
        canary
            .file("dists/canary/main/binary-amd64/Packages")
            .unwrap(),
        old_packages
    );
    update_ok(&apt);
    let port = canary.base_url().rsplit(':').next().unwrap().to_string();
    let listed = apt
        .lists_dir()
        .join(format!("127.0.0.1:{port}_debian_dists_canary_InRelease"));
    assert_eq!(std::fs::read(&listed).unwrap(), new_inrelease);
    assert!(canary.requests().iter().all(|r| !r.tripwire));
}

#[test]
fn the_plan_names_the_apt_packages() {
    let canary = AptCanary::start().unwrap();
    let plan = canary.plan();
    assert_eq!(plan.origin, canary.base_url());
    assert_eq!(plan.index_url, format!("{}/", canary.archive_url()));
    assert_eq!(plan.present.as_str(), apt_canary::PRESENT);
    assert_eq!(
        plan.upstream_only_paths,
        ["/debian/pool/main/e/ec-upstream-only/ec-upstream-only_1.0_amd64.deb"]
    );
    let c = client(&canary.base_url());
    for path in &plan.upstream_only_paths {
        let ex = c.get("upstream-only", path, None);
        assert_eq!(ex.status(), Some(200));
        let (_, bytes, _) = canary.deb(apt_canary::UPSTREAM_ONLY, "1.0").unwrap();
        assert_eq!(body(&ex), bytes);
    }
    assert!(!canary
        .snapshot_names()
        .iter()
        .any(|n| n == apt_canary::UPSTREAM_ONLY || n == apt_canary::BAD_DIGEST));
}

/// The chain a client (and `snapshot build`) follows, read by the project's
/// own readers: InRelease verifies against the keyring and is the Release;
/// every index it lists is served by path and by hash with those bytes;
/// every stanza with a SHA256 names the bytes served at its Filename.
#[test]
fn the_signed_chain_reads_back_with_the_project_readers() {
    use egress_signing::openpgp::Keyring;
    let canary = AptCanary::start().unwrap();
    let keyring = Keyring::parse(&canary.keyring()).unwrap();
    let inrelease = canary.file("dists/canary/InRelease").unwrap();
    let release = canary.file("dists/canary/Release").unwrap();
    let verified = keyring.verify_cleartext(&inrelease).unwrap();
    assert_eq!(verified.text, release);
    let gpg = canary.file("dists/canary/Release.gpg").unwrap();
    keyring.verify_detached(&release, &gpg).unwrap();
    // Another key's keyring does not verify it.
    let other = AptCanary::start().unwrap();
    let other = Keyring::parse(&other.keyring()).unwrap();
    assert!(other.verify_cleartext(&inrelease).is_err());

    let release = egress_apt::Release::parse(&String::from_utf8(release).unwrap()).unwrap();
    assert!(release.acquire_by_hash);
    assert_eq!(release.suite.as_deref(), Some(apt_canary::DIST));
    let listed: Vec<&str> = release.sha256.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        listed,
        [
            "main/binary-amd64/Packages",
            "main/binary-amd64/Packages.gz"
        ]
    );
    let c = client(&canary.base_url());
    for entry in &release.sha256 {
        for path in [
            entry.path.as_str().to_string(),
            egress_apt::by_hash_path(&entry.path, &entry.digest),
        ] {
            let ex = c.get("index", &format!("/debian/dists/canary/{path}"), None);
            assert_eq!(ex.status(), Some(200), "{}", ex.summary());
            let bytes = body(&ex);
            assert_eq!(Sha256Digest::of(&bytes), entry.digest, "{path}");
            assert_eq!(bytes.len() as u64, entry.size, "{path}");
        }
    }
    let packages = canary
        .file("dists/canary/main/binary-amd64/Packages")
        .unwrap();
    let entries = egress_apt::parse_packages(&String::from_utf8(packages).unwrap()).unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.package.as_str()).collect();
    assert_eq!(
        names,
        [
            apt_canary::PRESENT,
            apt_canary::DEP,
            apt_canary::UPSTREAM_ONLY,
            apt_canary::TRIPWIRE,
            apt_canary::TEMPLATE,
            apt_canary::NO_DIGEST,
            apt_canary::BAD_DIGEST,
        ]
    );
    for e in &entries {
        let (pool, bytes, sha) = canary.deb(&e.package, &e.version).unwrap();
        assert_eq!(e.filename, pool);
        let ex = c.get("deb", &format!("/debian/{pool}"), None);
        assert_eq!(body(&ex), bytes);
        // The control file inside is the stanza's.
        let control = egress_artifacts::deb_control_paragraph(&bytes).unwrap();
        assert_eq!(control.get("Package"), Some(e.package.as_str()));
        assert_eq!(control.get("Depends"), e.paragraph.get("Depends"));
        match e.package.as_str() {
            apt_canary::NO_DIGEST => assert_eq!(e.sha256, None),
            apt_canary::BAD_DIGEST => {
                assert_ne!(e.sha256.as_ref(), Some(&sha));
                assert_ne!(e.size, bytes.len() as u64);
            }
            _ => {
                assert_eq!(e.sha256.as_ref(), Some(&sha));
                assert_eq!(e.size, bytes.len() as u64);
                assert_eq!(e.md5.as_deref(), Some(md5_hex(&bytes).as_str()));
            }
        }
    }
    // The unsigned dist lists ec-unsigned alone.
    let unsigned = canary
        .file("dists/canary-unsigned/main/binary-amd64/Packages")
        .unwrap();
    let entries = egress_apt::parse_packages(&String::from_utf8(unsigned).unwrap()).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].package, apt_canary::UNSIGNED);
}

/// Without InRelease, apt verifies Release against Release.gpg (gpgv, a
/// detached signature) and installs the same way.
#[test]
fn apt_falls_back_to_release_and_release_gpg() {
    if !apt_available("apt_falls_back_to_release_and_release_gpg") {
        return;
    }
    let canary = AptCanary::start().unwrap();
    canary.serve_inrelease(false);
    let dir = TempDir::new("apt-release-gpg");
    let apt = apt_for(&canary, &dir.0, apt_canary::DIST);
    update_ok(&apt);
    let targets: Vec<String> = canary.requests().into_iter().map(|r| r.target).collect();
    for t in [
        "/debian/dists/canary/InRelease",
        "/debian/dists/canary/Release",
        "/debian/dists/canary/Release.gpg",
    ] {
        assert!(targets.iter().any(|x| x == t), "{t}: {targets:?}");
    }
    let out = apt.download(&[apt_canary::PRESENT]).unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (_, _, sha) = canary.deb(apt_canary::PRESENT, "1.0").unwrap();
    assert_eq!(
        sha256_file(&apt.archives_dir().join("ec-present_1.0_amd64.deb")),
        sha
    );

    // And a Release.gpg by another key is refused.
    let other = AptCanary::start().unwrap();
    other.serve_inrelease(false);
    let dir = TempDir::new("apt-release-gpg-other");
    let apt = AptClient::new(&dir.0).unwrap();
    let keyring = apt.add_keyring("canary", &canary.keyring()).unwrap();
    apt.add_source(&other.source_line(&keyring, apt_canary::DIST))
        .unwrap();
    let out = apt.update().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NO_PUBKEY"),
        "{}",
        text(&out)
    );
}
