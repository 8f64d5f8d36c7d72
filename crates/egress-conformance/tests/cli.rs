//! The real binary, as a user runs it: exit codes, one-line errors, output
//! formats, and `report verify` on what `--out` wrote.

use egress_model::Status;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run the binary")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("egress-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn stderr_line(o: &Output) -> String {
    let s = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        s.trim_end().lines().count(),
        1,
        "error must be one line: {s:?}"
    );
    s
}

#[test]
fn no_arguments_runs_the_references_and_prints_the_matrix() {
    let out = tmpdir("main");
    let o = run(&["--out", out.to_str().expect("utf8")]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Discrimination matrix"));
    assert!(text.contains("reference (A)") && text.contains("caching proxy (B)"));
    for p in ["P1 digest binding", "P6 no control channel"] {
        let row = text.lines().rfind(|l| l.starts_with(p)).expect("row");
        assert!(
            row.contains("PASS") && row.contains("FAIL") && row.trim_end().ends_with("yes"),
            "{row}"
        );
    }
    for f in [
        "reference-a.json",
        "reference-a.txt",
        "reference-a.junit.xml",
        "caching-proxy-b.json",
        "matrix.md",
        "matrix.txt",
    ] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    // No temporary files are left behind.
    for e in std::fs::read_dir(&out).expect("dir") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "left over: {name}");
    }
    let v = run(&["report", "verify", out.to_str().expect("utf8")]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    assert!(String::from_utf8_lossy(&v.stdout).contains("all agree"));

    // An edited report is caught, and the changed verdict is named.
    let path = out.join("reference-a.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let probes = json["probes"].as_array_mut().expect("probes");
    let rec = probes
        .iter_mut()
        .find(|p| p["id"] == "P6.trace")
        .expect("P6.trace");
    rec["exchanges"][0]["response"]["status"] = serde_json::json!(200);
    std::fs::write(&path, serde_json::to_vec(&json).expect("ser")).expect("write");
    let v = run(&["report", "verify", path.to_str().expect("utf8")]);
    assert_eq!(v.status.code(), Some(1));
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(text.contains("P6.trace: recorded PASS"), "{text}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn json_and_junit_formats_are_well_formed() {
    let o = run(&["--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json on stdout");
    // PyPI (A) and (B), then npm, apt, cargo and the Hub, each (A) and (B).
    let reports = v["reports"].as_array().expect("reports");
    let protocols: Vec<&str> = reports
        .iter()
        .filter_map(|r| r["plan"]["protocol"].as_str())
        .collect();
    assert_eq!(
        protocols,
        ["pypi", "pypi", "npm", "npm", "apt", "apt", "cargo", "cargo", "hf", "hf"]
    );
    let o = run(&["--format", "junit"]);
    let xml = String::from_utf8_lossy(&o.stdout);
    assert!(xml.starts_with("<?xml"));
    assert_eq!(xml.matches("<testsuite ").count(), 10);
    assert_eq!(
        xml.matches("<testcase ").count(),
        2 * egress_suite::pypi::TABLE.len()
            + 2 * egress_suite::npm::TABLE.len()
            + 2 * egress_suite::apt::TABLE.len()
            + 2 * egress_suite::cargo::TABLE.len()
            + 2 * egress_suite::hf::TABLE.len()
    );
    assert!(xml.contains("<failure message="));
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        vec!["check"],
        vec!["check", "ftp://x/"],
        vec!["check", "http://127.0.0.1:1/", "--format", "yaml"],
        vec!["check", "http://127.0.0.1:1/", "--protocol", "gopher"],
        vec!["check", "http://127.0.0.1:1/", "--present", "../etc"],
        vec!["check", "http://127.0.0.1:1/", "--timeout", "0"],
        vec!["frobnicate"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let line = stderr_line(&o);
        assert!(line.starts_with("egress-conformance: "), "{line}");
    }
}

#[test]
fn bad_input_files_exit_4() {
    let missing = Path::new("/nonexistent/egress/allowed_signers");
    let o = run(&[
        "check",
        "http://127.0.0.1:1/",
        "--allowed-signers",
        missing.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr_line(&o).contains("--allowed-signers"));
    let dir = tmpdir("bad");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let junk = dir.join("allowed_signers");
    std::fs::write(&junk, "this is not an allowed signers line\n").expect("write");
    let o = run(&[
        "check",
        "http://127.0.0.1:1/",
        "--allowed-signers",
        junk.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(4));
    stderr_line(&o);
    let report = dir.join("report.json");
    std::fs::write(&report, "{\"not\": \"a report\"}").expect("write");
    let o = run(&["report", "verify", report.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr_line(&o).contains("not an egress-conformance report"));
    let o = run(&[
        "check",
        "https://127.0.0.1:1/",
        "--cacert",
        junk.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(4));
    stderr_line(&o);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_exit_codes_follow_the_verdicts() {
    // Unreachable: inconclusive.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let o = run(&[
        "check",
        &format!("http://127.0.0.1:{port}/"),
        "--timeout",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(3));

    // 404 to everything: inconclusive, never conformant.
    let h = egress_references::hostile::start(egress_references::hostile::Hostile::Everything404)
        .expect("start");
    let o = run(&["check", &h.base_url(), "--present", "ec-present"]);
    assert_eq!(o.status.code(), Some(3));

    // The reference mirror passes, the caching proxy fails.
    let canary = egress_references::pypi::builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot =
        egress_references::pypi::builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let dir = tmpdir("signers");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, egress_references::builtin::demo_signers()).expect("write");
    let mirror = egress_mirror::serve(std::sync::Arc::new(snapshot), "127.0.0.1:0").expect("serve");
    let out = dir.join("out");
    let o = run(&[
        "check",
        &format!("{}/simple/", mirror.base_url()),
        "--allowed-signers",
        signers.to_str().expect("utf8"),
        "--absent",
        "ec-upstream-only",
        "--verbose",
        "--out",
        out.to_str().expect("utf8"),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("P5.signature") && text.contains("signed by"),
        "{text}"
    );
    assert!(out.join("report.json").is_file() && out.join("report.junit.xml").is_file());
    // Without --destructive the plan says so, and P6.vendor-routes held the
    // destructive vendor routes back; with it, every route is sent.
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("read"))
            .expect("json");
    assert_eq!(saved["plan"]["destructive"], false);
    let vendor = |r: &serde_json::Value| -> (String, String) {
        let p = r["probes"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["id"] == "P6.vendor-routes"))
            .expect("P6.vendor-routes");
        (
            p["status"].as_str().unwrap_or_default().to_string(),
            p["reason"].as_str().unwrap_or_default().to_string(),
        )
    };
    let (status, reason) = vendor(&saved);
    assert!(
        status == "PASS" && reason.contains("give --destructive"),
        "{reason}"
    );
    let o = run(&[
        "check",
        &format!("{}/simple/", mirror.base_url()),
        "--allowed-signers",
        signers.to_str().expect("utf8"),
        "--absent",
        "ec-upstream-only",
        "--destructive",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let all: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(all["plan"]["destructive"], true);
    let (status, reason) = vendor(&all);
    assert!(
        status == "PASS" && !reason.contains("give --destructive"),
        "{reason}"
    );

    let up = url_of(&canary.index_url());
    let proxy = egress_references::pypi::proxy::CachingProxy::start(up).expect("proxy");
    let report = dir.join("proxy-report");
    let o = run(&[
        "check",
        &proxy.index_url(),
        "--absent",
        "ec-upstream-only",
        "--out",
        report.to_str().expect("utf8"),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    // Short by default: the predicates, then one line per FAIL or
    // INCONCLUSIVE with its sub-probe and reason, within 60 lines.
    assert!(text.lines().count() <= 60, "{text}");
    let saved: egress_suite::Report =
        serde_json::from_slice(&std::fs::read(report.join("report.json")).expect("report"))
            .expect("json");
    let problems: Vec<&str> = saved
        .probes
        .iter()
        .filter(|p| matches!(p.status, Status::Fail | Status::Inconclusive))
        .map(|p| p.id.as_str())
        .collect();
    assert!(!problems.is_empty());
    let shown = problems
        .iter()
        .filter(|id| text.lines().any(|l| l.contains(&format!(" {id} "))))
        .count();
    assert!(
        shown == problems.len() || text.contains(&format!("and {} more", problems.len() - shown)),
        "{shown} of {} problems shown, and no line says how many more: {text}",
        problems.len()
    );
    for (pid, _) in egress_suite::PREDICATES {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{pid} "))),
            "{pid}: {text}"
        );
    }
    let verbose = run(&[
        "check",
        &proxy.index_url(),
        "--absent",
        "ec-upstream-only",
        "-v",
    ]);
    assert!(String::from_utf8_lossy(&verbose.stdout).lines().count() > 100);
    let _ = std::fs::remove_dir_all(&dir);
}

fn url_of(s: &str) -> egress_model::Url {
    egress_model::Url::parse(s).expect("url")
}

#[test]
fn sandbox_scan_usage_errors_exit_2_with_one_line_and_scan_nothing() {
    // Each is refused before any file is read or any packet sent.
    for (args, needle) in [
        (vec!["sandbox-scan"], "--mirror"),
        (
            vec!["sandbox-scan", "--mirror", "ftp://198.51.100.1/"],
            "--mirror ftp://198.51.100.1/",
        ),
        (
            vec![
                "sandbox-scan",
                "--mirror",
                "http://198.51.100.1/",
                "--canary",
                "203.0.113.1",
            ],
            "--canary 203.0.113.1: give an IP address and a port",
        ),
        (
            vec![
                "sandbox-scan",
                "--mirror",
                "http://198.51.100.1/",
                "--canary-zone",
                "a..b",
            ],
            "--canary-zone a..b",
        ),
        (
            vec![
                "sandbox-scan",
                "--mirror",
                "http://198.51.100.1/",
                "--lockfiles",
                "/nonexistent/locks",
            ],
            "--lockfiles /nonexistent/locks: not a directory",
        ),
        (
            vec!["canary", "--listen", "127.0.0.1:0", "--dns", "53"],
            "--dns 53",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let line = stderr_line(&o);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    // An unreadable CA file is a bad input (4), found before any scan.
    let o = run(&[
        "sandbox-scan",
        "--mirror",
        "https://198.51.100.1/",
        "--cacert",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(o.status.code(), Some(4));
    assert!(o.stdout.is_empty());
    assert!(stderr_line(&o).contains("--cacert /nonexistent/ca.pem"));
}
