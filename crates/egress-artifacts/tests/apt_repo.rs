//! Real apt reads a repository written by the project's own code: a `.deb`
//! from `build_deb`, a `Packages` from egress-apt's stanzas (and its gzip),
//! a `Release` from `render_release`, served as a `file:` repository with a
//! private apt state (nothing of the machine's apt is changed). apt checks
//! the Release's SHA256 lines: tampered bytes are a hash mismatch.
//!
//! The Release is unsigned (`[trusted=yes]`): signatures are egress-signing's
//! part, tested with apt where the snapshot is built.

use egress_apt::{
    parse_packages, render_packages, render_release, IndexEntry, IndexPath, ReleaseFields,
};
use egress_artifacts::{build_deb, gzip, DebSpec};
use egress_model::Sha256Digest;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("egress-apt-repo-{tag}-{}", std::process::id()));
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

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn spec() -> DebSpec {
    DebSpec {
        package: "ec-present".into(),
        version: "1.0-1".into(),
        architecture: "all".into(),
        maintainer: "egress conformance <nobody@example.invalid>".into(),
        description: "a package apt can fetch".into(),
        depends: None,
        scripts: vec![],
        files: vec![(
            "usr/share/doc/ec-present/README".into(),
            b"present\n".to_vec(),
        )],
    }
}

/// Writes the repository; `tamper` changes the Packages bytes after the
/// Release listed them.
fn repository(root: &Path, tamper: bool) -> Vec<u8> {
    let deb = build_deb(&spec());
    let pool = format!("pool/main/e/ec-present/{}", spec().file_name());
    write(&root.join(&pool), &deb);
    let stanza = format!(
        "{}Filename: {pool}\nSize: {}\nSHA256: {}\n",
        spec().control(),
        deb.len(),
        Sha256Digest::of(&deb)
    );
    let entries = parse_packages(&stanza).unwrap();
    let packages = render_packages(&entries.iter().collect::<Vec<_>>());
    let packages_gz = gzip(packages.as_bytes());
    let dist = root.join("dists/stable");
    let mut listed = Vec::new();
    for (name, bytes) in [
        ("Packages", packages.as_bytes()),
        ("Packages.gz", &packages_gz),
    ] {
        let path = IndexPath::new(&format!("main/binary-amd64/{name}")).unwrap();
        let digest = Sha256Digest::of(bytes);
        let served = if tamper {
            bytes.iter().map(|b| b ^ 1).collect()
        } else {
            bytes.to_vec()
        };
        write(&dist.join(path.as_str()), &served);
        write(
            &dist.join(egress_apt::by_hash_path(&path, &digest)),
            &served,
        );
        listed.push(IndexEntry {
            path,
            size: bytes.len() as u64,
            digest,
        });
    }
    let fields = ReleaseFields {
        origin: "egress-conformance".into(),
        label: "test".into(),
        suite: "stable".into(),
        codename: "stable".into(),
        date: 1_764_547_200,
        valid_until: None,
        architectures: vec!["amd64".into(), "all".into()],
        components: vec!["main".into()],
        description: None,
    };
    write(
        &dist.join("Release"),
        render_release(&fields, &listed).as_bytes(),
    );
    deb
}

/// apt-get with every directory it reads or writes inside `dir`.
fn apt_get(dir: &Path, args: &[&str]) -> Output {
    let o = |k: &str, v: &Path| format!("-o{k}={}", v.display());
    for sub in [
        "state/lists/partial",
        "cache/archives/partial",
        "etc/parts",
        "etc/prefs",
        "etc/trusted",
        "log",
        "dl",
    ] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    write(&dir.join("state/status"), b"");
    write(&dir.join("etc/apt.conf"), b"");
    write(
        &dir.join("etc/sources.list"),
        format!(
            "deb [trusted=yes] file:{} stable main\n",
            dir.join("repo").display()
        )
        .as_bytes(),
    );
    Command::new("apt-get")
        .current_dir(dir.join("dl"))
        .env("APT_CONFIG", dir.join("etc/apt.conf"))
        .arg(o("Dir::State", &dir.join("state")))
        .arg(o("Dir::State::status", &dir.join("state/status")))
        .arg(o("Dir::Cache", &dir.join("cache")))
        .arg(o("Dir::Etc::SourceList", &dir.join("etc/sources.list")))
        .arg(o("Dir::Etc::SourceParts", &dir.join("etc/parts")))
        .arg(o("Dir::Etc::Parts", &dir.join("etc/parts")))
        .arg(o("Dir::Etc::Preferences", &dir.join("etc/prefs/none")))
        .arg(o("Dir::Etc::PreferencesParts", &dir.join("etc/prefs")))
        .arg(o("Dir::Etc::Trusted", &dir.join("etc/trusted/none.gpg")))
        .arg(o("Dir::Etc::TrustedParts", &dir.join("etc/trusted")))
        .arg(o("Dir::Log", &dir.join("log")))
        .args([
            "-oAPT::Architecture=amd64",
            "-oAPT::Architectures=amd64",
            "-oAPT::Sandbox::User=root",
            "-oDebug::NoLocking=1",
            "-oAcquire::Languages=none",
            "-q",
        ])
        .args(args)
        .output()
        .expect("apt-get is installed")
}

#[test]
fn apt_fetches_from_what_we_wrote() {
    let dir = TempDir::new("ok");
    let deb = repository(&dir.0.join("repo"), false);
    let update = apt_get(&dir.0, &["update"]);
    let stderr = String::from_utf8_lossy(&update.stderr);
    assert!(update.status.success(), "apt-get update: {stderr}");
    assert!(!stderr.contains("W:") && !stderr.contains("E:"), "{stderr}");
    let download = apt_get(&dir.0, &["download", "ec-present"]);
    assert!(
        download.status.success(),
        "apt-get download: {}",
        String::from_utf8_lossy(&download.stderr)
    );
    let got = std::fs::read(dir.0.join("dl").join(spec().file_name())).unwrap();
    assert_eq!(got, deb);
}

#[test]
fn apt_refuses_an_index_that_does_not_match_the_release() {
    let dir = TempDir::new("tampered");
    repository(&dir.0.join("repo"), true);
    let update = apt_get(&dir.0, &["update"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&update.stdout),
        String::from_utf8_lossy(&update.stderr)
    );
    assert!(
        text.contains("Hash Sum mismatch") || text.contains("File has unexpected size"),
        "{text}"
    );
    let download = apt_get(&dir.0, &["download", "ec-present"]);
    assert!(!download.status.success());
}
