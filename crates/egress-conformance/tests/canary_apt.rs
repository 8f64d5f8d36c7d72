//! The standalone apt canary, as a lab runs it: `egress-conformance canary
//! --protocol apt` as a process of its own, and `check --protocol apt
//! --canary` against a mirror in front of it. The reference: egress-mirror
//! serving a snapshot that `snapshot build --apt-uris` built from the
//! canary (every sub-probe runs, none SKIPPED for want of an upstream,
//! exit 0). The bad one: the apt caching proxy fixture with the canary as
//! its upstream (FAILs, each naming what showed it).

mod common;

use common::canary::{check_with, client, table, upstream_log_sizes, CanaryProcess};
use common::{ok, run, s, tmpdir, MirrorProcess};
use egress_model::{Status, Url};
use egress_references::apt::canary as apt_canary;
use std::path::{Path, PathBuf};

/// `'URL' FILE SIZE MD5Sum:...` lines for `names`, as Debian 12's apt
/// prints them, from the canary's signed `Packages` fetched over HTTP.
fn print_uris(archive: &str, names: &[&str]) -> String {
    let c = client(archive);
    let base = Url::parse(archive).expect("archive URL");
    let path = format!("{}/dists/canary/main/binary-amd64/Packages", base.path());
    let ex = c.get("Packages", &path, None);
    let text = String::from_utf8(ex.response.unwrap().full_body().unwrap().to_vec()).unwrap();
    egress_apt::parse_packages(&text)
        .expect("Packages")
        .iter()
        .filter(|e| names.contains(&e.package.as_str()))
        .map(|e| {
            format!(
                "'{archive}/{}' {} {} MD5Sum:{}\n",
                e.filename,
                e.filename.file_name(),
                e.size,
                e.md5.clone().unwrap_or_default()
            )
        })
        .collect()
}

/// `snapshot build --apt-uris` of `names` from the canary, with the keyring
/// the canary wrote beside its secret; then the lab's keyring. Returns the
/// snapshot directory and the lab keyring's path. `extra` flags go to the
/// build (e.g. `--apt-debs DIR`).
fn build(dir: &Path, canary: &CanaryProcess, names: &[&str], extra: &[&str]) -> (PathBuf, PathBuf) {
    let archive = canary.get("archive URL");
    let uris = dir.join("uris.txt");
    std::fs::write(&uris, print_uris(&archive, names)).unwrap();
    let key = dir.join("lab-key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    let snap = dir.join("snap");
    let _ = std::fs::remove_dir_all(&snap);
    let source = format!("{archive} canary main");
    let keyring = canary.get("keyring");
    let mut args = vec![
        "snapshot",
        "build",
        "--apt-uris",
        s(&uris),
        "--apt-source",
        &source,
        "--apt-keyring",
        &keyring,
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ];
    args.extend_from_slice(extra);
    ok(&run(&args), "snapshot build --apt-uris");
    let lab = dir.join("lab-keyring.gpg");
    ok(
        &run(&[
            "snapshot",
            "apt-keyring",
            "--key",
            s(&key),
            "--out",
            s(&lab),
        ]),
        "snapshot apt-keyring",
    );
    (snap, lab)
}

/// `check --protocol apt URL --dist canary --canary ...` with `extra` flags.
fn check(
    url: &str,
    extra: &[&str],
    canary: &CanaryProcess,
    secret: &Path,
    out: &Path,
) -> (egress_suite::Report, Option<i32>) {
    let mut flags = vec!["--protocol", "apt", "--dist", "canary"];
    flags.extend_from_slice(extra);
    check_with(url, &flags, canary, secret, out)
}

/// The sub-probes that only a controlled upstream decides: without
/// `--canary` they are SKIPPED; with it, every one must be decided.
const UPSTREAM_OBSERVING: [&str; 5] = [
    "P1.upstream-uncovered",
    "P2.upstream-contact",
    "P4.tripwire",
    "P5.upstream-new-version",
    "P5.upstream-replaced-bytes",
];

#[test]
fn check_with_the_apt_canary_runs_every_sub_probe() {
    let dir = tmpdir("canary-apt");
    let secret = dir.join("egress-canary.secret");
    let canary = CanaryProcess::start("apt", &secret);
    let archive = canary.get("archive URL");
    assert!(archive.ends_with("/debian"), "{archive}");
    assert!(canary.get("dist").starts_with("canary"));
    // The keyring is written beside the secret, and served by the canary.
    let keyring = PathBuf::from(canary.get("keyring"));
    assert_eq!(keyring, dir.join("egress-canary.apt-keyring.gpg"));
    let written = std::fs::read(&keyring).unwrap();
    let served = client(&canary.origin()).get("keyring", apt_canary::KEYRING_PATH, None);
    assert_eq!(served.response.unwrap().full_body().unwrap(), &written[..]);
    egress_signing::openpgp::Keyring::parse(&written).expect("an OpenPGP keyring");

    // The reference: egress-mirror on a snapshot built from the canary.
    let (snap, lab) = build(
        &dir,
        &canary,
        &[
            apt_canary::PRESENT,
            apt_canary::DEP,
            apt_canary::TRIPWIRE,
            apt_canary::TEMPLATE,
        ],
        &[],
    );
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let url = format!("{}/apt/debian/", mirror.base.trim_end_matches('/'));
    let signers = dir.join("lab-key.allowed_signers");
    let (report, code) = check(
        &url,
        &["--keyring", s(&lab), "--allowed-signers", s(&signers)],
        &canary,
        &secret,
        &dir.join("reference"),
    );
    assert_all_pass(&report);
    assert_eq!(code, Some(0), "{}", table(&report));
    for id in UPSTREAM_OBSERVING {
        assert_eq!(report.probe(id).unwrap().status, Status::Pass, "{id}");
    }
    assert!(report.plan.upstream.is_some());
    assert_eq!(
        upstream_log_sizes(&report),
        [0],
        "the mirror never contacted the canary"
    );
    drop(mirror);

    // The bad one: a caching proxy whose upstream is the canary.
    let origin = Url::parse(&canary.origin()).unwrap();
    let proxy = egress_references::apt::proxy::AptCachingProxy::start(&origin.authority()).unwrap();
    let url = format!("{}{}/", proxy.base_url(), apt_canary::ARCHIVE);
    let (report, code) = check(
        &url,
        &["--keyring", s(&keyring)],
        &canary,
        &secret,
        &dir.join("proxy"),
    );
    assert_eq!(code, Some(1), "{}", table(&report));
    let fails = |id: &str| {
        let p = report.probe(id).unwrap();
        assert_eq!(p.status, Status::Fail, "{id}: {}", p.reason);
        p.reason.clone()
    };
    // Each FAIL names what showed it: the canary's log, the change upstream.
    let contact = fails("P2.upstream-contact");
    assert!(contact.contains("contacted the upstream"), "{contact}");
    assert!(upstream_log_sizes(&report).iter().any(|n| *n > 0));
    let new_version = fails("P5.upstream-new-version");
    assert!(
        new_version.contains("published upstream mid-run, is served"),
        "{new_version}"
    );
    fails("P5.upstream-replaced-bytes");
    let absolute = fails("P3.absolute-form");
    assert!(absolute.contains("arrived"), "{absolute}");
    fails("P4.template-text");
    proxy.stop();

    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same secret gives the same key: a keyring a lab gave its mirror
/// stays good across restarts of the canary.
#[test]
fn the_apt_canary_key_follows_its_secret() {
    let dir = tmpdir("canary-apt-key");
    let secret = dir.join("secret");
    let first = CanaryProcess::start("apt", &secret);
    let keyring = PathBuf::from(first.get("keyring"));
    assert_eq!(keyring, dir.join("secret.apt-keyring.gpg"));
    let a = std::fs::read(&keyring).unwrap();
    // Without the secret, the control API is a route the canary does not
    // serve: the same answer, byte for byte.
    let c = client(&first.origin());
    let plan = c.get("plan", "/_egress-canary/plan", None);
    let unknown = c.get("unknown", "/_egress-canary/nothing-here", None);
    assert_eq!(plan.status(), Some(404));
    assert_eq!(
        plan.response.as_ref().unwrap().body_sha256,
        unknown.response.as_ref().unwrap().body_sha256
    );
    assert!(first.stop().success());
    let again = CanaryProcess::start("apt", &secret);
    assert_eq!(std::fs::read(&keyring).unwrap(), a);
    // A canary of another protocol is refused by name.
    let o = run(&[
        "check",
        "http://127.0.0.1:9/simple/",
        "--canary",
        &again.origin(),
        "--canary-secret",
        s(&secret),
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("canary --protocol pypi"), "{err}");
    assert!(again.stop().success());
    let other = CanaryProcess::start("apt", &dir.join("other-secret"));
    let b = std::fs::read(dir.join("other-secret.apt-keyring.gpg")).unwrap();
    assert_ne!(a, b);
    assert!(other.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The apt conformance kit: `kit --protocol apt --canary ORIGIN` writes
/// the bytes the standalone canary serves; a snapshot of the lab's own
/// packages plus the kit (`--apt-debs`) lets `check --canary` run every
/// sub-probe on the kit's packages (the mutations act on
/// egress-kit-present, the tripwire is egress-kit-tripwire) with nothing
/// named on the command line, and `check` without a canary decide P4's
/// template text on the kit's template package.
#[test]
fn the_apt_kit_gives_every_sub_probe_something_to_observe() {
    use egress_references::apt::kit;
    let dir = tmpdir("canary-apt-kit");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("apt", &secret);
    let origin = canary.origin();
    let kit_dir = dir.join("kit-apt");
    ok(
        &run(&[
            "kit",
            "--protocol",
            "apt",
            "--out",
            s(&kit_dir),
            "--canary",
            &origin,
        ]),
        "kit --protocol apt",
    );
    let c = client(&origin);
    for name in [kit::PRESENT, kit::TRIPWIRE, kit::TEMPLATE] {
        let file = kit::file_name(name);
        let ex = c.get("deb", &format!("/debian/pool/main/e/{name}/{file}"), None);
        let served = ex.response.unwrap().full_body().unwrap().to_vec();
        assert!(
            served == std::fs::read(kit_dir.join(&file)).unwrap(),
            "{file}: the canary's differs from `kit --canary`"
        );
    }
    // The lab's own packages (here two of the canary's) and the kit.
    let (snap, lab) = build(
        &dir,
        &canary,
        &[apt_canary::PRESENT, apt_canary::DEP],
        &["--apt-debs", s(&kit_dir)],
    );
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let url = format!("{}/apt/debian/", mirror.base.trim_end_matches('/'));
    let signers = dir.join("lab-key.allowed_signers");
    let flags = ["--keyring", s(&lab), "--allowed-signers", s(&signers)];
    let (report, code) = check(&url, &flags, &canary, &secret, &dir.join("with"));
    let egress_suite::Packages::Apt(p) = &report.plan.packages else {
        panic!("an apt plan")
    };
    assert_eq!(p.present.first().map(String::as_str), Some(kit::PRESENT));
    assert_eq!(p.tripwire.as_deref(), Some(kit::TRIPWIRE));
    assert_eq!(p.template.as_deref(), Some(kit::TEMPLATE));
    assert_all_pass(&report);
    assert_eq!(code, Some(0), "{}", table(&report));
    let new_version = report.probe("P5.upstream-new-version").unwrap();
    assert!(
        new_version.reason.contains(kit::PRESENT),
        "{}",
        new_version.reason
    );

    // Without a canary: the kit's template package is probed; what only
    // an upstream shows is SKIPPED, by name.
    let out = dir.join("without");
    let o = run(&[
        "check",
        &url,
        "--protocol",
        "apt",
        "--dist",
        "canary",
        flags[0],
        flags[1],
        flags[2],
        flags[3],
        "--absent",
        apt_canary::UPSTREAM_ONLY,
        "--format",
        "json",
        "--out",
        s(&out),
    ]);
    let report: egress_suite::Report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let template = report.probe("P4.template-text").unwrap();
    assert_eq!(template.status, Status::Pass, "{}", template.reason);
    for id in UPSTREAM_OBSERVING {
        assert_eq!(report.probe(id).unwrap().status, Status::Skipped, "{id}");
    }
    assert_eq!(o.status.code(), Some(0), "{}", table(&report));
    drop(mirror);
    assert!(canary.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every sub-probe PASSes, but those that need HTTP/2 or an instance key
/// (SKIPPED against plain http without `--expect-snapshot`).
fn assert_all_pass(report: &egress_suite::Report) {
    let not_pass: Vec<String> = report
        .probes
        .iter()
        .filter(|p| p.status != Status::Pass && !common::mutant::skipped_for_plain_http(p))
        .filter(|p| !common::mutant::skipped_without_times(p))
        .filter(|p| {
            !matches!(
                p.id.as_str(),
                "P5.expected-snapshot" | "P5.instance-attestation"
            )
        })
        .map(|p| format!("{} {}: {}", p.id, p.status, p.reason))
        .collect();
    assert!(not_pass.is_empty(), "{not_pass:#?}");
}
