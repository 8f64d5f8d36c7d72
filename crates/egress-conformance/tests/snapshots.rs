//! Snapshots of the real binary, as a user sees it: every help text, the
//! one-line errors for bad input with their exit codes, and the built-in
//! run's text report. Ports, markers, digests, timings and temporary paths
//! are filtered out, so a snapshot changes only when what a user reads does.
//!
//! Run with `cargo test -p egress-conformance --test snapshots`; after an
//! intended change, `INSTA_UPDATE=always cargo test ... --test snapshots`
//! rewrites them (review the diff before committing). With `CI=true` a
//! mismatch fails instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
}

/// An empty scratch directory of this test run.
fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("egress-snap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// The filters, as uv's `uv_snapshot!` applies them: whatever differs from
/// one run to the next becomes a placeholder.
fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_omit_expression(true);
    let temp = std::env::temp_dir();
    let temp = s(&temp).trim_end_matches('/').to_string();
    for (pattern, replacement) in [
        (regex_escape(&temp), "[TEMP]".to_string()),
        (
            r"egress-snap-([a-z-]+)-\d+".into(),
            "egress-snap-$1-[PID]".into(),
        ),
        // Ephemeral ports have five digits; documented ones (8080) stay.
        (r"127\.0\.0\.1:\d{5}".into(), "127.0.0.1:[PORT]".into()),
        (r"localhost:\d{5}".into(), "localhost:[PORT]".into()),
        (r"ecm[0-9a-f]{1,16}".into(), "[MARKER]".into()),
        (r"sha512-[A-Za-z0-9+/]+=*".into(), "sha512-[B64]".into()),
        (
            r"SHA256:[A-Za-z0-9+/]{43}".into(),
            "SHA256:[FINGERPRINT]".into(),
        ),
        (r"[0-9a-f]{12,}".into(), "[HEX]".into()),
        (r"\b\d+(\.\d+)?\s?(ns|µs|us|ms)\b".into(), "[TIME]".into()),
        (r"\b\d+\.\d+\s?s\b".into(), "[TIME]".into()),
        // Body sizes: npm packuments carry ECDSA signatures, whose DER
        // encoding is 70 to 72 bytes long from one run to the next.
        (r"\b\d+ bytes\b".into(), "[N] bytes".into()),
        // Places in the canary's log: a proxy's own fetches may come first.
        (r"request #\d+".into(), "request #[N]".into()),
    ] {
        settings.add_filter(&pattern, replacement);
    }
    settings
}

/// Exit code, stdout and stderr of one run, as a snapshot shows them.
fn shown(o: &Output) -> String {
    format!(
        "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        o.status
            .code()
            .map_or_else(|| "signal".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run the binary")
}

#[test]
fn help_texts() {
    let _guard = settings().bind_to_scope();
    for (name, args) in [
        ("help", &["--help"][..]),
        ("help-check", &["check", "--help"]),
        ("help-report", &["report", "--help"]),
        ("help-report-verify", &["report", "verify", "--help"]),
        ("help-key", &["key", "--help"]),
        ("help-key-generate", &["key", "generate", "--help"]),
        ("help-snapshot", &["snapshot", "--help"]),
        ("help-snapshot-build", &["snapshot", "build", "--help"]),
        ("help-snapshot-verify", &["snapshot", "verify", "--help"]),
        ("help-testbed", &["testbed", "--help"]),
        ("help-kit", &["kit", "--help"]),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        insta::assert_snapshot!(name, shown(&o));
    }
}

/// Bad input of every kind: one line on stderr, and the exit code that says
/// what kind (2 usage, 4 bad input file).
#[test]
fn one_line_errors() {
    let _guard = settings().bind_to_scope();
    let dir = tmpdir("errors");
    let report = dir.join("report.json");
    std::fs::write(&report, "{\"not\": \"a report\"}").expect("write");
    let requirements = dir.join("requirements.txt");
    std::fs::write(&requirements, "-éx\n").expect("write");
    let uv_lock = dir.join("uv.lock");
    std::fs::write(&uv_lock, "version = 1\n[[package]]\nname = \"é\"\n").expect("write");
    let npm_lock = dir.join("package-lock.json");
    std::fs::write(&npm_lock, "{\"lockfileVersion\": 1}").expect("write");
    let key = dir.join("key");
    let o = run(&["key", "generate", "--out", s(&key)]);
    assert_eq!(o.status.code(), Some(0), "{}", shown(&o));
    let out = dir.join("snap");
    let build = |more: &[&str]| {
        let mut args = vec![
            "snapshot",
            "build",
            "--index-url",
            "http://127.0.0.1:1/simple/",
            "--sign-key",
            s(&key),
        ];
        args.extend_from_slice(more);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let mut cases: Vec<(&str, Vec<String>)> = vec![
        ("error-unknown-command", vec!["frobnicate".into()]),
        ("error-check-without-url", vec!["check".into()]),
        (
            "error-check-ftp-url",
            vec!["check".into(), "ftp://x/".into()],
        ),
        (
            "error-check-bad-format",
            ["check", "http://127.0.0.1:1/", "--format", "yaml"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "error-check-missing-signers",
            [
                "check",
                "http://127.0.0.1:1/",
                "--allowed-signers",
                "/nonexistent/egress/allowed_signers",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "error-report-verify-not-a-report",
            vec!["report".into(), "verify".into(), s(&report).into()],
        ),
        (
            "error-report-verify-missing",
            ["report", "verify", "/nonexistent/egress/report.json"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "error-key-generate-exists",
            vec![
                "key".into(),
                "generate".into(),
                "--out".into(),
                s(&key).into(),
            ],
        ),
        (
            "error-snapshot-verify-missing",
            ["snapshot", "verify", "/nonexistent/egress/snapshot"]
                .map(String::from)
                .to_vec(),
        ),
    ];
    cases.push((
        "error-snapshot-build-out-without-value",
        build(&["--requirements", s(&requirements), "--out"]),
    ));
    for (name, lock) in [
        (
            "error-snapshot-build-bad-requirements",
            ["--requirements", s(&requirements)],
        ),
        (
            "error-snapshot-build-bad-uv-lock",
            ["--uv-lock", s(&uv_lock)],
        ),
        (
            "error-snapshot-build-bad-npm-lock",
            ["--npm-lock", s(&npm_lock)],
        ),
    ] {
        let mut args = build(&lock);
        args.extend(["--out".into(), s(&out).into()]);
        if name.ends_with("npm-lock") {
            args.extend(["--npm-registry-url".into(), "http://127.0.0.1:1/".into()]);
        }
        cases.push((name, args));
    }
    for (name, args) in cases {
        let o = bin().args(&args).output().expect("run the binary");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(
            stderr.starts_with("egress-conformance: "),
            "{name}: {stderr}"
        );
        insta::assert_snapshot!(name, shown(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The built-in run's text output: both pairs of reports and their
/// matrices, verdict by verdict.
#[test]
fn builtin_run_text_report() {
    let _guard = settings().bind_to_scope();
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", shown(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines = stdout.lines().count();
    assert!(lines < 60, "the main job prints {lines} lines:\n{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    insta::assert_snapshot!("builtin-run-text", shown(&o));
}

#[test]
fn builtin_run_verbose_text_report() {
    let _guard = settings().bind_to_scope();
    let o = run(&["--verbose"]);
    assert_eq!(o.status.code(), Some(0), "{}", shown(&o));
    insta::assert_snapshot!("builtin-run-verbose", shown(&o));
}

#[test]
fn builtin_run_colours_only_when_asked_off_a_terminal() {
    let o = run(&["--color", "always"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("\x1b[32mPASS\x1b[0m"), "{stdout}");
    let o = run(&["--color", "never"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains('\x1b'));
    let o = run(&["--color", "sometimes"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("auto") && stderr.contains("never"),
        "{stderr}"
    );
}
