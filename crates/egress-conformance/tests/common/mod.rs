//! Scaffolding shared by this crate's integration tests: scratch
//! directories, the `egress-conformance` binary, and the real
//! `egress-mirror` binary with its request log. Each test file uses a part.

#![allow(dead_code)]

pub(crate) mod canary;
pub(crate) mod crash_front;
pub(crate) mod h2_front;
pub(crate) mod lax_front;
pub(crate) mod mutant;
pub(crate) mod netns;
pub(crate) mod scan;
pub(crate) mod verdicts;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An empty directory `<temp>/<name>-<pid>` (emptied if it was there).
pub(crate) fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// A loopback port free a moment ago, for a server whose URL must be
/// known before it starts (a snapshot that names the mirror).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The pinned pip and uv; set up by scripts/setup-clients (scripts/test
/// runs it), or where `EGRESS_CLIENTS_DIR` says.
pub(crate) fn clients() -> PathBuf {
    let dir = std::env::var_os("EGRESS_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/clients"));
    assert!(
        dir.join("bin/pip").is_file() && dir.join("bin/uv").is_file(),
        "pip and uv are not installed in {}: run scripts/setup-clients (scripts/test does)",
        dir.display()
    );
    dir
}

/// A pip or uv command with no configuration from this machine: they
/// read no config files or environment that could point them elsewhere.
pub(crate) fn client(program: &Path) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars() {
        if k.starts_with("PIP_") || k.starts_with("UV_") {
            c.env_remove(k);
        }
    }
    c.env("PIP_CONFIG_FILE", "/dev/null")
        .env("UV_NO_CONFIG", "1")
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    c
}

/// Runs `egress-conformance` with `args`, whatever its exit code.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(args)
        .output()
        .expect("run the binary")
}

pub(crate) fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The `egress-mirror` binary cargo builds with the workspace.
pub(crate) fn mirror_bin() -> PathBuf {
    workspace()
        .join("target")
        .join(if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        })
        .join("egress-mirror")
}

/// The real `egress-mirror` binary, with its request log collected.
pub(crate) struct MirrorProcess {
    child: Child,
    /// `http://127.0.0.1:PORT` (`https://` when serving TLS)
    pub base: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl MirrorProcess {
    pub(crate) fn start(snap: &Path, listen: &str) -> Self {
        Self::start_with(snap, listen, &[])
    }

    /// Serving https with the test CA's server certificate for the
    /// loopback names.
    pub(crate) fn start_tls(snap: &Path, listen: &str, ca: &egress_testca::TestCa) -> Self {
        let mirror = Self::start_with(
            snap,
            listen,
            &[
                "--tls-cert",
                s(&ca.server.cert),
                "--tls-key",
                s(&ca.server.key),
            ],
        );
        assert!(mirror.base.starts_with("https://"), "{}", mirror.base);
        mirror
    }

    /// With more flags.
    pub(crate) fn start_with(snap: &Path, listen: &str, flags: &[&str]) -> Self {
        let bin = mirror_bin();
        assert!(
            bin.is_file(),
            "{} is not built (cargo builds it with the workspace)",
            bin.display()
        );
        let mut child = Command::new(bin)
            .args([s(snap), "--listen", listen, "--log-requests"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start egress-mirror");
        // The start-up line (with the address) is on stdout; request and
        // verification logs are on stderr.
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("serving snapshot") {
                    if let Some(at) = line.rsplit(" at ").next() {
                        let _ = tx.send(at.trim_end_matches('/').to_string());
                    }
                }
            }
        });
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log").push(line);
            }
        });
        let Ok(base) = rx.recv_timeout(std::time::Duration::from_secs(10)) else {
            std::thread::sleep(std::time::Duration::from_millis(200));
            panic!(
                "egress-mirror did not start: {:#?}",
                log.lock().expect("log")
            );
        };
        Self { child, base, log }
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

/// The real mirror started with `--instance-dir DIR/instance`, its
/// instance key certified with `DIR/key` (the key that signed `snap`) by
/// `instance certify`, and the certificate deployed; returns the mirror and
/// the `check` flags that expect this snapshot and binary.
pub(crate) fn attested_mirror(
    dir: &Path,
    snap: &Path,
    listen: &str,
) -> (MirrorProcess, Vec<String>) {
    let inst = dir.join("instance");
    std::fs::create_dir_all(&inst).expect("mkdir");
    let mirror = MirrorProcess::start_with(snap, listen, &["--instance-dir", s(&inst)]);
    ok(
        &run(&[
            "instance",
            "certify",
            "--key",
            s(&dir.join("key")),
            "--instance-key",
            s(&inst.join("instance.pub")),
            "--snapshot",
            s(snap),
            "--out",
            s(&inst.join("instance.cert")),
        ]),
        "instance certify",
    );
    let expect = vec![
        "--expect-snapshot".to_string(),
        snapshot_id(snap).to_hex(),
        "--expect-binary".to_string(),
        egress_model::Sha256Digest::of(&std::fs::read(mirror_bin()).expect("read the binary"))
            .to_hex(),
    ];
    (mirror, expect)
}

/// The ID of the snapshot in `snap`: the SHA-256 of its MANIFEST.
pub(crate) fn snapshot_id(snap: &Path) -> egress_model::Sha256Digest {
    egress_model::Sha256Digest::of(&std::fs::read(snap.join("MANIFEST")).expect("MANIFEST"))
}

impl Drop for MirrorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `layer` with its ancestors' evidence taken out, signed again by `key`.
pub(crate) fn resign_without_chain(layer: &Path, out: &Path, key: &Path) {
    let key =
        egress_signing::SigningKey::from_openssh(&std::fs::read_to_string(key).unwrap()).unwrap();
    let snap = egress_snapshot::Snapshot::load_dir(layer).unwrap();
    let mut doc: egress_snapshot::SnapshotDoc = snap.doc.clone();
    doc.served
        .retain(|e| !e.path.starts_with(egress_snapshot::chain::CHAIN_DIR));
    let doc_bytes = doc.to_canonical_json();
    let mut manifest = egress_snapshot::Manifest::new();
    for e in &doc.served {
        manifest
            .insert(&egress_snapshot::manifest::blob_path(&e.sha256), e.sha256)
            .unwrap();
    }
    manifest
        .insert("SNAPSHOT.json", egress_model::Sha256Digest::of(&doc_bytes))
        .unwrap();
    let manifest_bytes = manifest.render().into_bytes();
    let signature = Some(key.sign(egress_signing::SNAPSHOT_NAMESPACE, &manifest_bytes));
    let resigned = egress_snapshot::Snapshot {
        manifest,
        manifest_bytes,
        doc,
        doc_bytes,
        signature,
        ..snap
    };
    resigned.write_dir(out).unwrap();
}
