//! The HTML report in a real browser: Debian's headless Chromium (pinned in
//! scripts/infra/chromium.txt, unpacked by scripts/setup-infra) opens the
//! main job's report with JS on and with JS off; from the DOM it dumps,
//! every predicate cell and every FAIL and INCONCLUSIVE sub-probe of every
//! report is there; with JS off, ticking the filter hides what passed (read
//! over the DevTools pipe); its net log shows no request besides the file itself
//! (and a control page shows that the same check sees one); hostile text
//! in a recorded exchange stays text; a tampered report renders as a
//! "does not verify" page. The screenshot in docs/img/html-report.png is
//! refreshed with EGRESS_UPDATE_DOCS_IMG=1.

use egress_model::{Status, WireBytes};
use egress_suite::Report;
use serde_json::Value;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod common;

use common::{ok, run, s, tmpdir, workspace};

/// How long one browser run may take before it is killed.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn chromium() -> PathBuf {
    let dir = std::env::var_os("EGRESS_INFRA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/infra"));
    let bin = dir.join("chromium/root/usr/lib/chromium/chromium-headless-shell");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup-infra chromium (scripts/test does); it unpacks Debian's chromium-headless-shell at the version pinned in scripts/infra/chromium.txt",
        bin.display()
    );
    bin
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// What one browser run showed.
struct Browsed {
    /// The DOM after load (`--dump-dom`), or empty for a screenshot.
    dom: String,
    stderr: String,
    /// Network activity in the net log: each event that opened a request,
    /// a connection or a host lookup, with its URL when it names one.
    requests: Vec<String>,
    /// JS off, on a page with the filter: the CSS `display` of the first
    /// PASS and the first FAIL sub-probe once the filter is ticked.
    filtered: Option<Filtered>,
}

#[derive(Debug, PartialEq, Eq)]
struct Filtered {
    pass_before: String,
    pass: String,
    fail: String,
}

/// Opens `page` in headless Chromium with a private profile and a net log,
/// `--dump-dom` (or `--screenshot=PNG` when `screenshot` is given), with
/// scripts on or off; kills it by PID if it outlives [`BROWSER_TIMEOUT`].
fn browse(page: &Path, js: bool, screenshot: Option<&Path>) -> Browsed {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let n = RUN.fetch_add(1, Ordering::SeqCst);
    let dir = tmpdir(&format!("html-report-browser-{n}"));
    let net_log = dir.join("net-log.json");
    let mut cmd = Command::new(chromium());
    cmd.arg("--headless")
        .arg(format!("--user-data-dir={}", s(&dir.join("profile"))))
        .arg(format!("--log-net-log={}", s(&net_log)))
        .arg("--no-first-run")
        .arg("--disable-gpu")
        .arg("--window-size=1280,1500")
        .arg("--hide-scrollbars");
    if is_root() {
        // Chromium refuses to run its sandbox as root.
        cmd.arg("--no-sandbox");
    }
    let url = format!(
        "file://{}",
        s(&page.canonicalize().expect("the page exists"))
    );
    let pipe = if js {
        match screenshot {
            Some(png) => cmd.arg(format!("--screenshot={}", s(png))),
            None => cmd.arg("--dump-dom"),
        };
        cmd.arg(&url);
        None
    } else {
        // Scripts off. --dump-dom reads the DOM with a script in the page,
        // which this forbids (it prints nothing), so the DOM is read over
        // the DevTools protocol instead: Chromium's end of the pipe is fds
        // 3 and 4, two FIFOs the shell opens for it.
        assert!(screenshot.is_none(), "screenshots are taken with JS on");
        cmd.arg("--blink-settings=scriptEnabled=false")
            .arg("--remote-debugging-pipe");
        let (to, from) = (dir.join("to-browser"), dir.join("from-browser"));
        for fifo in [&to, &from] {
            let o = Command::new("mkfifo").arg(fifo).output().expect("mkfifo");
            assert!(o.status.success(), "mkfifo {}", fifo.display());
        }
        let browser = std::mem::replace(&mut cmd, Command::new("sh"));
        cmd.arg("-c")
            .arg("exec \"$0\" \"$@\" 3<\"$TO_BROWSER\" 4>\"$FROM_BROWSER\"")
            .arg(browser.get_program())
            .args(browser.get_args())
            .env("TO_BROWSER", &to)
            .env("FROM_BROWSER", &from);
        Some((to, from))
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let devtools = pipe.map(|(to, from)| {
        let url = url.clone();
        std::thread::spawn(move || dom_over_devtools(&to, &from, &url))
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut v = String::new();
        let _ = out.read_to_string(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = String::new();
        let _ = err.read_to_string(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for chromium") {
            break st;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            let pid = child.id();
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium (pid {pid}) did not finish {url} in {BROWSER_TIMEOUT:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = err_reader.join().expect("stderr reader");
    let (dom, filtered) = match devtools {
        Some(reader) => reader
            .join()
            .expect("devtools reader")
            .unwrap_or_else(|e| panic!("DevTools on {url}: {e}; stderr: {stderr}")),
        None => (out_reader.join().expect("stdout reader"), None),
    };
    assert!(status.success(), "chromium failed on {url}: {stderr}");
    let requests = network_activity(&net_log, &url);
    let _ = std::fs::remove_dir_all(&dir);
    Browsed {
        dom,
        stderr,
        requests,
        filtered,
    }
}

/// Chromium's DevTools pipe: JSON messages, each ended by a NUL byte.
struct DevTools {
    tx: std::fs::File,
    rx: std::io::BufReader<std::fs::File>,
    next_id: u64,
    /// Events read while waiting for an answer.
    events: Vec<String>,
}

impl DevTools {
    fn read(&mut self) -> Result<Value, String> {
        use std::io::BufRead;
        let mut buf = Vec::new();
        if self.rx.read_until(0, &mut buf).map_err(|e| e.to_string())? == 0 {
            return Err("the browser closed the pipe".into());
        }
        buf.pop();
        serde_json::from_slice(&buf).map_err(|e| e.to_string())
    }

    fn call(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, String> {
        use std::io::Write;
        self.next_id += 1;
        let mut msg = serde_json::json!({ "id": self.next_id, "method": method, "params": params });
        if let Some(sid) = session {
            msg["sessionId"] = Value::from(sid);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.tx
            .write_all(&bytes)
            .map_err(|e| format!("{method}: {e}"))?;
        loop {
            let v = self.read().map_err(|e| format!("{method}: {e}"))?;
            if let Some(event) = v["method"].as_str() {
                self.events.push(event.to_string());
            }
            if v["id"] == self.next_id {
                return match v.get("error") {
                    Some(err) => Err(format!("{method}: {err}")),
                    None => Ok(v["result"].clone()),
                };
            }
        }
    }

    /// Waits for `event` (or returns at once if it came already).
    fn wait_for(&mut self, event: &str) -> Result<(), String> {
        while !self.events.iter().any(|e| e == event) {
            let v = self
                .read()
                .map_err(|e| format!("waiting for {event}: {e}"))?;
            if let Some(e) = v["method"].as_str() {
                self.events.push(e.to_string());
            }
        }
        Ok(())
    }
}

/// One DevTools conversation over the pipe: attach to the page, load
/// `url`, wait for its load event, read the document's outer HTML, close
/// the browser (which then writes the net log).
fn dom_over_devtools(
    to: &Path,
    from: &Path,
    url: &str,
) -> Result<(String, Option<Filtered>), String> {
    // The same order as the shell opens them: no deadlock.
    let tx = std::fs::OpenOptions::new()
        .write(true)
        .open(to)
        .map_err(|e| format!("open {}: {e}", to.display()))?;
    let rx = std::fs::File::open(from).map_err(|e| format!("open {}: {e}", from.display()))?;
    let mut dt = DevTools {
        tx,
        rx: std::io::BufReader::new(rx),
        next_id: 0,
        events: Vec::new(),
    };
    let none = serde_json::json!({});
    // The headless shell starts with no page over the pipe: open one.
    let created = dt.call(
        "Target.createTarget",
        serde_json::json!({ "url": "about:blank" }),
        None,
    )?;
    let target = created["targetId"]
        .as_str()
        .ok_or("no page target")?
        .to_string();
    let attached = dt.call(
        "Target.attachToTarget",
        serde_json::json!({ "targetId": target, "flatten": true }),
        None,
    )?;
    let sid = attached["sessionId"]
        .as_str()
        .ok_or("no session")?
        .to_string();
    dt.call("Page.enable", none.clone(), Some(&sid))?;
    dt.events.clear();
    dt.call(
        "Page.navigate",
        serde_json::json!({ "url": url }),
        Some(&sid),
    )?;
    dt.wait_for("Page.loadEventFired")?;
    let doc = dt.call(
        "DOM.getDocument",
        serde_json::json!({ "depth": 0 }),
        Some(&sid),
    )?;
    let node = doc["root"]["nodeId"].as_u64().ok_or("no document node")?;
    let html = dt.call(
        "DOM.getOuterHTML",
        serde_json::json!({ "nodeId": node }),
        Some(&sid),
    )?;
    let dom = html["outerHTML"]
        .as_str()
        .ok_or("no outerHTML")?
        .to_string();
    let filtered = if dom.contains("id=\"only-problems\"") && dom.contains("probe s-fail") {
        Some(filter_without_js(&mut dt, &sid, node)?)
    } else {
        None
    };
    // The browser exits on Browser.close, perhaps before it answers.
    let _ = dt.call("Browser.close", none, None);
    Ok((dom, filtered))
}

/// Ticks the FAIL/INCONCLUSIVE filter as a click would (no script runs),
/// and reads the computed `display` of the first PASS and FAIL sub-probe.
fn filter_without_js(dt: &mut DevTools, sid: &str, root: u64) -> Result<Filtered, String> {
    dt.call("DOM.enable", serde_json::json!({}), Some(sid))?;
    dt.call("CSS.enable", serde_json::json!({}), Some(sid))?;
    let find = |dt: &mut DevTools, selector: &str| -> Result<u64, String> {
        let r = dt.call(
            "DOM.querySelector",
            serde_json::json!({ "nodeId": root, "selector": selector }),
            Some(sid),
        )?;
        match r["nodeId"].as_u64() {
            Some(n) if n != 0 => Ok(n),
            _ => Err(format!("no {selector}")),
        }
    };
    let display = |dt: &mut DevTools, node: u64| -> Result<String, String> {
        let r = dt.call(
            "CSS.getComputedStyleForNode",
            serde_json::json!({ "nodeId": node }),
            Some(sid),
        )?;
        r["computedStyle"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == "display"))
            .and_then(|p| p["value"].as_str())
            .map(str::to_string)
            .ok_or_else(|| "no display".to_string())
    };
    let checkbox = find(dt, "#only-problems")?;
    let pass = find(dt, "article.probe.s-pass")?;
    let fail = find(dt, "article.probe.s-fail")?;
    let pass_before = display(dt, pass)?;
    // A checkbox whose state no one changed follows its `checked` attribute.
    dt.call(
        "DOM.setAttributeValue",
        serde_json::json!({ "nodeId": checkbox, "name": "checked", "value": "" }),
        Some(sid),
    )?;
    Ok(Filtered {
        pass_before,
        pass: display(dt, pass)?,
        fail: display(dt, fail)?,
    })
}

/// Every event of the net log that shows the browser reaching for the
/// network (a URL request, a connection, a host lookup), except the page's
/// own `file://` URL.
fn network_activity(net_log: &Path, own_url: &str) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("chromium wrote its net log");
    let log: Value = serde_json::from_str(&text).expect("the net log is JSON");
    let names: std::collections::HashMap<u64, String> = log["constants"]["logEventTypes"]
        .as_object()
        .expect("event type names")
        .iter()
        .map(|(k, v)| (v.as_u64().expect("event type number"), k.clone()))
        .collect();
    let reaching = [
        "URL_REQUEST",
        "REQUEST_ALIVE",
        "CORS_REQUEST",
        "HTTP_STREAM",
        "HTTP_TRANSACTION",
        "TCP_CONNECT",
        "UDP_CONNECT",
        "SOCKET_CONNECT",
        "SSL_CONNECT",
        "HOST_RESOLVER_MANAGER_REQUEST",
        "HOST_RESOLVER_DNS_TASK",
        "QUIC_SESSION_POOL_JOB",
        "WEB_SOCKET",
    ];
    let mut out = Vec::new();
    for e in log["events"].as_array().expect("events") {
        let name = e["type"]
            .as_u64()
            .and_then(|t| names.get(&t))
            .cloned()
            .unwrap_or_default();
        let url = e["params"]["url"].as_str().unwrap_or_default();
        if url.starts_with("file://") && own_url.starts_with(url.trim_end_matches('/')) {
            continue;
        }
        if !url.is_empty() || reaching.iter().any(|r| name.starts_with(r)) {
            out.push(format!("{name} {url}"));
        }
    }
    out
}

/// The main job, run once for every test of this file: its `--out`
/// directory (reports, index.html) and its `--format html` output.
fn main_job() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tmpdir("html-report-main-job");
        let o = run(&["--format", "html", "--out", s(&dir)]);
        assert!(
            o.status.code() == Some(0),
            "the main job failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        (dir, String::from_utf8(o.stdout).expect("utf-8 HTML"))
    })
}

/// The main job's reports, in the order of the page's `#rN` sections.
fn reports_in(dir: &Path, dom: &str) -> Vec<Report> {
    let mut found: Vec<(usize, Report)> = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read --out") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|x| x == "json") {
            let r: Report = serde_json::from_slice(&std::fs::read(&path).expect("read report"))
                .expect("report");
            let i = (0..16)
                .find(|i| {
                    dom.contains(&format!(
                        "<a href=\"#r{i}\">{}</a>",
                        dom_text(&r.target_name)
                    ))
                })
                .unwrap_or_else(|| panic!("{} has no line in the page", r.target_name));
            found.push((i, r));
        }
    }
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(_, r)| r).collect()
}

/// `text` as Chromium serialises text nodes: only `&`, `<` and `>` (and
/// no-break spaces) as references.
fn dom_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\u{a0}', "&nbsp;")
}

/// Every predicate cell and every FAIL and INCONCLUSIVE sub-probe of each
/// report is in the DOM, as the report says; how many FAIL and
/// INCONCLUSIVE there are.
fn check_dom(dom: &str, reports: &[Report]) -> usize {
    let mut problems = 0;
    for (i, r) in reports.iter().enumerate() {
        for p in &r.predicates {
            let cell = format!("<a href=\"#r{i}-{}\">{}</a></td>", p.id, p.status);
            assert!(dom.contains(&cell), "{}: no cell {cell}", r.target_name);
            assert!(
                dom.contains(&format!("id=\"r{i}-{}\"", p.id)),
                "{}: the cell of {} leads nowhere",
                r.target_name,
                p.id
            );
        }
        for rec in &r.probes {
            if matches!(rec.status, Status::Fail | Status::Inconclusive) {
                problems += 1;
                let class = if rec.status == Status::Fail {
                    "s-fail"
                } else {
                    "s-inconclusive"
                };
                let article = format!("<article class=\"probe {class}\" id=\"r{i}-{}\">", rec.id);
                assert!(dom.contains(&article), "{}: no {article}", r.target_name);
                assert!(
                    dom.contains(&dom_text(&rec.reason)),
                    "{} {}: its reason is not shown",
                    r.target_name,
                    rec.id
                );
                assert!(
                    dom.contains(&egress_suite::digests::transcript(rec).to_hex()),
                    "{} {}: its transcript digest is not shown",
                    r.target_name,
                    rec.id
                );
            }
        }
    }
    // Every link stays on the page and leads somewhere; nothing loads.
    // (Text is serialised with `<` as `&lt;`: each `<` opens a tag.)
    let mut links = 0;
    for tag in dom.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or_default();
        let name = tag.split([' ', '/']).next().unwrap_or_default();
        assert!(
            !["img", "link", "iframe", "object", "embed", "source", "base", "form"].contains(&name),
            "an element that loads or sends: <{tag}>"
        );
        assert!(!tag.contains(" src="), "<{tag}> loads something");
        if let Some(href) = tag.strip_prefix("a href=\"") {
            let target = href.split('"').next().unwrap_or_default();
            let anchor = target
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("a link off the page: {target}"));
            assert!(
                dom.contains(&format!("id=\"{anchor}\"")),
                "the link {target} leads nowhere"
            );
            links += 1;
        }
    }
    assert!(links > 0);
    // The suite's sub-probes (the sandbox scan's are `scan-…`).
    let shown = dom
        .matches("<article class=\"probe s-fail\" id=\"r")
        .count()
        + dom
            .matches("<article class=\"probe s-inconclusive\" id=\"r")
            .count();
    assert_eq!(
        shown, problems,
        "FAIL and INCONCLUSIVE sub-probes in the page"
    );
    problems
}

fn no_policy_violation(b: &Browsed) {
    assert!(
        !b.stderr.contains("Content Security Policy"),
        "the page broke its own policy: {}",
        b.stderr
    );
}

#[test]
fn the_main_jobs_report_reads_in_a_real_browser_with_js_on_and_off() {
    let (dir, stdout) = main_job();
    let index = dir.join("index.html");
    assert_eq!(
        &std::fs::read_to_string(&index).expect("index.html"),
        stdout,
        "--format html prints the page --out writes as index.html"
    );
    for js in [true, false] {
        let b = browse(&index, js, None);
        let reports = reports_in(dir, &b.dom);
        let protocols = egress_suite::Protocol::ALL;
        assert_eq!(
            reports.len(),
            2 * protocols.len(),
            "each protocol's (A) and (B)"
        );
        let problems = check_dom(&b.dom, &reports);
        assert!(problems > 0, "the caching proxies (B) fail sub-probes");
        for protocol in protocols.iter().map(|p| p.as_str()) {
            assert!(b.dom.contains(&format!("<h2>{protocol}: predicates</h2>")));
            assert!(b
                .dom
                .contains(&format!("<h3>{protocol}: discrimination matrix</h3>")));
        }
        if !js {
            // The filter works without a script: ticked, it hides what
            // passed and keeps what failed.
            let f = b.filtered.as_ref().expect("the filter was tried");
            assert_eq!(
                f,
                &Filtered {
                    pass_before: "block".into(),
                    pass: "none".into(),
                    fail: "block".into(),
                }
            );
        }
        // The script ran with JS on (its hash is in the policy) and not
        // with JS off.
        assert_eq!(
            b.dom.contains("<html lang=\"en\" class=\"js\">"),
            js,
            "js {js}"
        );
        no_policy_violation(&b);
        assert!(
            b.requests.is_empty(),
            "the page made requests (js {js}): {:?}",
            b.requests
        );
    }
    // One report's own page, as check writes it.
    let one = dir.join("caching-proxy-b.html");
    let b = browse(&one, false, None);
    let r: Report =
        serde_json::from_slice(&std::fs::read(dir.join("caching-proxy-b.json")).expect("report"))
            .expect("report");
    assert!(check_dom(&b.dom, &[r]) > 0, "(B) fails sub-probes");
    assert!(!b.dom.contains("discrimination matrix"));
}

#[test]
fn the_screenshot_for_the_docs() {
    let (dir, _) = main_job();
    let png = tmpdir("html-report-shot").join("html-report.png");
    let b = browse(&dir.join("index.html"), true, Some(&png));
    no_policy_violation(&b);
    assert!(b.requests.is_empty(), "{:?}", b.requests);
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        bytes.len() > 20_000,
        "{} bytes: an empty page?",
        bytes.len()
    );
    if std::env::var_os("EGRESS_UPDATE_DOCS_IMG").is_some() {
        let to = workspace().join("docs/img/html-report.png");
        std::fs::create_dir_all(to.parent().expect("docs/img")).expect("mkdir docs/img");
        std::fs::write(&to, &bytes).expect("write docs/img/html-report.png");
    }
}

#[test]
fn the_net_log_check_sees_a_request_when_a_page_makes_one() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Answers one connection with a 404, so that the page finishes loading.
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("the browser connected");
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf);
        let _ = std::io::Write::write_all(
            &mut conn,
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    let dir = tmpdir("html-report-control");
    let page = dir.join("loads.html");
    std::fs::write(
        &page,
        format!("<!DOCTYPE html><p>x</p><img src=\"http://127.0.0.1:{port}/x.png\">"),
    )
    .expect("write");
    let b = browse(&page, true, None);
    assert!(
        b.requests
            .iter()
            .any(|r| r.contains(&format!("127.0.0.1:{port}/x.png"))),
        "the net log shows the image request: {:?}",
        b.requests
    );
    server.join().expect("the browser connected");
}

#[test]
fn hostile_text_in_a_recorded_exchange_stays_text() {
    let (dir, _) = main_job();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let payload = format!(
        "</textarea></pre></details></title><script>document.title='pwned';document.documentElement.className='pwned'</script>\
         <img src=\"http://127.0.0.1:{port}/pwned.png\" onerror=\"document.title='pwned'\"><style>body{{display:none}}</style>&amp;"
    );
    let mut r: Report =
        serde_json::from_slice(&std::fs::read(dir.join("caching-proxy-b.json")).expect("report"))
            .expect("report");
    r.target_name = format!("proxy {payload}");
    let rec = r
        .probes
        .iter_mut()
        .find(|p| p.status == Status::Fail && p.exchanges.iter().any(|e| e.response.is_some()))
        .expect("a FAIL with a response");
    rec.reason = format!("reason {payload}");
    let e = rec
        .exchanges
        .iter_mut()
        .find(|e| e.response.is_some())
        .expect("an exchange with a response");
    e.label = format!("label {payload}");
    e.request = WireBytes(format!("GET /{payload} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes());
    let resp = e.response.as_mut().expect("response");
    resp.headers.push((format!("X-{payload}"), payload.clone()));
    resp.body_prefix = WireBytes(format!("body {payload}").into_bytes());
    let page = tmpdir("html-report-hostile").join("hostile.html");
    std::fs::write(&page, egress_suite::html::reports(&[&r])).expect("write");
    let b = browse(&page, true, None);
    assert!(!b.dom.contains("class=\"pwned\""), "no payload script ran");
    assert!(
        !b.dom.contains("<title>pwned</title>"),
        "no payload script ran"
    );
    assert_eq!(
        b.dom.matches("<style>").count(),
        1,
        "only the page's own style"
    );
    assert_eq!(
        b.dom.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    assert!(!b.dom.contains("<img"), "no image element");
    assert!(!b.dom.contains("<textarea"), "no textarea element");
    assert!(
        b.dom.contains("&lt;/textarea&gt;&lt;/pre&gt;"),
        "the payload as text"
    );
    assert!(
        b.dom.contains("<html lang=\"en\" class=\"js\">"),
        "the page's own script ran"
    );
    no_policy_violation(&b);
    assert!(b.requests.is_empty(), "{:?}", b.requests);
    assert!(
        listener.accept().is_err(),
        "nothing connected to the payload's URL"
    );
}

#[test]
fn a_tampered_report_renders_as_does_not_verify() {
    let (dir, _) = main_job();
    let work = tmpdir("html-report-tampered");
    // An untouched report renders as the page --out wrote.
    let page = work.join("a.html");
    let o = run(&[
        "report",
        "render",
        s(&dir.join("reference-a.json")),
        "--format",
        "html",
        "--out",
        s(&page),
    ]);
    ok(&o, "report render");
    assert_eq!(
        std::fs::read_to_string(&page).expect("page"),
        std::fs::read_to_string(dir.join("reference-a.html")).expect("page")
    );
    let original: Report =
        serde_json::from_slice(&std::fs::read(dir.join("reference-a.json")).expect("report"))
            .expect("report");
    let connect_digest =
        egress_suite::digests::transcript(original.probe("P3.connect").expect("P3.connect"))
            .to_hex();
    assert!(std::fs::read_to_string(&page)
        .expect("page")
        .contains(&connect_digest));
    // Change one verdict's reason.
    let mut r: Value =
        serde_json::from_slice(&std::fs::read(dir.join("reference-a.json")).expect("report"))
            .expect("json");
    let probe = r["probes"]
        .as_array_mut()
        .expect("probes")
        .iter_mut()
        .find(|p| p["id"] == "P3.connect")
        .expect("P3.connect");
    probe["reason"] = Value::from("looks fine to me");
    let tampered = work.join("tampered.json");
    std::fs::write(&tampered, serde_json::to_vec(&r).expect("json")).expect("write");
    for format in ["html", "sarif", "text"] {
        let out = work.join(format!("tampered.{format}"));
        let o = run(&[
            "report",
            "render",
            s(&tampered),
            "--format",
            format,
            "--out",
            s(&out),
        ]);
        assert_eq!(o.status.code(), Some(1), "{format}: the verify exit code");
        let body = std::fs::read_to_string(&out).expect("rendered anyway");
        assert!(body.contains("P3.connect"), "{format} names what disagreed");
        // With the digest of the evidence it re-derived from: the one the
        // untampered page cites, as the evidence did not change.
        assert!(body.contains(&connect_digest), "{format}: {body}");
        assert!(body.contains("looks fine to me"), "{format}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("does not verify"),
            "{format}"
        );
    }
    let b = browse(&work.join("tampered.html"), false, None);
    assert!(b.dom.contains("<h2>does not verify</h2>"));
    assert!(!b.dom.contains("class=\"matrix\""), "no matrix");
    assert!(
        !b.dom.contains("<article"),
        "no sub-probe shown as verified"
    );
    // A format that does not exist is refused with the list of those that do.
    let o = run(&["report", "render", s(&tampered), "--format", "pdf"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("[possible values: html, sarif, text]"),
        "{err}"
    );
    let o = run(&["report", "render", s(dir), "--format", "html"]);
    assert_eq!(o.status.code(), Some(4), "a directory is bad input");
}

#[test]
fn the_scan_and_check_from_sandbox_pages_read_in_the_browser() {
    let (dir, _) = main_job();
    let work = tmpdir("html-report-scan");
    let scan = common::scan::report("canary <script>document.title='pwned'</script>");
    let check: Report =
        serde_json::from_slice(&std::fs::read(dir.join("reference-a.json")).expect("report"))
            .expect("report");
    let both = egress_suite::combined::Combined::new(check.clone(), scan.clone());
    let scan_json = work.join("scan.json");
    let both_json = work.join("report.json");
    std::fs::write(&scan_json, egress_sandbox::render::json(&scan)).expect("write");
    std::fs::write(&both_json, both.json()).expect("write");
    for (saved, page) in [(&scan_json, "scan.html"), (&both_json, "report.html")] {
        let o = run(&[
            "report",
            "render",
            s(saved),
            "--format",
            "html",
            "--out",
            s(&work.join(page)),
        ]);
        ok(&o, "report render");
    }
    let failing = "<article class=\"probe s-fail\" id=\"scan-R.canary\">";
    let b = browse(&work.join("report.html"), true, None);
    assert_eq!(check_dom(&b.dom, &[check]), 0, "(A) passes");
    assert!(b.dom.contains(failing), "the scan's FAIL");
    assert!(b.dom.contains("<h2>sandbox scan: mirror"));
    assert_eq!(
        b.dom.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    no_policy_violation(&b);
    assert!(b.requests.is_empty(), "{:?}", b.requests);
    let b = browse(&work.join("scan.html"), false, None);
    assert!(b.dom.contains(failing), "the scan's FAIL, JS off");
    for r in &scan.records {
        assert!(
            b.dom.contains(&format!("id=\"scan-{}\"", r.id)),
            "{} is on the page",
            r.id
        );
    }
    assert!(b.requests.is_empty(), "{:?}", b.requests);
}
