//! `check` over https against the mirror's own TLS (`--tls-cert/--tls-key`,
//! here its library form): the certificate is issued by a test CA given
//! with `--cacert`; without it the certificate is not trusted and the run
//! is inconclusive.

use egress_testca::TestCa;
use std::process::Command;
use std::sync::Arc;

#[test]
fn check_speaks_https_with_a_given_ca() {
    let dir = std::env::temp_dir().join(format!("egress-https-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let ca = TestCa::new(&dir);
    let canary = egress_references::pypi::builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot =
        egress_references::pypi::builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    snapshot.check().expect("a consistent snapshot");
    let tls = egress_mirror::tls::load(&ca.server.cert, &ca.server.key).expect("certificate");
    let mirror = egress_mirror::serve_mirror_tls(
        egress_mirror::Mirror::new(Arc::new(snapshot)),
        "127.0.0.1:0",
        tls,
    )
    .expect("serve");
    std::fs::write(
        dir.join("allowed_signers"),
        egress_references::builtin::demo_signers(),
    )
    .expect("write");
    let url = format!("https://localhost:{}/simple/", mirror.addr().port());
    let bin = env!("CARGO_BIN_EXE_egress-conformance");

    let o = Command::new(bin)
        .args([
            "check",
            "--verbose",
            &url,
            "--cacert",
            ca.ca_cert.to_str().expect("utf-8"),
            "--allowed-signers",
            "allowed_signers",
            "--absent",
            "ec-upstream-only",
        ])
        .current_dir(&dir)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("C.file"), "{text}");
    for p in ["P1", "P2", "P3", "P4", "P5", "P6"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{p} ")) && l.contains(": PASS")),
            "{p}: {text}"
        );
    }

    // Over https the mirror speaks HTTP/2 by ALPN, and refuses every
    // HTTP/2 case of P3.h2-smuggling.
    assert!(
        text.lines().any(|l| l.contains("PASS")
            && l.contains("P3.h2-smuggling")
            && l.contains("HTTP/2 by ALPN")),
        "{text}"
    );

    // Without the CA the certificate is not trusted: nothing can be judged.
    let o = Command::new(bin)
        .args(["check", &url, "--timeout", "5"])
        .current_dir(&dir)
        .output()
        .expect("run");
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("TLS handshake failed"));
    let _ = std::fs::remove_dir_all(&dir);
}
