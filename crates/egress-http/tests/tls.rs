//! https through [`egress_http::tls_acceptor`]: HTTP/1.1 and HTTP/2 by
//! ALPN on one listener, the last byte of a file body held back until the
//! handler vouches for it on both, and the replies that need a raw stream
//! refused on HTTP/2.

use egress_http::{Body, Config, Handler, Reply, Request, Response, Server, ServerHandle};
use egress_testca::TestCa;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

const LEN: usize = 700 * 1024 + 3;

fn content() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 % 253) as u8).collect()
}

struct Files {
    path: PathBuf,
    vouch: AtomicBool,
    vouched: AtomicU32,
}

impl Handler for Files {
    fn handle(&self, req: Request) -> Reply {
        match req.target.as_str() {
            "/file" => {
                let file = File::open(&self.path).expect("open");
                Response::new(200)
                    .with_body(Body::File(Arc::new(file), LEN as u64))
                    .into()
            }
            "/bytes" => Response::text(200, &format!("{} {}\n", req.version, req.method)).into(),
            "/takeover" => Reply::Takeover(Response::new(200), Box::new(|_| {})),
            "/raw" => Reply::Raw(Box::new(|_| {})),
            _ => Response::text(404, "no\n").into(),
        }
    }

    fn vouch_for_file(&self, _response: &Response, _file: &File) -> bool {
        self.vouched.fetch_add(1, Ordering::SeqCst);
        self.vouch.load(Ordering::SeqCst)
    }
}

struct Fixture {
    dir: PathBuf,
    ca: TestCa,
    files: Arc<Files>,
    server: ServerHandle,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Delegates to the shared handler, so the test can flip its answer.
struct Shared(Arc<Files>);

impl Handler for Shared {
    fn handle(&self, req: Request) -> Reply {
        self.0.handle(req)
    }
    fn vouch_for_file(&self, response: &Response, file: &File) -> bool {
        self.0.vouch_for_file(response, file)
    }
}

fn fixture(tag: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("egress-http-tls-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let ca = TestCa::new(&dir);
    let path = dir.join("body");
    std::fs::write(&path, content()).expect("write");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&ca.server.cert)
        .expect("pem")
        .map(|c| c.expect("cert"))
        .collect();
    let key = PrivateKeyDer::from_pem_file(&ca.server.key).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("config");
    config.alpn_protocols = vec![
        egress_http::ALPN_H2.to_vec(),
        egress_http::ALPN_HTTP1.to_vec(),
    ];
    let files = Arc::new(Files {
        path,
        vouch: AtomicBool::new(true),
        vouched: AtomicU32::new(0),
    });
    let server = Server::bind_with(
        "127.0.0.1:0",
        Shared(Arc::clone(&files)),
        Config {
            acceptor: Some(egress_http::tls_acceptor(Arc::new(config))),
            ..Config::default()
        },
    )
    .expect("bind");
    Fixture {
        dir,
        ca,
        files,
        server,
    }
}

fn client_config(ca: &TestCa, alpn: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&ca.ca_cert).expect("pem") {
        roots.add(cert.expect("cert")).expect("root");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

/// HTTP/1.1 over TLS: everything the server sent before closing.
fn https1(addr: SocketAddr, ca: &TestCa, target: &str) -> Vec<u8> {
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let name = ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(client_config(ca, b"http/1.1"), name).expect("conn");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    write!(
        tls,
        "GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut buf = Vec::new();
    let _ = tls.read_to_end(&mut buf);
    buf
}

/// HTTP/2: the status, and the body or the error that ended it with the
/// bytes received before it.
fn h2(addr: SocketAddr, ca: &TestCa, target: &str) -> (u16, Result<Vec<u8>, usize>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let connector = tokio_rustls::TlsConnector::from(client_config(ca, b"h2"));
        let name = ServerName::try_from("localhost").expect("name");
        let tls = connector.connect(name, tcp).await.expect("handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (client, conn) = ::h2::client::handshake(tls).await.expect("h2");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.expect("ready");
        let req = http::Request::get(format!("https://localhost{target}"))
            .body(())
            .expect("request");
        let (response, _) = client.send_request(req, true).expect("send");
        let response = response.await.expect("response");
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            match chunk {
                Ok(chunk) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    bytes.extend_from_slice(&chunk);
                }
                Err(_) => return (status, Err(bytes.len())),
            }
        }
        (status, Ok(bytes))
    })
}

#[test]
fn one_listener_speaks_http2_and_http11_by_alpn() {
    let f = fixture("alpn");
    let (status, body) = h2(f.server.addr(), &f.ca, "/bytes");
    assert_eq!(status, 200);
    assert_eq!(body.expect("body"), b"HTTP/2 GET\n");
    let raw = https1(f.server.addr(), &f.ca, "/bytes");
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
    assert!(text.ends_with("HTTP/1.1 GET\n"), "{text}");
}

#[test]
fn a_file_body_is_sent_whole_when_vouched_for() {
    let f = fixture("vouched");
    let (status, body) = h2(f.server.addr(), &f.ca, "/file");
    assert_eq!(status, 200);
    assert!(body.expect("body") == content());
    let raw = https1(f.server.addr(), &f.ca, "/file");
    assert!(raw.ends_with(&content()));
    assert_eq!(f.files.vouched.load(Ordering::SeqCst), 2);
}

#[test]
fn the_last_byte_is_held_back_when_not_vouched_for() {
    let f = fixture("unvouched");
    f.files.vouch.store(false, Ordering::SeqCst);
    // HTTP/2: the stream is reset before the last byte.
    let (status, body) = h2(f.server.addr(), &f.ca, "/file");
    assert_eq!(status, 200);
    let got = body.expect_err("the body must end in an error");
    assert!(got < LEN, "{got} bytes of {LEN}");
    // HTTP/1.1 over TLS: the connection closes before the last byte.
    let raw = https1(f.server.addr(), &f.ca, "/file");
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4;
    assert!(raw.len() - end < LEN, "{} bytes of {LEN}", raw.len() - end);
    assert_eq!(f.files.vouched.load(Ordering::SeqCst), 2);
}

#[test]
fn replies_that_need_the_raw_stream_are_500_on_http2() {
    let f = fixture("takeover");
    for target in ["/takeover", "/raw"] {
        let (status, body) = h2(f.server.addr(), &f.ca, target);
        assert_eq!(status, 500, "{target}");
        assert!(String::from_utf8_lossy(&body.expect("body")).contains("raw connection"));
    }
    // Ordinary answers are unaffected.
    let (status, _) = h2(f.server.addr(), &f.ca, "/bytes");
    assert_eq!(status, 200);
}
