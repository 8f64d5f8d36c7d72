//! `snapshot build --pypi-universe` as a user runs it: the real binary
//! against the PyPI canary's universe on loopback (`eu-*` projects with
//! upload times either side of `UNIVERSE_CUTOFF`, wheels for several
//! platforms, sdists, PEP 658 metadata with markers and extras). The
//! filters, the closure, the cutoff, resumption and every bad input.

use egress_references::pypi::canary::Canary;
use egress_references::pypi::universe::{Universe, UNIVERSE_CUTOFF};
use egress_snapshot::{Snapshot, SnapshotDoc};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{run, s, tmpdir};

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn keygen(dir: &Path) -> PathBuf {
    let key = dir.join("key");
    let o = run(&["key", "generate", "--out", s(&key)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    key
}

/// `snapshot build` of `universe` (the file's text) from `canary`, with
/// `extra` flags; the snapshot at `dir/snap`.
fn build(dir: &Path, canary: &Canary, universe: &str, extra: &[&str]) -> Output {
    let key = dir.join("key");
    if !key.exists() {
        keygen(dir);
    }
    let file = dir.join("universe.txt");
    std::fs::write(&file, universe).expect("write universe");
    let snap = dir.join("snap");
    let index = canary.index_url();
    let mut args = vec![
        "snapshot",
        "build",
        "--pypi-universe",
        s(&file),
        "--index-url",
        &index,
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// The distribution filenames a snapshot holds.
fn files(dir: &Path) -> BTreeSet<String> {
    let snap = Snapshot::load_dir(&dir.join("snap")).expect("load snapshot");
    snap.doc
        .served
        .iter()
        .filter_map(|e| e.path.strip_prefix("/files/"))
        .filter_map(|p| p.split_once('/').map(|(_, f)| f.to_string()))
        .filter(|f| !f.ends_with(".metadata"))
        .collect()
}

fn doc(dir: &Path) -> SnapshotDoc {
    Snapshot::load_dir(&dir.join("snap"))
        .expect("load snapshot")
        .doc
}

const LINUX: [&str; 4] = [
    "--python-version",
    "3.11",
    "--platform",
    "manylinux_2_17_x86_64",
];

#[test]
fn a_dated_closure_for_one_target_keeps_what_pip_would_install_there() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-closure");
    let mut flags = vec![
        "--exclude-newer",
        UNIVERSE_CUTOFF,
        "--versions-per-project",
        "2",
        "--closure",
    ];
    flags.extend_from_slice(&LINUX);
    let o = build(&dir, &canary, "eu-alpha\n", &flags);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let got = files(&dir);
    let names: BTreeSet<String> = got
        .iter()
        .map(|f| f.split('-').next().unwrap_or_default().to_string())
        .collect();
    // eu-alpha's newest two non-yanked releases before the cutoff, its
    // eu-beta>=1.0 (two before the cutoff), and eu-beta's eu-delta<2. Not
    // eu-gamma (extra "fast" not asked for), eu-win-only (win32 only),
    // eu-old-py (python_version < "3.8").
    assert_eq!(
        names,
        ["eu_alpha", "eu_beta", "eu_delta"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        "{got:?}"
    );
    for f in &got {
        assert!(
            f.ends_with(".whl"),
            "an sdist without --include-sdists: {f}"
        );
        assert!(
            f.contains("manylinux") || f.contains("-none-any"),
            "not for the target: {f}"
        );
    }
    assert!(
        got.iter().any(|f| f.starts_with("eu_alpha-1.2.0-")),
        "{got:?}"
    );
    assert!(
        got.iter().any(|f| f.starts_with("eu_alpha-1.1.0-")),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|f| f.starts_with("eu_alpha-1.0.0-")),
        "{got:?}"
    );
    assert!(!got.iter().any(|f| f.starts_with("eu_alpha-2.")), "{got:?}");
    assert!(
        !got.iter().any(|f| f.starts_with("eu_alpha-1.1.1")),
        "yanked: {got:?}"
    );
    assert!(!got.iter().any(|f| f.starts_with("eu_delta-2.")), "{got:?}");
    assert!(!got.iter().any(|f| f.starts_with("eu_beta-3.")), "{got:?}");

    // The cutoff and the target are signed into SNAPSHOT.json, with the
    // upload time of every file.
    let d = doc(&dir);
    let sel = d.selection.clone().expect("selection");
    assert_eq!(sel.exclude_newer.as_deref(), Some(UNIVERSE_CUTOFF));
    assert!(sel.closure);
    assert_eq!(sel.versions_per_project, Some(2));
    assert_eq!(sel.pypi_targets.len(), 1, "{sel:?}");
    assert!(
        sel.pypi_targets[0].contains("manylinux_2_17_x86_64"),
        "{sel:?}"
    );
    let cutoff = egress_model::Timestamp::parse(UNIVERSE_CUTOFF).expect("cutoff");
    let dists: Vec<&str> = d
        .served
        .iter()
        .map(|e| e.path.as_str())
        .filter(|p| p.starts_with("/files/") && !p.ends_with(".metadata"))
        .collect();
    assert_eq!(dists.len(), got.len());
    for p in dists {
        let t = d
            .upload_times
            .get(p)
            .unwrap_or_else(|| panic!("no time for {p}"));
        assert!(
            egress_model::Timestamp::parse(t).expect("time") <= cutoff,
            "{p} {t}"
        );
    }

    // The report says what each rule dropped.
    let report = out(&o);
    for rule in [
        "exclude-newer",
        "platform",
        "sdist",
        "yanked",
        "versions-per-project",
    ] {
        assert!(
            report.contains(&format!("dropped by {rule}: ")),
            "{rule} missing from:\n{report}"
        );
    }
    assert!(report.contains("selected 3 projects"), "{report}");
    assert!(
        report.contains(&format!(
            "cutoff (signed): nothing uploaded after {UNIVERSE_CUTOFF}"
        )),
        "{report}"
    );
}

#[test]
fn extras_reach_their_dependencies_and_sdists_come_only_when_asked() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-extras");
    let mut flags = vec![
        "--exclude-newer",
        UNIVERSE_CUTOFF,
        "--versions-per-project",
        "1",
        "--closure",
        "--include-sdists",
    ];
    flags.extend_from_slice(&LINUX);
    let o = build(&dir, &canary, "eu-alpha[fast]\neu-sdist-only\n", &flags);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let got = files(&dir);
    assert!(got.iter().any(|f| f.starts_with("eu_gamma-")), "{got:?}");
    assert!(
        got.iter().any(|f| f.starts_with("eu_sdist_only-1.0.0")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|f| f.starts_with("eu_alpha-1.2.0") && f.ends_with(".tar.gz")),
        "{got:?}"
    );
}

#[test]
fn without_sdists_a_project_with_only_an_sdist_selects_nothing_and_says_why() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-sdist-only");
    let mut flags = vec!["--exclude-newer", UNIVERSE_CUTOFF];
    flags.extend_from_slice(&LINUX);
    let o = build(&dir, &canary, "eu-sdist-only\neu-delta\n", &flags);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("dropped by sdist: 1 item"), "{}", out(&o));
    assert!(!files(&dir).iter().any(|f| f.starts_with("eu_sdist_only")));
}

#[test]
fn max_file_bytes_leaves_out_the_big_wheel() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-big");
    let o = build(
        &dir,
        &canary,
        "eu-big\neu-delta\n",
        &["--max-file-bytes", "1000000"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).contains("dropped by max-file-bytes: 1 item"),
        "{}",
        out(&o)
    );
    assert!(!files(&dir).iter().any(|f| f.starts_with("eu_big")));
}

#[test]
fn a_dry_run_selects_and_reports_but_writes_nothing() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-dry");
    let mut flags = vec!["--exclude-newer", UNIVERSE_CUTOFF, "--closure", "--dry-run"];
    flags.extend_from_slice(&LINUX);
    let o = build(&dir, &canary, "eu-alpha\n", &flags);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).contains("dry run, nothing downloaded or written: would select 3 projects"),
        "{}",
        out(&o)
    );
    assert!(!dir.join("snap").exists());
    assert!(!dir.join(".snap.parts").exists());
    // No file was asked for: only pages and metadata.
    let files_asked = canary
        .requests()
        .iter()
        .filter(|r| r.target.contains("/packages/") && !r.target.ends_with(".metadata"))
        .count();
    assert_eq!(files_asked, 0);
}

/// The last line on stderr, which must be the one-line error.
fn error_line(o: &Output) -> String {
    let e = err(o);
    let last = e.trim_end().lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("egress-conformance: "), "{e}");
    last
}

#[test]
fn bad_input_gets_one_line_and_its_exit_code_and_writes_nothing() {
    let canary = Canary::start_with(Universe::with_no_time()).expect("canary");
    let dir = tmpdir("pypi-universe-bad");
    let cases: [(&str, Vec<&str>, i32, &str); 6] = [
        ("eu-alpha\n-bad name\n", vec![], 4, "universe.txt line 2: "),
        (
            "eu-alpha\n",
            vec!["--exclude-newer", "last tuesday"],
            2,
            "--exclude-newer: ",
        ),
        (
            "eu-alpha\n",
            vec!["--exclude-newer", "2999-01-01T00:00:00Z"],
            2,
            "lies in the future",
        ),
        (
            "eu-no-time\n",
            vec!["--exclude-newer", UNIVERSE_CUTOFF],
            9,
            "lists no upload-time",
        ),
        ("eu-alpha\neu-nowhere\n", vec!["--strict"], 6, "eu-nowhere"),
        (
            "eu-alpha\n",
            vec!["--platform", "manylinux_2_17_x86_64"],
            2,
            "--platform needs --python-version",
        ),
    ];
    for (universe, flags, code, says) in cases {
        let o = build(&dir, &canary, universe, &flags);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{universe:?} {flags:?}: {}",
            err(&o)
        );
        let line = error_line(&o);
        assert!(line.contains(says), "{universe:?} {flags:?}: {line}");
        assert!(
            !dir.join("snap").exists(),
            "{universe:?} {flags:?} wrote a snapshot"
        );
        assert!(
            !dir.join(".snap.parts").exists(),
            "{universe:?} {flags:?} left parts"
        );
    }
    // Without --strict a missing project is reported, not fatal.
    let o = build(&dir, &canary, "eu-delta\neu-nowhere\n", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).contains("dropped by missing: 1 item"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_killed_build_resumes_and_fetches_only_what_is_missing() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-universe-resume");
    keygen(&dir);
    let universe = dir.join("universe.txt");
    std::fs::write(&universe, "eu-beta\neu-delta\neu-big\n").expect("write");
    // The last file (one job: files go in project order) is slow: the build
    // is killed while it is on its way, after the others are done, eu-big's
    // 1.25 MiB among them.
    let big = "eu_delta-2.0.0-py3-none-any.whl".to_string();
    assert!(canary.file_path(&big).is_some(), "the canary serves {big}");
    canary.set_slow(&big, std::time::Duration::from_secs(30));
    let index = canary.index_url();
    let key = dir.join("key");
    let snap = dir.join("snap");
    let args = [
        "snapshot",
        "build",
        "--pypi-universe",
        s(&universe),
        "--index-url",
        &index,
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
        "--jobs",
        "1",
    ];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !canary.requests().iter().any(|r| r.target.ends_with(&big)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the big file was never asked for"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!dir.join("snap").exists());
    let before: Vec<String> = canary.requests().iter().map(|r| r.target.clone()).collect();
    canary.set_slow(&big, std::time::Duration::ZERO);

    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let after: Vec<String> = canary
        .requests()
        .iter()
        .skip(before.len())
        .map(|r| r.target.clone())
        .collect();
    let files_again: Vec<&String> = after
        .iter()
        .filter(|p| p.contains("/packages/") && !p.ends_with(".metadata"))
        .collect();
    assert_eq!(files_again.len(), 1, "fetched again: {files_again:?}");
    assert!(files_again[0].ends_with(&big), "{files_again:?}");
    // eu-beta's three releases, eu-delta's two, eu-big.
    assert_eq!(files(&dir).len(), 6, "{:?}", files(&dir));
    assert!(!dir.join(".snap.parts").exists());
}

/// The canary's PEP 691 page of `project`.
fn page(canary: &Canary, project: &str) -> egress_simple::ProjectPage {
    use std::io::{Read, Write};
    let base = canary.base_url();
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        c,
        "GET /simple/{project}/ HTTP/1.1\r\nHost: {addr}\r\nAccept: application/vnd.pypi.simple.v1+json\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).expect("read");
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    egress_simple::parse_project_json(&raw[at..]).expect("page")
}

/// A hashed requirements line for every file of `project==version`, as
/// pip-compile writes it, with an optional marker.
fn pin(canary: &Canary, project: &str, version: &str, marker: &str) -> String {
    let p = page(canary, project);
    let prefix = format!("{}-{version}", project.replace('-', "_"));
    let hashes: Vec<String> = p
        .files
        .iter()
        .filter(|f| {
            f.filename.starts_with(&format!("{prefix}-"))
                || f.filename == format!("{prefix}.tar.gz")
        })
        .map(|f| format!(" \\\n    --hash=sha256:{}", f.hashes["sha256"]))
        .collect();
    assert!(!hashes.is_empty(), "{project} {version}");
    format!("{project}=={version}{marker}{}\n", hashes.concat())
}

#[test]
fn a_lock_keeps_per_pin_the_wheel_pip_would_choose_and_names_a_pin_without_one() {
    let canary = Canary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("pypi-lock-targets");
    keygen(&dir);
    let req = dir.join("requirements.txt");
    let index = canary.index_url();
    let key = dir.join("key");
    let snap = dir.join("snap");
    let build_lock = |text: &str| {
        std::fs::write(&req, text).expect("write");
        let mut args = vec![
            "snapshot",
            "build",
            "--requirements",
            s(&req),
            "--index-url",
            &index,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ];
        args.extend_from_slice(&LINUX);
        run(&args)
    };
    // eu-alpha 1.2.0 has an sdist and six wheels; for CPython 3.11 on
    // manylinux x86_64 pip installs one of them. eu-win-only applies on
    // Windows only, as its marker says.
    let o = build_lock(&format!(
        "{}{}",
        pin(&canary, "eu-alpha", "1.2.0", ""),
        pin(
            &canary,
            "eu-win-only",
            "1.0.0",
            " ; sys_platform == \"win32\""
        )
    ));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let got = files(&dir);
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        ["eu_alpha-1.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
    );
    let report = out(&o);
    for line in [
        "dropped by marker: 1 item",
        "dropped by sdist: 1 item",
        "dropped by platform: 5 items",
    ] {
        assert!(report.contains(line), "{line} not in:\n{report}");
    }
    // The same pin without its marker has no file for the target: one
    // line naming the pin, where it is pinned, the target and its files.
    let manifest = std::fs::read(snap.join("MANIFEST")).expect("MANIFEST");
    let o = build_lock(&pin(&canary, "eu-win-only", "1.0.0", ""));
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("eu-win-only==1.0.0 (pinned at ")
            && line.contains("has no file for the target cp311/")
            && line.contains("eu_win_only-1.0.0-py3-none-win_amd64.whl"),
        "{line}"
    );
    // The snapshot already there is left as it was.
    assert_eq!(
        std::fs::read(snap.join("MANIFEST")).expect("MANIFEST"),
        manifest
    );
    assert!(!dir.join(".snap.parts").exists());
}

/// An index that lists no PEP 658 metadata (as some mirrors still do):
/// `eu-top` 1.0 needs `eu-dep`, and only the wheel says so.
fn index_without_metadata() -> (
    egress_http::ServerHandle,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use egress_artifacts::{build_wheel_with, WheelExtras, WheelSpec};
    use egress_http::{Reply, Request, Response, Server};
    let wheel = |name: &str, requires: &[&str]| {
        build_wheel_with(
            &WheelSpec {
                name: egress_model::ProjectName::new(name).expect("name"),
                version: egress_model::Version::new("1.0").expect("version"),
                summary: "s".into(),
                description: "d".into(),
                requires_python: None,
                files: vec![(
                    format!("{}/__init__.py", name.replace('-', "_")),
                    b"".to_vec(),
                )],
            },
            &WheelExtras {
                requires_dist: requires.iter().map(|r| r.to_string()).collect(),
                ..WheelExtras::default()
            },
        )
    };
    let dists = [
        ("eu-top", wheel("eu-top", &["eu-dep>=1"])),
        ("eu-dep", wheel("eu-dep", &[])),
    ];
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::bind_loopback(move |req: Request| -> Reply {
        log.lock().expect("log").push(req.target.clone());
        for (name, d) in &dists {
            if req.target == format!("/simple/{name}/") {
                let page = serde_json::json!({
                    "meta": {"api-version": "1.1"},
                    "name": name,
                    "files": [{
                        "filename": d.filename,
                        "url": format!("/f/{}", d.filename),
                        "hashes": {"sha256": d.sha256.to_hex()},
                        "size": d.bytes.len(),
                        "upload-time": "2024-01-01T00:00:00.000000Z",
                    }],
                    "versions": ["1.0"],
                });
                return Response::new(200)
                    .with_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                    .with_body(page.to_string().into_bytes())
                    .into();
            }
            if req.target == format!("/f/{}", d.filename) {
                return Response::new(200).with_body(d.bytes.clone()).into();
            }
        }
        Response::text(404, "no\n").into()
    })
    .expect("bind");
    (server, seen)
}

#[test]
fn without_pep_658_metadata_the_closure_reads_the_wheel_and_downloads_it_once() {
    let (server, seen) = index_without_metadata();
    let dir = tmpdir("pypi-universe-no-658");
    keygen(&dir);
    let universe = dir.join("universe.txt");
    std::fs::write(&universe, "eu-top\n").expect("write");
    let index = format!("http://{}/simple/", server.addr());
    let key = dir.join("key");
    let snap = dir.join("snap");
    let o = run(&[
        "snapshot",
        "build",
        "--pypi-universe",
        s(&universe),
        "--index-url",
        &index,
        "--closure",
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let got: Vec<String> = files(&dir).into_iter().collect();
    assert_eq!(
        got,
        ["eu_dep-1.0-py3-none-any.whl", "eu_top-1.0-py3-none-any.whl"]
    );
    // eu-top's wheel was fetched once: to read its dependencies, then kept.
    let seen = seen.lock().expect("log").clone();
    let top = seen
        .iter()
        .filter(|t| t.ends_with("eu_top-1.0-py3-none-any.whl"))
        .count();
    assert_eq!(top, 1, "{seen:?}");
}
