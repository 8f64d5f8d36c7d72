//! Scaffolding shared by this crate's integration tests: temporary
//! directories, wheels, raw HTTP/1.1 requests and a confined pip.

use egress_artifacts::{build_wheel, BuiltDist, WheelSpec};
use egress_model::{ProjectName, Version};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A fresh directory `<temp>/<name>-<pid>-<n>`, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A pure wheel `name`-`version` needing Python >= 3.7, with one module.
pub(crate) fn wheel(name: &str, version: &str, description: &str) -> BuiltDist {
    build_wheel(&WheelSpec {
        name: ProjectName::new(name).unwrap(),
        version: Version::new(version).unwrap(),
        summary: format!("{name} {version}"),
        description: description.into(),
        requires_python: Some(">=3.7".into()),
        files: vec![(
            format!("{}/__init__.py", name.replace('-', "_")),
            format!("VERSION = {version:?}\n").into_bytes(),
        )],
    })
}

#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` verbatim and reads until the server closes.
pub(crate) fn raw(addr: SocketAddr, request: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8(buf[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.to_string(), v.trim().to_string())
        })
        .collect();
    Resp {
        status,
        headers,
        body: buf[end + 4..].to_vec(),
    }
}

/// One request with `Connection: close`; reads until the server closes.
pub(crate) fn request(addr: SocketAddr, method: &str, target: &str, headers: &[&str]) -> Resp {
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    raw(
        addr,
        &format!(
            "{method} {target} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n{extra}\r\n"
        ),
    )
}

/// Runs pip with nothing but the mirror to look at: no configuration files,
/// no `PIP_*` settings inherited from the machine (a `PIP_FIND_LINKS` would
/// let pip find packages elsewhere), no cache.
pub(crate) fn pip(args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new("python3");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PIP_") {
            cmd.env_remove(name);
        }
    }
    cmd.args(["-m", "pip"])
        .args(args)
        .args([
            "--isolated",
            "--disable-pip-version-check",
            "--no-cache-dir",
        ])
        .current_dir(cwd)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_INPUT", "1")
        .output()
        .expect("python3 with pip must be installed to run these tests")
}

/// A finished command's exit status and output, for assertion messages.
pub(crate) fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A running binary and the address from its startup line.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) banner: String,
}

impl Running {
    pub(crate) fn start(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let addr = banner
            .split(" at http://")
            .nth(1)
            .and_then(|a| a.trim().trim_end_matches('/').parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("no startup line: {banner:?} {}", show(&out));
        };
        Running {
            child,
            addr,
            banner,
        }
    }

    /// Kills the mirror and returns everything it wrote to stderr.
    pub(crate) fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        stderr
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
