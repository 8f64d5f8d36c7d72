//! The mirror over https, HTTP/2 and HTTP/1.1, in process.
//!
//! - A real HTTP/2 client (the h2 crate, a dev-dependency only) gets the
//!   same status, fields and bytes as HTTP/1.1 gets, for pages, evidence
//!   documents, a 404, HEAD, and a large file served from its verified file
//!   and from a sealed copy.
//! - Each HTTP/2 pseudo-header abuse is refused, one test each, through a
//!   raw frame writer (a real client will not send them): the stream is
//!   reset or answered 4xx, the handler never sees it, and the same
//!   connection's well-formed control request (sent first) is served 200.
//!   A refusal counts only next to that positive control.

#[allow(dead_code)]
mod common;

use common::{request, TempDir};
use egress_mirror::{LogSink, Mirror};
use egress_signing::SigningKey;
use egress_snapshot::{SnapshotBuilder, StoredSnapshot};
use egress_testca::TestCa;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A large blob, served from its file (or a sealed copy), never from memory.
const BIG: &str = "ec_h2-1.0.0.tar.gz";

fn big_bytes() -> Vec<u8> {
    (0..3 * 1024 * 1024 + 17)
        .map(|i: usize| (i * 131 % 251) as u8)
        .collect()
}

struct Fixture {
    _tmp: TempDir,
    ca: TestCa,
    wheel_url: String,
    big_url: String,
    dir: std::path::PathBuf,
}

/// The snapshot and CA the read-only tests share, made once (the
/// certificates and the snapshot are most of a test's time); each test
/// still starts its own server. A static is never dropped, so the directory
/// stays until the next run, which removes those of runs that have ended.
fn shared() -> &'static Fixture {
    static SHARED: OnceLock<Fixture> = OnceLock::new();
    SHARED.get_or_init(|| {
        const PREFIX: &str = "egress-mirror-h2-shared-";
        for entry in std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(PREFIX)
                .and_then(|rest| rest.split('-').next());
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        fixture("shared")
    })
}

fn fixture(tag: &str) -> Fixture {
    let tmp = TempDir::new(&format!("egress-mirror-h2-{tag}"));
    let w = common::wheel("ec-h2", "1.0.0", "served over HTTP/2\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    b.add_dist(BIG, big_bytes(), None).unwrap();
    let key = SigningKey::from_seed([3; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    let ca = TestCa::new(&tmp.0);
    let big = egress_model::Sha256Digest::of(&big_bytes());
    Fixture {
        wheel_url: format!("/files/{}/{}", w.sha256, w.filename),
        big_url: format!("/files/{big}/{BIG}"),
        ca,
        dir,
        _tmp: tmp,
    }
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn sink(&self) -> LogSink {
        let lines = Arc::clone(&self.0);
        Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string()))
    }

    fn requests(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(" request "))
            .cloned()
            .collect()
    }
}

fn mirror(f: &Fixture, budget: u64, log: &Log) -> Mirror {
    Mirror::from_store(Arc::new(StoredSnapshot::open(&f.dir).unwrap()))
        .zero_copy_budget(budget)
        .log_requests(true)
        .log_to(log.sink())
}

/// The mirror over https with the fixture's certificate.
fn serve_tls(f: &Fixture, budget: u64, log: &Log) -> egress_http::ServerHandle {
    let config = egress_mirror::tls::load(&f.ca.server.cert, &f.ca.server.key).unwrap();
    egress_mirror::serve_mirror_tls(mirror(f, budget, log), "127.0.0.1:0", config).unwrap()
}

fn client_config(ca: &TestCa, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&ca.ca_cert).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect(addr: SocketAddr, ca: &TestCa, alpn: &[&[u8]]) -> Tls {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(client_config(ca, alpn), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    // Finish the handshake, so the negotiated protocol is known.
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).unwrap();
    }
    tls
}

/// One HTTP/1.1 request over TLS with `Connection: close`: status, fields
/// (names lowercased) and body.
fn https1(
    addr: SocketAddr,
    ca: &TestCa,
    method: &str,
    target: &str,
    extra: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut tls = connect(addr, ca, &[b"http/1.1"]);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let extra: String = extra.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
    write!(
        tls,
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    let _ = tls.read_to_end(&mut buf);
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(buf[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let fields = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    (status, fields, buf[end + 4..].to_vec())
}

/// One request over HTTP/2 with the h2 crate: status, fields and body.
fn h2_get(
    addr: SocketAddr,
    ca: &TestCa,
    method: &str,
    target: &str,
    extra: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let connector = tokio_rustls::TlsConnector::from(client_config(ca, &[b"h2"]));
        let name = ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (client, conn) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.unwrap();
        let mut req = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost{target}"));
        for (n, v) in extra {
            req = req.header(*n, *v);
        }
        let (response, _) = client.send_request(req.body(()).unwrap(), true).unwrap();
        let response = response.await.unwrap();
        let status = response.status().as_u16();
        let fields = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            body.flow_control().release_capacity(chunk.len()).unwrap();
            bytes.extend_from_slice(&chunk);
        }
        (status, fields, bytes)
    })
}

/// A method, a target and extra fields.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>);

/// The fields both protocols must agree on.
fn comparable(fields: &[(String, String)]) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = fields
        .iter()
        .filter(|(n, _)| n != "connection" && n != "date")
        .cloned()
        .collect();
    kept.sort();
    kept
}

#[test]
fn http2_and_http11_get_the_same_answers_over_https() {
    let f = shared();
    for budget in [0, 1 << 30] {
        let log = Log::default();
        let server = serve_tls(f, budget, &log);
        let addr = server.addr();
        let cases: Vec<Case> = vec![
            ("GET", "/simple/".into(), vec![]),
            (
                "GET",
                "/simple/ec-h2/".into(),
                vec![("accept", "application/vnd.pypi.simple.v1+json")],
            ),
            ("GET", f.wheel_url.clone(), vec![]),
            ("GET", f.big_url.clone(), vec![]),
            ("HEAD", f.big_url.clone(), vec![]),
            ("GET", "/.well-known/egress-mirror/MANIFEST".into(), vec![]),
            ("GET", "/simple/not-there/".into(), vec![]),
            ("GET", "/simple/?q=1".into(), vec![]),
            ("DELETE", f.wheel_url.clone(), vec![]),
        ];
        for (method, target, extra) in &cases {
            let one = https1(addr, &f.ca, method, target, extra);
            let two = h2_get(addr, &f.ca, method, target, extra);
            assert_eq!(one.0, two.0, "{method} {target} (budget {budget})");
            assert_eq!(
                comparable(&one.1),
                comparable(&two.1),
                "{method} {target} (budget {budget})"
            );
            assert!(one.2 == two.2, "{method} {target}: bodies differ");
        }
        let big = h2_get(addr, &f.ca, "GET", &f.big_url, &[]);
        assert_eq!(big.0, 200);
        assert!(big.2 == big_bytes(), "the large file over HTTP/2");
        // Over plain HTTP/1.1 the same mirror gives the same bytes too.
        let plain =
            egress_mirror::serve_mirror(mirror(f, budget, &Log::default()), "127.0.0.1:0").unwrap();
        let r = request(plain.addr(), "GET", &f.big_url, &[]);
        assert!(r.body == big.2);
        // The log names HTTP/2 requests as it names any other.
        assert!(log
            .requests()
            .iter()
            .any(|l| l.contains(&format!("target={} status=200", f.big_url))));
    }
}

// ---------------------------------------------------------------- raw h2

/// The client connection preface.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK "literal header field without indexing, new name", no Huffman.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    assert!(name.len() < 127 && value.len() < 127);
    out.push(0x00);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}

fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        literal(&mut out, n, v);
    }
    out
}

/// What happened to one stream.
#[derive(Debug, Default)]
struct Outcome {
    /// The first byte of the response header block: 0x88 is `:status 200`,
    /// 0x8c 400, 0x8d 404 (HPACK static table); anything else is another
    /// status, sent as a literal.
    status_byte: Option<u8>,
    /// RST_STREAM's error code.
    reset: Option<u32>,
    /// GOAWAY's error code.
    goaway: Option<u32>,
    /// The server closed the connection before the stream ended.
    closed: bool,
    body: Vec<u8>,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.status_byte == Some(0x88) && self.reset.is_none()
    }

    /// Refused: reset, GOAWAY, or answered with a status other than 200
    /// (and then with a refusal's text, never a page).
    fn refused(&self) -> bool {
        self.reset.is_some()
            || self.goaway.is_some()
            || self.closed
            || self.status_byte.is_some_and(|b| b != 0x88)
    }
}

/// Opens an h2 connection, sends a well-formed control request on stream
/// 1 and `fields` on stream 3, and returns what became of each.
fn abuse(addr: SocketAddr, ca: &TestCa, fields: &[(&str, &str)]) -> (Outcome, Outcome) {
    let mut tls = connect(addr, ca, &[b"h2"]);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
    let mut out = PREFACE.to_vec();
    out.extend(frame(4, 0, 0, &[]));
    let control = block(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/simple/"),
    ]);
    out.extend(frame(1, 0x5, 1, &control));
    tls.write_all(&out).unwrap();
    tls.flush().unwrap();
    let mut outcomes = [Outcome::default(), Outcome::default()];
    let mut sent_abuse = false;
    let mut done = [false, false];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = Vec::new();
    'frames: while !(done[0] && done[1]) && Instant::now() < deadline {
        // One frame.
        while buf.len() < 9 || buf.len() < 9 + frame_len(&buf) {
            let mut chunk = [0u8; 16384];
            match tls.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => {
                    for (i, o) in outcomes.iter_mut().enumerate() {
                        o.closed = !done[i];
                    }
                    break 'frames;
                }
            }
        }
        let len = frame_len(&buf);
        let (kind, flags) = (buf[3], buf[4]);
        let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
        let payload = buf[9..9 + len].to_vec();
        buf.drain(..9 + len);
        let slot = match stream {
            1 => Some(0),
            3 => Some(1),
            _ => None,
        };
        match (kind, slot) {
            // SETTINGS from the server: acknowledge.
            (4, None) if flags & 1 == 0 => {
                tls.write_all(&frame(4, 1, 0, &[])).unwrap();
            }
            (7, _) => {
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                for (i, o) in outcomes.iter_mut().enumerate() {
                    if !done[i] {
                        o.goaway = Some(code);
                        done[i] = true;
                    }
                }
            }
            (1, Some(i)) => {
                outcomes[i].status_byte = payload.first().copied();
                done[i] |= flags & 1 != 0;
            }
            (0, Some(i)) => {
                outcomes[i].body.extend_from_slice(&payload);
                done[i] |= flags & 1 != 0;
            }
            (3, Some(i)) => {
                outcomes[i].reset = Some(u32::from_be_bytes([
                    payload[0], payload[1], payload[2], payload[3],
                ]));
                done[i] = true;
            }
            _ => {}
        }
        // The abuse goes out once the control request was answered.
        if done[0] && !sent_abuse {
            sent_abuse = true;
            tls.write_all(&frame(1, 0x5, 3, &block(fields))).unwrap();
            tls.flush().unwrap();
        }
    }
    let [a, b] = outcomes;
    (a, b)
}

fn frame_len(buf: &[u8]) -> usize {
    u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize
}

/// The abuse is refused, after the same connection served the control.
fn assert_refused(fields: &[(&str, &str)]) -> Outcome {
    let f = shared();
    let log = Log::default();
    let server = serve_tls(f, 0, &log);
    let (control, abused) = abuse(server.addr(), &f.ca, fields);
    assert!(control.ok(), "control not served: {control:?}");
    assert!(
        String::from_utf8_lossy(&control.body).contains("ec-h2"),
        "{control:?}"
    );
    assert!(abused.refused(), "{fields:?} was not refused: {abused:?}");
    assert!(
        !String::from_utf8_lossy(&abused.body).contains("ec-h2"),
        "{fields:?} got a page: {abused:?}"
    );
    // Only the control reached the handler (unless the refusal is the
    // handler's own 4xx, which is logged with its status).
    for line in log.requests() {
        assert!(
            line.contains("target=/simple/ status=200") || !line.contains("status=2"),
            "{fields:?} reached the handler and was served: {line}"
        );
    }
    abused
}

fn get(path: &str) -> Vec<(&str, &str)> {
    vec![
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
    ]
}

fn with(
    mut fields: Vec<(&'static str, &'static str)>,
    extra: &[(&'static str, &'static str)],
) -> Vec<(&'static str, &'static str)> {
    fields.extend_from_slice(extra);
    fields
}

#[test]
fn a_well_formed_request_on_the_abuse_stream_is_served() {
    // The harness itself: a good request in the abuse slot is served, so a
    // refusal below is the server's, not the harness's.
    let f = shared();
    let server = serve_tls(f, 0, &Log::default());
    let (control, good) = abuse(
        server.addr(),
        &f.ca,
        &with(get("/simple/ec-h2/"), &[("te", "trailers")]),
    );
    assert!(control.ok() && good.ok(), "{control:?} {good:?}");
    assert!(String::from_utf8_lossy(&good.body).contains(".whl"));
}

#[test]
fn connect_is_refused() {
    let o = assert_refused(&[(":method", "CONNECT"), (":authority", "localhost:443")]);
    assert!(
        o.reset.is_some() || String::from_utf8_lossy(&o.body).contains("CONNECT"),
        "{o:?}"
    );
}

#[test]
fn extended_connect_is_refused() {
    assert_refused(&[
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/simple/"),
    ]);
}

#[test]
fn absolute_form_path_is_refused() {
    let o = assert_refused(&get("https://localhost/simple/"));
    assert!(o.reset.is_some() || o.status_byte == Some(0x8c), "{o:?}");
}

#[test]
fn authority_form_path_is_refused() {
    let o = assert_refused(&get("localhost:443"));
    assert!(o.reset.is_some() || o.status_byte == Some(0x8c), "{o:?}");
}

#[test]
fn asterisk_path_is_refused() {
    assert_refused(&[
        (":method", "OPTIONS"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "*"),
    ]);
}

#[test]
fn authority_disagreeing_with_host_is_refused() {
    let o = assert_refused(&with(get("/simple/"), &[("host", "evil.example")]));
    assert!(o.reset.is_some() || o.status_byte == Some(0x8c), "{o:?}");
}

#[test]
fn two_host_fields_are_refused() {
    assert_refused(&with(
        get("/simple/"),
        &[("host", "localhost"), ("host", "evil.example")],
    ));
}

#[test]
fn missing_method_is_refused() {
    assert_refused(&[
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/simple/"),
    ]);
}

#[test]
fn missing_scheme_is_refused() {
    assert_refused(&[
        (":method", "GET"),
        (":authority", "localhost"),
        (":path", "/simple/"),
    ]);
}

#[test]
fn missing_path_is_refused() {
    assert_refused(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
    ]);
}

#[test]
fn duplicate_path_is_refused() {
    assert_refused(&with(get("/simple/"), &[(":path", "/simple/ec-h2/")]));
}

#[test]
fn duplicate_method_is_refused() {
    assert_refused(&with(get("/simple/"), &[(":method", "DELETE")]));
}

#[test]
fn pseudo_header_after_a_regular_field_is_refused() {
    assert_refused(&[
        (":method", "GET"),
        (":scheme", "https"),
        ("accept", "*/*"),
        (":path", "/simple/"),
    ]);
}

#[test]
fn status_pseudo_header_in_a_request_is_refused() {
    assert_refused(&with(get("/simple/"), &[(":status", "200")]));
}

#[test]
fn connection_field_is_refused() {
    assert_refused(&with(get("/simple/"), &[("connection", "keep-alive")]));
}

#[test]
fn transfer_encoding_field_is_refused() {
    assert_refused(&with(get("/simple/"), &[("transfer-encoding", "chunked")]));
}

#[test]
fn keep_alive_field_is_refused() {
    assert_refused(&with(get("/simple/"), &[("keep-alive", "timeout=5")]));
}

#[test]
fn proxy_connection_field_is_refused() {
    assert_refused(&with(
        get("/simple/"),
        &[("proxy-connection", "keep-alive")],
    ));
}

#[test]
fn upgrade_field_is_refused() {
    assert_refused(&with(get("/simple/"), &[("upgrade", "websocket")]));
}

#[test]
fn te_other_than_trailers_is_refused() {
    assert_refused(&with(get("/simple/"), &[("te", "gzip")]));
}

/// `stored.rs` shows the vouching on HTTP/1.1; HTTP/2 holds the same
/// answer path, so a snapshot file served over h2 is still one the store
/// verified.
#[test]
fn a_tampered_blob_is_a_500_over_http2_too() {
    let f = fixture("tamper");
    let big = egress_model::Sha256Digest::of(&big_bytes());
    let blob = f.dir.join(format!("blobs/sha256/{big}"));
    let mut bytes = std::fs::read(&blob).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&blob, &bytes).unwrap();
    let log = Log::default();
    let server = serve_tls(&f, 0, &log);
    let (status, _, body) = h2_get(server.addr(), &f.ca, "GET", &f.big_url, &[]);
    assert_eq!(status, 500);
    assert!(body != bytes && body.len() < 1000);
}

// ------------------------------------------------- HTTP/1.1 over TLS

/// Sends `raw` over TLS (ALPN http/1.1, never half-closing) and returns
/// everything the server sent before it closed.
fn https1_raw(addr: SocketAddr, ca: &TestCa, raw: &[u8]) -> Vec<u8> {
    let mut tls = connect(addr, ca, &[b"http/1.1"]);
    // The server may refuse (and close) before reading everything.
    let _ = tls.write_all(raw);
    let _ = tls.flush();
    let mut got = Vec::new();
    let _ = tls.read_to_end(&mut got);
    got
}

/// HTTP/1.1 over TLS is served by the same codec as plain connections: the
/// smuggling corpus gets the reference statuses, nothing smuggled behind a
/// refusal is served, while the smuggled request alone is (the control).
#[test]
fn the_smuggling_corpus_is_refused_over_tls_as_in_the_clear() {
    use egress_model::smuggling::{CORPUS_HOST, SMUGGLING_CORPUS};
    let f = shared();
    let server = serve_tls(f, 0, &Log::default());
    let addr = server.addr();
    let control = https1_raw(
        addr,
        &f.ca,
        format!("GET /simple/ HTTP/1.1\r\nHost: {CORPUS_HOST}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert!(control.starts_with(b"HTTP/1.1 200 "), "control not served");
    let threads: Vec<_> = SMUGGLING_CORPUS
        .iter()
        .map(|case| {
            let ca = f.ca.clone();
            std::thread::spawn(move || {
                let got = https1_raw(addr, &ca, &case.build("/simple/"));
                (case, got)
            })
        })
        .collect();
    for t in threads {
        let (case, got) = t.join().unwrap();
        let text = String::from_utf8_lossy(&got);
        let want = format!("HTTP/1.1 {} ", case.reference_status);
        assert!(text.starts_with(&want), "{}: {text:?}", case.id);
        assert_eq!(
            text.matches("HTTP/1.1 ").count(),
            1,
            "{}: more than one answer: {text:?}",
            case.id
        );
    }
}
