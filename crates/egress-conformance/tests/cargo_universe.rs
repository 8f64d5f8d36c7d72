//! `snapshot build --cargo-universe` (issue 29 with issue 24's universe
//! rules) against the cargo canary serving a small index the test writes:
//! the newest version at or before the cutoff by the index's `pubtime`
//! (a yanked one and a later one dropped), and with `--closure` the
//! dependencies cargo would build: normal and build ones, an optional one
//! the default features turn on, a renamed one by its package name, each
//! at the newest version its requirement admits under the cutoff; not a
//! dev dependency, nor an optional one no feature enables. The snapshot's
//! index files hold exactly those lines, byte for byte, and the `.crate`
//! files match their `cksum`.

mod common;

use common::{ok, run, s, tmpdir};
use egress_model::Sha256Digest;
use egress_references::cargo::canary::{CanaryContent, CanaryCrate, CargoCanary};
use serde_json::json;
use std::collections::BTreeMap;

/// An index line and the `.crate` bytes it names.
type Version = (Vec<u8>, Vec<u8>);

/// A crate version: its index line (cksum of `bytes`) and its `.crate`.
fn version(
    name: &str,
    vers: &str,
    pubtime: &str,
    yanked: bool,
    deps: serde_json::Value,
    features: serde_json::Value,
) -> Version {
    let bytes = format!("{name}-{vers} fixture crate").into_bytes();
    let line = json!({
        "name": name, "vers": vers, "deps": deps,
        "cksum": Sha256Digest::of(&bytes).to_hex(),
        "features": features, "yanked": yanked, "pubtime": pubtime, "v": 2
    });
    (serde_json::to_vec(&line).unwrap(), bytes)
}

fn dep(name: &str, req: &str, kind: &str, optional: bool) -> serde_json::Value {
    json!({"name": name, "req": req, "features": [], "optional": optional,
           "default_features": true, "target": null, "kind": kind})
}

fn content() -> CanaryContent {
    let none = || json!([]);
    let nofeat = || json!({});
    let mut root_deps = vec![
        dep("ec-needed", "^1", "normal", false),
        dep("ec-feature", "0.1", "normal", true),
        dep("ec-off", "1", "normal", true),
        dep("ec-dev", "1", "dev", false),
        dep("ec-build", "1", "build", false),
    ];
    let mut renamed = dep("alias", "0.3", "normal", false);
    renamed["package"] = json!("ec-renamed");
    root_deps.push(renamed);
    let crates: Vec<(&str, Vec<Version>)> = vec![
        (
            "ec-root",
            vec![
                version(
                    "ec-root",
                    "1.0.0",
                    "2025-01-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-root",
                    "1.1.0",
                    "2025-03-01T00:00:00Z",
                    false,
                    json!(root_deps),
                    json!({"default": ["fast"], "fast": ["dep:ec-feature"], "extra": ["ec-off"]}),
                ),
                version(
                    "ec-root",
                    "1.2.0",
                    "2025-04-01T00:00:00Z",
                    true,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-root",
                    "2.0.0",
                    "2025-09-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
            ],
        ),
        (
            "ec-needed",
            vec![
                version(
                    "ec-needed",
                    "1.0.0",
                    "2024-01-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-needed",
                    "1.5.0",
                    "2025-02-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-needed",
                    "2.0.0",
                    "2025-01-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-needed",
                    "1.9.0",
                    "2025-08-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
            ],
        ),
        (
            "ec-feature",
            vec![version(
                "ec-feature",
                "0.1.0",
                "2024-05-01T00:00:00Z",
                false,
                none(),
                nofeat(),
            )],
        ),
        (
            "ec-off",
            vec![version(
                "ec-off",
                "1.0.0",
                "2024-05-01T00:00:00Z",
                false,
                none(),
                nofeat(),
            )],
        ),
        (
            "ec-dev",
            vec![version(
                "ec-dev",
                "1.0.0",
                "2024-05-01T00:00:00Z",
                false,
                none(),
                nofeat(),
            )],
        ),
        (
            "ec-build",
            vec![version(
                "ec-build",
                "1.0.0",
                "2024-05-01T00:00:00Z",
                false,
                none(),
                nofeat(),
            )],
        ),
        (
            "ec-renamed",
            vec![
                version(
                    "ec-renamed",
                    "0.3.1",
                    "2024-05-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
                version(
                    "ec-renamed",
                    "0.4.0",
                    "2024-06-01T00:00:00Z",
                    false,
                    none(),
                    nofeat(),
                ),
            ],
        ),
    ];
    crates
        .into_iter()
        .map(|(name, versions)| {
            let mut c = CanaryCrate::default();
            for (line, bytes) in versions {
                let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
                c.files
                    .insert(v["vers"].as_str().unwrap().to_string(), bytes);
                c.lines.push(line);
            }
            (name.to_string(), c)
        })
        .collect()
}

#[test]
fn a_universe_with_its_closure_under_the_cutoff() {
    let dir = tmpdir("egress-cargo-universe");
    let canary = CargoCanary::start(content()).expect("canary");
    let universe = dir.join("universe.txt");
    std::fs::write(&universe, "# what the agent may use\nec-root ^1\n").unwrap();
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    let o = run(&[
        "snapshot",
        "build",
        "--cargo-universe",
        s(&universe),
        "--cargo-index-url",
        &canary.index_url(),
        "--cargo-registry-url",
        "http://127.0.0.1:9/",
        "--exclude-newer",
        "2025-06-01T00:00:00Z",
        "--versions-per-project",
        "1",
        "--closure",
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    ok(&o, "snapshot build --cargo-universe");
    let out = String::from_utf8_lossy(&o.stdout);
    for dropped in [
        "dropped by cutoff: 1 item, e.g. ec-needed 1.9.0",
        "dropped by yanked: 1 item, e.g. ec-root 1.2.0",
        "dropped by versions-per-project: 1 item, e.g. ec-root 1.0.0",
    ] {
        assert!(out.contains(dropped), "the report names {dropped:?}: {out}");
    }
    let snapshot = egress_snapshot::Snapshot::load_dir(&snap).expect("the snapshot verifies");
    let mut served: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &snapshot.doc.served {
        let Some(file) = e.path.strip_prefix("/cargo/index/") else {
            continue;
        };
        if file == "config.json" {
            continue;
        }
        let bytes = snapshot.blobs.get(&e.sha256).unwrap();
        let versions = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice::<serde_json::Value>(l).unwrap()["vers"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        served.insert(file.rsplit('/').next().unwrap().to_string(), versions);
    }
    let want: BTreeMap<String, Vec<String>> = [
        ("ec-root", "1.1.0"),
        ("ec-needed", "1.5.0"),
        ("ec-feature", "0.1.0"),
        ("ec-build", "1.0.0"),
        ("ec-renamed", "0.3.1"),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), vec![v.to_string()]))
    .collect();
    assert_eq!(served, want);
    // Each chosen .crate is served at its digest, and its line is the
    // canary's, byte for byte.
    let files = snapshot
        .doc
        .served
        .iter()
        .filter(|e| e.path.starts_with("/cargo/files/"))
        .count();
    assert_eq!(files, want.len());
    let root_line = &content()["ec-root"].lines[1];
    let root_file = snapshot
        .doc
        .served
        .iter()
        .find(|e| e.path == "/cargo/index/ec/-r/ec-root")
        .unwrap();
    assert_eq!(
        snapshot.blobs.get(&root_file.sha256).unwrap().to_vec(),
        [root_line.as_slice(), b"\n"].concat()
    );
    drop(canary);
    let _ = std::fs::remove_dir_all(&dir);
}
