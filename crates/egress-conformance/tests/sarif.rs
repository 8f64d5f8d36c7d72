//! SARIF 2.1.0 from the main job, validated against the OASIS schema pinned
//! in schemas/sarif-2.1.0.json with check-jsonschema (pinned in
//! scripts/validators.txt, installed by scripts/setup-validators), and read
//! back: a rule per sub-probe with its doc text, a result per FAIL and
//! INCONCLUSIVE at the target's URL, carrying the digests of the evidence
//! as the saved report re-computes them.

use egress_model::Status;
use egress_suite::{digests, Report};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{run, s, tmpdir, workspace};

fn check_jsonschema() -> PathBuf {
    let dir = std::env::var_os("EGRESS_VALIDATORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/validators"));
    let bin = dir.join("bin/check-jsonschema");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup-validators (scripts/test does)",
        bin.display()
    );
    bin
}

/// check-jsonschema's verdict on `files` against the pinned schema:
/// (passed, what it printed).
fn validate(files: &[PathBuf]) -> (bool, String) {
    let o = Command::new(check_jsonschema())
        .arg("--schemafile")
        .arg(workspace().join("schemas/sarif-2.1.0.json"))
        .args(files)
        .output()
        .expect("run check-jsonschema");
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON")
}

/// One run of a log against the report it came from.
fn check_run(run: &Value, r: &Report) {
    let docs = r.plan.protocol().docs();
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), docs.len(), "a rule per sub-probe");
    for (rule, doc) in rules.iter().zip(&docs) {
        assert_eq!(rule["id"], doc.id.as_str());
        assert_eq!(rule["shortDescription"]["text"], doc.title);
        assert_eq!(rule["fullDescription"]["text"], doc.doc);
    }
    let results = run["results"].as_array().expect("results");
    let problems: Vec<_> = r
        .probes
        .iter()
        .filter(|p| matches!(p.status, Status::Fail | Status::Inconclusive))
        .collect();
    assert_eq!(
        results.len(),
        problems.len(),
        "{}: a result per FAIL and INCONCLUSIVE",
        r.target_name
    );
    for (res, rec) in results.iter().zip(problems) {
        assert_eq!(res["ruleId"], rec.id.as_str());
        let want = if rec.status == Status::Fail {
            "error"
        } else {
            "warning"
        };
        assert_eq!(res["level"], want);
        let i = res["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[i]["id"], rec.id.as_str());
        assert_eq!(
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r.plan.index_url.as_str()
        );
        assert!(res["message"]["text"]
            .as_str()
            .expect("message")
            .contains(&rec.reason));
        assert_eq!(
            res["properties"]["transcriptSha256"],
            digests::transcript(rec).to_hex().as_str()
        );
        let exchanges: Vec<String> = rec
            .exchanges
            .iter()
            .map(|e| digests::exchange(e).to_hex())
            .collect();
        assert_eq!(
            res["properties"]["exchangeSha256"],
            serde_json::json!(exchanges)
        );
    }
}

#[test]
fn the_main_jobs_sarif_validates_and_says_what_the_reports_say() {
    let dir = tmpdir("sarif-main-job");
    let o = run(&["--format", "sarif", "--out", s(&dir)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = dir.join("stdout.sarif.json");
    std::fs::write(&stdout, &o.stdout).expect("write");
    let mut files = vec![stdout.clone()];
    let mut reports = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("read --out") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|x| x == "sarif") {
            let report: Report =
                serde_json::from_value(read_json(&path.with_extension("json"))).expect("report");
            reports.push((path.clone(), report));
            files.push(path);
        }
    }
    let targets = 2 * egress_suite::Protocol::ALL.len();
    assert_eq!(
        reports.len(),
        targets,
        "a .sarif beside each (A) and (B) report"
    );
    let (valid, said) = validate(&files);
    assert!(valid, "the SARIF logs do not validate:\n{said}");
    for (path, report) in &reports {
        let log = read_json(path);
        assert_eq!(log["version"], "2.1.0");
        let runs = log["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 1);
        check_run(&runs[0], report);
    }
    // Standard output: one log, a run per report, in the main job's order.
    let all = read_json(&stdout);
    let runs = all["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), targets);
    for run in runs {
        let (_, report) = reports
            .iter()
            .find(|(_, r)| run["properties"]["target"] == r.target_name.as_str())
            .expect("a run per report");
        check_run(run, report);
    }
    let errors: usize = reports
        .iter()
        .flat_map(|(_, r)| &r.probes)
        .filter(|p| p.status == Status::Fail)
        .count();
    assert!(errors > 0, "the caching proxies fail sub-probes");

    // report render --format sarif gives the same log from the saved report.
    let b = dir.join("caching-proxy-b.sarif");
    let o = run(&[
        "report",
        "render",
        s(&dir.join("caching-proxy-b.json")),
        "--format",
        "sarif",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout, std::fs::read(&b).expect("read"));

    // A tampered report renders as a log of an unsuccessful run, no results.
    let mut tampered = read_json(&dir.join("reference-a.json"));
    tampered["outcome"] = Value::from("FAIL");
    let t = dir.join("tampered.json");
    std::fs::write(&t, serde_json::to_vec(&tampered).expect("json")).expect("write");
    let out = dir.join("tampered.sarif");
    let o = run(&[
        "report",
        "render",
        s(&t),
        "--format",
        "sarif",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let log = read_json(&out);
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        false
    );
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
    let (valid, said) = validate(&[out]);
    assert!(valid, "{said}");
}

#[test]
fn the_validator_refuses_a_log_the_schema_does_not_allow() {
    let dir = tmpdir("sarif-invalid");
    let bad = dir.join("bad.sarif");
    // A result without its message, and a level SARIF does not have.
    std::fs::write(
        &bad,
        r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"ruleId":"P1.x","level":"fatal"}]}]}"#,
    )
    .expect("write");
    let (valid, said) = validate(&[bad]);
    assert!(!valid, "{said}");
    assert!(said.contains("message") || said.contains("level"), "{said}");
}

#[test]
fn the_scan_and_check_from_sandbox_logs_validate() {
    let dir = tmpdir("sarif-scan");
    // A check report of the reference (A), from the main job's JSON.
    let o = run(&["--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let all = serde_json::from_slice::<Value>(&o.stdout).expect("JSON");
    let check: Report =
        serde_json::from_value(all["reports"][0].clone()).expect("the first report");
    let scan = common::scan::report("canary");
    let both = egress_suite::combined::Combined::new(check.clone(), scan.clone());
    let scan_json = dir.join("scan.json");
    let both_json = dir.join("report.json");
    std::fs::write(&scan_json, egress_sandbox::render::json(&scan)).expect("write");
    std::fs::write(&both_json, both.json()).expect("write");
    let mut logs = Vec::new();
    for saved in [&scan_json, &both_json] {
        let out = saved.with_extension("sarif");
        let o = run(&[
            "report",
            "render",
            s(saved),
            "--format",
            "sarif",
            "--out",
            s(&out),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        logs.push(out);
    }
    let (valid, said) = validate(&logs);
    assert!(valid, "{said}");
    let scan_log = read_json(&logs[0]);
    let both_log = read_json(&logs[1]);
    assert_eq!(both_log["runs"].as_array().expect("runs").len(), 2);
    check_run(&both_log["runs"][0], &check);
    for run in [&scan_log["runs"][0], &both_log["runs"][1]] {
        let results = run["results"].as_array().expect("results");
        let problems = scan
            .records
            .iter()
            .filter(|r| matches!(r.status, Status::Fail | Status::Inconclusive))
            .count();
        assert_eq!(results.len(), problems);
        let canary = results
            .iter()
            .find(|r| r["ruleId"] == "R.canary")
            .expect("R.canary's FAIL");
        assert_eq!(canary["level"], "error");
        assert_eq!(
            canary["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            scan.plan.mirror.as_str()
        );
    }
}
