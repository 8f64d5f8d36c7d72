//! The standalone canary, as a lab runs it: `egress-conformance canary` as
//! a process of its own, and `check --canary` against a mirror in front of
//! it (the lab scenario: the reference mirror serving a snapshot of the
//! canary's files, every sub-probe run, none skipped).

mod common;

use common::{s, tmpdir};
use egress_model::{Observation, Status, Url};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// `egress-conformance canary` as a child process, stopped by SIGTERM (to
/// its PID) on drop.
pub struct CanaryProcess {
    child: Child,
    /// What it printed: `index URL`, `registry URL`, `control URL`...
    pub lines: Vec<(String, String)>,
}

impl CanaryProcess {
    pub fn start(protocol: &str, secret_file: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
            .args(["canary", "--listen", "127.0.0.1:0", "--protocol", protocol])
            .args(["--secret-file", s(secret_file)])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the canary");
        let out = child.stdout.take().expect("stdout");
        let mut lines = Vec::new();
        for line in BufReader::new(out).lines() {
            let line = line.expect("a line");
            let (k, v) = line.split_once(": ").expect("key: value");
            lines.push((k.to_string(), v.to_string()));
            if k == "secret file" {
                break;
            }
        }
        Self { child, lines }
    }

    pub fn get(&self, key: &str) -> String {
        self.lines
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the canary printed no {key}: {:?}", self.lines))
    }

    /// The canary's origin, from its control URL.
    pub fn origin(&self) -> String {
        Url::parse(&self.get("control URL")).unwrap().origin()
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for CanaryProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn client(base: &str) -> egress_transcript::Client {
    egress_transcript::Client::new(Url::parse(base).unwrap(), Default::default(), None).unwrap()
}

/// The bytes of every file of `projects` the canary lists, fetched as any
/// client would (its JSON simple pages, then each file).
fn canary_files(index: &str, projects: &[&str]) -> Vec<(String, Vec<u8>)> {
    let c = client(index);
    let mut files = Vec::new();
    for p in projects {
        let page = Url::parse(index).unwrap().join(&format!("{p}/")).unwrap();
        let ex = c.get("page", page.path(), Some(egress_simple::JSON_V1));
        let body = ex.response.as_ref().and_then(|r| r.full_body()).unwrap();
        let page = egress_simple::parse_project_json(body).unwrap();
        for f in page.files {
            let url = Url::parse(&f.url).unwrap();
            let ex = c.get("file", url.path(), None);
            let bytes = ex.response.unwrap().full_body().unwrap().to_vec();
            files.push((f.filename, bytes));
        }
    }
    files
}

#[test]
fn a_canary_stops_cleanly_and_keeps_its_secret() {
    let dir = tmpdir("canary-secret");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let first = std::fs::read_to_string(&secret).unwrap();
    assert_eq!(first.trim_end().len(), 64);
    assert!(canary.get("index URL").ends_with("/simple/"));
    // Without the secret, the control API is an unknown route.
    let c = client(&canary.origin());
    let plan = c.get("plan", "/_egress-canary/plan", None);
    let unknown = c.get("unknown", "/_egress-canary/nothing-here", None);
    assert_eq!(plan.status(), Some(404));
    assert_eq!(
        plan.response.as_ref().unwrap().body_sha256,
        unknown.response.as_ref().unwrap().body_sha256
    );
    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    // A second start reads the same secret.
    let again = CanaryProcess::start("npm", &secret);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), first);
    assert!(again.get("registry URL").ends_with('/'));
    assert!(again.stop().success());
    // A secret file that others may read is refused.
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = common::run(&[
        "canary",
        "--listen",
        "127.0.0.1:0",
        "--secret-file",
        s(&secret),
    ]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn check_with_a_canary_that_does_not_answer_is_no_verdict() {
    let dir = tmpdir("canary-absent");
    let secret = dir.join("secret");
    std::fs::write(&secret, format!("{}\n", "ab".repeat(32))).unwrap();
    // Something that is not a canary: the control API answers 404.
    let canary = CanaryProcess::start("pypi", &dir.join("real-secret"));
    let o = common::run(&[
        "check",
        &canary.get("index URL"),
        "--canary",
        &canary.origin(),
        "--canary-secret",
        s(&secret),
    ]);
    assert_eq!(
        o.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--canary"), "{err}");
    // Nothing listens: the same.
    let o = common::run(&[
        "check",
        &canary.get("index URL"),
        "--canary",
        "http://127.0.0.1:9",
        "--canary-secret",
        s(&dir.join("real-secret")),
    ]);
    assert_eq!(o.status.code(), Some(7));
    drop(canary);
}

/// The lab scenario: the reference mirror serving a signed snapshot of the
/// canary's snapshot projects, nothing using the canary as its upstream;
/// `check --canary` runs every sub-probe and passes, with no contact.
#[test]
fn check_with_a_canary_runs_every_pypi_sub_probe() {
    let dir = tmpdir("canary-lab");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    let index = canary.get("index URL");
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    for (name, bytes) in canary_files(&index, &["ec-present", "ec-tripwire", "ec-template-text"]) {
        builder.add_dist(&name, bytes, None).unwrap();
    }
    let key = egress_references::builtin::demo_key();
    let snapshot = builder
        .build(
            "2026-01-01T00:00:00Z",
            Some(&key),
            "built-in-reference@egress-conformance",
        )
        .unwrap();
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, egress_references::builtin::demo_signers()).unwrap();
    let mirror = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0").unwrap();
    let o = common::run(&[
        "check",
        &format!("{}/simple/", mirror.base_url()),
        "--allowed-signers",
        s(&signers),
        "--present",
        "ec-present",
        "--canary",
        &canary.origin(),
        "--canary-secret",
        s(&secret),
        "--format",
        "json",
    ]);
    let report: egress_suite::Report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let not_pass: Vec<String> = report
        .probes
        .iter()
        .filter(|p| p.status != Status::Pass)
        .map(|p| format!("{} {}: {}", p.id, p.status, p.reason))
        .collect();
    assert!(not_pass.is_empty(), "{not_pass:#?}");
    assert_eq!(o.status.code(), Some(0));
    assert!(report.plan.upstream.is_some());
    // Contact observed as none: the whole run's log was read, and is empty.
    let contact = report.probe("P2.upstream-contact").unwrap();
    let logs: Vec<usize> = contact
        .observations
        .iter()
        .filter_map(|o| match o {
            Observation::UpstreamLog { requests, .. } => Some(requests.len()),
            _ => None,
        })
        .collect();
    assert_eq!(logs, [0], "{:?}", contact.observations);
    drop(mirror);
    assert!(canary.stop().success());
}
