//! Network namespaces for the tests that run something inside a sandbox:
//! a sandbox namespace whose only neighbour is a lab namespace running the
//! real `egress-mirror` (198.51.100.1:8080) and, when a test starts it, the
//! standalone canary (203.0.113.1:8700, its DNS responder where the test
//! says), joined by a veth pair. Everything is made by the test and
//! removed when it ends (a guard deletes the namespaces, the veths with
//! them, /etc/netns/NAME, and stops the processes it started by their
//! ids). Only documentation addresses.

use super::{mirror_bin, s, tmpdir};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const MIRROR_IP: &str = "198.51.100.1";
pub(crate) const SANDBOX_IP: &str = "198.51.100.2";
pub(crate) const CANARY_IP: &str = "203.0.113.1";
pub(crate) const CANARY: &str = "203.0.113.1:8700";
pub(crate) const ZONE: &str = "canary.example";
pub(crate) const MIRROR_URL: &str = "http://198.51.100.1:8080/simple/";
pub(crate) const STOCK_SOURCES: &str = "/etc/apt/sources.list.d/debian.sources";
/// Debian 12's stock `debian.sources`, as every debian:bookworm (and
/// python:3.x-slim) image carries it.
pub(crate) const STOCK_DEBIAN_SOURCES: &str = "\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

static SEQ: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn ip_bin() -> Option<PathBuf> {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Why these tests cannot run here, if they cannot.
pub(crate) fn unavailable() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0");
    if !root {
        return Some("not root: network namespaces need CAP_SYS_ADMIN".into());
    }
    let Some(ip) = ip_bin() else {
        return Some("no `ip` (iproute2) found".into());
    };
    match Command::new(ip).args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`ip netns` is unavailable: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("`ip netns` is unavailable: {e}")),
    }
}

/// A line-reading child: its stdout lines collected as they come.
pub(crate) struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    pub(crate) fn spawn(mut cmd: Command, ready: &str) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let (tx, rx) = mpsc::channel();
        let ready = ready.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if line.contains(&ready) {
                    let _ = tx.send(());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let started = rx.recv_timeout(Duration::from_secs(20)).is_ok();
        let p = Self { child, lines };
        assert!(started, "did not start: {:?}", p.lines());
        p
    }
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two namespaces and a veth pair between them, removed on drop.
pub(crate) struct Topology {
    pub(crate) ip: PathBuf,
    pub(crate) sandbox: String,
    pub(crate) lab: String,
    pub(crate) veth_s: String,
    pub(crate) dir: PathBuf,
    pub(crate) procs: Vec<Proc>,
}

impl Topology {
    pub(crate) fn new(tag: &str) -> Self {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}{n}", std::process::id() % 100_000);
        let t = Topology {
            ip: ip_bin().expect("ip"),
            sandbox: format!("egs{id}s"),
            lab: format!("egs{id}l"),
            veth_s: format!("ves{id}"),
            dir: tmpdir(&format!("sandbox-scan-{tag}")),
            procs: Vec::new(),
        };
        let veth_l = format!("vel{id}");
        t.ip(&["netns", "add", &t.sandbox]);
        t.ip(&["netns", "add", &t.lab]);
        t.ip(&[
            "link", "add", &t.veth_s, "type", "veth", "peer", "name", &veth_l,
        ]);
        t.ip(&["link", "set", &t.veth_s, "netns", &t.sandbox]);
        t.ip(&["link", "set", &veth_l, "netns", &t.lab]);
        t.ns(&t.sandbox, &["link", "set", "lo", "up"]);
        t.ns(&t.lab, &["link", "set", "lo", "up"]);
        t.ns(
            &t.sandbox,
            &["addr", "add", &format!("{SANDBOX_IP}/24"), "dev", &t.veth_s],
        );
        t.ns(
            &t.lab,
            &["addr", "add", &format!("{MIRROR_IP}/24"), "dev", &veth_l],
        );
        t.ns(
            &t.lab,
            &["addr", "add", &format!("{CANARY_IP}/32"), "dev", "lo"],
        );
        t.ns(&t.sandbox, &["link", "set", &t.veth_s, "up"]);
        t.ns(&t.lab, &["link", "set", &veth_l, "up"]);
        // The sandbox's own /etc: its resolver, and the machine's system
        // configuration files the scan reads replaced by the mirror's.
        let etc = t.etc();
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("resolv.conf"), format!("nameserver {CANARY_IP}\n")).unwrap();
        if Path::new("/etc/pip.conf").exists() {
            std::fs::write(
                etc.join("pip.conf"),
                format!("[global]\nindex-url = {MIRROR_URL}\n"),
            )
            .unwrap();
        }
        // apt's configuration as a stock Debian image has it: the public
        // archive in debian.sources (which a sealed sandbox cannot reach).
        if Path::new("/etc/apt").is_dir() {
            std::fs::create_dir_all(etc.join("apt/sources.list.d")).unwrap();
            std::fs::create_dir_all(etc.join("apt/apt.conf.d")).unwrap();
            std::fs::write(
                etc.join("apt/sources.list.d/debian.sources"),
                STOCK_DEBIAN_SOURCES,
            )
            .unwrap();
        }
        std::fs::create_dir_all(t.dir.join("home")).unwrap();
        std::fs::create_dir_all(t.dir.join("work")).unwrap();
        t
    }

    pub(crate) fn etc(&self) -> PathBuf {
        Path::new("/etc/netns").join(&self.sandbox)
    }

    pub(crate) fn ip(&self, args: &[&str]) {
        let o = Command::new(&self.ip).args(args).output().expect("ip");
        assert!(
            o.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    pub(crate) fn ns(&self, ns: &str, args: &[&str]) {
        let mut all = vec!["-n", ns];
        all.extend_from_slice(args);
        self.ip(&all);
    }

    pub(crate) fn in_lab(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.ip);
        c.args(["netns", "exec", &self.lab]).arg(program).args(args);
        c
    }

    /// The real mirror, serving a signed snapshot, on 198.51.100.1:8080.
    pub(crate) fn start_mirror(&mut self) {
        let canary =
            egress_references::Canary::start().expect("a loopback canary for the snapshot");
        let snap = self.dir.join("snap");
        egress_references::pypi::builtin::demo_snapshot(&canary)
            .expect("snapshot")
            .write_dir(&snap)
            .expect("write snapshot");
        canary.stop();
        let cmd = self.in_lab(
            &mirror_bin(),
            &[s(&snap), "--listen", &format!("{MIRROR_IP}:8080")],
        );
        self.procs.push(Proc::spawn(cmd, "serving snapshot"));
    }

    /// The standalone canary on 203.0.113.1:8700, its DNS on `dns`.
    pub(crate) fn start_canary(&mut self, dns: &str) -> usize {
        let secret = self.dir.join("canary.secret");
        let cmd = self.in_lab(
            Path::new(env!("CARGO_BIN_EXE_egress-conformance")),
            &[
                "canary",
                "--listen",
                CANARY,
                "--dns",
                dns,
                "--secret-file",
                s(&secret),
            ],
        );
        self.procs.push(Proc::spawn(cmd, "secret file"));
        self.procs.len() - 1
    }

    /// Whether the sandbox sees apt's configuration (the machine has an
    /// /etc/apt for `ip netns exec` to bind ours over).
    pub(crate) fn has_apt(&self) -> bool {
        self.etc().join("apt").is_dir()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.procs.clear();
        let _ = Command::new(&self.ip)
            .args(["netns", "del", &self.sandbox])
            .output();
        let _ = Command::new(&self.ip)
            .args(["netns", "del", &self.lab])
            .output();
        // If set-up stopped before the veth moved into its namespace.
        let _ = Command::new(&self.ip)
            .args(["link", "del", &self.veth_s])
            .output();
        let _ = std::fs::remove_dir_all(self.etc());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
