//! HAProxy, the load balancer labs put in front of mirror replicas, run
//! for real on loopback: Debian's 2.6, unpacked by scripts/setup-infra
//! into `.tools/infra/haproxy` (or where `EGRESS_INFRA_DIR` says), in TCP
//! mode, round robin, each backend sent a PROXY v2 header
//! (`send-proxy-v2`) or not. Its configuration is checked with
//! `haproxy -c` before it starts; it is stopped (by its PID) on drop.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running HAProxy.
pub struct HaProxy {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

/// Why HAProxy could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HaProxyError {
    #[error("no HAProxy at {0}: run scripts/setup-infra (scripts/test does)")]
    Missing(PathBuf),
    #[error("haproxy -c refused the configuration: {0}")]
    Config(String),
    #[error("cannot start HAProxy: {0}")]
    Io(#[from] std::io::Error),
    #[error("HAProxy did not listen on {0} within 10 s: {1}")]
    NotListening(SocketAddr, String),
}

/// The binary: `$EGRESS_INFRA_DIR/haproxy/root/usr/sbin/haproxy`, by
/// default under the workspace's `.tools/infra`.
pub fn binary() -> PathBuf {
    let dir = std::env::var_os("EGRESS_INFRA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/infra"));
    dir.join("haproxy/root/usr/sbin/haproxy")
}

/// The configuration: a loopback frontend on `port`, round robin over
/// `backends`, TCP mode.
pub fn config(port: u16, backends: &[SocketAddr], send_proxy: bool) -> String {
    let proxy = if send_proxy { " send-proxy-v2" } else { "" };
    let servers: String = backends
        .iter()
        .enumerate()
        .map(|(i, a)| format!("    server r{i} {a}{proxy}\n"))
        .collect();
    format!(
        "global\n    # Two descriptors a connection: within the open-file limit (20,000 here).\n    maxconn 8000\n\n\
         defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\n\
         frontend sandboxes\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\n\
         backend replicas\n    balance roundrobin\n{servers}"
    )
}

impl HaProxy {
    /// Starts HAProxy in front of `backends`, its files in `dir`.
    pub fn start(
        dir: &Path,
        backends: &[SocketAddr],
        send_proxy: bool,
    ) -> Result<Self, HaProxyError> {
        let bin = binary();
        if !bin.is_file() {
            return Err(HaProxyError::Missing(bin));
        }
        std::fs::create_dir_all(dir)?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, config(port, backends, send_proxy))?;
        let check = Command::new(&bin)
            .args(["-c", "-q", "-f"])
            .arg(&cfg)
            .output()?;
        if !check.status.success() {
            return Err(HaProxyError::Config(
                String::from_utf8_lossy(&check.stderr).trim().to_string(),
            ));
        }
        let child = Command::new(&bin)
            .args(["-db", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("haproxy.log"))?)
            .spawn()?;
        let mut me = HaProxy {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(me.addr).is_err() {
            if Instant::now() > deadline || me.child.try_wait().ok().flatten().is_some() {
                let log = std::fs::read_to_string(dir.join("haproxy.log")).unwrap_or_default();
                let last = log.lines().last().unwrap_or("no output").to_string();
                return Err(HaProxyError::NotListening(me.addr, last));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(me)
    }

    /// Where sandboxes connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The directory of its configuration.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
