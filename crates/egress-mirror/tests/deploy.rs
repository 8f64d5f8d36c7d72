//! The deployment files under `deploy/` (issue 28), each checked by a real
//! validator:
//!
//! - the systemd unit passes `systemd-analyze verify`, `systemd-analyze
//!   security --offline=yes` rates its exposure at 2.0 or lower, and every
//!   system call the real mirror makes while it starts (Landlock included),
//!   serves a page and a file, answers its admin listener, swaps on SIGHUP
//!   and stops is inside the unit's own `SystemCallFilter=` (as systemd
//!   expands its groups), so the filter will not kill it in production;
//!   its `ExecStart=` with `mirror.toml` (paths and ports substituted)
//!   starts the real mirror confined, and a re-pointed link plus
//!   `ExecReload=`'s SIGHUP swaps it;
//! - the Compose file validates against the Compose specification's JSON
//!   schema (check-jsonschema), the mirror is the only other service on an
//!   internal network, its command starts the real mirror, and the
//!   sandbox's apt sources and cargo config, read by the real apt-get and
//!   cargo, fetch from the mirror only;
//! - the Kubernetes manifests validate against Kubernetes 1.32's schemas
//!   (kubernetes-validate --strict), under the restricted Pod Security
//!   profile, with the NetworkPolicies docs/deploying.md describes; the
//!   mirror container's args start the real mirror, whose admin listener
//!   answers the probes' paths.
//!
//! Each validator is shown to refuse a broken copy, so that a pass is not
//! vacuous. The validators are pinned in scripts/validators.txt
//! (scripts/setup-validators; scripts/test runs it).

#![cfg(target_os = "linux")]

use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

#[allow(dead_code)]
mod common;

use common::TempDir;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validators() -> PathBuf {
    let dir = std::env::var_os("EGRESS_VALIDATORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".tools/validators"));
    assert!(
        dir.join("bin/kubernetes-validate").is_file() && dir.join("bin/check-jsonschema").is_file(),
        "no validators in {}: run scripts/setup-validators (scripts/test does)",
        dir.display()
    );
    dir
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {cmd:?}: {e} (is it installed? scripts/test installs it)")
    })
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The unit with ExecStart pointing at the mirror this test built (verify
/// checks that the binary exists).
fn unit_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let unit =
        std::fs::read_to_string(repo().join("deploy/systemd/egress-mirror.service")).unwrap();
    let unit = unit.replace(
        "/usr/local/bin/egress-mirror",
        env!("CARGO_BIN_EXE_egress-mirror"),
    );
    let path = dir.join("egress-mirror.service");
    std::fs::write(&path, edit(unit)).unwrap();
    path
}

fn exposure(unit: &Path) -> f64 {
    let o = run(Command::new("systemd-analyze")
        .args(["security", "--offline=yes"])
        .arg(unit));
    let out = text(&o);
    out.lines()
        .find_map(|l| {
            let rest = l.split("Overall exposure level for").nth(1)?;
            rest.split(':')
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no exposure level in: {out}"))
}

#[test]
fn the_systemd_unit_verifies_and_is_rated_at_most_2() {
    let tmp = TempDir::new("egress-deploy-unit");
    let unit = unit_copy(&tmp.0, |u| u);
    let o = run(Command::new("systemd-analyze").arg("verify").arg(&unit));
    assert!(
        o.status.success() && text(&o).trim().is_empty(),
        "{}",
        text(&o)
    );
    let level = exposure(&unit);
    assert!(level <= 2.0, "exposure {level}");
    // Controls: verify refuses a broken unit, and the rating sees the
    // hardening (without it the same service is rated far higher).
    let broken = unit_copy(&tmp.0, |u| {
        u.replace("ProtectSystem=strict", "ProtectSystem=stricter")
    });
    let o = run(Command::new("systemd-analyze").arg("verify").arg(&broken));
    assert!(
        !text(&o).trim().is_empty(),
        "verify accepted ProtectSystem=stricter"
    );
    let bare = unit_copy(&tmp.0, |u| {
        u.lines()
            .filter(|l| {
                !l.contains('=') || l.starts_with("ExecStart") || l.starts_with("Description")
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    assert!(
        exposure(&bare) > 8.0,
        "an unhardened unit rated {}",
        exposure(&bare)
    );
}

/// `systemd-analyze syscall-filter GROUP`, groups expanded.
fn expand(group: &str, out: &mut BTreeSet<String>, seen: &mut BTreeSet<String>) {
    if !seen.insert(group.to_string()) {
        return;
    }
    let o = run(Command::new("systemd-analyze").args(["syscall-filter", group]));
    assert!(o.status.success(), "{}", text(&o));
    for line in String::from_utf8_lossy(&o.stdout).lines().skip(1) {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with('@') {
            expand(t, out, seen);
        } else {
            out.insert(t.to_string());
        }
    }
}

/// What the unit's `SystemCallFilter=` lines allow, read in order as
/// systemd reads them: the first names the allowed set, a later one adds
/// to it, one starting with `~` takes away.
fn allowed_by_unit() -> BTreeSet<String> {
    let unit =
        std::fs::read_to_string(repo().join("deploy/systemd/egress-mirror.service")).unwrap();
    let mut allowed = BTreeSet::new();
    let mut lines = 0;
    for value in unit
        .lines()
        .filter_map(|l| l.strip_prefix("SystemCallFilter="))
    {
        lines += 1;
        let (deny, names) = match value.strip_prefix('~') {
            Some(rest) => (true, rest),
            None => (false, value),
        };
        let mut set = BTreeSet::new();
        for name in names.split_whitespace() {
            if name.starts_with('@') {
                expand(name, &mut set, &mut BTreeSet::new());
            } else {
                set.insert(name.to_string());
            }
        }
        if deny {
            allowed.retain(|s| !set.contains(s));
        } else {
            allowed.extend(set);
        }
    }
    assert!(lines >= 2 && allowed.len() > 100, "{lines} filter lines");
    allowed
}

/// A signed snapshot of one wheel named `name` at `dir/name` (all signed
/// by the same key), its page and its file's path.
fn snapshot_dir(dir: &Path, name: &str) -> (PathBuf, String, String) {
    let w = common::wheel(name, "1.0.0", "deploy\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let snapshot = b
        .build(
            "2026-01-01T00:00:00Z",
            Some(&SigningKey::from_seed([9; 32], "test")),
            "mirror@egress.test",
        )
        .unwrap();
    let snap = dir.join(name);
    snapshot.write_dir(&snap).unwrap();
    (
        snap,
        format!("/simple/{name}/"),
        format!("/files/{}/{}", w.sha256, w.filename),
    )
}

fn get(addr: SocketAddr, target: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: m\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The serving and admin listeners' addresses, as the mirror's start-up
/// lines on standard output name them (the admin line comes last; read
/// to the end of the output if there is none).
fn addresses(child: &mut Child) -> (SocketAddr, Option<SocketAddr>) {
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let addr = |line: &str| -> Option<SocketAddr> {
        line.split(" at http://")
            .nth(1)?
            .split('/')
            .next()?
            .trim()
            .parse()
            .ok()
    };
    let (mut serving, mut admin) = (None, None);
    while let Some(Ok(line)) = lines.next() {
        if line.contains("admin listener") {
            admin = addr(&line);
            break;
        }
        serving = serving.or_else(|| addr(&line));
    }
    (
        serving.expect("no serving address on standard output"),
        admin,
    )
}

/// The mirror started with `args`, killed (by its PID) when dropped.
struct Mirror {
    child: Child,
    serving: SocketAddr,
    admin: Option<SocketAddr>,
}

impl Mirror {
    fn start(args: &[String]) -> Mirror {
        let mut child = Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        if !args.iter().any(|a| a == "--admin-listen") {
            // Without an admin listener the serving line is the last one
            // before requests; read it and stop.
            let mut line = String::new();
            BufReader::new(child.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            let serving = line
                .split(" at http://")
                .nth(1)
                .and_then(|r| r.split('/').next())
                .and_then(|a| a.trim().parse().ok())
                .unwrap_or_else(|| panic!("no serving address in {line:?}"));
            return Mirror {
                child,
                serving,
                admin: None,
            };
        }
        let (serving, admin) = addresses(&mut child);
        Mirror {
            child,
            serving,
            admin,
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` with `from` replaced by `to`; `from` must be there (a file that
/// drifted from what the test substitutes fails here, not silently).
fn swap_in(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is no longer in:\n{text}");
    text.replace(from, to)
}

#[test]
fn the_units_exec_start_and_mirror_toml_serve_confined_and_swap_on_reload() {
    let tmp = TempDir::new("egress-deploy-exec");
    let (v1, page1, _) = snapshot_dir(&tmp.0, "ec-deploy-one");
    let (v2, page2, _) = snapshot_dir(&tmp.0, "ec-deploy-two");
    let current = tmp.0.join("current");
    std::os::unix::fs::symlink(&v1, &current).unwrap();
    let toml = std::fs::read_to_string(repo().join("deploy/systemd/mirror.toml")).unwrap();
    let toml = swap_in(
        &toml,
        "/var/lib/egress-mirror/current",
        current.to_str().unwrap(),
    );
    let toml = swap_in(&toml, "0.0.0.0:8080", "127.0.0.1:0");
    let config = tmp.0.join("mirror.toml");
    std::fs::write(&config, toml).unwrap();
    let unit =
        std::fs::read_to_string(repo().join("deploy/systemd/egress-mirror.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart=");
    let exec = swap_in(
        exec,
        "/etc/egress-mirror/mirror.toml",
        config.to_str().unwrap(),
    );
    let exec = swap_in(&exec, "127.0.0.1:9090", "127.0.0.1:0");
    let mut words = exec.split_whitespace().map(String::from);
    assert_eq!(
        words.next().as_deref(),
        Some("/usr/local/bin/egress-mirror")
    );
    let args: Vec<String> = words.collect();
    assert!(args.contains(&"--require-confinement".to_string()));
    let m = Mirror::start(&args);
    let admin = m.admin.expect("the unit starts the admin listener");
    assert_eq!(get(m.serving, &page1), 200);
    assert_eq!(get(admin, "/readyz"), 200);
    assert_eq!(get(admin, "/livez"), 200);
    // The swap docs/deploying.md describes: re-point the link, then
    // ExecReload= (SIGHUP).
    assert!(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"));
    let next = tmp.0.join("current.new");
    std::os::unix::fs::symlink(&v2, &next).unwrap();
    std::fs::rename(&next, &current).unwrap();
    let o = run(Command::new("kill").args(["-HUP", &m.child.id().to_string()]));
    assert!(o.status.success(), "{}", text(&o));
    let swapped = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        get(m.serving, &page2) == 200
    });
    assert!(swapped, "{page2} not served after the reload");
    assert_eq!(get(m.serving, &page1), 404);
    assert_eq!(get(admin, "/readyz"), 200);
}

#[test]
fn the_deployment_and_compose_commands_start_the_mirror_as_written() {
    let tmp = TempDir::new("egress-deploy-args");
    let (snap, page, file) = snapshot_dir(&tmp.0, "ec-deploy");
    let signers = snap.join("allowed_signers");
    let args_of = |c: &Value, key: &str| -> Vec<String> {
        c[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {c}"))
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };

    // Kubernetes: the mirror container's args, its ports and probes.
    let docs: Vec<Value> = ["deployment.yaml"]
        .iter()
        .flat_map(|f| yaml_docs(&repo().join("deploy/kubernetes").join(f)))
        .collect();
    let pod = &docs.iter().find(|d| d["kind"] == "Deployment").unwrap()["spec"]["template"]["spec"];
    let mirror = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mirror")
        .unwrap();
    let port = |name: &str| {
        mirror["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no port {name}"))["containerPort"]
            .as_u64()
            .unwrap()
    };
    let args = args_of(mirror, "args");
    let listen = format!("0.0.0.0:{}", port("http"));
    let admin = format!("0.0.0.0:{}", port("admin"));
    let flag = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    assert_eq!(flag("--listen"), Some(listen.clone()));
    assert_eq!(flag("--admin-listen"), Some(admin.clone()));
    // The test binds loopback, where the mirror needs no allow list; as
    // written (0.0.0.0) it refuses to start without one (exit 11), and the
    // kubelet's probes come from the node, not loopback.
    assert!(
        flag("--admin-allow").is_some(),
        "a non-loopback --admin-listen without --admin-allow: {args:?}"
    );
    // The init container pulls into the directory the mirror serves,
    // verified against the same signers.
    let init = args_of(&pod["initContainers"][0], "args");
    assert_eq!(init.get(3), args.first(), "{init:?} {args:?}");
    assert_eq!(flag("--allowed-signers").as_ref(), init.get(5));
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if *a == listen || *a == admin {
                "127.0.0.1:0".to_string()
            } else if a == "/snapshot/current" {
                snap.to_str().unwrap().to_string()
            } else if a == "/signers/allowed_signers" {
                signers.to_str().unwrap().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let m = Mirror::start(&args);
    assert_eq!(get(m.serving, &page), 200);
    assert_eq!(get(m.serving, &file), 200);
    let admin = m.admin.expect("admin listener");
    for probe in ["readinessProbe", "livenessProbe"] {
        let path = mirror[probe]["httpGet"]["path"].as_str().unwrap();
        assert_eq!(mirror[probe]["httpGet"]["port"], "admin");
        assert_eq!(get(admin, path), 200, "{probe} {path}");
        // The serving listener has no such route (P3).
        assert_eq!(get(m.serving, path), 404, "{path} on the serving port");
    }
    drop(m);

    // Compose: the mirror service's command, on the port the sandbox's
    // clients are pointed at.
    let doc = yaml_docs(&repo().join("deploy/compose/compose.yaml")).remove(0);
    let command = args_of(&doc["services"]["mirror"], "command");
    let mut listen = None;
    let args: Vec<String> = command
        .iter()
        .map(|a| {
            if a == "/snapshot" {
                snap.to_str().unwrap().to_string()
            } else if let Some(port) = a.strip_prefix("0.0.0.0:") {
                listen = Some(port.to_string());
                "127.0.0.1:0".to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let port = listen.expect("the compose mirror listens on 0.0.0.0:PORT");
    let env = doc["services"]["default"]["environment"]
        .as_object()
        .unwrap();
    assert!(!env.is_empty());
    for (k, v) in env {
        assert!(
            v.as_str()
                .unwrap()
                .starts_with(&format!("http://mirror:{port}/")),
            "{k}={v}"
        );
    }
    let m = Mirror::start(&args);
    assert_eq!(get(m.serving, &page), 200);
}

/// The Compose sandbox's apt sources and cargo config, as the real apt-get
/// and cargo read them: every URL they would fetch is the mirror's.
#[test]
fn the_compose_sandboxs_apt_and_cargo_fetch_from_the_mirror_only() {
    let doc = yaml_docs(&repo().join("deploy/compose/compose.yaml")).remove(0);
    let content = |name: &str| {
        doc["configs"][name]["content"]
            .as_str()
            .unwrap_or_else(|| panic!("no configs.{name}.content"))
            .to_string()
    };
    let target = |name: &str| {
        doc["services"]["default"]["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["source"] == name)
            .unwrap_or_else(|| panic!("the sandbox does not mount {name}"))["target"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let tmp = TempDir::new("egress-deploy-clients");

    // apt: the stock image's own list is replaced, and apt-get update
    // would fetch only from the mirror (--print-uris: nothing is fetched).
    assert_eq!(
        target("apt-sources"),
        "/etc/apt/sources.list.d/debian.sources"
    );
    let parts = tmp.0.join("sources.list.d");
    std::fs::create_dir_all(tmp.0.join("state/lists/partial")).unwrap();
    std::fs::create_dir_all(tmp.0.join("cache")).unwrap();
    std::fs::create_dir_all(&parts).unwrap();
    std::fs::write(parts.join("debian.sources"), content("apt-sources")).unwrap();
    let o = run(Command::new("apt-get")
        .arg("-oDir::Etc::SourceList=/dev/null")
        .arg(format!("-oDir::Etc::SourceParts={}", parts.display()))
        .arg(format!("-oDir::State={}", tmp.0.join("state").display()))
        .arg(format!("-oDir::Cache={}", tmp.0.join("cache").display()))
        .args(["-oDebug::NoLocking=1", "update", "--print-uris"]));
    assert!(o.status.success(), "{}", text(&o));
    let uris: Vec<&str> = std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix('\'')?.split('\'').next())
        .collect();
    for release in [
        "http://mirror:8080/apt/debian/dists/bookworm/InRelease",
        "http://mirror:8080/apt/debian-security/dists/bookworm-security/InRelease",
    ] {
        assert!(uris.contains(&release), "{release} not in {uris:?}");
    }
    assert!(
        uris.iter()
            .all(|u| u.starts_with("http://mirror:8080/apt/")),
        "{uris:?}"
    );

    // cargo: crates.io is replaced by the mirror's sparse registry. The
    // host is pointed at a loopback port nobody listens on, so cargo
    // names the URL it tried and fails.
    assert_eq!(target("cargo-config"), "/.cargo/config.toml");
    let project = tmp.0.join("project");
    std::fs::create_dir_all(project.join(".cargo")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(tmp.0.join("cargo-home")).unwrap();
    std::fs::write(
        project.join(".cargo/config.toml"),
        swap_in(
            &content("cargo-config"),
            "http://mirror:8080/",
            "http://127.0.0.1:1/",
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n",
    )
    .unwrap();
    std::fs::write(project.join("src/lib.rs"), "").unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let o = run(Command::new(cargo)
        .arg("generate-lockfile")
        .current_dir(&project)
        .env("CARGO_HOME", tmp.0.join("cargo-home"))
        .env("CARGO_NET_RETRY", "0"));
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("replaced source registry `crates-io`")
            && out.contains("http://127.0.0.1:1/cargo/index/config.json"),
        "{out}"
    );
}

#[test]
fn every_system_call_the_mirror_makes_is_inside_the_units_filter() {
    let allowed = allowed_by_unit();
    let tmp = TempDir::new("egress-deploy-syscalls");
    let (snap, page, file) = snapshot_dir(&tmp.0, "ec-deploy");
    let trace = tmp.0.join("trace");
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_egress-mirror"))
        .arg(&snap)
        .args(["--listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("strace (scripts/test installs it)");
    let (serving, admin) = addresses(&mut child);
    let admin = admin.expect("admin");
    assert_eq!(get(serving, &page), 200);
    assert_eq!(get(serving, &file), 200);
    assert_eq!(get(admin, "/metrics"), 200);
    assert_eq!(get(admin, "/readyz"), 200);
    // The mirror is strace's child; SIGHUP makes it verify and swap.
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id())).unwrap();
    let mirror: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let signal = |sig: &str| {
        let o = run(Command::new("kill").args([sig, &mirror.to_string()]));
        assert!(o.status.success(), "{}", text(&o));
    };
    signal("-HUP");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get(serving, &page), 200);
    signal("-TERM");
    let _ = child.wait();
    let trace = std::fs::read_to_string(&trace).unwrap();
    let used: BTreeSet<String> = trace
        .lines()
        .filter_map(|l| {
            let call = l.split_whitespace().nth(1)?;
            let name = call.split('(').next()?;
            (call.contains('(')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
            .then(|| name.to_string())
        })
        .collect();
    assert!(
        used.contains("landlock_restrict_self") && used.contains("accept4"),
        "{used:?}"
    );
    let outside: Vec<&String> = used.iter().filter(|s| !allowed.contains(*s)).collect();
    assert!(
        outside.is_empty(),
        "system calls the unit's filter would refuse: {outside:?}"
    );
}

/// Every YAML document of `file`, as JSON (PyYAML, from the validators'
/// environment).
fn yaml_docs(file: &Path) -> Vec<Value> {
    let python = validators().join("bin/python");
    let o = run(Command::new(python).args([
        "-I",
        "-c",
        "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
    ]).arg(file));
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_compose_file_validates_and_its_network_is_internal() {
    let schema = repo().join("deploy/schemas/compose-spec.json");
    let compose = repo().join("deploy/compose/compose.yaml");
    let check = |file: &Path| {
        run(Command::new(validators().join("bin/check-jsonschema"))
            .arg("--schemafile")
            .arg(&schema)
            .arg(file))
    };
    let o = check(&compose);
    assert!(o.status.success(), "{}", text(&o));
    let tmp = TempDir::new("egress-deploy-compose");
    let broken = tmp.0.join("compose.yaml");
    let text_of = std::fs::read_to_string(&compose).unwrap();
    std::fs::write(
        &broken,
        text_of.replace("    read_only: true", "    read_only_root: true"),
    )
    .unwrap();
    assert!(
        !check(&broken).status.success(),
        "the schema accepted an unknown service key"
    );

    let doc = yaml_docs(&compose).remove(0);
    let services = doc["services"].as_object().unwrap();
    assert_eq!(services.keys().collect::<Vec<_>>(), ["default", "mirror"]);
    assert_eq!(doc["networks"]["sandbox"]["internal"], Value::Bool(true));
    for (name, s) in services {
        assert_eq!(s["networks"], serde_json::json!(["sandbox"]), "{name}");
        assert!(
            s.get("ports").is_none(),
            "{name} publishes a port on the host"
        );
    }
    assert_eq!(
        services["default"]["environment"]["PIP_INDEX_URL"],
        "http://mirror:8080/simple/"
    );
    assert_eq!(services["mirror"]["cap_drop"], serde_json::json!(["ALL"]));
}

#[test]
fn the_kubernetes_manifests_validate_under_the_restricted_profile() {
    let dir = repo().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let validate = |files: &[PathBuf]| {
        run(Command::new(validators().join("bin/kubernetes-validate"))
            .args(["--strict", "--kubernetes-version", "1.32.0"])
            .args(files))
    };
    let o = validate(&files);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        text(&o).matches(" passed for resource ").count(),
        5,
        "{}",
        text(&o)
    );
    let tmp = TempDir::new("egress-deploy-k8s");
    let broken = tmp.0.join("deployment.yaml");
    let d = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
    std::fs::write(
        &broken,
        d.replace(
            "readOnlyRootFilesystem: true",
            "readOnlyRootFilesystem: true\n            readOnlyEverything: true",
        ),
    )
    .unwrap();
    assert!(
        !validate(&[broken]).status.success(),
        "--strict accepted an unknown field"
    );

    let docs: Vec<Value> = files.iter().flat_map(|f| yaml_docs(f)).collect();
    let kind = |k: &'static str| docs.iter().filter(move |d| d["kind"] == k);
    let ns = kind("Namespace").next().unwrap();
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    let pod = &kind("Deployment").next().unwrap()["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let containers: Vec<&Value> = pod["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pod["containers"].as_array().unwrap())
        .collect();
    for c in &containers {
        assert_eq!(
            c["securityContext"]["allowPrivilegeEscalation"], false,
            "{}",
            c["name"]
        );
        assert_eq!(
            c["securityContext"]["capabilities"]["drop"],
            serde_json::json!(["ALL"])
        );
    }
    let mirror = containers.iter().find(|c| c["name"] == "mirror").unwrap();
    assert_eq!(mirror["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(mirror["livenessProbe"]["httpGet"]["path"], "/livez");
    let init = &pod["initContainers"][0]["args"];
    assert_eq!(
        (&init[0], &init[1]),
        (&Value::from("snapshot"), &Value::from("pull"))
    );
    // The sandboxes may reach the mirror's pods on the serving port, and
    // nothing else (no DNS either).
    let sandbox = kind("NetworkPolicy")
        .find(|p| p["metadata"]["name"] == "sandboxes-reach-only-the-mirror")
        .unwrap();
    let egress = sandbox["spec"]["egress"].as_array().unwrap();
    assert_eq!(egress.len(), 1);
    assert_eq!(
        egress[0]["to"],
        serde_json::json!([{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "egress-mirror"}}}])
    );
    assert_eq!(
        egress[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": 8080}])
    );
    let mirror_policy = kind("NetworkPolicy")
        .find(|p| p["metadata"]["name"] == "egress-mirror")
        .unwrap();
    assert!(mirror_policy["spec"]["policyTypes"]
        .as_array()
        .unwrap()
        .contains(&Value::from("Egress")));
    let out = mirror_policy["spec"]["egress"].as_array().unwrap();
    assert!(
        out.iter()
            .all(|r| r["to"].as_array().unwrap().iter().all(|t| t
                .get("ipBlock")
                .is_some_and(|b| b["cidr"].as_str().unwrap().ends_with("/32")))),
        "the mirror's pods may reach more than the registry: {out:?}"
    );
}
