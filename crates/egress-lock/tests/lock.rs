//! The parsers on hand-written copies of what pip-compile, uv pip compile and
//! uv lock write, and on every kind of input a snapshot must refuse.

use egress_lock::{parse_requirements, parse_uv_lock, rewrite_uv_lock, LockKind, Pin};
use egress_model::Sha256Digest;

const PIP_COMPILE: &str = include_str!("fixtures/pip-compile.txt");
const UV_PIP_COMPILE: &str = include_str!("fixtures/uv-pip-compile.txt");
const UV_LOCK: &str = include_str!("fixtures/uv.lock");

fn pin<'a>(pins: &'a [Pin], name: &str, version: &str) -> &'a Pin {
    pins.iter()
        .find(|p| p.name.as_str() == name && p.version.as_str() == version)
        .unwrap_or_else(|| panic!("no pin {name}=={version}"))
}

fn hex(d: &Sha256Digest) -> String {
    d.to_hex()
}

#[test]
fn pip_compile_output() {
    let lock = parse_requirements("requirements.txt", PIP_COMPILE).expect("parses");
    assert_eq!(lock.kind, LockKind::Requirements);
    assert_eq!(lock.pins.len(), 8);
    let certifi = pin(&lock.pins, "certifi", "2024.2.2");
    assert_eq!(certifi.line, 10);
    assert_eq!(
        certifi.hashes().iter().map(hex).collect::<Vec<_>>(),
        vec![
            "0569859f95fc761b18b45ef421b1290a0f65f147e92a1e5eb3e635f9a5e4e66f",
            "dc383c07b76109f368f6106eee2b593b04a011ea4d55f652c6ca24a754d1cdd1"
        ]
    );
    assert_eq!(
        pin(&lock.pins, "charset-normalizer", "3.3.2").files.len(),
        3
    );
    let colorama = pin(&lock.pins, "colorama", "0.4.6");
    assert_eq!(
        colorama.marker.as_deref(),
        Some("sys_platform == \"win32\"")
    );
    // Names are normalized (PEP 503); extras are kept.
    assert_eq!(pin(&lock.pins, "click", "8.1.7").files.len(), 2);
    assert_eq!(pin(&lock.pins, "requests", "2.31.0").extras, vec!["socks"]);
    assert_eq!(
        pin(&lock.pins, "typing-extensions", "4.10.0")
            .marker
            .as_deref(),
        Some("python_version < \"3.11\"")
    );
    assert!(lock
        .pins
        .iter()
        .all(|p| p.files.iter().all(|f| f.url.is_none() && f.line == p.line)));
    assert_eq!(lock.notes.len(), 2, "{:?}", lock.notes);
    assert!(lock.notes[0].starts_with("requirements.txt:7: "));
    assert!(lock.notes[1].contains("--extra-index-url"));
}

#[test]
fn uv_pip_compile_output_with_forks() {
    let lock = parse_requirements("req.txt", UV_PIP_COMPILE).expect("parses");
    assert_eq!(lock.pins.len(), 6);
    // --universal writes one line per fork; both are pinned.
    let old = pin(&lock.pins, "numpy", "1.24.4");
    assert_eq!(old.marker.as_deref(), Some("python_full_version < '3.9'"));
    assert_eq!(old.files.len(), 1);
    assert_eq!(pin(&lock.pins, "numpy", "1.26.4").files.len(), 2);
    assert_eq!(pin(&lock.pins, "certifi", "2024.2.2").files.len(), 2);
    assert_eq!(lock.notes.len(), 1);
}

#[test]
fn other_spellings_pip_accepts() {
    let h = "A".repeat(64);
    let text = format!(
        "Foo.Bar_baz[x, y]==1.0 --hash sha256:{h}\r\nqux == 2.0;python_version>'3' --hash=sha256:{h} --hash=sha256:{}\n",
        "b".repeat(64)
    );
    let lock = parse_requirements("r.txt", &text).expect("parses");
    assert_eq!(lock.pins[0].name.as_str(), "foo-bar-baz");
    assert_eq!(lock.pins[0].extras, vec!["x", "y"]);
    assert_eq!(lock.pins[0].files[0].sha256.to_hex(), "a".repeat(64));
    assert_eq!(lock.pins[1].version.as_str(), "2.0");
    assert_eq!(lock.pins[1].marker.as_deref(), Some("python_version>'3'"));
    assert_eq!(lock.pins[1].files.len(), 2);
}

#[test]
fn every_bad_requirement_names_file_and_line() {
    let h = "c".repeat(64);
    let cases: Vec<(String, &str)> = vec![
        (
            "ok==1.0 --hash=sha256:HASH\nidna==3.6\n".into(),
            "has no --hash",
        ),
        ("idna==3.6 \\\n    # via x\n".into(), "has no --hash"),
        (
            "idna>=3.6 --hash=sha256:HASH\n".into(),
            "not pinned with ==",
        ),
        ("idna --hash=sha256:HASH\n".into(), "not pinned with =="),
        (
            "idna==3.* --hash=sha256:HASH\n".into(),
            "not pinned with ==",
        ),
        (
            "idna==3.6,<4 --hash=sha256:HASH\n".into(),
            "not pinned with ==",
        ),
        (
            "idna===3.6 --hash=sha256:HASH\n".into(),
            "not pinned with ==",
        ),
        ("-r base.txt\n".into(), "includes (-r) are not supported"),
        (
            "--requirement=base.txt\n".into(),
            "includes (-r) are not supported",
        ),
        (
            "-c constraints.txt\n".into(),
            "constraints files (-c) are not supported",
        ),
        ("-e ./src\n".into(), "editable"),
        ("--editable git+https://x/y.git#egg=y\n".into(), "editable"),
        (
            format!("idna==3.6 --hash=sha512:{h}{h}\n"),
            "hash algorithm \"sha512\" is not supported",
        ),
        (
            "idna==3.6 --hash=md5:0123456789abcdef0123456789abcdef\n".into(),
            "hash algorithm \"md5\"",
        ),
        ("idna==3.6 --hash=sha256:xyz\n".into(), "malformed sha256"),
        (
            format!("idna==3.6 --hash=sha256:{h}0\n"),
            "malformed sha256",
        ),
        ("idna==3.6 --hash=HASH\n".into(), "ALGORITHM:HEX"),
        ("idna==3.6 --hash\n".into(), "--hash without a value"),
        (
            "idna @ https://x/idna-3.6.tar.gz --hash=sha256:HASH\n".into(),
            "URL or path requirement",
        ),
        (
            "https://x/idna-3.6.tar.gz --hash=sha256:HASH\n".into(),
            "URL or path requirement",
        ),
        (
            "./idna-3.6.tar.gz --hash=sha256:HASH\n".into(),
            "URL or path requirement",
        ),
        (
            "idna==3.6 --global-option=x --hash=sha256:HASH\n".into(),
            "not supported; only --hash is",
        ),
        (
            "--hash=sha256:HASH\n".into(),
            "a --hash line with no requirement",
        ),
        ("--frobnicate\n".into(), "unknown option"),
        (
            "idna==not a version --hash=sha256:HASH\n".into(),
            "not pinned with ==",
        ),
        (
            "idna==3.6? --hash=sha256:HASH\n".into(),
            "not a valid version",
        ),
        ("-idna==3.6\n".into(), "unknown option"),
    ];
    for (text, expect) in cases {
        let text = text.replace("HASH", &h);
        let err = parse_requirements("reqs/dev.txt", &text).expect_err(&text);
        let shown = err.to_string();
        assert!(shown.contains(expect), "{text:?}: {shown}");
        assert!(shown.starts_with("reqs/dev.txt:"), "{shown}");
        assert!(err.line >= 1, "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
    }
    // The line is the requirement's first line, also inside continuations.
    let err = parse_requirements(
        "r.txt",
        &format!("# c\n\na==1 \\\n  --hash=sha256:{h}\nb==2 \\\n  # via a\n"),
    )
    .expect_err("b has no hash");
    assert_eq!((err.line, err.file.as_str()), (5, "r.txt"));
}

#[test]
fn uv_lock_files_with_urls() {
    let lock = parse_uv_lock("uv.lock", UV_LOCK).expect("parses");
    assert_eq!(lock.kind, LockKind::UvLock);
    assert_eq!(lock.pins.len(), 2);
    assert_eq!(lock.notes.len(), 1);
    assert!(
        lock.notes[0].starts_with("uv.lock:10: package \"demo\" skipped"),
        "{:?}",
        lock.notes
    );
    let idna = pin(&lock.pins, "idna", "3.7");
    assert_eq!(idna.line, 25);
    assert_eq!(idna.files.len(), 2);
    let sdist = &idna.files[0];
    assert_eq!(sdist.filename.as_deref(), Some("idna-3.7.tar.gz"));
    assert_eq!(
        sdist.sha256.to_hex(),
        "028ff3aadf0609c1fd278d8ea3089299412a7a8b9bd005dd08b9f8285bcb5cfc"
    );
    assert_eq!(sdist.size, Some(189575));
    assert_eq!(
        sdist.upload_time.as_deref(),
        Some("2024-04-11T03:34:43.276Z")
    );
    assert_eq!(sdist.line, 28);
    assert!(sdist
        .url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://files.pythonhosted.org/packages/21/ed/")));
    let wheel = &idna.files[1];
    assert_eq!(wheel.filename.as_deref(), Some("idna-3.7-py3-none-any.whl"));
    assert_eq!(wheel.line, 30);
    assert_eq!(pin(&lock.pins, "tomli", "2.0.1").files.len(), 2);
}

#[test]
fn every_bad_uv_lock_names_file_and_line() {
    let h = "d".repeat(64);
    let pkg = |extra: &str| {
        format!("version = 1\n\n[[package]]\nname = \"x\"\nversion = \"1.0\"\n{extra}\n")
    };
    let cases: Vec<(String, &str, usize)> = vec![
        ("version = 2\n".into(), "version 2 is not supported", 1),
        ("[[package]]\nname = \"x\"\n".into(), "no top-level `version`", 0),
        ("version = 1\n[[package]\n".into(), "not a uv.lock", 2),
        (
            pkg("source = { registry = \"r\" }\nsdist = { url = \"https://h/x-1.0.tar.gz\" }"),
            "has no `hash`",
            7,
        ),
        (
            pkg(&format!("source = {{ registry = \"r\" }}\nwheels = [\n  {{ url = \"https://h/x-1.0-py3-none-any.whl\", hash = \"md5:{h}\" }},\n]")),
            "hash algorithm \"md5\" is not supported",
            8,
        ),
        (
            pkg("source = { registry = \"r\" }\nsdist = { url = \"https://h/x-1.0.tar.gz\", hash = \"sha256:00\" }"),
            "malformed sha256",
            7,
        ),
        (
            pkg("source = { git = \"https://github.com/x/x?rev=1#abc\" }"),
            "source kind `git` is not supported",
            4,
        ),
        (
            pkg("source = { path = \"dist/x-1.0.tar.gz\" }"),
            "source kind `path`",
            4,
        ),
        (pkg(""), "has no `source`", 4),
        (pkg("source = { registry = \"r\" }"), "lists no sdist and no wheels", 4),
        (
            "version = 1\n[[package]]\nname = \"x\"\nsource = { registry = \"r\" }\n".into(),
            "has no `version`",
            3,
        ),
    ];
    for (text, expect, line) in cases {
        let err = parse_uv_lock("locks/uv.lock", &text).expect_err(&text);
        let shown = err.to_string();
        assert!(shown.contains(expect), "{text}\n=> {shown}");
        assert_eq!(err.line, line, "{text}\n=> {shown}");
        assert!(shown.starts_with("locks/uv.lock"), "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
    }
}

#[test]
fn rewrite_points_every_file_at_the_mirror_and_changes_nothing_else() {
    let lock = parse_uv_lock("uv.lock", UV_LOCK).expect("parses");
    let names: Vec<(Sha256Digest, String)> = lock
        .pins
        .iter()
        .flat_map(|p| &p.files)
        .map(|f| (f.sha256, f.filename.clone().expect("filename")))
        .collect();
    let url_for = |d: &Sha256Digest| {
        names
            .iter()
            .find(|(x, _)| x == d)
            .map(|(x, n)| format!("http://mirror:8080/files/{}/{n}", x.to_hex()))
    };
    let out = rewrite_uv_lock("uv.lock", UV_LOCK, "http://mirror:8080/simple", &url_for)
        .expect("rewrites");
    assert!(!out.contains("pythonhosted") && !out.contains("pypi.org"));
    assert_eq!(
        out.matches("registry = \"http://mirror:8080/simple\"")
            .count(),
        2
    );
    let again = parse_uv_lock("uv.lock", &out).expect("parses");
    for (a, b) in lock.pins.iter().zip(&again.pins) {
        assert_eq!(a.hashes(), b.hashes());
        for (fa, fb) in a.files.iter().zip(&b.files) {
            assert_eq!((fa.size, &fa.upload_time), (fb.size, &fb.upload_time));
            assert_eq!(fb.url, url_for(&fb.sha256));
        }
    }
    // Only url and registry values changed: the lines are otherwise equal.
    assert_eq!(out.lines().count(), UV_LOCK.lines().count());
    for (a, b) in UV_LOCK.lines().zip(out.lines()) {
        if a != b {
            assert!(a.contains("url = ") || a.contains("registry = "), "{a}");
        }
    }

    // A file whose url and hash are on different lines (valid TOML, but not
    // how uv writes it) cannot be reached, and the error says where.
    let start = UV_LOCK.rfind("wheels = [").expect("tomli wheels");
    let wheel = &UV_LOCK[start..];
    let url = wheel
        .split("url = \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("url");
    let split = format!(
        "{}[[package.wheels]]\nurl = \"{url}\"\nhash = \"sha256:939de3e7a6161af0c887ef91b7d41a53e7c5a1ca976325f429cb46ea9bc30ecc\"\n",
        &UV_LOCK[..start]
    );
    parse_uv_lock("uv.lock", &split).expect("still a valid lock");
    let err = rewrite_uv_lock("uv.lock", &split, "http://m/simple", &url_for).expect_err("split");
    assert!(
        err.to_string()
            .starts_with("uv.lock:38: tomli 2.0.1: cannot rewrite"),
        "{err}"
    );
    // A file the snapshot does not hold is named.
    let none = |_: &Sha256Digest| None;
    let err = rewrite_uv_lock("uv.lock", UV_LOCK, "http://m/simple", &none).expect_err("none");
    assert!(
        err.to_string().contains("holds no file with sha256 028ff"),
        "{err}"
    );
    // Values that would need escaping are refused.
    assert!(rewrite_uv_lock("uv.lock", UV_LOCK, "http://m/\"x", &url_for).is_err());
}
