//! The misses log on the real binary (issue 25): asks for absent names are
//! logged, one line per distinct ask, only for names that validate; the
//! answer is byte for byte the 404 a mirror without the log gives; and a
//! flood of random names from many addresses keeps the log within its
//! bounds while a legitimate client is served throughout.

#![cfg(target_os = "linux")]

use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
use egress_mirror::misses::{Kind, Protocol, Record};
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)]
mod common;

use common::{Running, TempDir};

const SHA: &str = "00000000000000000000000000000000000000000000000000000000000000ff";

/// A snapshot with one wheel (`ec-held` 1.0.0) and one npm package
/// (`ec-npm` 1.0.0); the wheel's path and bytes.
fn snapshot_dir(tmp: &TempDir) -> (PathBuf, String, Vec<u8>) {
    let w = common::wheel("ec-held", "1.0.0", "held\n");
    let t = build_npm_tarball(&NpmPackageSpec::new(
        "ec-npm",
        "1.0.0",
        "held",
        "module.exports = 1;\n",
    ));
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    b.npm_registry_url("http://127.0.0.1:8080/").unwrap();
    b.add_npm_tarball("ec-npm", "1.0.0", &t.filename, t.bytes, &t.integrity)
        .unwrap();
    let snapshot = b
        .build(
            "2026-01-01T00:00:00Z",
            Some(&SigningKey::from_seed([9; 32], "test")),
            "mirror@egress.test",
        )
        .unwrap();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    (dir, format!("/files/{}/{}", w.sha256, w.filename), w.bytes)
}

fn start(dir: &Path, extra: &[&str]) -> Running {
    Running::start(
        Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
            .arg(dir)
            .arg("--listen=127.0.0.1:0")
            .args(extra)
            .stdin(Stdio::null()),
    )
}

/// One GET from `src` with `Connection: close`: every byte of the answer.
fn get_from(src: Ipv4Addr, addr: SocketAddr, target: &str) -> std::io::Result<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
        socket.connect(addr).await
    })?;
    let mut s = stream.into_std()?;
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(
        format!("GET {target} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    Ok(buf)
}

fn status(answer: &[u8]) -> Option<u16> {
    String::from_utf8_lossy(answer)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
}

/// The log's records, once `done` holds for them (or after 15 s).
fn records_when(path: &Path, done: impl Fn(&[Record]) -> bool) -> Vec<Record> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let records: Vec<Record> = text
            .lines()
            .map(|l| Record::parse(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect();
        if done(&records) || Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn misses(records: &[Record]) -> Vec<(Protocol, Kind, String, Option<String>, IpAddr)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Miss { ask, client, .. } => Some((
                ask.protocol,
                ask.kind,
                ask.name.clone(),
                ask.version.clone(),
                *client,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn absent_names_are_logged_once_and_answered_as_without_the_log() {
    let tmp = TempDir::new("misses-log");
    let (dir, wheel_path, wheel) = snapshot_dir(&tmp);
    let log = tmp.0.join("misses.jsonl");
    let logged = start(&dir, &["--misses-log", log.to_str().unwrap()]);
    let plain = start(&dir, &[]);
    // Where Landlock is enforced (the banner says "read-only beneath"), every
    // line below is written from inside the confinement, through the
    // descriptor opened before it.
    eprintln!("{}", logged.banner.trim());
    let me = Ipv4Addr::new(127, 0, 0, 1);
    let other = Ipv4Addr::new(127, 0, 0, 9);

    let absent = [
        "/simple/absent-one/",
        "/simple/Absent_One/",
        &format!("/files/{SHA}/absent_two-1.0-py3-none-any.whl"),
        &format!("/files/{SHA}/ec_held-9.9.tar.gz"),
        "/absent-npm",
        "/@scope%2fabsent",
        "/absent-npm/-/absent-npm-2.0.0.tgz",
        "/ec-npm/-/ec-npm-3.0.0.tgz",
        // Not package names: answered the same, never logged.
        "/simple/%1b%5b2J/",
        "/.env",
        "/simple/a/../../etc/passwd/",
        "/_bad",
        "/-/v1/search?text=x",
    ];
    for target in absent {
        let with = get_from(me, logged.addr, target).unwrap();
        let without = get_from(me, plain.addr, target).unwrap();
        assert_eq!(status(&with), Some(404), "{target}");
        assert_eq!(
            String::from_utf8_lossy(&with),
            String::from_utf8_lossy(&without),
            "{target}: the answer differs with the log"
        );
    }
    // The same ask again, and from another client: one more line (the
    // other client's), not two.
    get_from(me, logged.addr, "/simple/absent-one/").unwrap();
    get_from(other, logged.addr, "/simple/absent-one/").unwrap();
    // Served: the page and the wheel; the coverage counts the name once.
    let page = get_from(me, logged.addr, "/simple/ec-held/").unwrap();
    assert_eq!(status(&page), Some(200));
    let file = get_from(me, logged.addr, &wheel_path).unwrap();
    assert!(file.ends_with(&wheel));
    get_from(me, logged.addr, "/ec-npm").unwrap();

    let records = records_when(&log, |r| {
        misses(r).len() >= 8
            && r.iter()
                .filter(|x| matches!(x, Record::Served { .. }))
                .count()
                >= 2
    });
    assert!(matches!(records.first(), Some(Record::Start { .. })));
    let me = IpAddr::V4(me);
    let want: BTreeSet<_> = [
        (Protocol::Pypi, Kind::Project, "absent-one", None, me),
        (Protocol::Pypi, Kind::File, "absent-two", Some("1.0"), me),
        (Protocol::Pypi, Kind::Version, "ec-held", Some("9.9"), me),
        (Protocol::Npm, Kind::Project, "absent-npm", None, me),
        (Protocol::Npm, Kind::Project, "@scope/absent", None, me),
        (Protocol::Npm, Kind::File, "absent-npm", Some("2.0.0"), me),
        (Protocol::Npm, Kind::Version, "ec-npm", Some("3.0.0"), me),
        (
            Protocol::Pypi,
            Kind::Project,
            "absent-one",
            None,
            IpAddr::V4(other),
        ),
    ]
    .into_iter()
    .map(|(p, k, n, v, c)| (p, k, n.to_string(), v.map(str::to_string), c))
    .collect();
    let got = misses(&records);
    assert_eq!(got.len(), want.len(), "one line per distinct ask: {got:#?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
    let served: BTreeSet<(Protocol, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Served { protocol, name, .. } => Some((*protocol, name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        served,
        [
            (Protocol::Pypi, "ec-held".to_string()),
            (Protocol::Npm, "ec-npm".to_string())
        ]
        .into_iter()
        .collect()
    );
    // What the mirror wrote reads back as a universe: the names never
    // served, the held project's version only as a comment.
    let agg = egress_mirror::misses::aggregate_files(std::slice::from_ref(&log)).unwrap();
    let universe = agg.render(
        egress_mirror::misses::OutputFormat::Universe,
        Some(Protocol::Pypi),
    );
    let listed: Vec<&str> = universe
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, ["absent-one", "absent-two"], "{universe}");
    assert!(
        universe.contains("# ec-held  runs 1, clients 1, versions 9.9\n"),
        "{universe}"
    );
    assert!(
        universe.contains("1 of 3 names asked for were served"),
        "{universe}"
    );
    // Every line the mirror wrote is printable ASCII.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text
        .bytes()
        .all(|b| b == b'\n' || (b' '..=b'~').contains(&b)));
    drop(plain);
    logged.stop();
}

#[test]
fn a_flood_of_random_names_stays_within_the_bounds_and_a_client_is_served() {
    const SOURCES: u8 = 40;
    const PER_SOURCE: usize = 60;
    const ENTRIES: usize = 300;
    const PER_CLIENT: usize = 20;
    let tmp = TempDir::new("misses-flood");
    let (dir, wheel_path, wheel) = snapshot_dir(&tmp);
    let log = tmp.0.join("misses.jsonl");
    let mirror = start(
        &dir,
        &[
            "--misses-log",
            log.to_str().unwrap(),
            "--misses-max-entries",
            &ENTRIES.to_string(),
            "--misses-max-per-client",
            &PER_CLIENT.to_string(),
            "--misses-summary-secs",
            "1",
        ],
    );
    let addr = mirror.addr;
    let flood: Vec<_> = (0..SOURCES)
        .map(|i| {
            std::thread::spawn(move || {
                let src = Ipv4Addr::new(127, 0, 1, i + 2);
                // xorshift: a different stream per source, no dependency.
                let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(i + 1);
                let mut answered = 0;
                for _ in 0..PER_SOURCE {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let target = match x % 3 {
                        0 => format!("/simple/r{x:x}/"),
                        1 => format!("/r{x:x}"),
                        _ => format!("/r{x:x}/-/r{x:x}-1.0.{}.tgz", x % 100),
                    };
                    if let Ok(a) = get_from(src, addr, &target) {
                        assert_eq!(status(&a), Some(404), "{target}");
                        answered += 1;
                    }
                }
                answered
            })
        })
        .collect();
    // Meanwhile a legitimate client is served, every time.
    let me = Ipv4Addr::new(127, 0, 0, 1);
    let mut legit = 0;
    while legit < 40 {
        let a = get_from(me, addr, &wheel_path).unwrap();
        assert_eq!(status(&a), Some(200));
        assert!(a.ends_with(&wheel));
        legit += 1;
    }
    let answered: usize = flood.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        answered,
        usize::from(SOURCES) * PER_SOURCE,
        "every flood request answered"
    );

    // 2,400 distinct asks, 300 logged; whatever was not logged is counted
    // (queue, client bound or log full), at least once per distinct ask
    // over the bound, in a summary line within a second or so.
    let over = usize::from(SOURCES) * PER_SOURCE - ENTRIES;
    let records = records_when(&log, |r| {
        r.iter().any(|x| {
            matches!(x, Record::Summary { counts, .. }
                if counts.misses as usize == ENTRIES && counts.dropped() as usize >= over)
        })
    });
    let lines = misses(&records);
    assert_eq!(lines.len(), ENTRIES, "the log holds exactly its bound");
    let mut per_client: HashMap<IpAddr, usize> = HashMap::new();
    for (_, _, _, _, c) in &lines {
        *per_client.entry(*c).or_default() += 1;
    }
    assert!(
        per_client.values().all(|&n| n <= PER_CLIENT),
        "{per_client:?}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().all(|l| l.len() <= 1024));
    let dropped = records
        .iter()
        .filter_map(|r| match r {
            Record::Summary { counts, .. } => Some(counts.dropped()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    assert!(dropped as usize >= over, "dropped {dropped}");
    let stderr = mirror.stop();
    assert!(
        stderr.lines().any(|l| l.contains("asks not logged so far")),
        "{stderr}"
    );
}
