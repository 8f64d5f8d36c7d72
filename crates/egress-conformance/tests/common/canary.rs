//! `egress-conformance canary` as a process of its own, and what a lab
//! fetches from it to seed a mirror.

use super::s;
use egress_model::Url;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `egress-conformance canary` as a child process, stopped by SIGTERM (to
/// its PID) on drop.
pub(crate) struct CanaryProcess {
    child: Child,
    /// What it printed: `index URL`, `registry URL`, `control URL`...
    pub(crate) lines: Vec<(String, String)>,
}

impl CanaryProcess {
    pub(crate) fn start(protocol: &str, secret_file: &Path) -> Self {
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

    pub(crate) fn get(&self, key: &str) -> String {
        self.lines
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the canary printed no {key}: {:?}", self.lines))
    }

    /// The canary's origin, from its control URL.
    pub(crate) fn origin(&self) -> String {
        Url::parse(&self.get("control URL")).unwrap().origin()
    }

    /// SIGTERM, then the exit status.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
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

pub(crate) fn client(base: &str) -> egress_transcript::Client {
    egress_transcript::Client::new(Url::parse(base).unwrap(), Default::default(), None).unwrap()
}

/// The bytes of every file of `projects` the canary lists, fetched as any
/// client would (its JSON simple pages, then each file).
pub(crate) fn canary_files(index: &str, projects: &[&str]) -> Vec<(String, Vec<u8>)> {
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

/// `(filename, bytes)` of every version of the npm `packages` the canary
/// at `registry` serves, fetched as npm would (packument, then each
/// `dist.tarball`).
pub(crate) fn canary_tarballs(registry: &str, packages: &[&str]) -> Vec<(String, Vec<u8>)> {
    let c = client(registry);
    let mut out = Vec::new();
    for p in packages {
        let path = format!("/{}", p.replacen('/', "%2f", 1));
        let ex = c.get("packument", &path, Some("application/json"));
        let body = ex.response.as_ref().and_then(|r| r.full_body()).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(body).unwrap();
        for v in doc["versions"].as_object().unwrap().values() {
            let url = Url::parse(v["dist"]["tarball"].as_str().unwrap()).unwrap();
            let name = url.path().rsplit('/').next().unwrap().to_string();
            let ex = c.get("tarball", url.path(), None);
            out.push((name, ex.response.unwrap().full_body().unwrap().to_vec()));
        }
    }
    out
}

/// `check URL --canary ORIGIN --canary-secret SECRET --format json --out
/// OUT` with `extra` flags (the protocol's): the JSON report, which
/// `report verify` must re-derive, and the exit code.
pub(crate) fn check_with(
    url: &str,
    extra: &[&str],
    canary: &CanaryProcess,
    secret: &Path,
    out: &Path,
) -> (egress_suite::Report, Option<i32>) {
    let origin = canary.origin();
    let mut args = vec![
        "check",
        url,
        "--canary",
        &origin,
        "--canary-secret",
        s(secret),
        "--format",
        "json",
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    let o = super::run(&args);
    let v = super::run(&["report", "verify", s(&out.join("report.json"))]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    let report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (report, o.status.code())
}

/// Every sub-probe of `report`, a line each, for assertion messages.
pub(crate) fn table(report: &egress_suite::Report) -> String {
    report
        .probes
        .iter()
        .map(|p| format!("{} {} {}", p.id, p.status, p.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many requests the upstream logged in each window of
/// `P2.upstream-contact`.
pub(crate) fn upstream_log_sizes(report: &egress_suite::Report) -> Vec<usize> {
    report
        .probe("P2.upstream-contact")
        .unwrap()
        .observations
        .iter()
        .filter_map(|o| match o {
            egress_model::Observation::UpstreamLog { requests, .. } => Some(requests.len()),
            _ => None,
        })
        .collect()
}
