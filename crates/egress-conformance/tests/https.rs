//! `check` over https: the reference mirror behind a TLS front whose
//! certificate is issued by a test CA given with `--cacert`; without it the
//! certificate is not trusted and the run is inconclusive.

use egress_testca::TestCa;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Reads one request (head and Content-Length body) from the client.
fn read_request(s: &mut impl Read) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return buf;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return buf,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Terminates TLS and relays one request per connection to `backend`.
fn tls_front(ca: &TestCa, backend: String) -> u16 {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&ca.server.cert)
        .expect("pem")
        .map(|c| c.expect("cert"))
        .collect();
    let key = PrivateKeyDer::from_pem_file(&ca.server.key).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server config"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let cfg = cfg.clone();
            let backend = backend.clone();
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let req = read_request(&mut tls);
                if req.is_empty() {
                    return;
                }
                let Ok(mut up) = TcpStream::connect(&backend) else {
                    return;
                };
                let _ = up.write_all(&req);
                let mut resp = Vec::new();
                let _ = up.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = up.read_to_end(&mut resp);
                let _ = tls.write_all(&resp);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    port
}

#[test]
fn check_speaks_https_with_a_given_ca() {
    let dir = std::env::temp_dir().join(format!("egress-https-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let ca = TestCa::new(&dir);
    let canary = egress_references::pypi::builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot =
        egress_references::pypi::builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let mirror = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0").expect("serve");
    let port = tls_front(&ca, mirror.addr().to_string());
    std::fs::write(
        dir.join("allowed_signers"),
        egress_references::builtin::demo_signers(),
    )
    .expect("write");
    let url = format!("https://localhost:{port}/simple/");
    let bin = env!("CARGO_BIN_EXE_egress-conformance");

    let o = Command::new(bin)
        .args([
            "check",
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
