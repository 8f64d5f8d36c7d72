//! Growing a snapshot between runs, end to end, as a lab runs it (issue:
//! signed layers, a reviewer's diff, the misses log, a swap that drops no
//! request), on loopback against the in-repo canaries, with real pip and
//! real npm:
//!
//! 1. a base snapshot (a dated PyPI universe and an npm universe);
//! 2. real pip and npm ask for a package the base lacks, and fail cleanly;
//! 3. `snapshot misses` turns the mirror's misses log into universe files;
//! 4. a layer is built from them on the base;
//! 5. `snapshot diff` shows the additions with their flags;
//! 6. the mirror swaps to the layer (its `current` link re-pointed) while
//!    pip installs in a loop, and no install fails;
//! 7. the next run installs the packages it missed.

use egress_references::npm::canary::NpmCanary;
use egress_references::npm::universe::{self as npm_universe, Universe as NpmUniverse};
use egress_references::pypi::canary::Canary;
use egress_references::pypi::universe::{Universe, UNIVERSE_CUTOFF};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod common;

use common::{client, clients, free_port, ok, resign_without_chain, run, s, tmpdir, MirrorProcess};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `snapshot build` of the two universes (and `extra` flags) into `out`.
#[allow(clippy::too_many_arguments)]
fn build(
    dir: &Path,
    pypi: &Canary,
    npm: &NpmCanary,
    mirror: &str,
    pypi_universe: &Path,
    npm_universe: &Path,
    out: &Path,
    extra: &[&str],
) -> Output {
    let (index, registry) = (pypi.index_url(), npm.registry_url());
    let key = dir.join("key");
    let mut args = vec![
        "snapshot",
        "build",
        "--pypi-universe",
        s(pypi_universe),
        "--index-url",
        &index,
        "--closure",
        "--python-version",
        "3.11",
        "--platform",
        "manylinux_2_17_x86_64",
        "--npm-universe",
        s(npm_universe),
        "--npm-upstream",
        &registry,
        "--npm-registry-url",
        mirror,
        "--os",
        "linux",
        "--cpu",
        "x64",
        "--libc",
        "glibc",
        "--sign-key",
        s(&key),
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn pip(index: &str, target: &Path, what: &str) -> Output {
    client(&clients().join("bin/pip"))
        .args([
            "install",
            "--isolated",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--index-url",
            index,
            "--target",
            s(target),
            what,
        ])
        .output()
        .expect("pip")
}

fn npm(project: &Path, registry: &str, what: &str) -> Output {
    std::fs::create_dir_all(project).expect("mkdir");
    std::fs::write(
        project.join("package.json"),
        "{\"name\":\"app\",\"version\":\"1.0.0\"}\n",
    )
    .expect("package.json");
    egress_references::npm::client::isolated_npm(project, &project.join(".cache"), registry)
        .expect("npm")
        .args(["install", "--ignore-scripts", what])
        .output()
        .expect("run npm")
}

/// Points `link` at `target` atomically, as an operator deploys.
fn repoint(link: &Path, target: &Path) {
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    symlink(target, &tmp).expect("symlink");
    std::fs::rename(&tmp, link).expect("rename");
}

#[test]
fn a_missed_package_comes_back_as_a_reviewed_layer_swapped_in_under_load() {
    let dir = tmpdir("growth-loop");
    ok(
        &run(&["key", "generate", "--out", s(&dir.join("key"))]),
        "key",
    );
    let signers = dir.join("key.allowed_signers");
    let pypi = Canary::start_with(Universe::default()).expect("canary");
    let npm_canary = NpmCanary::start_with(NpmUniverse::default()).expect("npm canary");
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");

    // 1. The base: eu-alpha's closure, and the npm library.
    let snaps = dir.join("snaps");
    std::fs::create_dir_all(&snaps).expect("mkdir");
    let (pu, nu) = (dir.join("pypi.txt"), dir.join("npm.txt"));
    std::fs::write(&pu, "eu-alpha\n").expect("write");
    std::fs::write(&nu, format!("{}\n", npm_universe::LIB)).expect("write");
    let base = snaps.join("v1");
    let cutoff = ["--exclude-newer", UNIVERSE_CUTOFF];
    let o = build(
        &dir,
        &pypi,
        &npm_canary,
        &mirror_url,
        &pu,
        &nu,
        &base,
        &cutoff,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let current = snaps.join("current");
    symlink(&base, &current).expect("symlink");

    let misses = dir.join("misses.jsonl");
    let mirror = MirrorProcess::start_with(
        &current,
        &format!("127.0.0.1:{port}"),
        &["--misses-log", s(&misses), "--allowed-signers", s(&signers)],
    );
    let index = format!("{}/simple/", mirror.base);

    // 2. The sandbox asks for what the base lacks, and fails cleanly.
    let o = pip(&index, &dir.join("site-gamma-1"), "eu-gamma");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("No matching distribution found for eu-gamma"),
        "{}",
        text(&o)
    );
    let o = npm(&dir.join("app1"), &mirror_url, npm_universe::SCRIPTED);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("E404"), "{}", text(&o));
    // What the base holds installs.
    ok(
        &pip(&index, &dir.join("site-alpha"), "eu-alpha"),
        "pip eu-alpha",
    );

    // 3. The misses, as universe files for the next layer.
    let wait_for = |needle: &str| {
        for _ in 0..100 {
            if std::fs::read_to_string(&misses).is_ok_and(|t| t.contains(needle)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{needle} not in the misses log");
    };
    wait_for("eu-gamma");
    wait_for(npm_universe::SCRIPTED);
    let (pu2, nu2) = (dir.join("pypi-more.txt"), dir.join("npm-more.txt"));
    for (protocol, file) in [("pypi", &pu2), ("npm", &nu2)] {
        let o = run(&[
            "snapshot",
            "misses",
            s(&misses),
            "--protocol",
            protocol,
            "--out",
            s(file),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let wanted = std::fs::read_to_string(&pu2).expect("universe");
    let names: Vec<&str> = wanted
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(names, ["eu-gamma"], "{wanted}");
    let wanted_npm = std::fs::read_to_string(&nu2).expect("universe");
    assert!(wanted_npm.contains(npm_universe::SCRIPTED), "{wanted_npm}");

    // 4. The layer, on the base.
    let layer = snaps.join("v2");
    let o = build(
        &dir,
        &pypi,
        &npm_canary,
        &mirror_url,
        &pu2,
        &nu2,
        &layer,
        &["--exclude-newer", UNIVERSE_CUTOFF, "--base", s(&base)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run(&[
        "snapshot",
        "verify",
        s(&layer),
        "--allowed-signers",
        s(&signers),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // 5. The reviewer's diff: the additions, with their flags.
    let o = run(&["snapshot", "diff", s(&base), s(&layer), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let diff: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let added: Vec<(String, String)> = diff["added"]
        .as_array()
        .expect("added")
        .iter()
        .map(|a| {
            (
                a["ecosystem"].as_str().unwrap_or_default().to_string(),
                a["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        added.contains(&("pypi".into(), "eu-gamma".into())),
        "{diff}"
    );
    assert!(
        added.contains(&("npm".into(), npm_universe::SCRIPTED.into())),
        "{diff}"
    );
    assert!(
        diff["removed"].as_array().is_some_and(Vec::is_empty),
        "{diff}"
    );
    let flags = diff.to_string();
    assert!(flags.contains("install-script"), "{diff}");

    // 6. The swap, while pip installs what the base held, in a loop.
    let stop = Arc::new(AtomicBool::new(false));
    let looping = {
        let (stop, index, dir) = (Arc::clone(&stop), index.clone(), dir.clone());
        std::thread::spawn(move || {
            let mut runs = 0;
            while !stop.load(Ordering::SeqCst) || runs < 3 {
                let o = pip(&index, &dir.join(format!("loop-{runs}")), "eu-alpha");
                assert!(o.status.success(), "install {runs} failed: {}", text(&o));
                runs += 1;
            }
            runs
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    repoint(&current, &layer);
    let swapped = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        mirror
            .lines()
            .iter()
            .any(|l| l.contains("swapped from snapshot"))
    });
    assert!(swapped, "{:#?}", mirror.lines());
    std::thread::sleep(std::time::Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let runs = looping.join().expect("the install loop failed");
    assert!(runs >= 3, "{runs}");

    // A swap to a layer whose chain has a gap (re-signed by the lab key
    // without its parent's evidence) is refused; the layer keeps serving.
    let gap = snaps.join("v2-gap");
    resign_without_chain(&layer, &gap, &dir.join("key"));
    repoint(&current, &gap);
    let refused = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        mirror
            .lines()
            .iter()
            .any(|l| l.contains("refused") && l.contains("chain"))
    });
    assert!(refused, "{:#?}", mirror.lines());
    let layer_id = common::snapshot_id(&layer).to_hex();
    let o = run(&["snapshot", "verify", s(&gap)]);
    assert_eq!(o.status.code(), Some(11), "{}", text(&o));
    assert!(
        get_header(&mirror.base, "/simple/", "x-egress-snapshot").as_deref() == Some(&layer_id),
        "{:#?}",
        mirror.lines()
    );

    // 7. The next run installs what it missed.
    ok(
        &pip(&index, &dir.join("site-gamma-2"), "eu-gamma"),
        "pip eu-gamma",
    );
    let o = npm(&dir.join("app2"), &mirror_url, npm_universe::SCRIPTED);
    assert!(o.status.success(), "{}", text(&o));
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The value of `header` in the answer to a GET of `path`.
fn get_header(base: &str, path: &str, header: &str) -> Option<String> {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut out = Vec::new();
    c.read_to_end(&mut out).expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    text.split("\r\n\r\n").next().and_then(|head| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(header)
                .then(|| v.trim().to_string())
        })
    })
}
