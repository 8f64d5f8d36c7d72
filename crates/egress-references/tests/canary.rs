//! The canary serves real, valid PyPI-protocol content, logs every request
//! and changes what it serves when the suite asks.

use egress_model::{Observation, ProjectName, Sha256Digest, Upstream, Url};
use egress_references::pypi::canary::{self, Canary};
use egress_simple::{parse_index_html, parse_index_json};
use egress_transcript::Client;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::{body, client, name, page, TempDir, JSON};

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
    let put =
        egress_transcript::Request::new(egress_transcript::Method::Put, "/simple/ec-present/")
            .body(b"x".to_vec());
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

fn pip_download(index_url: &str, requirement: &str, dest: &Path, extra: &[&str]) -> bool {
    let out = common::pip_download(index_url, requirement, dest, extra);
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

// ------------------------------------------------------------ mirroring API

fn json_doc(c: &Client, path: &str) -> (serde_json::Value, u64) {
    let ex = c.get("json api", path, None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let resp = ex.response.as_ref().unwrap();
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let serial = resp
        .header("x-pypi-last-serial")
        .and_then(|s| s.parse().ok())
        .expect("X-PyPI-Last-Serial");
    (serde_json::from_slice(&body(&ex)).unwrap(), serial)
}

#[test]
fn json_api_describes_what_is_served() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());

    let (doc, serial) = json_doc(&c, "/pypi/ec-present/json");
    assert_eq!(doc["last_serial"], serial);
    assert_eq!(doc["info"]["name"], "ec-present");
    assert_eq!(doc["info"]["version"], "1.1.0");
    let releases = doc["releases"].as_object().unwrap();
    assert_eq!(
        releases.keys().map(String::as_str).collect::<Vec<_>>(),
        ["1.0.0", "1.1.0"]
    );
    assert_eq!(releases["1.0.0"].as_array().unwrap().len(), 2);
    assert_eq!(doc["urls"], releases["1.1.0"]);
    let dists = canary.dists(false);
    for file in releases.values().flat_map(|r| r.as_array().unwrap()) {
        let filename = file["filename"].as_str().unwrap();
        let (_, dist) = dists.iter().find(|(_, d)| d.filename == filename).unwrap();
        assert_eq!(file["digests"]["sha256"], dist.sha256.to_hex());
        assert_eq!(file["size"], dist.bytes.len());
        assert_eq!(
            file["url"],
            canary.file_url(filename).unwrap(),
            "an absolute URL below /packages/"
        );
        let is_wheel = filename.ends_with(".whl");
        assert_eq!(
            file["packagetype"],
            if is_wheel { "bdist_wheel" } else { "sdist" }
        );
        assert_eq!(
            file["python_version"],
            if is_wheel { "py3" } else { "source" }
        );
        assert_eq!(file["yanked"], false);
        let iso = file["upload_time_iso_8601"].as_str().unwrap();
        assert!(iso.starts_with("2025-01-01T00:00:") && iso.ends_with(".000000Z"));
        assert!(iso.starts_with(file["upload_time"].as_str().unwrap()));
    }

    // One version; other spellings redirect; unknown ones are 404.
    let (doc, _) = json_doc(&c, "/pypi/ec-present/1.0.0/json");
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert_eq!(doc["urls"].as_array().unwrap().len(), 2);
    assert!(doc.get("releases").is_none());
    for (path, location) in [
        ("/pypi/EC_Present/json", "/pypi/ec-present/json"),
        ("/pypi/ec.present/1.0.0/json", "/pypi/ec-present/1.0.0/json"),
    ] {
        let ex = c.get("redirect", path, None);
        assert_eq!(ex.status(), Some(301), "{path}");
        assert_eq!(
            ex.response.as_ref().unwrap().header("location"),
            Some(location)
        );
    }
    for path in [
        "/pypi/nope/json",
        "/pypi/ec-present/7.0/json",
        "/pypi/ec-present/json/",
        "/pypi/ec-present/",
        "/pypi/../json",
    ] {
        assert_eq!(c.get("404", path, None).status(), Some(404), "{path}");
    }

    // The broken listings are broken the same way here.
    let (doc, _) = json_doc(&c, "/pypi/ec-no-digest/json");
    assert_eq!(doc["urls"][0]["digests"], serde_json::json!({}));
    let (doc, _) = json_doc(&c, "/pypi/ec-bad-digest/json");
    let url = Url::parse(doc["urls"][0]["url"].as_str().unwrap()).unwrap();
    let served = Sha256Digest::of(&body(&c.get("file", url.path(), None)));
    let listed = doc["urls"][0]["digests"]["sha256"].as_str().unwrap();
    assert_ne!(listed, served.to_hex());

    // Package text is data: the raw markers, never evaluated.
    let (doc, _) = json_doc(&c, "/pypi/ec-template-text/json");
    for (raw, evaluated) in egress_model::upstream::TEMPLATE_MARKERS {
        for field in ["summary", "description"] {
            let text = doc["info"][field].as_str().unwrap();
            assert!(text.contains(raw) && !text.contains(evaluated), "{field}");
        }
    }
}

/// Calls the canary's XML-RPC endpoint with Python's own client and returns
/// what it decoded, as JSON.
fn python_xmlrpc(canary: &Canary, script: &str) -> serde_json::Value {
    let program = format!(
        "import json, sys, xmlrpc.client\nrpc = xmlrpc.client.ServerProxy(sys.argv[1] + '/pypi')\n{script}\n"
    );
    let out = Command::new("python3")
        .args(["-c", &program, &canary.base_url()])
        .output()
        .expect("python3 must be installed to run these tests");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn xmlrpc_lists_projects_serials_and_the_changelog() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let script = "print(json.dumps([rpc.list_packages_with_serial(), rpc.list_packages(), rpc.changelog_last_serial(), rpc.changelog_since_serial(0)]))";
    let got = python_xmlrpc(&canary, script);
    let with_serial = got[0].as_object().unwrap();
    let names: BTreeSet<&str> = with_serial.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = [
        canary::PRESENT,
        canary::UPSTREAM_ONLY,
        canary::TRIPWIRE,
        canary::TEMPLATE,
        canary::NO_DIGEST,
        canary::BAD_DIGEST,
    ]
    .into();
    assert_eq!(names, want);
    let listed: BTreeSet<&str> = got[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, want);
    let last = got[2].as_u64().unwrap();
    let changelog = got[3].as_array().unwrap();
    assert_eq!(changelog.last().unwrap()[4], last);
    // Serials increase by one per entry; each project's serial is its last entry's.
    for (i, entry) in changelog.iter().enumerate() {
        assert_eq!(entry[4], i as u64 + 1, "{entry}");
    }
    for (name, serial) in with_serial {
        let latest = changelog
            .iter()
            .filter(|e| e[0] == name.as_str())
            .map(|e| e[4].as_u64().unwrap())
            .max();
        assert_eq!(serial.as_u64(), latest, "{name}");
        let (doc, header) = json_doc(&c, &format!("/pypi/{name}/json"));
        assert_eq!(Some(header), latest);
        assert_eq!(doc["last_serial"].as_u64(), latest);
        let page = c.get("page", &format!("/simple/{name}/"), None);
        let page_serial = page.response.as_ref().unwrap().header("x-pypi-last-serial");
        assert_eq!(page_serial, latest.map(|s| s.to_string()).as_deref());
    }
    let index = c.get("index", "/simple/", None);
    assert_eq!(
        index
            .response
            .as_ref()
            .unwrap()
            .header("x-pypi-last-serial"),
        Some(last.to_string().as_str())
    );
    let present: Vec<&serde_json::Value> = changelog
        .iter()
        .filter(|e| e[0] == canary::PRESENT)
        .collect();
    let actions: Vec<&str> = present.iter().map(|e| e[3].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        [
            "new release",
            "add py3 file ec_present-1.0.0-py3-none-any.whl",
            "add source file ec_present-1.0.0.tar.gz",
            "new release",
            "add py3 file ec_present-1.1.0-py3-none-any.whl",
        ]
    );

    // Mutations are changelog entries with new serials.
    canary.publish_new_version(&name(canary::PRESENT)).unwrap();
    canary
        .replace_file_bytes("ec_tripwire-0.1.0.tar.gz")
        .unwrap();
    let got = python_xmlrpc(
        &canary,
        &format!("print(json.dumps(rpc.changelog_since_serial({last})))"),
    );
    let entries: Vec<(String, String, String, u64)> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_string(),
                e[1].as_str().unwrap().to_string(),
                e[3].as_str().unwrap().to_string(),
                e[4].as_u64().unwrap(),
            )
        })
        .collect();
    let s = last;
    assert_eq!(
        entries,
        [
            ("ec-present", "9.9.9", "new release", s + 1),
            (
                "ec-present",
                "9.9.9",
                "add py3 file ec_present-9.9.9-py3-none-any.whl",
                s + 2
            ),
            (
                "ec-tripwire",
                "0.1.0",
                "remove file ec_tripwire-0.1.0.tar.gz",
                s + 3
            ),
            (
                "ec-tripwire",
                "0.1.0",
                "add source file ec_tripwire-0.1.0.tar.gz",
                s + 4
            ),
        ]
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d))
    );
    let (doc, header) = json_doc(&c, "/pypi/ec-tripwire/json");
    assert_eq!(header, s + 4);
    assert_eq!(
        doc["urls"][0]["url"],
        canary.file_url("ec_tripwire-0.1.0.tar.gz").unwrap()
    );

    // Faults, refusals, and the log.
    let got = python_xmlrpc(
        &canary,
        "out = []\nfor call in (lambda: rpc.no_such_method(), lambda: rpc.changelog_since_serial('x')):\n    try:\n        call()\n    except xmlrpc.client.Fault as f:\n        out.append(f.faultCode)\nprint(json.dumps(out))",
    );
    assert_eq!(got, serde_json::json!([-32601, -32602]));
    let mark = canary.mark();
    let xml = |body: &str, ctype: &str| {
        egress_transcript::Request::new(egress_transcript::Method::Post, "/pypi")
            .header("Content-Type", ctype)
            .body(body.as_bytes().to_vec())
    };
    let ex = c.send("json", &xml("{}", "application/json"));
    assert_eq!(ex.status(), Some(415));
    let ex = c.send(
        "doctype",
        &xml(
            "<?xml version=\"1.0\"?><!DOCTYPE m [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><methodCall><methodName>list_packages</methodName></methodCall>",
            "text/xml",
        ),
    );
    assert_eq!(ex.status(), Some(200));
    let text = String::from_utf8(body(&ex)).unwrap();
    assert!(
        text.contains("<fault>") && text.contains("-32700"),
        "{text}"
    );
    let ex = c.send(
        "rpc2",
        &egress_transcript::Request::new(egress_transcript::Method::Post, "/RPC2")
            .header("Content-Type", "text/xml")
            .body(
                b"<methodCall><methodName>changelog_last_serial</methodName></methodCall>".to_vec(),
            ),
    );
    let text = String::from_utf8(body(&ex)).unwrap();
    assert!(text.contains(&format!("<int>{}</int>", s + 4)), "{text}");
    assert_eq!(c.get("get", "/pypi", None).status(), Some(404));
    let post = egress_transcript::Request::new(egress_transcript::Method::Post, "/simple/")
        .body(b"x".to_vec());
    assert_eq!(c.send("post", &post).status(), Some(404));
    let seen: Vec<(String, String)> = canary
        .requests_since(mark)
        .into_iter()
        .map(|r| (r.method.to_string(), r.target))
        .collect();
    let want: Vec<(String, String)> = [
        ("POST", "/pypi"),
        ("POST", "/pypi"),
        ("POST", "/RPC2"),
        ("GET", "/pypi"),
        ("POST", "/simple/"),
    ]
    .map(|(m, t)| (m.to_string(), t.to_string()))
    .to_vec();
    assert_eq!(seen, want);
}
