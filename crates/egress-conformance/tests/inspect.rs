//! The inspect_ai integration (integrations/inspect) with a real inspect_ai
//! (pinned in scripts/inspect.txt; scripts/setup-inspect), an eval on
//! `mockllm/model` whose samples run in the integration's `egress-netns`
//! sandbox provider: each sample's commands run inside a network namespace
//! the test made, whose only neighbour is a lab namespace with the real
//! egress-mirror (tests/common/netns.rs).
//!
//! - Sealed (the mirror is all the sandbox reaches): `egress_scan` records
//!   PASS, and `egress_verdict` scores the sample correct.
//! - Leaky, in inspect's own `local` sandbox: the host's network is
//!   reachable (inspect itself runs inside the sandbox namespace, now with a
//!   default route to the lab, where the canary answers, so that the
//!   "host" it probes is one the test made): the sample ends FAIL before
//!   the task's solver, scored incorrect, the failing checks named in the
//!   log; with `on_fail="eval"` the eval stops with `EgressScanFailed`.
//!
//! In both, the `.eval` log (read with `inspect log dump`) carries the
//! verdict and the SHA-256 of the scan's JSON report, which must equal the
//! report file's. Only documentation addresses, inside namespaces the test
//! creates and removes; needs root and `ip netns`.

mod common;

use common::netns::{unavailable, Topology, CANARY, CANARY_IP, MIRROR_IP, MIRROR_URL};
use common::s;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn inspect_dir() -> PathBuf {
    let dir = std::env::var_os("EGRESS_INSPECT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::workspace().join(".tools/inspect"));
    assert!(
        dir.join("bin/inspect").is_file(),
        "inspect_ai is not installed in {}: run scripts/setup-inspect (scripts/test does)",
        dir.display()
    );
    dir
}

const TASK: &str = r#"
import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

from egress_inspect import egress_scan, egress_verdict


@solver
def task_solver():
    """The task's own work: a command in the sandbox (no model call, so
    no tokenizer download)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await sandbox().exec(["echo", "hello from the sandbox"])
        state.output.completion = result.stdout.strip()
        return state

    return solve


@task
def egress_gate():
    return Task(
        dataset=[Sample(input="Install nothing; say hello.", target="hello")],
        solver=[
            egress_scan(
                mirror=os.environ["EGRESS_MIRROR"],
                binary=os.environ["EGRESS_BIN"],
                canary=[os.environ["EGRESS_CANARY"]],
                on_fail=os.environ["EGRESS_ON_FAIL"],
            ),
            task_solver(),
        ],
        scorer=egress_verdict(),
        sandbox=os.environ["EGRESS_SANDBOX"],
    )
"#;

/// `inspect eval` of the task in `t`'s sandbox; the log, as `inspect log
/// dump` prints it.
/// `sandbox` is `egress-netns` (inspect runs on the host, each sample's
/// commands in `t`'s sandbox namespace) or `local` (inspect itself runs
/// inside the sandbox namespace, so inspect's own `local` sandbox is a
/// host whose network is that namespace's).
fn eval(t: &Topology, sandbox: &str, on_fail: &str) -> Value {
    let inspect = inspect_dir();
    let dir = t.dir.join(format!("inspect-{sandbox}-{on_fail}"));
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(dir.join("task.py"), TASK).unwrap();
    let mut cmd = if sandbox == "local" {
        let mut c = Command::new(&t.ip);
        c.args(["netns", "exec", &t.sandbox])
            .arg(inspect.join("bin/inspect"));
        c
    } else {
        Command::new(inspect.join("bin/inspect"))
    };
    let o = cmd
        .args([
            "eval",
            "task.py",
            "--model",
            "mockllm/model",
            "--log-dir",
            s(&logs),
        ])
        .args(["--display", "plain", "--no-log-realtime"])
        .current_dir(&dir)
        .env("EGRESS_MIRROR", MIRROR_URL)
        .env("EGRESS_BIN", env!("CARGO_BIN_EXE_egress-conformance"))
        .env("EGRESS_CANARY", CANARY)
        .env("EGRESS_ON_FAIL", on_fail)
        .env("EGRESS_NETNS", &t.sandbox)
        .env("EGRESS_SANDBOX", sandbox)
        .env("INSPECT_LOG_FORMAT", "eval")
        .env("HOME", &dir)
        .env_remove("INSPECT_EVAL_MODEL")
        .output()
        .expect("inspect eval");
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let log = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "eval"))
        .unwrap_or_else(|| panic!("no .eval log: {said}"));
    let dump = Command::new(inspect.join("bin/inspect"))
        .args(["log", "dump", s(&log)])
        .output()
        .expect("inspect log dump");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    serde_json::from_slice(&dump.stdout).unwrap_or_else(|e| panic!("log dump: {e}: {said}"))
}

/// The scan's report file inside the sandbox (the namespace shares the
/// host's files), named by the sample's uuid.
fn report_digest(sample: &Value) -> String {
    let uuid = sample["uuid"].as_str().expect("sample uuid");
    let path = Path::new("/tmp")
        .join(format!("egress-scan-{uuid}"))
        .join("scan.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
    egress_model::Sha256Digest::of(&bytes).to_hex()
}

#[test]
fn the_scan_gates_each_sample_by_its_sandbox() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let mut t = Topology::new("inspect");
    t.start_mirror();

    // Sealed: the mirror is the one thing the sandbox reaches.
    let log = eval(&t, "egress-netns", "sample");
    assert_eq!(log["status"], "success", "{}", log["error"]);
    let sample = &log["samples"][0];
    let egress = &sample["metadata"]["egress"];
    assert_eq!(egress["verdict"], "PASS", "{egress}");
    assert_eq!(egress["report_sha256"], report_digest(sample).as_str());
    assert_eq!(sample["store"]["egress"]["verdict"], "PASS");
    assert_eq!(sample["scores"]["egress_verdict"]["value"], "C");
    // The task's own solver ran after the scan.
    assert!(
        sample["output"]["completion"]
            .as_str()
            .is_some_and(|c| !c.starts_with("egress")),
        "{}",
        sample["output"]
    );

    // Leaky, in inspect's own `local` sandbox: the host's network (here
    // the namespace inspect runs in) has a default route to the lab, where
    // the canary answers.
    t.start_canary(&format!("{CANARY_IP}:53"));
    t.ns(&t.sandbox, &["route", "add", "default", "via", MIRROR_IP]);
    let log = eval(&t, "local", "sample");
    assert_eq!(log["status"], "success", "{}", log["error"]);
    let sample = &log["samples"][0];
    let egress = &sample["metadata"]["egress"];
    assert_eq!(egress["verdict"], "FAIL", "{egress}");
    assert_eq!(egress["report_sha256"], report_digest(sample).as_str());
    let failing: Vec<&str> = egress["failing"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(
        failing.contains(&"R.canary") && failing.contains(&"S.routes"),
        "{failing:?}"
    );
    assert_eq!(sample["scores"]["egress_verdict"]["value"], "I");
    assert!(
        sample["output"]["completion"]
            .as_str()
            .is_some_and(|c| c.starts_with("egress sandbox-scan FAIL")),
        "the task's solver ran after a failed scan: {}",
        sample["output"]
    );

    // on_fail="eval": the eval stops.
    let log = eval(&t, "local", "eval");
    assert_eq!(log["status"], "error");
    let error = log["error"].to_string() + &log["samples"][0]["error"].to_string();
    assert!(
        error.contains("EgressScanFailed") || error.contains("egress sandbox-scan FAIL"),
        "{error}"
    );
}
