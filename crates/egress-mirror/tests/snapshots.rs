//! Snapshots of the real `egress-mirror` binary: its help text and the
//! one-line error of each kind of bad start, with its exit code (2 usage,
//! 4 invalid snapshot, 5 cannot listen, 7 bad config file, 8 unusable TLS
//! certificate or key). Ports and temporary paths are filtered out.
//!
//! Run with `cargo test -p egress-mirror --test snapshots`; after an
//! intended change, `INSTA_UPDATE=always` rewrites them (review the diff).

#[allow(dead_code)]
mod common;

use common::{wheel, TempDir};
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use egress_testca::TestCa;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_omit_expression(true);
    let temp = std::env::temp_dir();
    let temp = temp
        .to_str()
        .expect("utf-8")
        .trim_end_matches('/')
        .to_string();
    for (pattern, replacement) in [
        (regex_escape(&temp), "[TEMP]".to_string()),
        (
            r"egress-mirror-snapshots-\d+-\d+".into(),
            "egress-mirror-snapshots-[PID]".into(),
        ),
        // Ephemeral ports have five digits; documented ones (8080) stay.
        (r"127\.0\.0\.1:\d{5}".into(), "127.0.0.1:[PORT]".into()),
        (r"[0-9a-f]{12,}".into(), "[HEX]".into()),
    ] {
        settings.add_filter(&pattern, replacement);
    }
    settings
}

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

/// A valid signed snapshot directory under `tmp`.
fn snapshot_dir(tmp: &Path) -> std::path::PathBuf {
    let w = wheel("ec-snap", "1.0.0", "A snapshot test wheel.\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).expect("add");
    let key = SigningKey::from_seed([7; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .expect("build");
    let dir = tmp.join("snap");
    snapshot.write_dir(&dir).expect("write");
    dir
}

#[test]
fn help_text() {
    let _guard = settings().bind_to_scope();
    let o = bin().arg("--help").output().expect("run");
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!("help", shown(&o));
}

#[test]
fn one_line_errors() {
    let _guard = settings().bind_to_scope();
    let tmp = TempDir::new("egress-mirror-snapshots");
    let dir = snapshot_dir(&tmp.0);
    let dir = dir.to_str().expect("utf-8");
    let config = tmp.0.join("mirror.toml");
    std::fs::write(&config, "lsiten = \"127.0.0.1:0\"\n").expect("write");
    let config = config.to_str().expect("utf-8");
    let half_tls = tmp.0.join("half-tls.toml");
    std::fs::write(&half_tls, "tls_key = \"server.key\"\n").expect("write");
    let half_tls = half_tls.to_str().expect("utf-8");
    // Relative to the config file's directory, not to the working directory.
    let relative_tls = tmp.0.join("relative-tls.toml");
    std::fs::write(
        &relative_tls,
        "tls_cert = \"missing.pem\"\ntls_key = \"server.key\"\n",
    )
    .expect("write");
    let relative_tls = relative_tls.to_str().expect("utf-8");
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = taken.local_addr().expect("addr").to_string();
    let ca = TestCa::new(&tmp.0);
    let other = ca.issue("other", "DNS:localhost");
    let cert = ca.server.cert.to_str().expect("utf-8");
    let key = ca.server.key.to_str().expect("utf-8");
    let other_key = other.key.to_str().expect("utf-8");
    // A PEM block of the right kind whose bytes are no key at all.
    let bad_key = tmp.0.join("bad.key");
    std::fs::write(
        &bad_key,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
    )
    .expect("write");
    let bad_key = bad_key.to_str().expect("utf-8");
    let broken = tmp.0.join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nMIIB\n").expect("write");
    let broken = broken.to_str().expect("utf-8");
    for (name, args) in [
        ("error-no-arguments", vec![]),
        ("error-unknown-flag", vec![dir, "--bogus"]),
        ("error-two-directories", vec![dir, "again"]),
        ("error-listen-without-value", vec![dir, "--listen"]),
        (
            "error-listen-not-an-address",
            vec![dir, "--listen=not an address"],
        ),
        ("error-bad-size", vec![dir, "--zero-copy-budget", "1GB"]),
        ("error-missing-snapshot", vec!["/nonexistent/egress/snap"]),
        ("error-config-unknown-key", vec![dir, "--config", config]),
        (
            "error-config-missing",
            vec![dir, "--config", "/nonexistent/egress/mirror.toml"],
        ),
        ("error-listen-taken", vec![dir, "--listen", &taken]),
        ("error-tls-cert-without-key", vec![dir, "--tls-cert", cert]),
        (
            "error-config-tls-key-without-cert",
            vec![dir, "--config", half_tls],
        ),
        (
            "error-config-tls-relative",
            vec![dir, "--config", relative_tls],
        ),
        (
            "error-tls-unreadable",
            vec![
                dir,
                "--tls-cert",
                "/nonexistent/egress/cert.pem",
                "--tls-key",
                key,
            ],
        ),
        (
            "error-tls-no-certificate",
            vec![dir, "--tls-cert", key, "--tls-key", key],
        ),
        (
            "error-tls-not-pem",
            vec![dir, "--tls-cert", broken, "--tls-key", key],
        ),
        (
            "error-tls-no-key",
            vec![dir, "--tls-cert", cert, "--tls-key", cert],
        ),
        (
            "error-tls-bad-key",
            vec![dir, "--tls-cert", cert, "--tls-key", bad_key],
        ),
        (
            "error-tls-key-mismatch",
            vec![dir, "--tls-cert", cert, "--tls-key", other_key],
        ),
    ] {
        let o = bin().args(&args).output().expect("run");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with("egress-mirror: "), "{name}: {stderr}");
        insta::assert_snapshot!(name, shown(&o));
    }
}
