//! The canary serves real, valid PyPI-protocol content, logs every request
//! and changes what it serves when the suite asks.

use egress_fixtures::canary::{self, Canary};
use egress_model::{Observation, ProjectName, Sha256Digest, Upstream, Url};
use egress_simple::{parse_index_html, parse_index_json, parse_project_html, parse_project_json};
use egress_transcript::{Client, Limits};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const JSON: &str = "application/vnd.pypi.simple.v1+json";

fn client(base: &str) -> Client {
    Client::new(Url::parse(base).unwrap(), Limits::default(), None).unwrap()
}

fn body(ex: &egress_model::Exchange) -> Vec<u8> {
    let r = ex
        .response
        .as_ref()
        .unwrap_or_else(|| panic!("{}", ex.summary()));
    r.full_body().expect("complete body").to_vec()
}

fn page(c: &Client, name: &str, accept: &str) -> egress_simple::ProjectPage {
    let ex = c.get("page", &format!("/simple/{name}/"), Some(accept));
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    if accept == JSON {
        parse_project_json(&body(&ex)).unwrap()
    } else {
        parse_project_html(&body(&ex)).unwrap()
    }
}

fn name(s: &str) -> ProjectName {
    ProjectName::new(s).unwrap()
}

#[test]
fn pages_parse_and_listed_hashes_match_served_bytes() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let index_url = Url::parse(&canary.index_url()).unwrap();
    for accept in [JSON, "text/html"] {
        let ex = c.get("index", "/simple/", Some(accept));
        let resp = ex.response.as_ref().unwrap();
        assert_eq!(resp.status, Some(200));
        assert!(resp.header("x-pypi-last-serial").is_some());
        let index = if accept == JSON {
            assert_eq!(resp.header("content-type"), Some(JSON));
            parse_index_json(&body(&ex)).unwrap()
        } else {
            assert_eq!(resp.header("content-type"), Some("text/html"));
            parse_index_html(&body(&ex)).unwrap()
        };
        let listed: BTreeSet<&str> = index.projects.iter().map(String::as_str).collect();
        let want = [
            canary::PRESENT,
            canary::UPSTREAM_ONLY,
            canary::TRIPWIRE,
            canary::TEMPLATE,
            canary::NO_DIGEST,
            canary::BAD_DIGEST,
        ];
        assert_eq!(listed, want.into_iter().collect());

        for project in want {
            let page = page(&c, project, accept);
            assert_eq!(page.name, project);
            assert!(!page.files.is_empty());
            for file in &page.files {
                let url = index_url.join(&file.url).unwrap();
                assert!(url.same_origin(&index_url), "{url}");
                assert!(url.path().starts_with("/packages/"), "{url}");
                let bytes = body(&c.get("file", url.path_and_query(), None));
                let digest = Sha256Digest::of(&bytes);
                // As on PyPI, the path carries a digest of the bytes, but
                // not the sha256 that clients verify.
                assert!(
                    !url.path().contains(&digest.to_hex()),
                    "path must not hold the sha256"
                );
                let segs: Vec<&str> = url.path().split('/').collect();
                assert_eq!(
                    (segs[2].len(), segs[3].len(), segs[4].len()),
                    (2, 2, 60),
                    "{url}"
                );
                let listed = file.hashes.get("sha256");
                match project {
                    canary::NO_DIGEST => assert!(file.hashes.is_empty()),
                    canary::BAD_DIGEST => {
                        assert_ne!(listed, Some(&digest.to_hex()));
                        assert!(listed.is_some());
                    }
                    _ => assert_eq!(listed, Some(&digest.to_hex()), "{}", file.filename),
                }
                let is_wheel = file.filename.ends_with(".whl");
                if is_wheel && project != canary::NO_DIGEST {
                    let meta_hashes = file.core_metadata.as_ref().expect("PEP 658 for wheels");
                    let meta = body(&c.get("metadata", &format!("{}.metadata", url.path()), None));
                    assert_eq!(
                        meta_hashes.get("sha256"),
                        Some(&Sha256Digest::of(&meta).to_hex())
                    );
                    assert_eq!(
                        meta,
                        egress_artifacts::read_wheel_metadata(&bytes).unwrap(),
                        "served metadata is the wheel's METADATA"
                    );
                } else if !is_wheel {
                    assert_eq!(file.core_metadata, None);
                    let ex = c.get("metadata", &format!("{}.metadata", url.path()), None);
                    assert_eq!(ex.status(), Some(404));
                }
            }
        }
    }
}

#[test]
fn content_is_what_the_plan_says() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let plan = canary.plan();
    assert_eq!(plan.origin, canary.base_url());
    assert_eq!(plan.index_url, canary.index_url());
    assert_eq!(plan.present, name(canary::PRESENT));
    assert_eq!(plan.tripwire, name(canary::TRIPWIRE));
    assert_eq!(plan.template, name(canary::TEMPLATE));
    assert_eq!(plan.upstream_only_paths.len(), 1);
    for path in &plan.upstream_only_paths {
        assert_eq!(c.get("upstream only", path, None).status(), Some(200));
    }

    let files = |dists: Vec<(ProjectName, egress_artifacts::BuiltDist)>| -> BTreeSet<String> {
        dists.into_iter().map(|(_, d)| d.filename).collect()
    };
    let snapshot = files(canary.dists(false));
    let want: BTreeSet<String> = [
        "ec_present-1.0.0-py3-none-any.whl",
        "ec_present-1.0.0.tar.gz",
        "ec_present-1.1.0-py3-none-any.whl",
        "ec_tripwire-0.1.0.tar.gz",
        "ec_template_text-1.0.0-py3-none-any.whl",
    ]
    .map(String::from)
    .into();
    assert_eq!(snapshot, want);
    let mut with_upstream_only = want.clone();
    with_upstream_only.insert("ec_upstream_only-1.0.0-py3-none-any.whl".into());
    assert_eq!(files(canary.dists(true)), with_upstream_only);

    // The dists are the served bytes.
    for (_, dist) in canary.dists(true) {
        let path = canary.file_path(&dist.filename).unwrap();
        assert_eq!(body(&c.get("file", &path, None)), dist.bytes);
    }

    // The template project's text carries every raw marker.
    let (_, wheel) = canary
        .dists(false)
        .into_iter()
        .find(|(n, _)| n.as_str() == canary::TEMPLATE)
        .unwrap();
    let meta =
        String::from_utf8(egress_artifacts::read_wheel_metadata(&wheel.bytes).unwrap()).unwrap();
    let (head, description) = meta.split_once("\n\n").unwrap();
    let summary = head.lines().find(|l| l.starts_with("Summary: ")).unwrap();
    for (raw, evaluated) in egress_model::upstream::TEMPLATE_MARKERS {
        assert!(summary.contains(raw) && description.contains(raw), "{raw}");
        assert!(!meta.contains(evaluated));
    }

    // The tripwire sdist is sdist-only and its setup.py calls the tripwire.
    let page = page(&c, canary::TRIPWIRE, JSON);
    assert_eq!(page.files.len(), 1);
    assert!(page.files[0].filename.ends_with(".tar.gz"));
    let (_, sdist) = canary
        .dists(false)
        .into_iter()
        .find(|(n, _)| n.as_str() == canary::TRIPWIRE)
        .unwrap();
    let pkg_info = egress_artifacts::read_sdist_pkg_info(&sdist.bytes).unwrap();
    assert!(String::from_utf8_lossy(&pkg_info).contains("Name: ec-tripwire"));
}

#[test]
fn routing_negotiation_and_the_log() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let mark = canary.mark();

    let ex = c.get("406", "/simple/", Some("image/png"));
    assert_eq!(ex.status(), Some(406));
    let ex = c.get("redirect", "/simple/EC_Present/", None);
    assert_eq!(ex.status(), Some(301));
    assert_eq!(
        ex.response.as_ref().unwrap().header("location"),
        Some("/simple/ec-present/")
    );
    let ex = c.get("no slash", "/simple/ec-present", None);
    assert_eq!(ex.status(), Some(301));
    assert_eq!(c.get("unknown", "/simple/nope/", None).status(), Some(404));
    assert_eq!(c.get("other", "/etc/passwd", None).status(), Some(404));
    assert_eq!(
        c.get("query", "/simple/ec-present/?url=http://x", None)
            .status(),
        Some(200)
    );
    let put = egress_transcript::Request::new("PUT", "/simple/ec-present/").body(b"x".to_vec());
    assert_eq!(c.send("put", &put).status(), Some(404));
    let ex = c.get("tripwire", "/tripwire/by-hand", None);
    assert_eq!(ex.status(), Some(200));
    assert_eq!(body(&ex), b"tripped\n");

    let log = canary.requests_since(mark);
    let seen: Vec<(&str, &str, bool)> = log
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str(), r.tripwire))
        .collect();
    assert_eq!(
        seen,
        [
            ("GET", "/simple/", false),
            ("GET", "/simple/EC_Present/", false),
            ("GET", "/simple/ec-present", false),
            ("GET", "/simple/nope/", false),
            ("GET", "/etc/passwd", false),
            ("GET", "/simple/ec-present/?url=http://x", false),
            ("PUT", "/simple/ec-present/", false),
            ("GET", "/tripwire/by-hand", true),
        ]
    );
    // Sequence numbers increase and mark() is the last one.
    assert!(log.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    assert_eq!(canary.mark(), log.last().unwrap().seq);
    assert!(canary.requests_since(canary.mark()).is_empty());
    assert_eq!(canary.requests().len() as u64, canary.mark());
}

#[test]
fn mutations_show_in_pages() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let index_url = Url::parse(&canary.index_url()).unwrap();
    let serial = |c: &Client| {
        c.get("serial", "/simple/ec-present/", None)
            .response
            .unwrap()
            .header("x-pypi-last-serial")
            .unwrap()
            .to_string()
    };
    let serial0 = serial(&c);

    let published = canary.publish_new_version(&name(canary::PRESENT)).unwrap();
    let Observation::UpstreamMutation {
        filename,
        before,
        after,
        ..
    } = published
    else {
        panic!("not a mutation")
    };
    assert_eq!(filename, "ec_present-9.9.9-py3-none-any.whl");
    assert_eq!(before, None);
    let p = page(&c, canary::PRESENT, JSON);
    assert!(p.versions.contains(&"9.9.9".to_string()));
    let entry = p.files.iter().find(|f| f.filename == filename).unwrap();
    assert_eq!(entry.hashes.get("sha256"), Some(&after.to_hex()));
    let url = index_url.join(&entry.url).unwrap();
    assert_eq!(
        Sha256Digest::of(&body(&c.get("new", url.path(), None))),
        after
    );
    assert_ne!(serial(&c), serial0);

    let Observation::UpstreamMutation { filename, .. } =
        canary.publish_new_version(&name(canary::PRESENT)).unwrap()
    else {
        panic!("not a mutation")
    };
    assert_eq!(filename, "ec_present-9.9.10-py3-none-any.whl");
    assert!(canary.publish_new_version(&name("not-served")).is_err());

    let target = "ec_present-1.0.0-py3-none-any.whl";
    let old_path = canary.file_path(target).unwrap();
    let old_bytes = body(&c.get("old", &old_path, None));
    let Observation::UpstreamMutation {
        filename,
        before,
        after,
        ..
    } = canary.replace_file_bytes(target).unwrap()
    else {
        panic!("not a mutation")
    };
    assert_eq!(filename, target);
    assert_eq!(before, Some(Sha256Digest::of(&old_bytes)));
    assert_ne!(Some(after), before);
    for accept in [JSON, "text/html"] {
        let p = page(&c, canary::PRESENT, accept);
        let entries: Vec<_> = p.files.iter().filter(|f| f.filename == target).collect();
        assert_eq!(entries.len(), 1, "same filename, listed once");
        assert_eq!(entries[0].hashes.get("sha256"), Some(&after.to_hex()));
        let url = index_url.join(&entries[0].url).unwrap();
        let new_bytes = body(&c.get("new", url.path(), None));
        assert_eq!(Sha256Digest::of(&new_bytes), after);
        // Still a valid wheel.
        egress_artifacts::read_wheel_metadata(&new_bytes).unwrap();
    }
    assert_eq!(c.get("old path", &old_path, None).status(), Some(404));
    assert_ne!(canary.file_path(target).unwrap(), old_path);
    assert!(canary.replace_file_bytes("nope-1.0.tar.gz").is_err());

    // The sdist can be replaced too, and dists() follow the current bytes.
    let sdist = "ec_present-1.0.0.tar.gz";
    let Observation::UpstreamMutation { after, .. } = canary.replace_file_bytes(sdist).unwrap()
    else {
        panic!("not a mutation")
    };
    let (_, dist) = canary
        .dists(false)
        .into_iter()
        .find(|(_, d)| d.filename == sdist)
        .unwrap();
    assert_eq!(dist.sha256, after);
    egress_artifacts::read_sdist_pkg_info(&dist.bytes).unwrap();
}

#[test]
fn slow_file_is_delayed() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let f = "ec_present-1.1.0-py3-none-any.whl";
    canary.set_slow(f, Duration::from_millis(600));
    let path = canary.file_path(f).unwrap();
    let start = Instant::now();
    assert_eq!(c.get("slow", &path, None).status(), Some(200));
    assert!(start.elapsed() >= Duration::from_millis(600));
}

// ------------------------------------------------------------------ real pip

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "egress-fixtures-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pip_download(index_url: &str, requirement: &str, dest: &PathBuf, extra: &[&str]) -> bool {
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .args(["--no-cache-dir", "--index-url", index_url, "-d"])
        .arg(dest)
        .args(extra)
        .arg(requirement)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_INPUT", "1")
        .output()
        .expect("python3 must be installed to run these tests");
    if !out.status.success() {
        eprintln!(
            "pip failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

#[test]
fn real_pip_downloads_from_the_canary() {
    let canary = Canary::start().unwrap();
    let tmp = TempDir::new("pip-canary");
    assert!(pip_download(
        &canary.index_url(),
        "ec-present==1.1.0",
        &tmp.0,
        &[]
    ));
    let wheel = "ec_present-1.1.0-py3-none-any.whl";
    let bytes = std::fs::read(tmp.0.join(wheel)).unwrap();
    let want = canary.file_path(wheel).unwrap();
    assert_eq!(
        Some(Sha256Digest::of(&bytes)),
        canary
            .dists(false)
            .into_iter()
            .find(|(_, d)| d.filename == wheel)
            .map(|(_, d)| d.sha256)
    );
    let targets: Vec<String> = canary.requests().into_iter().map(|r| r.target).collect();
    assert!(
        targets.contains(&"/simple/ec-present/".to_string()),
        "{targets:?}"
    );
    assert!(targets.contains(&want), "{targets:?}");
    assert!(canary.requests().iter().all(|r| !r.tripwire));
}

#[test]
fn building_the_tripwire_sdist_fires_the_tripwire() {
    let has_setuptools = Command::new("python3")
        .args(["-c", "import setuptools"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_setuptools {
        eprintln!("skipped: setuptools is not installed");
        return;
    }
    let canary = Canary::start().unwrap();
    let tmp = TempDir::new("pip-tripwire");
    // pip prepares an sdist's metadata by running its build backend, which
    // runs setup.py; without build isolation it uses the installed setuptools.
    // Whether the build then succeeds depends on that setuptools (old ones
    // want `wheel` too); the tripwire fires before setup() either way.
    let _ = pip_download(
        &canary.index_url(),
        "ec-tripwire==0.1.0",
        &tmp.0,
        &["--no-build-isolation"],
    );
    let trips: Vec<_> = canary
        .requests()
        .into_iter()
        .filter(|r| r.tripwire)
        .collect();
    assert!(!trips.is_empty(), "{:?}", canary.requests());
    assert_eq!(trips[0].target, "/tripwire/ec-tripwire-0.1.0");
}
