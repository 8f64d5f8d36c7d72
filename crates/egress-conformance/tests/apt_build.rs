//! `snapshot build --apt-uris` against the apt canary: a `Release` whose
//! `Valid-Until` has passed is refused as an unverified one is, and more
//! than one `--apt-arch` is read, each line bound through whichever
//! architecture's signed index lists it. No apt-get needed: the print-uris
//! lines are written from the canary's signed `Packages` as Debian 12's
//! apt writes them.

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A print-uris line for `name`, from the canary's `arch` index.
fn line(canary: &AptCanary, name: &str, arch: &str) -> String {
    let text = canary
        .file(&format!("dists/canary/main/binary-{arch}/Packages"))
        .expect("Packages");
    let e = egress_apt::parse_packages(&String::from_utf8(text).expect("utf-8"))
        .expect("parse")
        .into_iter()
        .find(|e| e.package == name)
        .unwrap_or_else(|| panic!("{name} in the {arch} index"));
    format!(
        "'{}/{}' {} {} MD5Sum:{}\n",
        canary.archive_url(),
        e.filename,
        e.filename.file_name(),
        e.size,
        e.md5.unwrap_or_default()
    )
}

/// `snapshot build` of `uris` from the canary with `extra` flags.
fn build(dir: &Path, canary: &AptCanary, uris: &str, extra: &[&str]) -> (Output, PathBuf) {
    let key = dir.join("key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    let file = dir.join("uris.txt");
    std::fs::write(&file, uris).unwrap();
    let keyring = dir.join("canary.gpg");
    std::fs::write(&keyring, canary.keyring()).unwrap();
    let out = dir.join("snap");
    let _ = std::fs::remove_dir_all(&out);
    let source = format!("{} canary main", canary.archive_url());
    let mut args = vec![
        "snapshot",
        "build",
        "--apt-uris",
        s(&file),
        "--apt-source",
        &source,
        "--apt-keyring",
        s(&keyring),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ];
    args.extend_from_slice(extra);
    (run(&args), out)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_expired_release_is_refused_with_exit_8() {
    let dir = tmpdir("apt-build-valid-until");
    let canary = AptCanary::start().expect("apt canary");
    let good = line(&canary, apt_canary::PRESENT, "amd64");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Valid for another day: built.
    canary.set_valid_until(Some(now + 86_400));
    let (o, out) = build(&dir, &canary, &good, &[]);
    ok(&o, "a Release valid for another day");
    assert!(out.join("MANIFEST").exists());
    // Expired an hour ago: refused, one line, nothing written.
    canary.set_valid_until(Some(now - 3_600));
    let (o, out) = build(&dir, &canary, &good, &[]);
    assert_eq!(o.status.code(), Some(8), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("egress-conformance: "), "{err}");
    let date = egress_apt::rfc2822_utc(now - 3_600);
    assert!(
        last.contains(&format!("{} canary", canary.archive_url())),
        "{last}"
    );
    assert!(last.contains(&format!("expired at {date}")), "{last}");
    assert!(
        last.contains("print") || last.contains("--apt-uris"),
        "{last}"
    );
    assert!(last.contains("clock"), "{last}");
    assert!(!out.exists(), "nothing is written");
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn more_than_one_arch_is_read_and_served() {
    let dir = tmpdir("apt-build-archs");
    let canary = AptCanary::start().expect("apt canary");
    let other = canary.add_arch("arm64");
    let uris = format!(
        "{}{}",
        line(&canary, apt_canary::PRESENT, "amd64"),
        line(&canary, &other, "arm64")
    );
    // One architecture: the arm64 line has no signed SHA256 to bind to.
    let (o, out) = build(&dir, &canary, &uris, &[]);
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no SHA256 in any signed index"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    // Both: each line binds through its own architecture's index.
    let (o, snap) = build(
        &dir,
        &canary,
        &uris,
        &["--apt-arch", "amd64", "--apt-arch", "arm64"],
    );
    ok(&o, "snapshot build with two --apt-arch");
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let c = egress_transcript::Client::new(
        egress_model::Url::parse(&mirror.base).unwrap(),
        Default::default(),
        None,
    )
    .unwrap();
    let body = |path: &str| {
        let ex = c.get("get", path, None);
        let r = ex.response.expect("an answer");
        assert_eq!(r.status, Some(200), "{path}");
        String::from_utf8(r.full_body().unwrap().to_vec()).unwrap()
    };
    let root = "/apt/debian/dists/canary/";
    let listed = |arch: &str| -> Vec<String> {
        egress_apt::parse_packages(&body(&format!("{root}main/binary-{arch}/Packages")))
            .unwrap()
            .into_iter()
            .map(|e| e.package)
            .collect()
    };
    assert_eq!(listed("amd64"), [apt_canary::PRESENT]);
    assert_eq!(listed("arm64"), [other.as_str()]);
    let release = egress_apt::Release::parse(&body(&format!("{root}Release"))).unwrap();
    assert_eq!(release.architectures, ["amd64", "arm64"]);
    for arch in ["amd64", "arm64"] {
        assert!(release
            .find(&format!("main/binary-{arch}/Packages.gz"))
            .is_some());
    }
    let (pool, bytes, _) = canary.deb(&other, apt_canary::FIRST_VERSION).unwrap();
    let ex = c.get("deb", &format!("/apt/debian/{pool}"), None);
    assert_eq!(ex.response.unwrap().full_body().unwrap(), &bytes[..]);
    drop(mirror);
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real apt with two architectures: its own `--print-uris` against the
/// canary (amd64 and arm64), the build with both `--apt-arch`, then a
/// fresh apt that trusts only the lab key runs `update` and downloads the
/// arm64 package from the mirror; its bytes are the canary's.
#[test]
fn real_apt_reads_two_architectures_through_the_mirror() {
    use egress_references::apt::client::AptClient;
    if !AptClient::available() {
        eprintln!("skipped: apt-get is not installed");
        return;
    }
    let dir = tmpdir("apt-build-archs-real");
    let canary = AptCanary::start().expect("apt canary");
    let other = canary.add_arch("arm64");
    // apt splits a scalar APT::Architectures at commas.
    let two = ["-o", "APT::Architectures=amd64,arm64"];
    let lab_apt = AptClient::new(&dir.join("lab-apt")).expect("apt tree");
    let keyring = lab_apt.add_keyring("canary", &canary.keyring()).unwrap();
    lab_apt
        .add_source(&canary.source_line(&keyring, apt_canary::DIST))
        .unwrap();
    ok(
        &lab_apt.command().args(two).arg("update").output().unwrap(),
        "apt-get update (canary)",
    );
    let foreign = format!("{other}:arm64");
    let o = lab_apt
        .command()
        .args(two)
        .args([
            "install",
            "--print-uris",
            "-qq",
            apt_canary::PRESENT,
            &foreign,
        ])
        .output()
        .unwrap();
    ok(&o, "apt-get install --print-uris");
    let uris = String::from_utf8(o.stdout).unwrap();
    assert!(uris.contains("_arm64.deb"), "{uris}");
    let (o, snap) = build(
        &dir,
        &canary,
        &uris,
        &["--apt-arch", "amd64", "--apt-arch", "arm64"],
    );
    ok(&o, "snapshot build with two --apt-arch");
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let lab = dir.join("lab.gpg");
    ok(
        &run(&[
            "snapshot",
            "apt-keyring",
            "--key",
            s(&dir.join("key")),
            "--out",
            s(&lab),
        ]),
        "snapshot apt-keyring",
    );
    let sandbox = AptClient::new(&dir.join("sandbox-apt")).expect("apt tree");
    let trusted = sandbox
        .add_keyring("lab", &std::fs::read(&lab).unwrap())
        .unwrap();
    sandbox
        .add_source(&format!(
            "deb [signed-by={}] {}/apt/debian {} {}",
            trusted.display(),
            mirror.base.trim_end_matches('/'),
            apt_canary::DIST,
            apt_canary::COMPONENT
        ))
        .unwrap();
    let before = canary.requests().len();
    ok(
        &sandbox.command().args(two).arg("update").output().unwrap(),
        "apt-get update (mirror)",
    );
    let o = sandbox
        .command()
        .args(two)
        .args(["install", "--download-only", "-y", &foreign])
        .output()
        .unwrap();
    ok(
        &o,
        "apt-get install --download-only (arm64, from the mirror)",
    );
    let (pool, bytes, _) = canary.deb(&other, apt_canary::FIRST_VERSION).unwrap();
    let got = std::fs::read(sandbox.archives_dir().join(pool.file_name())).expect("downloaded");
    assert!(
        got == bytes,
        "the arm64 .deb apt fetched from the mirror is the canary's"
    );
    assert_eq!(
        canary.requests().len(),
        before,
        "the mirror never contacts the canary"
    );
    drop(mirror);
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--apt-debs` input that cannot be used: one line, its exit code, nothing
/// written.
#[test]
fn bad_apt_debs_each_get_one_line_and_their_exit_code() {
    let dir = tmpdir("apt-build-debs");
    let canary = AptCanary::start().expect("apt canary");
    let good = line(&canary, apt_canary::PRESENT, "amd64");
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).unwrap();
    let cases: [(&str, Vec<u8>, i32, &str); 2] = [
        (
            "broken.deb",
            b"not a deb".to_vec(),
            4,
            "not a readable .deb",
        ),
        (
            "other-arch.deb",
            egress_artifacts::build_deb(&egress_artifacts::DebSpec {
                package: "egress-kit-other".into(),
                version: "1.0".into(),
                architecture: "riscv64".into(),
                maintainer: "m <m@example.invalid>".into(),
                description: "Built for an architecture the build does not read".into(),
                depends: None,
                scripts: Vec::new(),
                files: Vec::new(),
            }),
            4,
            "add --apt-arch riscv64",
        ),
    ];
    for (name, bytes, code, needle) in cases {
        let file = debs.join(name);
        std::fs::write(&file, bytes).unwrap();
        let (o, out) = build(&dir, &canary, &good, &["--apt-debs", s(&debs)]);
        assert_eq!(o.status.code(), Some(code), "{name}: {}", stderr(&o));
        let err = stderr(&o);
        let last = err.trim_end().lines().last().unwrap_or_default();
        assert!(last.contains(needle), "{name}: {last}");
        assert!(last.contains("--apt-debs"), "{name}: {last}");
        assert!(!out.exists(), "{name}: nothing is written");
        std::fs::remove_file(&file).unwrap();
    }
    // Without --apt-uris it is a usage error.
    let o = run(&[
        "snapshot",
        "build",
        "--apt-debs",
        s(&debs),
        "--sign-key",
        s(&dir.join("key")),
        "--out",
        s(&dir.join("snap")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
