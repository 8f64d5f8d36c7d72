//! `snapshot misses LOG...` on the real binary: misses logs (as
//! `egress-mirror --misses-log` writes them, made here with the one writer
//! of the format) aggregated into a universe file or JSON; a file that is
//! not a misses log is one line naming the file and line, exit 14, nothing
//! written; nothing printed ever holds a control character.

use egress_mirror::misses::{classify, Counts, Limits, Protocol, Record};
use egress_model::{ProjectName, Sha256Digest};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ec-misses-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// The log of one run, with these misses (path, client) and served names.
fn log(dir: &Path, name: &str, run: &str, misses: &[(&str, &str)], served: &[&str]) -> String {
    let run_line = Record::Start {
        time: 1_796_000_000,
        run: parse_run(run),
        snapshot: Sha256Digest::of(run.as_bytes()),
        limits: Limits::default(),
    };
    let mut lines = vec![run_line.to_line()];
    for (path, client) in misses {
        let ask = classify(path).unwrap().miss(|_| false).unwrap();
        lines.push(
            Record::Miss {
                time: 1_796_000_100,
                run: parse_run(run),
                ask,
                client: client.parse().unwrap(),
            }
            .to_line(),
        );
    }
    for s in served {
        lines.push(
            Record::Served {
                time: 1_796_000_200,
                run: parse_run(run),
                protocol: Protocol::Pypi,
                name: s.to_string(),
            }
            .to_line(),
        );
    }
    lines.push(
        Record::Summary {
            time: 1_796_000_300,
            run: parse_run(run),
            counts: Counts {
                misses: misses.len() as u64,
                dropped_per_client: 2,
                ..Counts::default()
            },
        }
        .to_line(),
    );
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.to_str().unwrap().to_string()
}

/// A run ID as the writer prints it, read back through a line.
fn parse_run(hex: &str) -> egress_mirror::misses::RunId {
    let line = format!(
        "{{\"v\":1,\"event\":\"summary\",\"time\":\"2026-01-01T00:00:00Z\",\"run\":\"{hex}\",\"counts\":{{\"misses\":0,\"served\":0,\"dropped_queue\":0,\"dropped_per_client\":0,\"dropped_full\":0,\"dropped_long\":0,\"write_errors\":0}}}}"
    );
    Record::parse(&line).unwrap().run()
}

fn printable(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|&b| b == b'\n' || (b' '..=b'~').contains(&b))
}

#[test]
fn logs_become_a_universe_and_json() {
    let dir = tmpdir("ok");
    let a = log(
        &dir,
        "a.jsonl",
        "00000000000000a1",
        &[
            ("/simple/Wanted_Pkg/", "10.0.0.1"),
            ("/simple/zzz/", "10.0.0.1"),
            ("/left-pad", "10.0.0.1"),
        ],
        &["present"],
    );
    let b = log(
        &dir,
        "b.jsonl",
        "00000000000000b2",
        &[
            ("/simple/wanted-pkg/", "10.0.0.2"),
            ("/simple/present/", "10.0.0.2"),
        ],
        &[],
    );
    let o = run(&["snapshot", "misses", &a, &b, "--protocol", "pypi"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(printable(text.as_bytes()));
    // Sorted, one project a line, each a valid name; `present` was served
    // by a run, so it is not listed though another run missed it.
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(names, ["wanted-pkg", "zzz"], "{text}");
    for n in &names {
        ProjectName::new(n).unwrap();
    }
    assert!(text.contains("wanted-pkg  # runs 2, clients 2\n"), "{text}");
    assert!(
        text.contains("# 2 logs, 2 runs, 2 clients, 2 snapshots\n"),
        "{text}"
    );
    assert!(
        text.contains("1 of 3 names asked for were served (33.3%)"),
        "{text}"
    );
    assert!(text.contains("not logged: 4 asks"), "{text}");

    // The same logs in the other order: the same bytes.
    let again = run(&["snapshot", "misses", &b, &a, "--protocol", "pypi"]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);

    let o = run(&["snapshot", "misses", &a, "--protocol", "npm"]);
    let npm = String::from_utf8(o.stdout).unwrap();
    assert!(
        npm.lines().any(|l| l.starts_with("left-pad  # runs 1")),
        "{npm}"
    );

    let out = dir.join("out.json");
    let o = run(&[
        "snapshot",
        "misses",
        &a,
        &b,
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["schema"], "egress-conformance/misses/v1");
    assert_eq!(v["runs"], 2);
    let missing: Vec<&str> = v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["wanted-pkg", "zzz", "left-pad"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_is_not_a_misses_log_is_one_line_and_exit_14() {
    let dir = tmpdir("bad");
    let good = log(
        &dir,
        "good.jsonl",
        "00000000000000c3",
        &[("/simple/fine/", "10.0.0.1")],
        &[],
    );
    // A terminal escape where a name goes, in a file whose name has one too.
    let evil = dir.join("evil\u{1b}[2J.jsonl");
    let mut text = std::fs::read_to_string(&good).unwrap();
    text.push_str(
        "{\"v\":1,\"event\":\"miss\",\"time\":\"2026-11-30T00:53:21Z\",\"run\":\"00000000000000c3\",\"protocol\":\"pypi\",\"kind\":\"project\",\"name\":\"\\u001b]0;pwned\\u0007\u{9b}31m\",\"client\":\"10.0.0.1\"}\n",
    );
    std::fs::write(&evil, &text).unwrap();
    let universe = dir.join("next.txt");
    for (file, line) in [
        (evil.to_str().unwrap().to_string(), 4),
        (dir.join("universe.txt").to_str().unwrap().to_string(), 1),
    ] {
        if line == 1 {
            std::fs::write(&file, "# pypi\nrequests\n").unwrap();
        }
        let o = run(&[
            "snapshot",
            "misses",
            &good,
            &file,
            "--protocol",
            "pypi",
            "--out",
            universe.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(14), "{o:?}");
        assert!(o.stdout.is_empty());
        assert!(
            printable(&o.stderr),
            "{:?}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                " line {line}: not a line of egress-mirror's misses log"
            )),
            "{err}"
        );
        assert!(!universe.exists(), "nothing written");
    }

    let o = run(&["snapshot", "misses", dir.join("absent").to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--format universe needs --protocol: {o:?}"
    );
    let o = run(&[
        "snapshot",
        "misses",
        dir.join("absent").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(4), "an unreadable log: {o:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
