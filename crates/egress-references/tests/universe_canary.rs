//! The canaries' universe content (`Canary::start_with`,
//! `NpmCanary::start_with`): the pages and packuments list what the tables
//! in `pypi::universe` and `npm::universe` say, with times on either side
//! of the cutoff, and a canary started as before serves none of it.

use egress_model::{Sha256Digest, Timestamp, Url};
use egress_references::npm::canary::{NpmCanary, ABBREVIATED};
use egress_references::npm::universe as npm_u;
use egress_references::pypi::canary::{self, Canary};
use egress_references::pypi::universe::{self as pypi_u, Dist};
use egress_references::{Universe, UNIVERSE_CUTOFF};
use egress_simple::{parse_index_json, FileEntry};
use egress_transcript::{Client, Limits};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

mod common;

use common::{body, name, page, JSON};

/// A client that keeps whole bodies up to 4 MiB (`eu-big` is 1.25 MiB).
fn client(base: &str) -> Client {
    let limits = Limits {
        record_bytes: 4 << 20,
        ..Limits::default()
    };
    Client::new(Url::parse(base).unwrap(), limits, None).unwrap()
}

fn time(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn cutoff() -> Timestamp {
    time(UNIVERSE_CUTOFF)
}

fn get(c: &Client, path: &str) -> Vec<u8> {
    let ex = c.get("get", path, None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    body(&ex)
}

/// The file name the table's row gives for `dist`.
fn filename(r: &pypi_u::Release, dist: Dist) -> String {
    let stem = format!(
        "{}-{}",
        name(r.project).wheel_component(),
        r.version.replace('-', "_")
    );
    match dist {
        Dist::Sdist => format!("{stem}.tar.gz"),
        Dist::Wheel(tag) => format!("{stem}-{tag}.whl"),
    }
}

/// The table's files of `project`: file name to its row.
fn table_files(
    project: &str,
    table: &'static [pypi_u::Release],
) -> BTreeMap<String, &'static pypi_u::Release> {
    table
        .iter()
        .filter(|r| r.project == project)
        .flat_map(|r| r.dists.iter().map(move |d| (filename(r, *d), r)))
        .collect()
}

/// What both forms of a page list of a file: name, yanked,
/// requires-python, sha256.
type Listed<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);

fn listed_of(f: &FileEntry) -> Listed<'_> {
    (
        f.filename.as_str(),
        f.yanked.as_deref(),
        f.requires_python.as_deref(),
        f.hashes.get("sha256").map(String::as_str),
    )
}

fn index_names(c: &Client) -> Vec<String> {
    let ex = c.get("index", "/simple/", Some(JSON));
    parse_index_json(&body(&ex)).unwrap().projects
}

const OWN: [&str; 6] = [
    canary::PRESENT,
    canary::UPSTREAM_ONLY,
    canary::TRIPWIRE,
    canary::TEMPLATE,
    canary::NO_DIGEST,
    canary::BAD_DIGEST,
];

#[test]
fn pypi_universe_pages_list_the_table() {
    let canary = Canary::start_with(Universe::default()).unwrap();
    let c = client(&canary.base_url());
    let index = Url::parse(&canary.index_url()).unwrap();

    let mut want: Vec<String> = OWN.iter().map(|s| s.to_string()).collect();
    want.extend(pypi_u::PROJECTS.iter().map(|s| s.to_string()));
    assert_eq!(
        index_names(&c),
        want,
        "the canary's own, then the universe's"
    );
    let ex = c.get(
        "no time",
        &format!("/simple/{}/", pypi_u::NO_TIME),
        Some(JSON),
    );
    assert_eq!(ex.status(), Some(404), "eu-no-time only when asked for");

    let (mut before, mut after) = (0, 0);
    for project in pypi_u::PROJECTS {
        let table = table_files(project, pypi_u::RELEASES);
        let json = page(&c, project, JSON);
        let html = page(&c, project, "text/html");
        let listed: BTreeMap<&str, &FileEntry> = json
            .files
            .iter()
            .map(|f| (f.filename.as_str(), f))
            .collect();
        assert_eq!(
            listed.keys().copied().collect::<Vec<_>>(),
            table.keys().map(String::as_str).collect::<Vec<_>>(),
            "{project}"
        );
        let versions: BTreeSet<&str> = table.values().map(|r| r.version).collect();
        assert_eq!(
            json.versions
                .iter()
                .map(String::as_str)
                .collect::<BTreeSet<_>>(),
            versions
        );
        for (filename, r) in &table {
            let f = listed[filename.as_str()];
            let uploaded = time(f.upload_time.as_deref().expect("upload-time listed"));
            assert_eq!(uploaded, time(r.uploaded), "{filename}");
            if uploaded < cutoff() {
                before += 1;
            } else {
                after += 1;
            }
            assert_eq!(f.yanked.as_deref(), r.yanked, "{filename}");
            let url = index.join(&f.url).unwrap();
            let bytes = get(&c, url.path_and_query());
            assert_eq!(f.size, Some(bytes.len() as u64), "{filename}");
            assert_eq!(
                f.hashes.get("sha256"),
                Some(&Sha256Digest::of(&bytes).to_hex())
            );
            if filename.ends_with(".whl") {
                assert_eq!(f.requires_python.as_deref(), r.requires_python);
                let meta = get(&c, &format!("{}.metadata", url.path()));
                let listed_meta = f.core_metadata.as_ref().expect("core-metadata listed");
                assert_eq!(
                    listed_meta.get("sha256"),
                    Some(&Sha256Digest::of(&meta).to_hex()),
                    "{filename}"
                );
                assert_eq!(
                    meta,
                    egress_artifacts::read_wheel_metadata(&bytes).unwrap(),
                    "{filename}: PEP 658 metadata is the wheel's METADATA"
                );
                let text = String::from_utf8(meta).unwrap();
                let requires: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("Requires-Dist: "))
                    .collect();
                assert_eq!(requires, r.requires_dist, "{filename}");
                if let Some(rp) = r.requires_python {
                    assert!(text.contains(&format!("\nRequires-Python: {rp}\n")));
                }
            } else {
                assert_eq!(f.core_metadata, None);
                assert_eq!(f.requires_python, None);
            }
        }
        // HTML: the same files, yanked and requires-python; PEP 700 is JSON only.
        assert!(html.files.iter().all(|f| f.upload_time.is_none()));
        let html_files: Vec<Listed> = html.files.iter().map(listed_of).collect();
        let json_files: Vec<Listed> = json.files.iter().map(listed_of).collect();
        assert_eq!(html_files, json_files, "{project}");
    }
    // eu-alpha 2.0.0 (7 files) and eu-beta 3.0.0 (1) are after the cutoff.
    let total: usize = pypi_u::RELEASES.iter().map(|r| r.dists.len()).sum();
    assert_eq!((before, after), (total - 8, 8));

    let alpha = page(&c, pypi_u::ALPHA, JSON);
    let yanked: BTreeSet<&str> = alpha
        .files
        .iter()
        .filter(|f| f.yanked.is_some())
        .map(|f| f.filename.as_str())
        .collect();
    assert_eq!(yanked.len(), 7);
    assert!(yanked.iter().all(|f| f.starts_with("eu_alpha-1.1.1")));
    let big = page(&c, pypi_u::BIG, JSON);
    assert!(big.files[0].size.unwrap() > pypi_u::BIG_MIN_BYTES);

    // The JSON API agrees: times, yanked, requires_dist.
    let api: Value =
        serde_json::from_slice(&get(&c, &format!("/pypi/{}/json", pypi_u::ALPHA))).unwrap();
    assert_eq!(api["info"]["version"], "2.0.0", "the latest final release");
    assert_eq!(
        api["info"]["requires_dist"],
        serde_json::json!(pypi_u::ALPHA_REQUIRES_DIST)
    );
    let release = |v: &str| api["releases"][v].as_array().unwrap().clone();
    for f in release("1.1.1") {
        assert_eq!(f["yanked"], true);
        assert_eq!(f["yanked_reason"], pypi_u::ALPHA_YANKED_REASON);
    }
    for f in release("2.0.0") {
        assert!(time(f["upload_time_iso_8601"].as_str().unwrap()) > cutoff());
        assert_eq!(f["yanked"], false);
    }
    let wheel = release("1.0.0")
        .into_iter()
        .find(|f| f["packagetype"] == "bdist_wheel")
        .unwrap();
    assert_eq!(wheel["python_version"], "cp311");
    assert_eq!(wheel["requires_python"], pypi_u::ALPHA_REQUIRES_PYTHON);
    // The canary's own projects are not part of `dists`.
    assert!(canary
        .dists(true)
        .iter()
        .all(|(n, _)| !n.as_str().starts_with("eu-")));
}

#[test]
fn pypi_no_time_variant_lists_no_upload_times() {
    let canary = Canary::start_with(Universe::with_no_time()).unwrap();
    let c = client(&canary.base_url());
    assert_eq!(
        index_names(&c).last().map(String::as_str),
        Some(pypi_u::NO_TIME)
    );
    let page = page(&c, pypi_u::NO_TIME, JSON);
    assert_eq!(page.files.len(), 1);
    assert_eq!(page.files[0].upload_time, None);
    assert!(page.files[0].size.is_some());
    let api: Value =
        serde_json::from_slice(&get(&c, &format!("/pypi/{}/json", pypi_u::NO_TIME))).unwrap();
    assert_eq!(api["urls"][0]["upload_time_iso_8601"], Value::Null);
    // The others keep theirs.
    let alpha = common::page(&c, pypi_u::ALPHA, JSON);
    assert!(alpha.files.iter().all(|f| f.upload_time.is_some()));
}

/// A body with the canary's origin written as `ORIGIN`.
fn without_origin(bytes: &[u8], origin: &str) -> String {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .replace(origin, "ORIGIN")
}

#[test]
fn default_canaries_serve_no_universe_and_their_own_content_is_unchanged() {
    let plain = Canary::start().unwrap();
    let with = Canary::start_with(Universe::with_no_time()).unwrap();
    let (pc, wc) = (client(&plain.base_url()), client(&with.base_url()));
    assert_eq!(index_names(&pc), OWN.map(str::to_string));
    for accept in [JSON, "text/html"] {
        let index = body(&pc.get("index", "/simple/", Some(accept)));
        let text = String::from_utf8(index).unwrap();
        assert!(!text.contains("eu-"), "{text}");
    }
    for project in pypi_u::PROJECTS.iter().chain([&pypi_u::NO_TIME]) {
        let ex = pc.get("page", &format!("/simple/{project}/"), Some(JSON));
        assert_eq!(ex.status(), Some(404), "{project}");
    }
    // The canary's own pages are the same bytes either way (but the
    // tripwire's, whose sdist holds the canary's port).
    for project in OWN.into_iter().filter(|p| *p != canary::TRIPWIRE) {
        for accept in [JSON, "text/html"] {
            let path = format!("/simple/{project}/");
            let a = body(&pc.get("page", &path, Some(accept)));
            let b = body(&wc.get("page", &path, Some(accept)));
            assert_eq!(
                without_origin(&a, &plain.base_url()),
                without_origin(&b, &with.base_url()),
                "{project} {accept}"
            );
        }
        let own = page(&pc, project, JSON);
        assert!(own.files.iter().all(|f| f.upload_time.is_none()));
    }
    let filenames = |c: &Canary| -> Vec<String> {
        c.dists(true).into_iter().map(|(_, d)| d.filename).collect()
    };
    assert_eq!(filenames(&plain), filenames(&with));

    let npm_plain = NpmCanary::start().unwrap();
    let npm_with = NpmCanary::start_with(Universe::default()).unwrap();
    let (nc, wc) = (client(&npm_plain.base_url()), client(&npm_with.base_url()));
    for package in npm_u::PACKAGES.iter().chain([&npm_u::NO_TIME]) {
        let ex = nc.get("packument", &packument_path(package), None);
        assert_eq!(ex.status(), Some(404), "{package}");
    }
    for package in ["ec-present", "@ec/scoped", "ec-template-text"] {
        for abbreviated in [false, true] {
            let a = strip_signatures(packument(&nc, package, abbreviated));
            let b = strip_signatures(packument(&wc, package, abbreviated));
            assert_eq!(
                without_origin(a.to_string().as_bytes(), &npm_plain.base_url()),
                without_origin(b.to_string().as_bytes(), &npm_with.base_url()),
                "{package}"
            );
        }
    }
    assert_eq!(
        npm_plain.tarballs(true).len(),
        npm_with.tarballs(true).len()
    );
}

// ------------------------------------------------------------------ npm

/// `/name`, or `/@scope%2fname`, as npm asks.
fn packument_path(name: &str) -> String {
    format!("/{}", name.replace('/', "%2f"))
}

fn packument(c: &Client, name: &str, abbreviated: bool) -> Value {
    let accept = if abbreviated {
        "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
    } else {
        "application/json"
    };
    let ex = c.get("packument", &packument_path(name), Some(accept));
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let ctype = ex.response.as_ref().unwrap().header("content-type");
    assert_eq!(
        ctype,
        Some(if abbreviated {
            ABBREVIATED
        } else {
            "application/json"
        })
    );
    serde_json::from_slice(&body(&ex)).unwrap()
}

/// The packument without `dist.signatures`, which a key made at start signs.
fn strip_signatures(mut doc: Value) -> Value {
    if let Some(versions) = doc["versions"].as_object_mut() {
        for v in versions.values_mut() {
            if let Some(dist) = v["dist"].as_object_mut() {
                dist.remove("signatures");
            }
        }
    }
    doc
}

fn sha1_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn ranges(r: npm_u::Ranges) -> Value {
    r.iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// What the table says a version's package.json holds, field by field
/// (`None`: the field is absent).
fn table_fields(r: &npm_u::Release) -> Vec<(&'static str, Option<Value>)> {
    let map = |x: npm_u::Ranges| (!x.is_empty()).then(|| ranges(x));
    let list = |x: &[&str]| (!x.is_empty()).then(|| serde_json::json!(x));
    let meta = (!r.optional_peers.is_empty()).then(|| {
        r.optional_peers
            .iter()
            .map(|p| (p.to_string(), serde_json::json!({ "optional": true })))
            .collect::<serde_json::Map<_, _>>()
            .into()
    });
    vec![
        ("dependencies", map(r.dependencies)),
        ("peerDependencies", map(r.peer_dependencies)),
        ("peerDependenciesMeta", meta),
        ("optionalDependencies", map(r.optional_dependencies)),
        ("os", list(r.os)),
        ("cpu", list(r.cpu)),
        ("libc", list(r.libc)),
    ]
}

#[test]
fn npm_universe_packuments_list_the_table() {
    let canary = NpmCanary::start_with(Universe::default()).unwrap();
    let c = client(&canary.base_url());
    let (mut before, mut after) = (0, 0);
    for package in npm_u::PACKAGES {
        let full = packument(&c, package, false);
        let abbr = packument(&c, package, true);
        let rows: Vec<&npm_u::Release> = npm_u::RELEASES
            .iter()
            .filter(|r| r.package == package)
            .collect();
        let versions: BTreeSet<&str> = rows.iter().map(|r| r.version).collect();
        for doc in [&full, &abbr] {
            let listed: BTreeSet<&str> = doc["versions"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(listed, versions, "{package}");
            let tags: BTreeMap<&str, &str> = npm_u::DIST_TAGS
                .iter()
                .filter(|(p, _, _)| *p == package)
                .map(|(_, t, v)| (*t, *v))
                .collect();
            assert_eq!(doc["dist-tags"], serde_json::json!(tags), "{package}");
        }
        // Times: each version's, created the first, modified the last.
        let times = &full["time"];
        let published: Vec<Timestamp> = rows.iter().map(|r| time(r.published)).collect();
        for (r, t) in rows.iter().zip(&published) {
            let listed = time(times[r.version].as_str().unwrap());
            assert_eq!(listed, *t, "{package} {}", r.version);
            assert!(times[r.version].as_str().unwrap().ends_with(".000Z"));
            if listed < cutoff() {
                before += 1;
            } else {
                after += 1;
            }
        }
        let first = *published.iter().min().unwrap();
        let last = *published.iter().max().unwrap();
        assert_eq!(time(times["created"].as_str().unwrap()), first);
        assert_eq!(time(times["modified"].as_str().unwrap()), last);
        assert_eq!(abbr["modified"], times["modified"]);
        assert_eq!(abbr.get("time"), None);

        for r in &rows {
            let fv = &full["versions"][r.version];
            let av = &abbr["versions"][r.version];
            assert_eq!(fv["dist"], av["dist"], "abbreviated and full agree");
            let url = fv["dist"]["tarball"].as_str().unwrap();
            assert_eq!(
                Some(url.to_string()),
                canary.tarball_url(package, r.version)
            );
            let bytes = get(&c, Url::parse(url).unwrap().path_and_query());
            assert_eq!(
                fv["dist"]["integrity"],
                egress_artifacts::sri_sha512(&bytes)
            );
            assert_eq!(fv["dist"]["shasum"], sha1_hex(&bytes));
            let manifest: Value = serde_json::from_slice(
                &egress_artifacts::read_top_level_file(
                    &bytes,
                    egress_artifacts::TopLevelFile::PackageJson,
                )
                .unwrap(),
            )
            .unwrap();
            for (field, want) in table_fields(r) {
                for (what, doc) in [("tarball", &manifest), ("full", fv), ("abbreviated", av)] {
                    let got = doc.get(field).cloned();
                    // The abbreviated form always lists `dependencies`.
                    let want = match (&want, what, field) {
                        (None, "abbreviated", "dependencies") => Some(serde_json::json!({})),
                        _ => want.clone(),
                    };
                    assert_eq!(got, want, "{package} {} {field} ({what})", r.version);
                }
            }
            let scripted = !r.scripts.is_empty();
            assert_eq!(fv["scripts"] != Value::Null, scripted);
            assert_eq!(manifest["scripts"], fv["scripts"]);
            assert_eq!(av.get("hasInstallScript").is_some(), scripted);
        }
    }
    // eu-app 2.0.0 and eu-lib 1.4.0 are after the cutoff.
    assert_eq!((before, after), (npm_u::RELEASES.len() - 2, 2));
    let app = packument(&c, npm_u::APP, false);
    assert_eq!(
        app["dist-tags"]["latest"], "2.0.0",
        "latest even after the cutoff"
    );
    assert!(time(app["time"]["2.0.0"].as_str().unwrap()) > cutoff());
    assert_eq!(
        app["versions"]["1.0.0"]["scripts"],
        Value::Null,
        "only eu-scripted has scripts"
    );
    let scripted = packument(&c, npm_u::SCRIPTED, false);
    assert_eq!(
        scripted["versions"]["1.0.0"]["scripts"]["postinstall"],
        npm_u::SCRIPTED_POSTINSTALL
    );
    // Scoped names in the other spelling too.
    let ex = c.get("scoped", "/@eu/native-darwin-arm64", None);
    assert_eq!(ex.status(), Some(200));
    // Not part of `tarballs`.
    assert!(canary
        .tarballs(true)
        .iter()
        .all(|(n, _, _)| !n.starts_with("eu-") && !n.starts_with("@eu/")));
    // Absent without the variant.
    assert_eq!(
        c.get("no time", &packument_path(npm_u::NO_TIME), None)
            .status(),
        Some(404)
    );
}

#[test]
fn npm_no_time_variant_lists_no_times() {
    let canary = NpmCanary::start_with(Universe::with_no_time()).unwrap();
    let c = client(&canary.base_url());
    let full = packument(&c, npm_u::NO_TIME, false);
    let abbr = packument(&c, npm_u::NO_TIME, true);
    assert_eq!(full.get("time"), None);
    assert_eq!(abbr.get("modified"), None);
    assert_eq!(full["dist-tags"]["latest"], "1.0.0");
    assert!(full["versions"]["1.0.0"]["dist"]["integrity"].is_string());
    // The others keep theirs.
    assert!(packument(&c, npm_u::APP, false)["time"].is_object());
}
