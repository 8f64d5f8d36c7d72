//! Fixture (B), the caching proxy: it does everything a conformant mirror
//! must not, and these tests check that it really does.

use egress_model::{Exchange, Sha256Digest, Upstream, Url};
use egress_references::pypi::canary::{self, Canary};
use egress_references::CachingProxy;
use egress_transcript::{Client, Limits, Request};
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod common;

use common::{body, page, JSON};

struct Setup {
    canary: Canary,
    proxy: CachingProxy,
    client: Client,
}

fn setup() -> Setup {
    let canary = Canary::start().unwrap();
    let proxy = CachingProxy::start(Url::parse(&canary.index_url()).unwrap()).unwrap();
    let client = Client::new(
        Url::parse(&proxy.base_url()).unwrap(),
        Limits::default(),
        None,
    )
    .unwrap();
    Setup {
        canary,
        proxy,
        client,
    }
}

fn get_file(c: &Client, path: &str) -> Exchange {
    for _ in 0..10 {
        let ex = c.get("file", path, None);
        if ex.status() != Some(302) {
            return ex;
        }
    }
    panic!("{path} always redirected");
}

fn targets_since(canary: &Canary, mark: u64) -> Vec<String> {
    canary
        .requests_since(mark)
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

#[test]
fn serves_upstream_pages_and_files_through_itself() {
    let s = setup();
    let mark = s.canary.mark();
    for accept in [JSON, "text/html"] {
        let page = page(&s.client, canary::PRESENT, accept);
        assert_eq!(page.files.len(), 3);
        for file in &page.files {
            assert!(
                file.url.starts_with("/packages/"),
                "rewritten: {}",
                file.url
            );
            let bytes = body(&get_file(&s.client, &file.url));
            assert_eq!(
                file.hashes.get("sha256"),
                Some(&Sha256Digest::of(&bytes).to_hex())
            );
            // Upstream's path is kept.
            assert_eq!(
                s.canary.file_path(&file.filename).as_deref(),
                Some(file.url.as_str())
            );
        }
    }
    let seen = targets_since(&s.canary, mark);
    // Pages are fetched every time; files once, then from the cache.
    assert_eq!(
        seen.iter()
            .filter(|t| *t == "GET /simple/ec-present/")
            .count(),
        2,
        "{seen:?}"
    );
    for dist in [
        "ec_present-1.0.0-py3-none-any.whl",
        "ec_present-1.0.0.tar.gz",
    ] {
        let path = s.canary.file_path(dist).unwrap();
        let n = seen.iter().filter(|t| **t == format!("GET {path}")).count();
        assert!(n >= 1, "{seen:?}");
    }

    // The index, the query string passed through, an unacceptable Accept.
    let ex = s.client.get("index", "/simple/", Some(JSON));
    assert_eq!(ex.status(), Some(200));
    let index = egress_simple::parse_index_json(&body(&ex)).unwrap();
    assert!(index.projects.contains(&canary::UPSTREAM_ONLY.to_string()));
    let mark = s.canary.mark();
    let ex = s
        .client
        .get("query", "/simple/ec-upstream-only/?url=http://x/", None);
    assert_eq!(ex.status(), Some(200));
    assert_eq!(
        targets_since(&s.canary, mark),
        ["GET /simple/ec-upstream-only/?url=http://x/"]
    );
    assert_eq!(
        s.client.get("406", "/simple/", Some("image/png")).status(),
        Some(406)
    );
    assert_eq!(
        s.client.get("404", "/simple/not-there/", None).status(),
        Some(404)
    );
}

#[test]
fn upstream_changes_show_through() {
    let s = setup();
    s.canary
        .publish_new_version(&egress_model::ProjectName::new(canary::PRESENT).unwrap())
        .unwrap();
    let page = page(&s.client, canary::PRESENT, JSON);
    assert!(page
        .files
        .iter()
        .any(|f| f.filename == "ec_present-9.9.9-py3-none-any.whl"));
}

#[test]
fn uploads_are_accepted_and_listed() {
    let s = setup();
    let boundary = "----ecboundary";
    let content = b"pretend sdist bytes".to_vec();
    let mut form = Vec::new();
    for (name, value) in [
        (":action", "file_upload"),
        ("name", "EC_Uploaded"),
        ("version", "0.0.1"),
    ] {
        form.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    form.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"content\"; filename=\"ec_uploaded-0.0.1.tar.gz\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
    );
    form.extend_from_slice(&content);
    form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let req = Request::new(egress_transcript::Method::Post, "/legacy/")
        .header(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .body(form);
    let ex = s.client.send("upload", &req);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());

    let page = page(&s.client, "ec-uploaded", "text/html");
    assert_eq!(page.files.len(), 1);
    assert_eq!(page.files[0].filename, "ec_uploaded-0.0.1.tar.gz");
    assert_eq!(
        page.files[0].hashes.get("sha256"),
        Some(&Sha256Digest::of(&content).to_hex())
    );
    assert_eq!(body(&get_file(&s.client, &page.files[0].url)), content);
    let ex = s.client.get("index", "/simple/", Some(JSON));
    let index = egress_simple::parse_index_json(&body(&ex)).unwrap();
    assert!(index.projects.contains(&"ec-uploaded".to_string()));

    // Not an upload: 400, nothing stored.
    let req = Request::new(egress_transcript::Method::Post, "/")
        .header(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .body(format!("--{boundary}--\r\n").into_bytes());
    assert_eq!(s.client.send("bad upload", &req).status(), Some(400));
}

#[test]
fn description_pages_evaluate_templates() {
    let s = setup();
    let ex = s.client.get("project", "/project/ec-template-text/", None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let html = String::from_utf8(body(&ex)).unwrap();
    let ex = s.client.get("json", "/pypi/ec-template-text/json", None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let json: serde_json::Value = serde_json::from_slice(&body(&ex)).unwrap();
    let summary = json["info"]["summary"].as_str().unwrap();
    let description = json["info"]["description"].as_str().unwrap();
    for (raw, evaluated) in egress_model::upstream::TEMPLATE_MARKERS {
        assert!(html.contains(evaluated), "{evaluated} in {html}");
        assert!(summary.contains(evaluated) && description.contains(evaluated));
        assert!(!summary.contains(raw));
    }
    assert!(html.contains("ECT-A49"));
    assert_eq!(json["info"]["version"], "1.0.0");
    assert_eq!(
        s.client.get("none", "/project/not-there/", None).status(),
        Some(404)
    );
}

#[test]
fn sdist_metadata_request_fires_the_tripwire() {
    let s = setup();
    let page = page(&s.client, canary::TRIPWIRE, JSON);
    let sdist = &page.files[0];
    let mark = s.canary.mark();
    let ex = s
        .client
        .get("metadata", &format!("{}.metadata", sdist.url), None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    assert!(String::from_utf8_lossy(&body(&ex)).contains("Name: ec-tripwire"));
    let trips: Vec<_> = s
        .canary
        .requests_since(mark)
        .into_iter()
        .filter(|r| r.tripwire)
        .collect();
    assert_eq!(trips.len(), 1, "{:?}", s.canary.requests_since(mark));
    assert_eq!(trips[0].target, "/tripwire/ec-tripwire-0.1.0");

    // Wheels' metadata is read, not built.
    let page = self::page(&s.client, canary::PRESENT, JSON);
    let wheel = page
        .files
        .iter()
        .find(|f| f.filename.ends_with(".whl"))
        .unwrap();
    let ex = s
        .client
        .get("metadata", &format!("{}.metadata", wheel.url), None);
    assert_eq!(ex.status(), Some(200));
    assert_eq!(
        wheel.core_metadata.as_ref().unwrap().get("sha256"),
        Some(&Sha256Digest::of(&body(&ex)).to_hex())
    );
}

#[test]
fn absolute_form_and_connect_reach_loopback_only() {
    let s = setup();
    let origin = s.canary.base_url();
    let authority = origin.trim_start_matches("http://").to_string();

    let mark = s.canary.mark();
    let raw = format!(
        "GET {origin}/simple/?absolute HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    );
    let ex = s.client.send_raw("absolute", raw.as_bytes());
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    assert_eq!(targets_since(&s.canary, mark), ["GET /simple/?absolute"]);

    let start = Instant::now();
    let raw = "GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1\r\nConnection: close\r\n\r\n";
    assert_eq!(
        s.client.send_raw("absolute", raw.as_bytes()).status(),
        Some(502)
    );
    let raw = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n";
    assert_eq!(
        s.client.send_raw("absolute", raw.as_bytes()).status(),
        Some(502)
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "refused without connecting"
    );

    let mark = s.canary.mark();
    let inner =
        format!("GET /simple/?tunnel HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let exs = s
        .client
        .connect_tunnel("connect", &authority, inner.as_bytes());
    assert_eq!(
        exs.len(),
        2,
        "{:?}",
        exs.iter().map(Exchange::summary).collect::<Vec<_>>()
    );
    assert_eq!(exs[0].status(), Some(200));
    assert_eq!(exs[1].status(), Some(200), "{}", exs[1].summary());
    assert_eq!(targets_since(&s.canary, mark), ["GET /simple/?tunnel"]);

    let exs = s.client.connect_tunnel("connect", "192.0.2.1:443", b"x");
    assert_eq!(exs.len(), 1);
    assert_eq!(exs[0].status(), Some(502));
}

#[test]
fn slow_file_redirects_to_upstream() {
    let s = setup();
    let filename = "ec_present-1.1.0-py3-none-any.whl";
    s.canary.set_slow(filename, Duration::from_secs(1));
    let path = s.canary.file_path(filename).unwrap();
    let ex = s.client.get("slow", &path, None);
    assert_eq!(ex.status(), Some(302), "{}", ex.summary());
    assert_eq!(
        ex.response.as_ref().unwrap().header("location"),
        s.canary.file_url(filename).as_deref()
    );
}

#[test]
fn everything_else_is_forwarded_verbatim() {
    let s = setup();
    let mark = s.canary.mark();
    let cases = [
        ("PUT", "/simple/ec-present/"),
        ("DELETE", "/packages/x"),
        ("PATCH", "/admin/"),
        ("PROPFIND", "/"),
        ("TRACE", "/"),
        ("GET", "/simple/../../etc/passwd"),
        ("GET", "//evil.example/x"),
        ("GET", "/simple/%2e%2e/x"),
        ("GET", "/unknown/route?x=1"),
        ("POST", "/legacy/"),
    ];
    for (method, target) in cases {
        let req = Request::new(method.parse().unwrap(), target).body(b"payload".to_vec());
        let ex = s.client.send("forward", &req);
        assert_eq!(ex.status(), Some(404), "relayed: {}", ex.summary());
    }
    let want: Vec<String> = cases.iter().map(|(m, t)| format!("{m} {t}")).collect();
    assert_eq!(targets_since(&s.canary, mark), want);
    let ex = s.client.get("tripwire", "/tripwire/forwarded", None);
    assert_eq!(ex.status(), Some(200));
    assert!(s.canary.requests().last().unwrap().tripwire);
}

#[test]
fn start_refuses_a_non_loopback_upstream() {
    assert!(CachingProxy::start(Url::parse("http://192.0.2.1/simple/").unwrap()).is_err());
}

#[test]
fn real_pip_downloads_through_the_proxy() {
    let s = setup();
    let dest = std::env::temp_dir().join(format!(
        "egress-fixtures-pip-proxy-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest).unwrap();
    let out = common::pip_download(&s.proxy.index_url(), "ec-present==1.1.0", &dest, &[]);
    let got: PathBuf = dest.join("ec_present-1.1.0-py3-none-any.whl");
    let ok = out.status.success() && got.exists();
    let _ = std::fs::remove_dir_all(&dest);
    assert!(
        ok,
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
