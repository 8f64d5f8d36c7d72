//! Starting one peer from its [`PeerConfig`]: a subprocess on 127.0.0.1 in
//! a fresh working directory, with nothing of this machine's environment,
//! ready when its index answers; stopped, by its process group, when the
//! [`Running`] is dropped.

use crate::config::{PeerConfig, Protocol, Setup, Vars, LOW_PORT};
use crate::setup::SetupError;
use egress_model::url::InvalidUrl;
use egress_model::Url;
use egress_transcript::{Client, ClientError, Limits};
use rustix::process::{kill_process_group, Pid, Signal};
use std::fs::{self, File};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a peer may take to start serving (devpi's first start builds
/// its database and web index).
pub const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long an `init` command may take (a static mirror's sync of the lab's
/// few projects takes seconds; bandersnatch's own global timeout is 120 s).
const INIT_WITHIN: Duration = Duration::from_secs(150);
/// How long a stopped peer gets to exit before its group is killed.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// Why a peer did not start; `log` is the last line of its log.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("not installed in {}: run scripts/setup-peers {venv}", .dir.display())]
    NotInstalled { dir: PathBuf, venv: String },
    /// Something it needs could not be made, read or written.
    #[error("{what}: {cause}")]
    Io { what: String, cause: io::Error },
    #[error("an empty command line")]
    EmptyCommand,
    /// Its program could not be run; `hint` says what may be missing.
    #[error("cannot run {program}: {cause}{hint}")]
    Spawn {
        program: String,
        cause: io::Error,
        hint: String,
    },
    #[error("set-up step `{step}` failed ({status}) after {secs:.1} s: {log}")]
    StepFailed {
        step: String,
        status: std::process::ExitStatus,
        secs: f64,
        log: String,
    },
    #[error("set-up step `{step}` did not finish within {secs} s; stopped: {log}")]
    StepTimeout {
        step: String,
        secs: u64,
        log: String,
    },
    /// Waiting for a set-up step failed.
    #[error("{0}")]
    Wait(io::Error),
    #[error("exited ({status}) before serving: {log}")]
    Exited {
        status: std::process::ExitStatus,
        log: String,
    },
    #[error("not ready within {secs} s ({last}): {log}")]
    NotReady {
        secs: u64,
        last: String,
        log: String,
    },
    #[error(transparent)]
    Url(#[from] InvalidUrl),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Setup(#[from] SetupError),
}

impl PeerError {
    fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |cause| Self::Io { what, cause }
    }
}

/// What the testbed knows when it starts a peer. For an npm peer the
/// canary is the npm canary, and the lab's packages and projects are its
/// snapshot packages' tarballs and names.
pub struct Context<'a> {
    /// Where `scripts/setup-peers` installed the venvs.
    pub peers_dir: &'a Path,
    /// The canary's `/simple/` URL (for an npm peer, its registry URL,
    /// `http://127.0.0.1:PORT/`): the peer's only upstream.
    pub canary_index: &'a str,
    /// The canary's base URL, `http://127.0.0.1:PORT` (for peers that speak
    /// more of PyPI than the simple API: XML-RPC, the JSON API).
    pub canary_url: &'a str,
    /// The lab's packages, `(filename, bytes)`: what `seed` fills a directory with.
    pub packages: &'a [(String, Vec<u8>)],
    /// The lab's projects: what `warm-then-run` fetches through the peer.
    /// For an apt peer, the paths below the archive root it fetches (the
    /// dist's `InRelease`, its `Packages`, the lab's `.deb`s' pool paths).
    pub projects: &'a [String],
    /// The protocol's own placeholders, `(NAME, VALUE)` for `{NAME}` (an apt
    /// peer's `{dist}`, `{component}` and `{arch}`).
    pub placeholders: &'a [(String, String)],
    /// The canary's public keyring, if it signs (apt): written to
    /// `{workdir}/canary-keyring.gpg` before anything runs, and named by
    /// `{canary_keyring}`.
    pub keyring: Option<&'a [u8]>,
}

/// The file in the working directory that holds [`Context::keyring`].
pub const CANARY_KEYRING: &str = "canary-keyring.gpg";

/// Removed on drop, with whatever the peer wrote there.
struct Workdir(PathBuf);

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A started process, stopped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        stop(&mut self.0);
    }
}

/// The child was started as the leader of its own process group, so the
/// group's id is its pid: signalling the group reaches the workers it forked
/// (gunicorn's) and nothing else on the machine.
fn stop(child: &mut Child) {
    let Some(pgid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) else {
        let _ = child.kill();
        let _ = child.wait();
        return;
    };
    let _ = kill_process_group(pgid, Signal::TERM);
    let deadline = Instant::now() + STOP_WITHIN;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Whatever of the group is left (the leader, or workers it left behind).
    let _ = kill_process_group(pgid, Signal::KILL);
    let _ = child.wait();
}

/// A peer that serves; stopped (and its working directory removed) on drop.
pub struct Running {
    pub index_url: Url,
    /// apt: the bytes of the keyring the peer's `Release` must verify
    /// against (its config's `keyring`, else the canary's).
    pub keyring: Option<Vec<u8>>,
    /// The canary's URL as the peer reaches it: a relay's when the peer
    /// needs one (`max-port`), else the canary's own.
    pub canary_url: String,
    // Field order is drop order: the process stops before its files go.
    proc: Proc,
    /// The relay to the canary, if the peer needs one (`max-port`): kept
    /// until the peer has stopped.
    _relay: Option<crate::relay::Relay>,
    workdir: Workdir,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.proc.0.id()
    }

    pub fn workdir(&self) -> &Path {
        &self.workdir.0
    }

    /// If its process has ended (a crash, say): how, as `ExitStatus`
    /// shows it (`signal: 11 (SIGSEGV)`), and the last line it wrote.
    pub fn exited(&mut self) -> Option<String> {
        match self.proc.0.try_wait() {
            Ok(Some(status)) => Some(format!(
                "{status}; its last line: {}",
                last_log_line(&self.workdir.0)
            )),
            _ => None,
        }
    }

    /// Stops the peer by its process group and removes its working directory.
    pub fn stop(self) {}
}

/// A path under the temporary directory that no other start (in this
/// process or another) uses.
pub fn fresh_dir(label: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("egress-testbed-{label}-{}-{n}", std::process::id()))
}

/// A free loopback port: any the kernel gives, or, below `max`, one of
/// [`LOW_PORT`]..=`max` that can be bound now, tried from a place that
/// differs from start to start (two testbeds at once rarely collide; one
/// that does sees the peer fail to bind and says so).
fn free_port(max: Option<u16>) -> Result<u16, PeerError> {
    let Some(max) = max else {
        return std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(PeerError::io("no free loopback port"));
    };
    let span = u32::from(max.saturating_sub(LOW_PORT)) + 1;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id().wrapping_mul(2_654_435_761);
    (0..span)
        .filter_map(|i| u16::try_from((seed.wrapping_add(i)) % span).ok())
        .map(|off| LOW_PORT.saturating_add(off))
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .ok_or_else(|| PeerError::Io {
            what: format!("no free loopback port in {LOW_PORT}..={max}"),
            cause: io::Error::from(io::ErrorKind::AddrInUse),
        })
}

/// A listener on a free loopback port no higher than `max`.
fn low_listener(max: u16) -> Result<std::net::TcpListener, PeerError> {
    let port = free_port(Some(max))?;
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(PeerError::io(format!("cannot listen on 127.0.0.1:{port}")))
}

/// For a peer with a `max-port` below the canary's port: a relay to the
/// canary on a port it can reach, and the canary's URL and index with the
/// relay's port in them.
fn relayed(
    cfg: &PeerConfig,
    ctx: &Context,
) -> Result<Option<(crate::relay::Relay, String, String)>, PeerError> {
    let (host, port) = crate::config::host_port(ctx.canary_url);
    let (Some(max), Ok(port)) = (cfg.max_port, port.parse::<u16>()) else {
        return Ok(None);
    };
    if port <= max || host != "127.0.0.1" {
        return Ok(None);
    }
    let target = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    let relay = crate::relay::Relay::start(low_listener(max)?, target)
        .map_err(PeerError::io("cannot start the relay to the canary"))?;
    let from = format!("127.0.0.1:{port}");
    let to = format!("127.0.0.1:{}", relay.port());
    let url = ctx.canary_url.replacen(&from, &to, 1);
    let index = ctx.canary_index.replacen(&from, &to, 1);
    Ok(Some((relay, url, index)))
}

/// The last non-empty line the peer wrote, for one-line errors.
fn last_log_line(workdir: &Path) -> String {
    let text = fs::read_to_string(workdir.join("peer.log")).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let line: String = line.trim().chars().take(200).collect();
    if line.is_empty() {
        "no output".into()
    } else {
        line
    }
}

struct Starter<'a> {
    cfg: &'a PeerConfig,
    venv: PathBuf,
    workdir: PathBuf,
    /// The context's placeholders and `{canary_keyring}`.
    extra: Vec<(String, String)>,
    /// The context's, or, through a relay, the relay's.
    canary_url: String,
    canary_index: String,
}

impl Starter<'_> {
    fn vars(&self, port: u16) -> Vars<'_> {
        Vars {
            port,
            canary_url: &self.canary_url,
            canary_index: &self.canary_index,
            workdir: &self.workdir,
            venv: &self.venv,
            extra: &self.extra,
        }
    }

    /// A command with no environment from this machine: no proxies, no
    /// PIP_* or index settings, so the canary is the only upstream it knows.
    fn command(&self, words: &[String], port: u16) -> Result<Command, PeerError> {
        let vars = self.vars(port);
        let words = vars.command(words);
        let (program, args) = words.split_first().ok_or(PeerError::EmptyCommand)?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.workdir.join("peer.log"))
            .map_err(PeerError::io("cannot open its log"))?;
        let err = log
            .try_clone()
            .map_err(PeerError::io("cannot open its log"))?;
        // An npm peer's programs are in node_modules/.bin; node itself is
        // the system's.
        // A Debian-package peer's programs and libraries are in the
        // packages' unpacked tree, `root/` (scripts/setup-peers).
        let bins = match self.cfg.protocol {
            Protocol::Pypi => format!("{}/bin", self.venv.display()),
            Protocol::Npm => format!("{0}/node_modules/.bin:{0}/bin", self.venv.display()),
            Protocol::Apt => format!("{0}/root/usr/bin:{0}/root/usr/sbin", self.venv.display()),
            // A cargo peer is a `cargo install` (`bin/`) or Debian's
            // packages unpacked (nginx); a Hub peer a venv (olah) or
            // nginx.
            Protocol::Cargo | Protocol::Hf => format!(
                "{0}/bin:{0}/root/usr/bin:{0}/root/usr/sbin",
                self.venv.display()
            ),
        };
        let mut c = Command::new(program);
        c.args(args)
            .env_clear()
            .env("PATH", format!("{bins}:/usr/local/bin:/usr/bin:/bin"))
            .env("HOME", self.workdir.join("home"))
            .env("TMPDIR", self.workdir.join("tmp"))
            .env("LC_ALL", "C.UTF-8")
            .env("PYTHONUNBUFFERED", "1")
            .current_dir(&self.workdir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0);
        if matches!(
            self.cfg.protocol,
            Protocol::Apt | Protocol::Cargo | Protocol::Hf
        ) {
            c.env(
                "LD_LIBRARY_PATH",
                format!(
                    "{0}/root/usr/lib/x86_64-linux-gnu:{0}/root/usr/lib",
                    self.venv.display()
                ),
            );
        }
        for (k, v) in &self.cfg.env {
            c.env(k, vars.fill(v));
        }
        Ok(c)
    }

    fn spawn(&self, words: &[String], port: u16) -> Result<Proc, PeerError> {
        let program = words
            .first()
            .map(|w| self.vars(port).fill(w))
            .unwrap_or_default();
        self.command(words, port)?
            .spawn()
            .map(Proc)
            .map_err(|cause| {
                let hint = if cause.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        " (an incomplete install? run scripts/setup-peers {})",
                        self.cfg.venv
                    )
                } else {
                    String::new()
                };
                PeerError::Spawn {
                    program,
                    cause,
                    hint,
                }
            })
    }

    /// Runs `words` to completion: it must exit 0 within [`INIT_WITHIN`].
    fn init(&self, words: &[String]) -> Result<(), PeerError> {
        let mut p = self.spawn(words, 0)?;
        let started = Instant::now();
        // The program's name and its plain words (`bandersnatch mirror`),
        // without options and paths.
        let what = words
            .split_first()
            .map(|(p, args)| {
                let mut shown = vec![p.rsplit('/').next().unwrap_or(p)];
                shown.extend(
                    args.iter()
                        .map(String::as_str)
                        .filter(|a| !a.starts_with('-') && !a.contains(['/', '{'])),
                );
                shown.join(" ")
            })
            .unwrap_or_default();
        loop {
            match p.0.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(PeerError::StepFailed {
                        step: what,
                        status,
                        secs: started.elapsed().as_secs_f64(),
                        log: last_log_line(&self.workdir),
                    })
                }
                Ok(None) if started.elapsed() > INIT_WITHIN => {
                    return Err(PeerError::StepTimeout {
                        step: what,
                        secs: INIT_WITHIN.as_secs(),
                        log: last_log_line(&self.workdir),
                    })
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(PeerError::Wait(e)),
            }
        }
    }

    /// Polls `path` until `ok(status)`, the process exits, or time runs out.
    fn wait(
        &self,
        p: &mut Proc,
        client: &Client,
        path: &str,
        ok: fn(u16) -> bool,
    ) -> Result<(), PeerError> {
        let started = Instant::now();
        let mut last = "no answer".to_string();
        while started.elapsed() < READY_WITHIN {
            if let Ok(Some(status)) = p.0.try_wait() {
                return Err(PeerError::Exited {
                    status,
                    log: last_log_line(&self.workdir),
                });
            }
            let ex = client.get("ready", path, Some("text/html"));
            match ex.status() {
                Some(s) if ok(s) => return Ok(()),
                Some(s) => last = format!("{path} answered {s}"),
                None => {}
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(PeerError::NotReady {
            secs: READY_WITHIN.as_secs(),
            last,
            log: last_log_line(&self.workdir),
        })
    }

    /// Starts `words` on a fresh port and waits until it listens.
    fn serve(&self, words: &[String]) -> Result<(Proc, Client), PeerError> {
        let port = free_port(self.cfg.max_port)?;
        let base = Url::parse(&format!("http://127.0.0.1:{port}/"))?;
        let client = Client::new(base, limits(), None)?;
        let mut p = self.spawn(words, port)?;
        // Any HTTP answer means it listens; whether the index is there is
        // checked after set-up.
        self.wait(&mut p, &client, "/", |_| true)?;
        Ok((p, client))
    }
}

/// How long the working directory must stay unchanged before a warmed
/// peer is stopped, and how long that may take at most.
const QUIET_FOR: Duration = Duration::from_millis(500);
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// The newest modification time of anything under `dir` (directories too:
/// a rename changes its directory), its own log aside.
fn newest_change(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name() == "peer.log" {
                continue;
            }
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                todo.push(e.path());
            }
            if let Ok(t) = meta.modified() {
                newest = newest.max(Some(t));
            }
        }
    }
    newest
}

/// Waits until nothing under `workdir` has changed for [`QUIET_FOR`], or
/// [`SETTLE_WITHIN`] has passed.
fn settle(workdir: &Path) {
    let started = Instant::now();
    while started.elapsed() < SETTLE_WITHIN {
        let quiet = newest_change(workdir)
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age >= QUIET_FOR);
        if quiet {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn limits() -> Limits {
    Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(20),
        deadline: Duration::from_secs(30),
        ..Limits::default()
    }
}

/// Starts the peer `cfg` describes and returns once its index answers 200.
/// Every error is one line and names what failed; whatever was started is
/// stopped and removed again.
pub fn start(cfg: &PeerConfig, ctx: &Context) -> Result<Running, PeerError> {
    // Absolute: the commands run in the working directory.
    let venv = std::path::absolute(ctx.peers_dir.join(&cfg.venv))
        .map_err(PeerError::io(ctx.peers_dir.display().to_string()))?;
    // What setup-peers leaves once an install is complete: the venv's
    // python, or the record `npm ci` writes of what it installed.
    // An apt peer's packages are unpacked by setup-peers, which records
    // their digest in `.installed` once every step succeeded.
    let installed: &[&str] = match cfg.protocol {
        Protocol::Pypi => &["bin/python"],
        Protocol::Npm => &["node_modules/.package-lock.json"],
        Protocol::Apt | Protocol::Cargo => &[".installed"],
        // A venv (olah) or Debian's packages unpacked (nginx).
        Protocol::Hf => &["bin/python", ".installed"],
    };
    if !installed.iter().any(|i| venv.join(i).is_file()) {
        return Err(PeerError::NotInstalled {
            dir: venv,
            venv: cfg.venv.clone(),
        });
    }
    let workdir = fresh_dir(&cfg.name);
    let guard = Workdir(workdir.clone());
    for d in ["home", "tmp"] {
        fs::create_dir_all(workdir.join(d)).map_err(PeerError::io(format!("cannot create {d}")))?;
    }
    let mut extra = ctx.placeholders.to_vec();
    if let Some(keyring) = ctx.keyring {
        let path = workdir.join(CANARY_KEYRING);
        fs::write(&path, keyring)
            .map_err(PeerError::io(format!("cannot write {CANARY_KEYRING}")))?;
        extra.push(("canary_keyring".into(), path.to_string_lossy().into_owned()));
    }
    let relay = relayed(cfg, ctx)?;
    let (canary_url, canary_index) = match &relay {
        Some((_, url, index)) => (url.clone(), index.clone()),
        None => (ctx.canary_url.to_string(), ctx.canary_index.to_string()),
    };
    let s = Starter {
        cfg,
        venv,
        workdir,
        extra,
        canary_url,
        canary_index,
    };
    if let Some(dir) = &cfg.seed {
        let dir = PathBuf::from(s.vars(0).fill(dir));
        fs::create_dir_all(&dir)
            .map_err(PeerError::io(format!("cannot seed {}", dir.display())))?;
        for (name, bytes) in ctx.packages {
            // A cargo peer's are index files, in the index's directories.
            let to = dir.join(name);
            if name
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
            {
                return Err(PeerError::io(format!("cannot seed {name}"))(
                    io::Error::other("not a relative path"),
                ));
            }
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(PeerError::io(format!("cannot seed {name}")))?;
            }
            fs::write(&to, bytes).map_err(PeerError::io(format!("cannot seed {name}")))?;
        }
    }
    for f in &cfg.files {
        let vars = s.vars(0);
        let from = cfg.dir.join(&f.template);
        let text = fs::read_to_string(&from)
            .map_err(PeerError::io(format!("cannot read {}", from.display())))?;
        let to = PathBuf::from(vars.fill(&f.to));
        // A destination inside a directory of its own (an apt peer's
        // configuration directory) gets that directory.
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .map_err(PeerError::io(format!("cannot create {}", parent.display())))?;
        }
        fs::write(&to, vars.fill_template(&text, &f.placeholders))
            .map_err(PeerError::io(format!("cannot write {}", to.display())))?;
    }
    for words in &cfg.init {
        s.init(words)?;
    }
    let (mut p, mut client) = s.serve(&cfg.run)?;
    if let Some(Setup::DevpiMirror { user, index }) = &cfg.setup {
        crate::setup::devpi_mirror(&client, user, index, ctx.canary_index)?;
    }
    // An apt archive root is a directory, which many servers do not list:
    // an apt peer serves once its dist's InRelease answers.
    let ready = match (&cfg.ready, cfg.protocol) {
        (Some(r), _) => s.vars(0).fill(r),
        (None, Protocol::Apt) => s
            .vars(0)
            .fill(&format!("{}dists/{{dist}}/InRelease", cfg.index)),
        (None, _) => cfg.index.clone(),
    };
    let ready = ready.as_str();
    if let Some(words) = &cfg.warm_then_run {
        s.wait(&mut p, &client, ready, |st| st == 200)?;
        match cfg.protocol {
            Protocol::Pypi => crate::setup::warm(&client, &cfg.index, ctx.projects)?,
            Protocol::Npm => crate::setup::warm_npm(&client, &cfg.index, ctx.projects)?,
            Protocol::Apt => {
                crate::setup::warm_apt(&client, &cfg.index, ctx.projects, ctx.packages)?
            }
            // Refused when the config is read (ConfigError::WarmForCargo).
            Protocol::Cargo | Protocol::Hf => {}
        }
        // A cache writes what it served after the response has gone out
        // (Verdaccio renames a tarball into its storage once the uplink's
        // stream ends); stopping it before then would lose the last one.
        settle(&s.workdir);
        drop(p);
        (p, client) = s.serve(words)?;
    }
    s.wait(&mut p, &client, ready, |st| st == 200)?;
    let index_url = client.base().with_path(&cfg.index);
    let keyring = match (&cfg.keyring, ctx.keyring) {
        (Some(path), _) => {
            let path = PathBuf::from(s.vars(0).fill(path));
            Some(fs::read(&path).map_err(PeerError::io(format!(
                "cannot read its keyring {}",
                path.display()
            )))?)
        }
        (None, canary) => canary.map(<[u8]>::to_vec),
    };
    Ok(Running {
        index_url,
        keyring,
        canary_url: s.canary_url.clone(),
        proc: p,
        _relay: relay.map(|(r, _, _)| r),
        workdir: guard,
    })
}
