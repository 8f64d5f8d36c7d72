//! Real pip and uv, with no lockfile, against a dated universe served by
//! `egress-mirror`: the snapshot is built by `snapshot build
//! --pypi-universe --exclude-newer --closure` from the canary's universe
//! on loopback, and the clients choose by what the mirror serves (PEP 700
//! upload times, PEP 658 metadata), as they would on an open-ended task.

use egress_references::pypi::canary::Canary;
use egress_references::pypi::universe::{Universe, UNIVERSE_CUTOFF};
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{client, clients, ok, run, s, tmpdir, MirrorProcess};

/// The universe snapshot: `eu-alpha` and its closure, for CPython 3.11 on
/// manylinux x86_64, at the universe's cutoff.
fn universe_snapshot(dir: &Path, canary: &Canary) -> PathBuf {
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let universe = dir.join("universe.txt");
    std::fs::write(&universe, "eu-alpha\n").expect("write");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--pypi-universe",
            s(&universe),
            "--index-url",
            &canary.index_url(),
            "--exclude-newer",
            UNIVERSE_CUTOFF,
            "--closure",
            "--python-version",
            "3.11",
            "--platform",
            "manylinux_2_17_x86_64",
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --pypi-universe",
    );
    snap
}

/// `uv pip compile` of `eu-alpha` against `index` at the cutoff: the
/// versions uv resolves, one `name==version` a line.
fn uv_resolve(dir: &Path, index: &str) -> Vec<String> {
    let input = dir.join("requirements.in");
    std::fs::write(&input, "eu-alpha\n").expect("write");
    let o = client(&clients().join("bin/uv"))
        .args([
            "pip",
            "compile",
            "--no-header",
            "--no-annotate",
            "--cache-dir",
            s(&dir.join(format!("uv-cache-{}", index.len()))),
            "--python-version",
            "3.11",
            "--python-platform",
            "x86_64-manylinux_2_17",
            "--exclude-newer",
            UNIVERSE_CUTOFF,
            "--index-url",
            index,
            s(&input),
        ])
        .output()
        .expect("uv");
    ok(&o, "uv pip compile");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("=="))
        .map(str::to_string)
        .collect()
}

#[test]
fn uv_at_the_signed_cutoff_resolves_from_the_mirror_what_it_resolves_from_upstream() {
    let dir = tmpdir("universe-uv");
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let snap = universe_snapshot(&dir, &canary);
    let upstream = uv_resolve(&dir, &canary.index_url());
    drop(canary);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let mirrored = uv_resolve(&dir, &format!("{}/simple/", mirror.base));
    assert_eq!(
        upstream,
        vec!["eu-alpha==1.2.0", "eu-beta==1.5.0", "eu-delta==1.0.0"]
    );
    assert_eq!(mirrored, upstream);
    // uv read the metadata from the mirror, not the wheels.
    let lines = mirror.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(".whl.metadata") && l.contains("status=200")),
        "{lines:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pip_installs_with_no_lockfile_and_resolves_from_metadata_files() {
    let dir = tmpdir("universe-pip");
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let snap = universe_snapshot(&dir, &canary);
    drop(canary);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let index = format!("{}/simple/", mirror.base);
    let pip = || {
        let mut c = client(&clients().join("bin/pip"));
        c.args([
            "install",
            "--isolated",
            "--no-cache-dir",
            "--index-url",
            &index,
        ]);
        c
    };

    // Resolving alone (a dry run) reads only pages and .metadata files.
    let report = dir.join("report.json");
    let o = pip()
        .args([
            "--dry-run",
            "--ignore-installed",
            "--uploaded-prior-to",
            UNIVERSE_CUTOFF,
            "--report",
            s(&report),
            "eu-alpha",
        ])
        .output()
        .expect("pip");
    ok(&o, "pip install --dry-run --uploaded-prior-to");
    let text = std::fs::read_to_string(&report).expect("report");
    for want in [
        "\"eu-alpha\"",
        "\"1.2.0\"",
        "\"eu-beta\"",
        "\"1.5.0\"",
        "\"eu-delta\"",
    ] {
        assert!(text.contains(want), "{want} not in {text}");
    }
    let lines = mirror.lines();
    let metadata = lines
        .iter()
        .filter(|l| l.contains(".whl.metadata") && l.contains("status=200"))
        .count();
    let wheel_gets = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.contains(".whl") && !l.contains(".whl.metadata"))
            .count()
    };
    let wheels = wheel_gets(&lines);
    assert!(metadata >= 3, "{lines:#?}");
    assert_eq!(wheels, 0, "pip downloaded wheels to resolve: {lines:#?}");

    // Plain `pip install NAME`, no lockfile, no cutoff given: it installs
    // what the dated universe holds.
    let target = dir.join("site");
    let o = pip()
        .args(["--target", s(&target), "eu-alpha"])
        .output()
        .expect("pip");
    ok(&o, "pip install eu-alpha");
    // Installing does download the wheels (so the count above can see them).
    assert!(wheel_gets(&mirror.lines()) >= 3, "{:#?}", mirror.lines());
    let installed: Vec<String> = std::fs::read_dir(&target)
        .expect("target")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".dist-info"))
        .collect();
    for want in ["eu_alpha-1.2.0", "eu_beta-1.5.0", "eu_delta-1.0.0"] {
        assert!(
            installed.iter().any(|n| n.starts_with(want)),
            "{want} not in {installed:?}"
        );
    }

    // A name the upstream has but the universe left out (eu-gamma: only
    // through an extra nobody asked for) gets the same clean 404 as a name
    // nobody ever published; pip fails on it.
    let o: Output = pip()
        .args(["--target", s(&dir.join("none")), "eu-gamma"])
        .output()
        .expect("pip");
    assert!(!o.status.success());
    let left_out = get(&mirror.base, "/simple/eu-gamma/");
    let never = get(&mirror.base, "/simple/eu-never-published/");
    assert!(left_out.starts_with("HTTP/1.1 404 "), "{left_out}");
    assert_eq!(
        left_out.replace("eu-gamma", "NAME"),
        never.replace("eu-never-published", "NAME")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The whole response to a GET of `path`, with the date field removed.
fn get(base: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("read");
    out.lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A lab's uv.lock, locked by real uv against the upstream (every
/// platform's wheels, as uv locks universally), built for one target: the
/// snapshot holds the one wheel per package this machine's Python needs,
/// and `uv sync --frozen` installs from the mirror with the rewritten lock,
/// which names no other host.
#[test]
fn a_universal_uv_lock_built_for_one_target_syncs_from_the_mirror() {
    let dir = tmpdir("universe-uvsync");
    let uv = clients().join("bin/uv");
    let python = clients().join("bin/python");
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let project = dir.join("app");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\ndependencies = [\"eu-alpha<2\"]\n\n[tool.uv]\npackage = false\n",
    )
    .expect("pyproject");
    let o = client(&uv)
        .current_dir(&project)
        .args([
            "lock",
            "--python",
            s(&python),
            "--cache-dir",
            s(&dir.join("uv-cache")),
            "--default-index",
            &canary.index_url(),
        ])
        .output()
        .expect("uv lock");
    ok(&o, "uv lock");
    let lock = std::fs::read_to_string(project.join("uv.lock")).expect("uv.lock");
    assert!(
        lock.contains("win_amd64"),
        "uv locks every platform: {lock}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let mirror_url = format!("http://127.0.0.1:{port}");
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    let o = run(&[
        "snapshot",
        "build",
        "--uv-lock",
        s(&project.join("uv.lock")),
        "--index-url",
        &canary.index_url(),
        "--python-version",
        "3.11",
        "--platform",
        "manylinux_2_17_x86_64",
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
        "--mirror-url",
        &mirror_url,
    ]);
    ok(&o, "snapshot build --uv-lock with a target");
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(report.contains("dropped by platform: "), "{report}");
    drop(canary);
    let rewritten =
        std::fs::read_to_string(snap.join("rewritten/uv.lock")).expect("rewritten uv.lock");
    let canary_host = lock
        .split("url = \"http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("the lock names the canary")
        .to_string();
    assert!(!rewritten.contains(&canary_host), "{rewritten}");
    std::fs::write(project.join("uv.lock"), &rewritten).expect("replace uv.lock");

    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let o = client(&uv)
        .current_dir(&project)
        .args([
            "sync",
            "--frozen",
            "--python",
            s(&python),
            "--cache-dir",
            s(&dir.join("uv-cache-2")),
        ])
        .output()
        .expect("uv sync");
    ok(&o, "uv sync --frozen");
    let lines = mirror.lines();
    assert!(
        lines.iter().any(|l| l
            .contains("eu_alpha-1.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
            && l.contains("status=200")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("status=404")),
        "{lines:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
