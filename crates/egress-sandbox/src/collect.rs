//! Collectors: the only code that reads the sandbox or talks to the
//! network. Each returns the evidence of one check; judges (`judge.rs`)
//! decide from it alone.

use crate::dns;
use crate::doors;
use crate::evidence::{DnsAttempt, Evidence, ScanPlan, TcpAttempt, TcpOutcome};
use crate::names::{redact, redact_var};
use crate::net;
use egress_model::{Url, WireBytes};
use egress_transcript::{Client, Limits};
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest file the scan records.
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// Bounds of every attempt.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub http: Duration,
    pub dns: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(2),
            http: Duration::from_secs(4),
            dns: Duration::from_secs(2),
        }
    }
}

/// What every collector may read: the plan, the environment (read once),
/// the home and working directories, the bounds.
#[derive(Debug, Clone)]
pub struct Context {
    pub plan: ScanPlan,
    pub env: Vec<(String, String)>,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    pub timeouts: Timeouts,
    /// CA certificates (PEM) to trust for an https mirror, else the
    /// Mozilla roots compiled in.
    pub cacert: Option<PathBuf>,
}

impl Context {
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
    fn home_join(&self, rel: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|h| h.join(rel))
    }
    fn config_home(&self) -> Option<PathBuf> {
        self.var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| self.home_join(".config"))
    }
    fn config_dirs(&self) -> Vec<PathBuf> {
        self.var("XDG_CONFIG_DIRS")
            .unwrap_or("/etc/xdg")
            .split(':')
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect()
    }
    fn env_evidence(&self, keep: impl Fn(&str) -> bool) -> Evidence {
        let mut vars: Vec<(String, String)> = self
            .env
            .iter()
            .filter(|(n, _)| keep(n))
            .map(|(n, v)| (n.clone(), redact_var(n, v)))
            .collect();
        vars.sort();
        Evidence::Env { vars }
    }
}

/// A file as evidence; `secret_safe` redacts secrets (configuration files).
pub fn read_file(path: &Path, secret_safe: bool) -> Evidence {
    let shown = path.display().to_string();
    let read = std::fs::File::open(path).and_then(|f| {
        let mut buf = Vec::new();
        f.take(MAX_FILE).read_to_end(&mut buf)?;
        Ok(buf)
    });
    match read {
        Ok(bytes) => {
            let bytes = if secret_safe {
                redact(&String::from_utf8_lossy(&bytes)).into_bytes()
            } else {
                bytes
            };
            Evidence::File {
                path: shown,
                bytes: Some(WireBytes(bytes)),
                error: None,
            }
        }
        Err(e) => Evidence::File {
            path: shown,
            bytes: None,
            error: Some(if e.kind() == io::ErrorKind::NotFound {
                "absent".into()
            } else {
                e.to_string()
            }),
        },
    }
}

/// The sorted names in `dir`, as evidence and as a list.
pub fn list_dir(dir: &Path) -> (Evidence, Vec<String>) {
    let path = dir.display().to_string();
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut entries: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            entries.sort();
            (
                Evidence::Dir {
                    path,
                    entries: entries.clone(),
                    error: None,
                },
                entries,
            )
        }
        Err(e) => (
            Evidence::Dir {
                path,
                entries: Vec::new(),
                error: Some(if e.kind() == io::ErrorKind::NotFound {
                    "absent".into()
                } else {
                    e.to_string()
                }),
            },
            Vec::new(),
        ),
    }
}

fn files(paths: Vec<PathBuf>) -> Vec<Evidence> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for p in paths {
        if !seen.contains(&p) {
            out.push(read_file(&p, true));
            seen.push(p);
        }
    }
    out
}

fn text_of(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

pub fn mirror(ctx: &Context) -> Vec<Evidence> {
    match mirror_client(ctx) {
        Ok((client, url)) => vec![Evidence::Http(client.get(
            "the mirror (positive control)",
            url.path_and_query(),
            None,
        ))],
        Err(_) => Vec::new(),
    }
}

fn limits(ctx: &Context) -> Limits {
    Limits {
        connect_timeout: ctx.timeouts.connect,
        idle_timeout: ctx.timeouts.http,
        deadline: ctx.timeouts.http,
        max_head_bytes: 64 * 1024,
        max_body_bytes: 1024 * 1024,
        record_bytes: 4096,
    }
}

fn mirror_client(ctx: &Context) -> Result<(Client, Url), String> {
    let url = Url::parse(&ctx.plan.mirror).map_err(|e| e.to_string())?;
    let client =
        Client::new(url.clone(), limits(ctx), ctx.cacert.as_deref()).map_err(|e| e.to_string())?;
    Ok((client, url))
}

pub fn interfaces(_ctx: &Context) -> Vec<Evidence> {
    let (dir, names) = list_dir(Path::new("/sys/class/net"));
    let mut out = vec![dir];
    for n in names {
        for f in ["address", "operstate"] {
            out.push(read_file(
                &Path::new("/sys/class/net").join(&n).join(f),
                false,
            ));
        }
    }
    out.push(read_file(Path::new("/proc/net/if_inet6"), false));
    out.push(read_file(Path::new("/proc/net/fib_trie"), false));
    out
}

pub fn routes(_ctx: &Context) -> Vec<Evidence> {
    vec![
        read_file(Path::new("/proc/net/route"), false),
        read_file(Path::new("/proc/net/ipv6_route"), false),
    ]
}

pub fn resolvers(_ctx: &Context) -> Vec<Evidence> {
    vec![read_file(Path::new("/etc/resolv.conf"), true)]
}

pub fn proxy_env(ctx: &Context) -> Vec<Evidence> {
    let out = vec![ctx.env_evidence(doors::is_proxy_var)];
    let named = doors::proxies(&ctx.plan, &out);
    with_attempts(ctx, out, &named)
}

pub fn pip(ctx: &Context) -> Vec<Evidence> {
    let mut paths = Vec::new();
    if let Some(f) = ctx.var("PIP_CONFIG_FILE") {
        paths.push(PathBuf::from(f));
    }
    paths.push(PathBuf::from("/etc/pip.conf"));
    paths.extend(ctx.config_dirs().iter().map(|d| d.join("pip/pip.conf")));
    paths.extend(ctx.home_join(".pip/pip.conf"));
    paths.extend(ctx.config_home().map(|d| d.join("pip/pip.conf")));
    if let Some(v) = ctx.var("VIRTUAL_ENV") {
        paths.push(Path::new(v).join("pip.conf"));
    }
    let mut out = vec![ctx.env_evidence(|n| n.starts_with("PIP_"))];
    out.extend(files(paths));
    client_attempts(ctx, out)
}

pub fn uv(ctx: &Context) -> Vec<Evidence> {
    let mut paths = Vec::new();
    if let Some(f) = ctx.var("UV_CONFIG_FILE") {
        paths.push(PathBuf::from(f));
    }
    paths.push(PathBuf::from("/etc/uv/uv.toml"));
    paths.extend(ctx.config_dirs().iter().map(|d| d.join("uv/uv.toml")));
    paths.extend(ctx.config_home().map(|d| d.join("uv/uv.toml")));
    paths.push(ctx.cwd.join("uv.toml"));
    let mut out = vec![ctx.env_evidence(|n| n.starts_with("UV_"))];
    out.extend(files(paths));
    client_attempts(ctx, out)
}

/// npm's prefix: `npm_config_prefix`, else the directory above the `bin`
/// holding the first `node` on PATH.
fn npm_prefix(ctx: &Context) -> Option<PathBuf> {
    if let Some(p) = ctx
        .var("npm_config_prefix")
        .or_else(|| ctx.var("NPM_CONFIG_PREFIX"))
    {
        return Some(PathBuf::from(p));
    }
    ctx.var("PATH")?
        .split(':')
        .map(|d| Path::new(d).join("node"))
        .find(|p| p.is_file())
        .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
}

pub fn npm(ctx: &Context) -> Vec<Evidence> {
    let mut paths = Vec::new();
    let user = ctx
        .var("npm_config_userconfig")
        .or_else(|| ctx.var("NPM_CONFIG_USERCONFIG"))
        .map(PathBuf::from)
        .or_else(|| ctx.home_join(".npmrc"));
    paths.extend(user);
    paths.push(ctx.cwd.join(".npmrc"));
    let global = ctx
        .var("npm_config_globalconfig")
        .or_else(|| ctx.var("NPM_CONFIG_GLOBALCONFIG"))
        .map(PathBuf::from)
        .or_else(|| npm_prefix(ctx).map(|p| p.join("etc/npmrc")));
    paths.extend(global);
    let mut out = vec![ctx.env_evidence(|n| n.to_ascii_lowercase().starts_with("npm_config_"))];
    out.extend(files(paths));
    client_attempts(ctx, out)
}

/// cargo's configuration where cargo reads it: `.cargo/config.toml` (and
/// the older `config`) in the working directory and every directory above
/// it, then in `$CARGO_HOME`; its credential files; `CARGO_*`.
pub fn cargo(ctx: &Context) -> Vec<Evidence> {
    let home = ctx
        .var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| ctx.home_join(".cargo"));
    let mut paths = Vec::new();
    for dir in ctx.cwd.ancestors() {
        paths.push(dir.join(".cargo/config.toml"));
        paths.push(dir.join(".cargo/config"));
    }
    if let Some(dir) = home {
        for name in ["config.toml", "config", "credentials.toml", "credentials"] {
            paths.push(dir.join(name));
        }
    }
    let mut out = vec![ctx.env_evidence(|n| n.starts_with("CARGO_"))];
    out.extend(files(paths));
    client_attempts(ctx, out)
}

/// The Hugging Face client's settings: `HF_*` (`HF_ENDPOINT`, `HF_HUB_*`,
/// `HF_TOKEN`...) and the legacy `HUGGING_FACE_HUB_TOKEN` and
/// `HUGGINGFACE_*`; the token files `huggingface_hub` and `hf auth login`
/// write (`$HF_TOKEN_PATH`, else `$HF_HOME/token`, `$HF_HOME` being
/// `$XDG_CACHE_HOME/huggingface` or `~/.cache/huggingface`;
/// `$HF_HOME/stored_tokens`; the old `~/.huggingface/token`), recorded as
/// present or not, never their bytes.
pub fn hf(ctx: &Context) -> Vec<Evidence> {
    let home = ctx.var("HF_HOME").map(PathBuf::from).or_else(|| {
        ctx.var("XDG_CACHE_HOME")
            .map(|c| PathBuf::from(c).join("huggingface"))
            .or_else(|| ctx.home_join(".cache/huggingface"))
    });
    let mut paths: Vec<PathBuf> = ctx
        .var("HF_TOKEN_PATH")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(h) = &home {
        paths.push(h.join("token"));
        paths.push(h.join("stored_tokens"));
    }
    paths.extend(ctx.home_join(".huggingface/token"));
    paths.dedup();
    let mut out = vec![ctx.env_evidence(|n| {
        n.starts_with("HF_") || n.starts_with("HUGGINGFACE_") || n == "HUGGING_FACE_HUB_TOKEN"
    })];
    out.extend(paths.iter().map(|p| secret_file(p)));
    client_attempts(ctx, out)
}

/// A file that holds nothing but a secret: whether it is there and holds
/// anything, as `<redacted>` (its bytes are never recorded).
pub fn secret_file(path: &Path) -> Evidence {
    match std::fs::metadata(path) {
        Ok(m) => Evidence::File {
            path: path.display().to_string(),
            bytes: Some(WireBytes(if m.len() > 0 {
                SECRET_FILE.as_bytes().to_vec()
            } else {
                Vec::new()
            })),
            error: None,
        },
        Err(e) => Evidence::File {
            path: path.display().to_string(),
            bytes: None,
            error: Some(e.to_string()),
        },
    }
}

/// What [`secret_file`] records for a file that holds a secret.
pub const SECRET_FILE: &str = "<redacted: a secret file>\n";

pub fn go(ctx: &Context) -> Vec<Evidence> {
    const VARS: [&str; 7] = [
        "GOPROXY",
        "GONOPROXY",
        "GOPRIVATE",
        "GONOSUMDB",
        "GOSUMDB",
        "GOINSECURE",
        "GOFLAGS",
    ];
    let env_file = ctx
        .var("GOENV")
        .map(PathBuf::from)
        .or_else(|| ctx.config_home().map(|d| d.join("go/env")));
    let mut out = vec![ctx.env_evidence(|n| VARS.contains(&n))];
    out.extend(files(env_file.into_iter().collect()));
    client_attempts(ctx, out)
}

pub fn apt(ctx: &Context) -> Vec<Evidence> {
    let mut out = Vec::new();
    let mut paths = vec![
        PathBuf::from("/etc/apt/sources.list"),
        PathBuf::from("/etc/apt/apt.conf"),
    ];
    for (dir, exts) in [
        ("/etc/apt/sources.list.d", &["list", "sources"][..]),
        ("/etc/apt/apt.conf.d", &[][..]),
    ] {
        let (ev, names) = list_dir(Path::new(dir));
        out.push(ev);
        paths.extend(
            names
                .iter()
                .filter(|n| exts.is_empty() || exts.iter().any(|e| n.ends_with(&format!(".{e}"))))
                .map(|n| Path::new(dir).join(n)),
        );
    }
    out.extend(files(paths));
    client_attempts(ctx, out)
}

/// The client configuration read, and the attempts on every door it names.
fn client_attempts(ctx: &Context, out: Vec<Evidence>) -> Vec<Evidence> {
    let named = doors::client_doors(&ctx.plan, &out);
    with_attempts(ctx, out, &named)
}

/// Most hosts, and most connections, one check tries for its doors.
const MAX_DOOR_HOSTS: usize = 64;
const MAX_DOOR_SOCKETS: usize = 256;

/// `out` and the attempts on each door in `named` that is not the
/// mirror's, as a client of this sandbox would make them: its name looked
/// up in /etc/hosts, else through the resolvers of /etc/resolv.conf (A and
/// AAAA, with the scan's own DNS client); then a TCP connection to each
/// address and port, and an HTTP request where one connects. Both files
/// are recorded, so that the judge resolves from the same text.
fn with_attempts(ctx: &Context, mut out: Vec<Evidence>, named: &[doors::Door]) -> Vec<Evidence> {
    // Each host once, with every port it is named with.
    let mut hosts: Vec<(&str, Vec<u16>)> = Vec::new();
    for d in named.iter().filter(|d| !d.mirror) {
        let doors::Target::Host { host, ports } = &d.target else {
            continue;
        };
        let full = hosts.len() >= MAX_DOOR_HOSTS;
        match hosts.iter_mut().find(|(h, _)| h == host) {
            Some((_, all)) => {
                for p in ports {
                    if !all.contains(p) {
                        all.push(*p);
                    }
                }
            }
            None if !full => hosts.push((host.as_str(), ports.clone())),
            None => {}
        }
    }
    if hosts.is_empty() {
        return out;
    }
    let mut resolving = vec![
        read_file(Path::new(doors::HOSTS_FILE), false),
        read_file(Path::new(doors::RESOLV_CONF), true),
    ];
    let queries: Vec<(dns::Name, u16)> = hosts
        .iter()
        .filter(|(h, _)| doors::resolve(h, &resolving).addrs.is_empty())
        .filter_map(|(h, _)| dns::Name::new(h).ok())
        .flat_map(|n| [(n.clone(), dns::TYPE_A), (n, dns::TYPE_AAAA)])
        .collect();
    resolving.extend(dns_all(ctx, &queries));
    let mut targets: Vec<(String, SocketAddr)> = Vec::new();
    for (host, ports) in &hosts {
        for addr in doors::resolve(host, &resolving).addrs {
            for &port in ports {
                let sock = SocketAddr::new(addr, port);
                let known = targets.iter().any(|(_, s)| *s == sock);
                if !known
                    && !ctx.plan.is_mirror_socket(&sock.to_string())
                    && targets.len() < MAX_DOOR_SOCKETS
                {
                    targets.push((host.to_string(), sock));
                }
            }
        }
    }
    out.extend(resolving);
    out.extend(tcp_and_http(ctx, &targets));
    out
}

/// Directories a lockfile search does not enter.
const SKIP_DIRS: [&str; 7] = [
    "node_modules",
    ".git",
    ".venv",
    "venv",
    "target",
    "__pycache__",
    ".tox",
];

pub fn lockfiles(ctx: &Context) -> Vec<Evidence> {
    let Some(root) = &ctx.plan.lockfiles else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut stack = vec![(PathBuf::from(root), 0usize)];
    let mut visited = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            visited += 1;
            if visited > 20_000 {
                break;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() && depth < 8 && !SKIP_DIRS.contains(&name.as_str()) {
                stack.push((e.path(), depth + 1));
            } else if ft.is_file() && egress_lock::LockFormat::of_file_name(&name).is_some() {
                found.push(e.path());
            }
        }
    }
    found.sort();
    let mut out = vec![Evidence::Dir {
        path: root.clone(),
        entries: found
            .iter()
            .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
            .collect(),
        error: Path::new(root)
            .is_dir()
            .then_some(())
            .map_or(Some("not a directory".to_string()), |()| None),
    }];
    out.extend(found.iter().map(|p| read_file(p, true)));
    out
}

/// One TCP connection attempt.
pub fn tcp_try(label: &str, addr: SocketAddr, timeout: Duration) -> TcpAttempt {
    let start = Instant::now();
    let (outcome, detail) = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(_) => (TcpOutcome::Connected, String::new()),
        Err(e) => {
            let o = match e.kind() {
                io::ErrorKind::ConnectionRefused => TcpOutcome::Refused,
                io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
                    TcpOutcome::Unreachable
                }
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => TcpOutcome::TimedOut,
                _ => TcpOutcome::Failed,
            };
            (o, e.to_string())
        }
    };
    TcpAttempt {
        label: label.to_string(),
        addr: addr.to_string(),
        outcome,
        detail,
        elapsed_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// A TCP attempt to each address and, where it connects, an HTTP request
/// for the scan's probe path; all at once.
fn tcp_and_http(ctx: &Context, targets: &[(String, SocketAddr)]) -> Vec<Evidence> {
    let results: Vec<Vec<Evidence>> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(label, addr)| {
                s.spawn(move || {
                    let t = tcp_try(label, *addr, ctx.timeouts.connect);
                    let mut ev = Vec::new();
                    let connected = t.outcome == TcpOutcome::Connected;
                    ev.push(Evidence::Tcp(t));
                    if connected {
                        if let Ok(url) = Url::parse(&format!("http://{addr}/")) {
                            if let Ok(c) = Client::new(url, limits(ctx), None) {
                                ev.push(Evidence::Http(c.get(
                                    &format!("{label}: an HTTP request"),
                                    &ctx.plan.probe_path(),
                                    None,
                                )));
                            }
                        }
                    }
                    ev
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.into_iter().flatten().collect()
}

pub fn canary(ctx: &Context) -> Vec<Evidence> {
    let targets: Vec<(String, SocketAddr)> = ctx
        .plan
        .canaries
        .iter()
        .filter_map(|c| Some(("canary".to_string(), c.parse().ok()?)))
        .collect();
    tcp_and_http(ctx, &targets)
}

pub fn gateways(ctx: &Context) -> Vec<Evidence> {
    let mut routes = Vec::new();
    if let Some(t) = text_of(Path::new("/proc/net/route")) {
        routes.extend(net::routes_v4(&t));
    }
    if let Some(t) = text_of(Path::new("/proc/net/ipv6_route")) {
        routes.extend(net::routes_v6(&t));
    }
    let mut targets = Vec::new();
    for gw in net::gateways(&routes) {
        for &port in &ctx.plan.gateway_ports {
            let addr = SocketAddr::new(gw, port);
            if !ctx.plan.is_mirror_socket(&addr.to_string()) {
                targets.push((format!("gateway {gw}"), addr));
            }
        }
    }
    tcp_and_http(ctx, &targets)
}

/// The cloud metadata services' link-local addresses (AWS, GCP, Azure and
/// others answer at 169.254.169.254; AWS also at fd00:ec2::254).
pub const METADATA: [&str; 2] = ["169.254.169.254:80", "[fd00:ec2::254]:80"];

pub fn metadata(ctx: &Context) -> Vec<Evidence> {
    let targets: Vec<(String, SocketAddr)> = METADATA
        .iter()
        .filter_map(|a| Some(("metadata service".to_string(), a.parse().ok()?)))
        .collect();
    tcp_and_http(ctx, &targets)
}

fn nameservers() -> Vec<IpAddr> {
    text_of(Path::new("/etc/resolv.conf"))
        .map(|t| net::nameservers(&t))
        .unwrap_or_default()
}

fn random_id() -> u16 {
    let mut b = [0u8; 2];
    let _ = getrandom::getrandom(&mut b);
    u16::from_be_bytes(b)
}

/// Sends every query to `server` port 53 over one UDP socket, then reads
/// replies until each query has one or the timeout passes.
pub fn dns_batch(
    server: IpAddr,
    queries: &[(dns::Name, u16)],
    timeout: Duration,
) -> Vec<DnsAttempt> {
    let start = Instant::now();
    let peer = SocketAddr::new(server, 53);
    let mut attempts: Vec<(u16, DnsAttempt)> = Vec::new();
    let mut used = Vec::new();
    for (name, qtype) in queries {
        let mut id = random_id();
        while used.contains(&id) {
            id = id.wrapping_add(1);
        }
        used.push(id);
        attempts.push((
            id,
            DnsAttempt {
                server: peer.to_string(),
                query: WireBytes(dns::encode_query(id, name, *qtype)),
                reply: None,
                error: None,
                elapsed_ms: 0,
            },
        ));
    }
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().unwrap_or(peer)
    } else {
        "[::]:0".parse().unwrap_or(peer)
    };
    let fail_all = |attempts: &mut Vec<(u16, DnsAttempt)>, why: String| {
        for (_, a) in attempts.iter_mut() {
            if a.reply.is_none() && a.error.is_none() {
                a.error = Some(why.clone());
            }
        }
    };
    let socket = match UdpSocket::bind(bind).and_then(|s| s.connect(peer).map(|()| s)) {
        Ok(s) => s,
        Err(e) => {
            fail_all(&mut attempts, format!("cannot send: {e}"));
            return attempts.into_iter().map(|(_, a)| a).collect();
        }
    };
    for (_, a) in attempts.iter_mut() {
        if let Err(e) = socket.send(a.query.as_bytes()) {
            a.error = Some(format!("cannot send: {e}"));
        }
    }
    let mut index: HashMap<u16, usize> = HashMap::new();
    for (i, (id, _)) in attempts.iter().enumerate() {
        index.insert(*id, i);
    }
    let deadline = start + timeout;
    let mut buf = vec![0u8; 4096];
    while attempts
        .iter()
        .any(|(_, a)| a.reply.is_none() && a.error.is_none())
    {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            fail_all(
                &mut attempts,
                format!("no reply within {} ms", timeout.as_millis()),
            );
            break;
        }
        let _ = socket.set_read_timeout(Some(left));
        match socket.recv(&mut buf) {
            Ok(n) => {
                let got = buf.get(..n).unwrap_or_default();
                let id = got.get(..2).map(|b| {
                    u16::from_be_bytes([
                        b.first().copied().unwrap_or(0),
                        b.get(1).copied().unwrap_or(0),
                    ])
                });
                if let Some(&i) = id.and_then(|id| index.get(&id)) {
                    if let Some((_, a)) = attempts.get_mut(i) {
                        if a.reply.is_none() {
                            a.reply = Some(WireBytes(got.to_vec()));
                            a.elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(0);
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                fail_all(
                    &mut attempts,
                    "port unreachable (nothing listens on port 53)".into(),
                );
                break;
            }
            Err(e) => {
                fail_all(&mut attempts, format!("cannot receive: {e}"));
                break;
            }
        }
    }
    let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(0);
    attempts
        .into_iter()
        .map(|(_, mut a)| {
            if a.elapsed_ms == 0 {
                a.elapsed_ms = ms;
            }
            a
        })
        .collect()
}

fn dns_all(ctx: &Context, queries: &[(dns::Name, u16)]) -> Vec<Evidence> {
    let servers = nameservers();
    let results: Vec<Vec<DnsAttempt>> = std::thread::scope(|s| {
        let handles: Vec<_> = servers
            .iter()
            .map(|&srv| s.spawn(move || dns_batch(srv, queries, ctx.timeouts.dns)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.into_iter().flatten().map(Evidence::Dns).collect()
}

pub fn dns_public(ctx: &Context) -> Vec<Evidence> {
    let mut queries = Vec::new();
    for n in &ctx.plan.public_names {
        if let Ok(name) = dns::Name::new(n) {
            queries.push((name.clone(), dns::TYPE_A));
            queries.push((name, dns::TYPE_AAAA));
        }
    }
    dns_all(ctx, &queries)
}

pub fn dns_canary(ctx: &Context) -> Vec<Evidence> {
    let Some(name) = ctx.plan.canary_name().and_then(|n| dns::Name::new(&n).ok()) else {
        return Vec::new();
    };
    dns_all(ctx, &[(name, dns::TYPE_A)])
}

/// Where CONNECT and absolute-form requests through the mirror aim: the
/// first canary, else the public index.
fn passthrough_target(ctx: &Context) -> String {
    ctx.plan
        .canaries
        .first()
        .cloned()
        .unwrap_or_else(|| "pypi.org:443".to_string())
}

pub fn mirror_connect(ctx: &Context) -> Vec<Evidence> {
    let Ok((client, _)) = mirror_client(ctx) else {
        return Vec::new();
    };
    let target = passthrough_target(ctx);
    let inner = format!(
        "GET {} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n",
        ctx.plan.probe_path()
    );
    client
        .connect_tunnel("CONNECT through the mirror", &target, inner.as_bytes())
        .into_iter()
        .map(Evidence::Http)
        .collect()
}

pub fn mirror_absolute(ctx: &Context) -> Vec<Evidence> {
    let Ok((client, url)) = mirror_client(ctx) else {
        return Vec::new();
    };
    let target = passthrough_target(ctx);
    let path = url.path_and_query();
    // The same path in origin form first: what the mirror itself serves
    // there, so that a mirror ignoring the host is told from one that
    // fetched the other host's page.
    let own = client.get("the mirror's own page (origin form)", path, None);
    let raw = format!(
        "GET http://{target}{path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
    );
    let abs = client.send_raw("absolute-form request through the mirror", raw.as_bytes());
    vec![Evidence::Http(own), Evidence::Http(abs)]
}
