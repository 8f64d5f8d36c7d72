//! The real bandersnatch 6.8.0 mirrors from the canary upstream, and a static
//! file server serves the result: the way the testbed runs bandersnatch.
//!
//! bandersnatch is installed at its pinned version into the project-local
//! virtual environment `.tools/peers/bandersnatch` (reused when it is already
//! there). Its configuration comes from `testbed/bandersnatch.conf.template`.

use egress_model::{Sha256Digest, Upstream, UpstreamRequest, Url};
use egress_references::pypi::canary::{self, Canary};
use egress_simple::{parse_index_html, parse_project_html};
use std::collections::BTreeSet;
use std::fs;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::{body, client, name, TempDir};

const BANDERSNATCH_VERSION: &str = "6.8.0";
/// The lab's projects: the allowlist in the configuration template.
const LAB: [&str; 3] = [canary::PRESENT, canary::TRIPWIRE, canary::TEMPLATE];
/// What the canary lists besides; the allowlist must keep them out.
const NOT_LAB: [&str; 3] = [canary::UPSTREAM_ONLY, canary::NO_DIGEST, canary::BAD_DIGEST];
/// Bound on one `bandersnatch mirror` run.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Variables bandersnatch would take a proxy from (it ignores NO_PROXY).
const PROXY_VARS: [&str; 10] = [
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "socks_proxy",
    "socks5_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "SOCKS_PROXY",
    "SOCKS5_PROXY",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

// ------------------------------------------------------------ installation

fn installed_version(venv: &Path) -> Option<String> {
    if !venv.join("bin/bandersnatch").is_file() {
        return None;
    }
    let out = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('bandersnatch'))",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The `bandersnatch` executable, installing it first if needed.
fn bandersnatch() -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = workspace().join(".tools/peers/bandersnatch");
    let bin = venv.join("bin/bandersnatch");
    if installed_version(&venv).as_deref() == Some(BANDERSNATCH_VERSION) {
        return bin;
    }
    if venv.exists() {
        fs::remove_dir_all(&venv).expect("remove the stale bandersnatch environment");
    }
    fs::create_dir_all(venv.parent().unwrap()).unwrap();
    let out = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .expect("python3 must be installed to run these tests");
    assert!(
        out.status.success(),
        "python3 -m venv {} failed:\n{}",
        venv.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // --isolated: ignore the machine's pip configuration and PIP_* variables,
    // so the pin comes from the package index.
    let out = Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--isolated",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("bandersnatch=={BANDERSNATCH_VERSION}"))
        .output()
        .expect("run pip");
    if !out.status.success() {
        let _ = fs::remove_dir_all(&venv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let unreachable = [
            "Could not find a version",
            "No matching distribution",
            "NewConnectionError",
            "Max retries exceeded",
            "Temporary failure in name resolution",
            "Network is unreachable",
            "Connection refused",
        ]
        .iter()
        .any(|s| stderr.contains(s));
        let why = if unreachable {
            "the package index looks unreachable from here (or offers no bandersnatch 6.8.0 for this python3, which must be 3.11 or newer); these tests need the index once, to install bandersnatch"
        } else {
            "pip failed"
        };
        panic!(
            "could not install bandersnatch=={BANDERSNATCH_VERSION} into {}: {why}.\npip said:\n{stderr}",
            venv.display()
        );
    }
    assert_eq!(
        installed_version(&venv).as_deref(),
        Some(BANDERSNATCH_VERSION),
        "bandersnatch did not install into {}",
        venv.display()
    );
    bin
}

// ------------------------------------------------------------ running

struct Mirror {
    tmp: TempDir,
    conf: PathBuf,
    runs: u32,
}

impl Mirror {
    fn new(canary: &Canary) -> Self {
        let tmp = TempDir::new("bandersnatch");
        let home = tmp.0.join("mirror");
        let template = fs::read_to_string(workspace().join("testbed/bandersnatch.conf.template"))
            .expect("testbed/bandersnatch.conf.template");
        let conf_text = template
            .replace("{canary_url}", &canary.base_url())
            .replace("{directory}", home.to_str().unwrap());
        let conf = tmp.0.join("bandersnatch.conf");
        fs::write(&conf, conf_text).unwrap();
        Mirror { tmp, conf, runs: 0 }
    }

    fn home(&self) -> PathBuf {
        self.tmp.0.join("mirror")
    }

    fn web(&self) -> PathBuf {
        self.home().join("web")
    }

    /// `bandersnatch --config CONF mirror`, bounded by [`RUN_LIMIT`]; panics
    /// with its log unless it exits 0.
    fn sync(&mut self) {
        self.runs += 1;
        let log_path = self.tmp.0.join(format!("run-{}.log", self.runs));
        let log = fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new(bandersnatch());
        cmd.arg("--config")
            .arg(&self.conf)
            .arg("mirror")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        for var in PROXY_VARS {
            cmd.env_remove(var);
        }
        let mut child = cmd.spawn().expect("start bandersnatch");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if start.elapsed() > RUN_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(50));
        };
        // Lossy: a log that is not UTF-8 is still shown.
        let output = String::from_utf8_lossy(&fs::read(&log_path).unwrap_or_default()).into_owned();
        match status {
            Some(s) if s.success() => {}
            Some(s) => panic!("bandersnatch mirror failed ({s}):\n{output}"),
            None => panic!("bandersnatch mirror ran over {RUN_LIMIT:?}; killed:\n{output}"),
        }
    }

    /// The serial bandersnatch recorded as reached.
    fn status_serial(&self) -> u64 {
        fs::read_to_string(self.home().join("status"))
            .expect("status file")
            .trim()
            .parse()
            .expect("status holds a serial")
    }
}

/// `python3 -m http.server` on a web directory: the static file server.
struct StaticServer {
    child: Child,
    port: u16,
}

impl StaticServer {
    fn start(dir: &Path) -> Self {
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .unwrap()
                .port();
            let mut child = Command::new("python3")
                .args(["-m", "http.server", "--bind", "127.0.0.1"])
                .arg(port.to_string())
                .arg("--directory")
                .arg(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3 must be installed to run these tests");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break; // lost the port to someone else: try another
                }
                if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                    return StaticServer { child, port };
                }
                thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("python3 -m http.server did not start");
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------ checks

fn canary_serial(canary: &Canary) -> u64 {
    let ex = client(&canary.base_url()).get("serial", "/simple/", None);
    ex.response
        .as_ref()
        .and_then(|r| r.header("x-pypi-last-serial"))
        .and_then(|s| s.parse().ok())
        .expect("X-PyPI-Last-Serial on /simple/")
}

/// The files the canary serves now for `project`: (filename, sha256, path, bytes).
fn served(canary: &Canary, project: &str) -> Vec<(String, Sha256Digest, String, Vec<u8>)> {
    canary
        .dists(false)
        .into_iter()
        .filter(|(n, _)| *n == name(project))
        .map(|(_, d)| {
            let path = canary.file_path(&d.filename).unwrap();
            (d.filename, d.sha256, path, d.bytes)
        })
        .collect()
}

/// Every lab project's page in the mirror lists exactly what the canary
/// serves now, with the right sha256, at the canary's `/packages/` path, and
/// the bytes there are the canary's; no other project is mirrored.
fn assert_mirror_matches(canary: &Canary, web: &Path) {
    let index = parse_index_html(&fs::read(web.join("simple/index.html")).unwrap()).unwrap();
    let listed: BTreeSet<&str> = index.projects.iter().map(String::as_str).collect();
    assert_eq!(listed, LAB.into_iter().collect(), "mirror index");
    for project in NOT_LAB {
        assert!(
            !web.join("simple").join(project).exists(),
            "{project} was mirrored"
        );
    }
    for project in LAB {
        let page_url = Url::parse(&format!("http://mirror/simple/{project}/")).unwrap();
        let html = fs::read(web.join("simple").join(project).join("index.html")).unwrap();
        let page = parse_project_html(&html).unwrap();
        let want = served(canary, project);
        let got: BTreeSet<&str> = page.files.iter().map(|f| f.filename.as_str()).collect();
        let expected: BTreeSet<&str> = want.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(got, expected, "{project}");
        for (filename, sha256, path, bytes) in &want {
            let entry = page.files.iter().find(|f| &f.filename == filename).unwrap();
            assert_eq!(
                entry.hashes.get("sha256"),
                Some(&sha256.to_hex()),
                "{filename}"
            );
            let url = page_url.join(&entry.url).unwrap();
            assert_eq!(url.path(), path, "bandersnatch keeps upstream's layout");
            let local = fs::read(web.join(path.trim_start_matches('/'))).unwrap();
            assert_eq!(&local, bytes, "{filename}");
        }
    }
}

/// Filenames below `web/packages`.
fn mirrored_files(web: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut BTreeSet<String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&web.join("packages"), &mut out);
    out
}

fn targets(log: &[UpstreamRequest]) -> Vec<String> {
    log.iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

/// Nothing of the projects outside the allowlist was requested.
fn assert_not_lab_untouched(log: &[UpstreamRequest]) {
    for r in log {
        let t = r.target.to_ascii_lowercase().replace('_', "-");
        for project in NOT_LAB {
            assert!(!t.contains(project), "fetched {}", r.target);
        }
        assert!(!r.tripwire, "{}", r.target);
    }
}

// ------------------------------------------------------------ tests

#[test]
fn bandersnatch_mirrors_the_lab_projects_and_a_static_server_serves_them() {
    let canary = Canary::start().unwrap();
    let mut mirror = Mirror::new(&canary);
    mirror.sync();
    let web = mirror.web();

    assert_mirror_matches(&canary, &web);
    let expected: BTreeSet<String> = LAB
        .iter()
        .flat_map(|p| served(&canary, p))
        .map(|w| w.0)
        .collect();
    assert_eq!(mirrored_files(&web), expected);
    assert_eq!(mirror.status_serial(), canary_serial(&canary));

    // What bandersnatch asked the canary for.
    let log = canary.requests();
    let seen = targets(&log);
    assert!(seen.contains(&"POST /pypi".to_string()), "{seen:?}");
    for project in LAB {
        let json = format!("GET /pypi/{project}/json");
        assert!(seen.contains(&json), "{seen:?}");
        for (_, _, path, _) in served(&canary, project) {
            assert!(seen.contains(&format!("GET {path}")), "{seen:?}");
        }
    }
    assert_not_lab_untouched(&log);

    // The static file server, as the testbed runs it.
    let server = StaticServer::start(&web);
    let c = client(&server.base_url());
    let index_url = Url::parse(&format!("{}/simple/", server.base_url())).unwrap();
    let ex = c.get("index", "/simple/", Some("text/html"));
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let index = parse_index_html(&body(&ex)).unwrap();
    assert_eq!(
        index
            .projects
            .iter()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        LAB.into_iter().collect()
    );
    for project in LAB {
        let ex = c.get("page", &format!("/simple/{project}/"), Some("text/html"));
        assert_eq!(ex.status(), Some(200), "{}", ex.summary());
        let page = parse_project_html(&body(&ex)).unwrap();
        let want = served(&canary, project);
        assert_eq!(page.files.len(), want.len());
        for entry in &page.files {
            let (_, sha256, _, bytes) = want.iter().find(|w| w.0 == entry.filename).unwrap();
            let url = index_url
                .join(&format!("{project}/"))
                .and_then(|u| u.join(&entry.url))
                .unwrap();
            assert!(url.same_origin(&index_url), "{url}");
            let got = body(&c.get("file", url.path(), None));
            assert_eq!(Sha256Digest::of(&got), *sha256, "{}", entry.filename);
            assert_eq!(&got, bytes);
        }
    }
    for project in NOT_LAB {
        let ex = c.get("absent", &format!("/simple/{project}/"), None);
        assert_eq!(ex.status(), Some(404), "{}", ex.summary());
    }
    // Serving the mirror never reaches the canary.
    assert_eq!(canary.requests().len(), log.len());
}

#[test]
fn a_later_sync_follows_the_canary_changelog() {
    let canary = Canary::start().unwrap();
    let mut mirror = Mirror::new(&canary);
    mirror.sync();
    let first_serial = mirror.status_serial();

    canary.publish_new_version(&name(canary::PRESENT)).unwrap();
    let replaced = "ec_template_text-1.0.0-py3-none-any.whl";
    canary.replace_file_bytes(replaced).unwrap();
    canary
        .publish_new_version(&name(canary::UPSTREAM_ONLY))
        .unwrap();
    let mark = canary.mark();
    mirror.sync();

    // Only the changed lab projects were fetched again.
    let log = canary.requests_since(mark);
    let seen = targets(&log);
    assert_eq!(
        seen.iter().filter(|t| *t == "POST /pypi").count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.contains(&format!("GET /pypi/{}/json", canary::PRESENT)),
        "{seen:?}"
    );
    assert!(
        seen.contains(&format!("GET /pypi/{}/json", canary::TEMPLATE)),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|t| t.contains(canary::TRIPWIRE)),
        "unchanged, so not fetched again: {seen:?}"
    );
    assert_not_lab_untouched(&log);

    // The mirror shows the upstream's changes: the new version, and the new
    // bytes under the old filename (at a new path; the old file stays on disk).
    let web = mirror.web();
    assert_mirror_matches(&canary, &web);
    let files = mirrored_files(&web);
    assert!(
        files.contains("ec_present-9.9.9-py3-none-any.whl"),
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.starts_with("ec_upstream_only")));
    let serial = mirror.status_serial();
    assert!(serial > first_serial);
    assert_eq!(serial, canary_serial(&canary));
}
