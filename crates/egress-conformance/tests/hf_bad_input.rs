//! `snapshot build --hf-lock` with bad input, as a lab meets it: a branch
//! where a commit belongs, a glob that selects nothing, and a hostile Hub
//! (a tree that lists a file outside the repository, a tree that is not
//! JSON, a file whose bytes are not its blob id). Each is one line on
//! stderr naming what was wrong, a distinct exit code, never a panic, and
//! no snapshot directory left behind.

mod common;

use common::{run, s, tmpdir};
use egress_http::{Limits, Request, Response, Server};
use egress_references::hf::canary::{self as hf_canary, HfCanary};
use std::path::{Path, PathBuf};
use std::process::Output;

fn build(dir: &Path, lock: &str, endpoint: &str) -> (Output, PathBuf) {
    let key = dir.join("key");
    if !key.exists() {
        common::ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    let path = dir.join("hf.lock");
    std::fs::write(&path, lock).unwrap();
    let out = dir.join("snap");
    let o = run(&[
        "snapshot",
        "build",
        "--hf-lock",
        s(&path),
        "--hf-endpoint",
        endpoint,
        "--sign-key",
        s(&key),
        "--out",
        s(&out),
    ]);
    (o, out)
}

/// One error line (after any progress lines), the exit code, nothing
/// left behind; the line.
fn refused(o: &Output, out: &Path, code: i32) -> String {
    let all = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert_eq!(o.status.code(), Some(code), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    let errors: Vec<&str> = all
        .lines()
        .filter(|l| l.starts_with("egress-conformance: "))
        .collect();
    assert_eq!(errors.len(), 1, "{all}");
    assert!(
        all.ends_with(errors[0]),
        "the error is the last line: {all}"
    );
    assert!(!out.exists(), "{} was left behind", out.display());
    errors[0].to_string()
}

#[test]
fn a_lock_that_cannot_mean_one_snapshot_is_refused() {
    let dir = tmpdir("hf-bad-lock");
    let canary = HfCanary::start(hf_canary::fixtures()).expect("canary");
    let main = canary
        .repo(egress_model::HfRepoType::Model, hf_canary::MODEL)
        .unwrap()
        .main;
    let (o, out) = build(
        &dir,
        &format!("model {} main\n", hf_canary::MODEL),
        canary.endpoint(),
    );
    let e = refused(&o, &out, 4);
    assert!(
        e.contains("hf.lock:1") && e.contains("not a commit id"),
        "{e}"
    );
    let (o, out) = build(
        &dir,
        &format!("model {} {main} *.json *.nonesuch\n", hf_canary::MODEL),
        canary.endpoint(),
    );
    let e = refused(&o, &out, 6);
    assert!(e.contains("\"*.nonesuch\" matches no file"), "{e}");
    let (o, out) = build(
        &dir,
        &format!("model ec-org/absent {main}\n"),
        canary.endpoint(),
    );
    let e = refused(&o, &out, 6);
    assert!(e.contains("HTTP 404"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Hub that answers every tree with `tree` and every file with `file`.
fn hostile(tree: &'static [u8], file: &'static [u8]) -> egress_http::ServerHandle {
    Server::bind(
        "127.0.0.1:0",
        move |req: Request| {
            let body = if req.path().contains("/tree/") {
                tree
            } else {
                file
            };
            Response::new(200).with_body(body.to_vec()).into()
        },
        Limits::default(),
    )
    .expect("bind")
}

#[test]
fn a_hostile_hub_is_refused() {
    let dir = tmpdir("hf-bad-hub");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let lock = format!("model ec-org/ec-model {commit}\n");
    let blob = "ce013625030ba8dba906f756967f9e9ca394464a"; // "hello\n"
    for (tree, file, want) in [
        (
            br#"[{"type":"file","path":"../../etc/passwd","oid":"ce013625030ba8dba906f756967f9e9ca394464a","size":6}]"#
                as &[u8],
            &b"hello\n"[..],
            "not a path inside a repository",
        ),
        (&b"<html>not json</html>"[..], &b""[..], "not a JSON array"),
        (
            br#"[{"type":"file","path":"config.json","oid":"ce013625030ba8dba906f756967f9e9ca394464a","size":6}]"#,
            &b"hullo\n"[..],
            blob,
        ),
    ] {
        let hub = hostile(tree, file);
        let (o, out) = build(&dir, &lock, &hub.base_url());
        let e = refused(&o, &out, 6);
        assert!(e.contains(want), "{want}: {e}");
        hub.stop();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
