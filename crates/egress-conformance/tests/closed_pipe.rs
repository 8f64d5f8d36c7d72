//! A reader that goes away is a normal end: `egress-conformance | head -1`
//! and `egress-conformance check URL --format json | head -c 10` exit
//! quietly, with the run's own exit code, no panic and no error text.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};

/// Runs the binary with stdout to a pipe that is closed after `read` bytes
/// (0: before anything is written), then returns how it ended and its
/// stderr.
fn run_into_closed_pipe(args: &[&str], read: usize) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the binary");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = vec![0; read];
    stdout.read_exact(&mut first).expect("the first bytes");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    (child.wait().expect("wait"), stderr)
}

fn assert_quiet(what: &str, status: ExitStatus, stderr: &str, code: i32) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{what}: {stderr}"
    );
    assert_ne!(status.code(), Some(101), "{what}: {stderr}");
    assert_eq!(status.code(), Some(code), "{what}: {stderr}");
}

#[test]
fn builtin_run_into_a_closed_pipe() {
    for read in [0, 1, 10] {
        let (status, stderr) = run_into_closed_pipe(&[], read);
        assert_quiet(&format!("after {read} bytes"), status, &stderr, 0);
        assert!(stderr.is_empty(), "{stderr}");
    }
    let (status, stderr) = run_into_closed_pipe(&["--format", "json"], 10);
    assert_quiet("--format json", status, &stderr, 0);
}

#[test]
fn check_json_into_a_closed_pipe() {
    let canary = egress_references::pypi::builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot =
        egress_references::pypi::builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let mirror = egress_mirror::serve(std::sync::Arc::new(snapshot), "127.0.0.1:0").expect("serve");
    let url = format!("{}/simple/", mirror.base_url());
    for read in [0, 10] {
        let (status, stderr) = run_into_closed_pipe(
            &[
                "check",
                &url,
                "--absent",
                "ec-upstream-only",
                "--format",
                "json",
            ],
            read,
        );
        // The reference passes: exit 0, whether or not anyone read the report.
        assert_quiet(&format!("after {read} bytes"), status, &stderr, 0);
    }
}

/// Any other failure to write the results (here a full disk) is not quiet:
/// one line, exit 5.
#[test]
fn a_full_disk_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let o = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .stdout(full)
        .output()
        .expect("run the binary");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("egress-conformance: cannot write to standard output: "),
        "{stderr}"
    );
}
