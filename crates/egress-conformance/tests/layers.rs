//! Layers as a user builds them (issue: growing a snapshot between runs):
//! `snapshot build --base`, `--remove`, `snapshot verify` over the chain,
//! `snapshot flatten`, and every bad input with its exit code.

use egress_artifacts::{build_npm_tarball, build_wheel, NpmPackageSpec, WheelSpec};
use egress_model::{ProjectName, Sha256Digest, Version};
use egress_simple::JSON_V1;
use egress_snapshot::chain::{self, CHAIN_DIR};
use egress_snapshot::StoredSnapshot;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{resign_without_chain, run, s, tmpdir, MirrorProcess};

const REGISTRY: &str = "http://127.0.0.1:9/";

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let last = err
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(last.starts_with("egress-conformance: "), "{err}");
    last
}

fn wheel(dir: &Path, name: &str, version: &str, body: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let w = build_wheel(&WheelSpec {
        name: ProjectName::new(name).unwrap(),
        version: Version::new(version).unwrap(),
        summary: "s".into(),
        description: String::new(),
        requires_python: None,
        files: vec![(format!("{name}/__init__.py"), body.as_bytes().to_vec())],
    });
    let path = dir.join(&w.filename);
    fs::write(&path, &w.bytes).unwrap();
    path
}

fn tarball(dir: &Path, name: &str, version: &str) {
    fs::create_dir_all(dir).unwrap();
    let t = build_npm_tarball(&NpmPackageSpec::new(
        name,
        version,
        "d",
        "module.exports = 1;",
    ));
    fs::write(dir.join(&t.filename), &t.bytes).unwrap();
}

fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(name);
    let o = run(&["key", "generate", "--out", s(&key)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    (key.clone(), dir.join(format!("{name}.allowed_signers")))
}

fn build(args: &[&str]) -> Output {
    let mut all = vec!["snapshot", "build"];
    if args.contains(&"--npm-dist") {
        all.extend(["--npm-registry-url", REGISTRY]);
    }
    all.extend_from_slice(args);
    run(&all)
}

fn page(store: &StoredSnapshot, name: &str) -> Option<egress_simple::ProjectPage> {
    let d = store
        .served()
        .lookup(&format!("/simple/{name}/"), JSON_V1)?;
    let bytes = store.small_blob(&d).unwrap().unwrap();
    Some(egress_simple::parse_project_json(&bytes).unwrap())
}

fn versions(store: &StoredSnapshot, name: &str) -> Vec<String> {
    page(store, name).map(|p| p.versions).unwrap_or_default()
}

fn blob_inode(dir: &Path, d: &Sha256Digest) -> u64 {
    fs::metadata(dir.join(egress_snapshot::manifest::blob_path(d)))
        .unwrap()
        .ino()
}

#[test]
fn a_layer_adds_removes_shares_files_and_verifies_as_a_chain() {
    let dir = tmpdir("layers-chain");
    let (key, signers) = keygen(&dir, "lab");
    let d1 = dir.join("d1");
    wheel(&d1, "alpha", "1.0", "a = 1");
    wheel(&d1, "beta", "1.0", "b = 1");
    tarball(&dir.join("n1"), "left", "1.0.0");
    let base = dir.join("base");
    let o = build(&[
        "--dist",
        s(&d1),
        "--npm-dist",
        s(&dir.join("n1")),
        "--sign-key",
        s(&key),
        "--out",
        s(&base),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // The layer: a new version of alpha, a new project, a new npm
    // version, and beta taken away.
    let d2 = dir.join("d2");
    wheel(&d2, "alpha", "2.0", "a = 2");
    wheel(&d2, "gamma", "1.0", "g = 1");
    tarball(&dir.join("n2"), "left", "1.1.0");
    let layer = dir.join("layer");
    let o = build(&[
        "--base",
        s(&base),
        "--remove",
        "beta==1.0",
        "--dist",
        s(&d2),
        "--npm-dist",
        s(&dir.join("n2")),
        "--sign-key",
        s(&key),
        "--out",
        s(&layer),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("this is layer 1 of the chain"), "{out}");
    assert!(out.contains("removed pypi beta 1.0: 2 file(s)"), "{out}");

    let b = StoredSnapshot::open(&base).unwrap();
    let l = StoredSnapshot::open(&layer).unwrap();
    assert_eq!(versions(&l, "alpha"), ["1.0", "2.0"]);
    assert_eq!(versions(&l, "gamma"), ["1.0"]);
    assert!(page(&l, "beta").is_none(), "beta was removed");
    let info = l.layer().expect("a layer");
    assert_eq!((info.parent, info.depth), (b.id(), 1));
    assert_eq!(info.parent_snapshot_json, b.doc_digest());
    assert_eq!(info.removed.len(), 1);
    assert_eq!(info.removed[0].name, "beta");
    // The packument lists both npm versions; the inherited one as the base
    // served it.
    let packument = |st: &StoredSnapshot| -> serde_json::Value {
        let d = st
            .served()
            .lookup("/left", egress_snapshot::NPM_JSON)
            .unwrap();
        serde_json::from_slice(&st.small_blob(&d).unwrap().unwrap()).unwrap()
    };
    let (pb, pl) = (packument(&b), packument(&l));
    assert_eq!(pl["versions"]["1.0.0"], pb["versions"]["1.0.0"]);
    assert_eq!(pl["dist-tags"]["latest"], "1.1.0");

    // The base's files are the layer's, stored once (one inode).
    let alpha1 = page(&b, "alpha").unwrap().files[0].clone();
    let digest = Sha256Digest::from_hex(&alpha1.hashes["sha256"]).unwrap();
    assert_eq!(blob_inode(&base, &digest), blob_inode(&layer, &digest));
    // The base's evidence is served by the layer.
    for name in chain::EVIDENCE {
        let path = chain::evidence_path(&b.id(), name);
        assert!(l.served().lookup(&path, "text/plain").is_some(), "{path}");
    }

    // verify: the whole chain, against the signers; and without them,
    // named as not checked.
    let o = run(&[
        "snapshot",
        "verify",
        s(&layer),
        "--allowed-signers",
        s(&signers),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("chain: 1 below, base {}, signed by", b.id())),
        "{}",
        text(&o)
    );

    // A second layer names the first; the chain is two deep.
    let d3 = dir.join("d3");
    wheel(&d3, "delta", "1.0", "d = 1");
    let layer2 = dir.join("layer2");
    let o = build(&[
        "--base",
        s(&layer),
        "--dist",
        s(&d3),
        "--sign-key",
        s(&key),
        "--out",
        s(&layer2),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let l2 = StoredSnapshot::open(&layer2).unwrap();
    assert_eq!(l2.layer().unwrap().depth, 2);
    let o = run(&[
        "snapshot",
        "verify",
        s(&layer2),
        "--allowed-signers",
        s(&signers),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("chain: 2 below, base"), "{}", text(&o));
    // The base's tombstone stays in the chain; beta does not come back.
    assert!(page(&l2, "beta").is_none());

    // flatten: the same view, no chain, and it verifies alone.
    let flat = dir.join("flat");
    let o = run(&[
        "snapshot",
        "flatten",
        s(&layer2),
        "--out",
        s(&flat),
        "--sign-key",
        s(&key),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let f = StoredSnapshot::open(&flat).unwrap();
    assert!(f.layer().is_none());
    let view = |st: &StoredSnapshot| -> Vec<(String, String, Sha256Digest)> {
        st.served()
            .iter()
            .filter(|(p, _, _)| !p.starts_with(CHAIN_DIR) && !p.starts_with("/.well-known/"))
            .map(|(p, c, d)| (p.to_string(), c.to_string(), d))
            .collect()
    };
    assert_eq!(view(&f), view(&l2));
    assert!(f.served().iter().all(|(p, _, _)| !p.starts_with(CHAIN_DIR)));
    let o = run(&[
        "snapshot",
        "verify",
        s(&flat),
        "--allowed-signers",
        s(&signers),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn bad_layers_each_get_one_line_and_their_exit_code() {
    let dir = tmpdir("layers-bad");
    let (key, _) = keygen(&dir, "lab");
    let (other, other_signers) = keygen(&dir, "other");
    let d1 = dir.join("d1");
    wheel(&d1, "alpha", "1.0", "a = 1");
    let base = dir.join("base");
    let o = build(&["--dist", s(&d1), "--sign-key", s(&key), "--out", s(&base)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let nothing_at = |out: &Path| {
        assert!(!out.exists(), "{} was written", out.display());
        for e in fs::read_dir(out.parent().unwrap()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.starts_with(".out"), "left over: {name}");
        }
    };
    let out = dir.join("out");

    // A layer that changes bytes the base holds: the same filename, other
    // contents.
    let d2 = dir.join("d2");
    wheel(&d2, "alpha", "1.0", "a = 'changed'");
    let o = build(&[
        "--base",
        s(&base),
        "--dist",
        s(&d2),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(12), "{}", text(&o));
    assert!(
        error_line(&o).contains("would change bytes"),
        "{}",
        text(&o)
    );
    nothing_at(&out);
    // The same bytes again are no change at all.
    let o = build(&[
        "--base",
        s(&base),
        "--dist",
        s(&d1),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    fs::remove_dir_all(&out).unwrap();

    // A tombstone for something absent.
    for spec in ["alpha==9.9", "nothere==1.0", "left@1.0.0", "alpha"] {
        let o = build(&[
            "--base",
            s(&base),
            "--remove",
            spec,
            "--sign-key",
            s(&key),
            "--out",
            s(&out),
        ]);
        assert_eq!(o.status.code(), Some(13), "{spec}: {}", text(&o));
        assert!(error_line(&o).contains("--remove"), "{}", text(&o));
        nothing_at(&out);
    }
    // --remove without a base is a usage error.
    let o = build(&[
        "--remove",
        "alpha==1.0",
        "--dist",
        s(&d1),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    // A base signed by another key: refused unless its signers are given.
    let theirs = dir.join("theirs");
    let o = build(&[
        "--dist",
        s(&d1),
        "--sign-key",
        s(&other),
        "--out",
        s(&theirs),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = build(&[
        "--base",
        s(&theirs),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(10), "{}", text(&o));
    assert!(
        error_line(&o).contains("--base-allowed-signers"),
        "{}",
        text(&o)
    );
    nothing_at(&out);
    let o = build(&[
        "--base",
        s(&theirs),
        "--base-allowed-signers",
        s(&other_signers),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    fs::remove_dir_all(&out).unwrap();

    // A base whose blob is corrupt does not verify.
    let corrupt = dir.join("corrupt");
    let o = build(&[
        "--dist",
        s(&d1),
        "--sign-key",
        s(&key),
        "--out",
        s(&corrupt),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let st = StoredSnapshot::open(&corrupt).unwrap();
    let wheel_digest =
        Sha256Digest::from_hex(&page(&st, "alpha").unwrap().files[0].hashes["sha256"]).unwrap();
    drop(st);
    let blob = corrupt.join(egress_snapshot::manifest::blob_path(&wheel_digest));
    fs::write(&blob, b"tampered").unwrap();
    let o = build(&[
        "--base",
        s(&corrupt),
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(10), "{}", text(&o));
    assert!(error_line(&o).contains("does not verify"), "{}", text(&o));
    nothing_at(&out);

    // A chain whose parent's evidence is missing: a layer re-signed by the
    // lab key without its parent's evidence.
    let layer = dir.join("layer");
    let d3 = dir.join("d3");
    wheel(&d3, "gamma", "1.0", "g = 1");
    let o = build(&[
        "--base",
        s(&base),
        "--dist",
        s(&d3),
        "--sign-key",
        s(&key),
        "--out",
        s(&layer),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let gap = dir.join("gap");
    resign_without_chain(&layer, &gap, &key);
    let o = run(&[
        "snapshot",
        "verify",
        s(&gap),
        "--allowed-signers",
        s(&dir.join("lab.allowed_signers")),
    ]);
    assert_eq!(o.status.code(), Some(11), "{}", text(&o));
    assert!(text(&o).contains("chain gap"), "{}", text(&o));
    let o = build(&["--base", s(&gap), "--sign-key", s(&key), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(11), "{}", text(&o));
    assert!(error_line(&o).contains("chain gap"), "{}", text(&o));
    nothing_at(&out);
}

/// `check` against the real mirror serving `snap`: P5.chain's verdict.
fn chain_verdict(snap: &Path, signers: &Path, out: &Path) -> (egress_model::Status, String) {
    let mirror = MirrorProcess::start(snap, "127.0.0.1:0");
    let url = format!("{}/simple/", mirror.base);
    let o = run(&[
        "check",
        &url,
        "--allowed-signers",
        s(signers),
        "--out",
        s(out),
    ]);
    let report: egress_suite::Report = serde_json::from_slice(
        &fs::read(out.join("report.json")).unwrap_or_else(|e| panic!("{e}: {}", text(&o))),
    )
    .unwrap();
    let rec = report.probe("P5.chain").expect("P5.chain");
    (rec.status, rec.reason.clone())
}

#[test]
fn check_reads_the_chain_from_the_mirror_that_serves_the_layer() {
    use egress_model::Status;
    let dir = tmpdir("layers-check");
    let (key, signers) = keygen(&dir, "lab");
    let (_, other_signers) = keygen(&dir, "other");
    let d1 = dir.join("d1");
    wheel(&d1, "alpha", "1.0", "a = 1");
    let base = dir.join("base");
    let o = build(&["--dist", s(&d1), "--sign-key", s(&key), "--out", s(&base)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let d2 = dir.join("d2");
    wheel(&d2, "beta", "1.0", "b = 1");
    let layer = dir.join("layer");
    let o = build(&[
        "--base",
        s(&base),
        "--dist",
        s(&d2),
        "--sign-key",
        s(&key),
        "--out",
        s(&layer),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let (status, reason) = chain_verdict(&layer, &signers, &dir.join("r1"));
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(
        reason.contains("layer 1 of its chain") && reason.contains("signed by the allowed signers"),
        "{reason}"
    );
    // The base is no layer: nothing to check.
    let (status, reason) = chain_verdict(&base, &signers, &dir.join("r2"));
    assert_eq!(status, Status::Skipped, "{reason}");
    // Signers that did not sign the base.
    let (status, reason) = chain_verdict(&layer, &other_signers, &dir.join("r3"));
    assert_eq!(status, Status::Fail, "{reason}");
    // A layer re-signed without its parent's evidence: a gap.
    let gap = dir.join("gap");
    resign_without_chain(&layer, &gap, &key);
    let (status, reason) = chain_verdict(&gap, &signers, &dir.join("r4"));
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(
        reason.contains("chain gap") && reason.contains("404"),
        "{reason}"
    );
}
