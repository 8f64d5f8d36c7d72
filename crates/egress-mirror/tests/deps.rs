//! Replay-only by construction: nothing the mirror links can make an HTTP
//! request. Checked on the real dependency graph with `cargo tree`.

use std::process::Command;

// rustls is there for serving https (server side only).
const FORBIDDEN: [&str; 5] = [
    "egress-transcript",
    "hyper",
    "reqwest",
    "ureq",
    "curl",
];

#[test]
fn no_http_client_in_the_dependency_graph() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "egress-mirror",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("egress-http ")),
        "unexpected output:\n{stdout}"
    );
    for line in stdout.lines() {
        for bad in FORBIDDEN {
            assert!(!line.contains(bad), "egress-mirror depends on {line:?}");
        }
    }
}
